"""Builders shared by the workflow tests: a TaskSystem with small tasks, and a FunctionModel that answers per task."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from atomtask import TaskSystem, Template, Workflow
from atomtask.workflows import WorkflowRegistry, WorkflowRunner
from pydantic import BaseModel
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel


class Summary(BaseModel):
    summary: str


class Article(BaseModel):
    title: str
    body: str


class Review(BaseModel):
    score: int


class Label(BaseModel):
    label: str


Answer = Any | Callable[[str], Any]


class TaskAnswers:
    """A FunctionModel answering each task from its own queue; instructions start with `[task]`.

    A queue item is a dict (the output tool's arguments), a str (a text answer) or a function of the
    prompt giving either. The last item of a queue repeats. `calls` records (task, prompt) in order.
    """

    def __init__(self, **by_task: list[Answer]) -> None:
        self.queues = {task: list(answers) for task, answers in by_task.items()}
        self.calls: list[tuple[str, str]] = []
        self.model = FunctionModel(self._respond, model_name="answers")

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = info.instructions or ""
        prompt += "".join(
            part.content
            for message in messages
            for part in getattr(message, "parts", [])
            if part.part_kind == "user-prompt" and isinstance(part.content, str)
        )
        task = prompt[prompt.index("[") + 1 : prompt.index("]")]
        self.calls.append((task, prompt))
        queue = self.queues[task]
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if callable(answer):
            answer = answer(prompt)
        if isinstance(answer, dict):
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, json.dumps(answer))])
        return ModelResponse(parts=[TextPart(str(answer))])

    def tasks(self) -> list[str]:
        """The tasks called, in order."""
        return [task for task, _ in self.calls]


def task(name: str, params: dict[str, str], schema: str | None = None, text: str = "") -> Template:
    """A template whose instructions start with `[name]` and show every parameter."""
    shown = " ".join(f"{p}={{{{{p}}}}}" for p in params)
    output: dict[str, Any] = {"type": "json", "schema": schema} if schema else {"type": "text"}
    return Template(name=name, params=params, instructions=f"[{name}] {text}{shown}", output_format=output)


def make_system(model: Any = None, *, importable: tuple[str, ...] = ()) -> TaskSystem:
    """A TaskSystem with the tasks the workflow tests use (code steps may call functions of `importable`)."""
    system = TaskSystem(model=model, importable=importable)
    for cls in (Summary, Article, Review, Label):
        system.models.register(cls)
    for template in (
        task("research_topic", {"topic": "str"}, "Summary"),
        task("write_article", {"topic": "str", "notes": "str"}, "Article"),
        task("review_article", {"article": "Article"}, "Review"),
        task("revise_article", {"article": "Article", "score": "int"}, "Article"),
        task("classify", {"text": "str"}, "Label"),
        task("billing", {"text": "str"}),
        task("technical", {"text": "str"}),
        task("general", {"text": "str"}),
        task("reply", {"draft": "str"}),
        task("shout", {"word": "str"}),
        task("count", {"n": "int"}, "Review"),
        task("half", {"x": "float"}),
    ):
        system.register(template)
    return system


def article_writer() -> dict[str, Any]:
    """The issue's article writer: research -> write -> review -> revise loop (bounded)."""
    return {
        "name": "article_writer",
        "version": "1.0",
        "description": "Research a topic, write an article, review it.",
        "state": {
            "fields": [
                {"name": "topic", "type": "str"},
                {"name": "research", "type": "str", "default": ""},
                {"name": "article", "type": "Article?"},
                {"name": "score", "type": "int", "default": 0, "ge": 0, "le": 10},
                {"name": "rounds", "type": "int", "default": 0},
            ]
        },
        "limits": {"requests": 20},
        "steps": [
            {
                "id": "research",
                "task": "research_topic",
                "inputs": {"topic": "{{state.topic}}"},
                "outputs": {"research": "summary"},
            },
            {
                "id": "write",
                "task": "write_article",
                "inputs": {"topic": "{{state.topic}}", "notes": "Use these notes: {{state.research}}"},
                "output": "article",
            },
            {
                "id": "review",
                "task": "review_article",
                "inputs": {"article": "{{state.article}}"},
                "outputs": {"score": "score"},
                "route": [{"when": "state.score < 7 and state.rounds < 2", "to": "revise"}, {"to": "end"}],
            },
            {
                "id": "revise",
                "task": "revise_article",
                "inputs": {"article": "{{state.article}}", "score": "{{state.score}}"},
                "output": "article",
                "set": {"rounds": "state.rounds + 1"},
                "route": [{"to": "review"}],
                "max_visits": 3,
            },
        ],
    }


def triage() -> dict[str, Any]:
    """A support triage router: classify -> one of three handlers -> reply."""
    handler = {"inputs": {"text": "{{state.text}}"}, "output": "draft", "route": [{"to": "reply"}]}
    return {
        "name": "triage",
        "state": [
            {"name": "text", "type": "str"},
            {"name": "label", "type": 'literal["billing", "technical", "other"]'},
            {"name": "draft", "type": "str"},
            {"name": "answer", "type": "str"},
        ],
        "steps": [
            {
                "id": "classify",
                "task": "classify",
                "inputs": {"text": "{{state.text}}"},
                "outputs": {"label": "label"},
                "route": [
                    {"when": "state.label == 'billing'", "to": "billing"},
                    {"when": "state.label == 'technical'", "to": "technical"},
                    {"to": "general"},
                ],
            },
            {"id": "billing", "task": "billing", **handler},
            {"id": "technical", "task": "technical", **handler},
            {"id": "general", "task": "general", **handler},
            {"id": "reply", "task": "reply", "inputs": {"draft": "{{state.draft}}"}, "output": "answer"},
        ],
    }


def register(system: TaskSystem, *docs: dict[str, Any]) -> WorkflowRegistry:
    """`system.workflows`, with `docs` registered (in dependency order)."""
    system.workflows.register_all(Workflow.model_validate(doc) for doc in docs)
    return system.workflows


def runner(system: TaskSystem) -> WorkflowRunner:
    return WorkflowRunner(system.executor)
