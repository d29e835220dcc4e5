"""The prompt-quality rules (W2xx) on templates and output JSON Schemas."""

from __future__ import annotations

from typing import Literal

from atomtask import Template
from atomtask.lint._rules import schema_issues, template_issues
from atomtask.loading._template_registry import compile_template
from atomtask.schemas import ModelRegistry
from pydantic import BaseModel, Field


def test_unused_and_system_only_parameters() -> None:
    """W201 for a parameter used nowhere; W202 for a required one only `system` mentions."""
    template = Template(
        name="t",
        params={"text": "str", "tone": "str", "spare": {"type": "int", "default": 1}, "lang": "str"},
        system="Be {{tone}}.",
        instructions="Summarise {{text}} in {{lang}}.",
    )
    issues = [(code, field) for code, _, field in template_issues(compile_template(template, ModelRegistry()))]
    assert [("W202", "params.tone"), ("W201", "params.spare")] == issues


def test_optional_parameter_in_system_only_is_fine() -> None:
    """A parameter with a default may live in `system` alone."""
    template = Template(
        name="t", params={"tone": {"type": "str", "default": "calm"}}, system="{{tone}}", instructions="Go"
    )
    assert [] == list(template_issues(compile_template(template, ModelRegistry())))


class Inner(BaseModel):
    """Described, so a field typed by it needs no description of its own."""

    x: int = Field(description="x")


class Verdict(BaseModel):
    label: Literal["Bug", "bug ", "Feature"] = Field(description="The label")
    score: float
    inner: Inner
    my_reasoning: str = Field(description="Why")


def test_schema_rules() -> None:
    """W203 for an undescribed field, W204 for reasoning after the answer, W205 for confusable values."""
    issues = [(code, owner, field) for code, _, owner, field in schema_issues(Verdict.model_json_schema())]
    assert [
        ("W205", "Verdict", "label"),
        ("W203", "Verdict", "score"),
        ("W204", "Verdict", "my_reasoning"),
    ] == issues


def test_reasoning_first_is_fine() -> None:
    """Reasoning before the answer, every field described and distinct values: no issue."""

    class Good(BaseModel):
        rationale: str = Field(description="Why")
        answer: Literal["yes", "no"] = Field(description="The answer")

    assert [] == list(schema_issues(Good.model_json_schema()))


def test_identifier_fields_are_not_answers() -> None:
    """An `id` before the reasoning is a key, not an answer: no W204; a score before it still is."""

    class Pick(BaseModel):
        id: str = Field(description="d")
        reason: str = Field(description="d")
        score: float = Field(description="d")
        reasoning: str = Field(description="d")

    issues = [(code, field) for code, _, _, field in schema_issues(Pick.model_json_schema())]
    assert [("W204", "reasoning")] == issues


def w204(model: type[BaseModel]) -> list[str | None]:
    return [field for code, _, _, field in schema_issues(model.model_json_schema()) if code == "W204"]


def test_free_text_named_like_analysis_is_not_reasoning() -> None:
    """`analysis` (or `summary`) after an answer is part of the answer, not misplaced reasoning."""

    class Report(BaseModel):
        verdict: Literal["ok", "bad"] = Field(description="d")
        analysis: str = Field(description="The full analysis.")
        summary: str = Field(description="d")

    assert [] == w204(Report)


def test_reasoning_after_free_text_only_is_fine() -> None:
    """Reasoning after a text field that is no answer (no choice, flag, number or answer name) is not flagged."""

    class Note(BaseModel):
        summary: str = Field(description="d")
        reasoning: str = Field(description="d")

    assert [] == w204(Note)


def test_nested_objects_are_not_judged() -> None:
    """Field order inside a nested object (a list item) is not W204's concern; the root's is."""

    class Item(BaseModel):
        score: float = Field(description="d")
        reason: str = Field(description="d")

    class Result(BaseModel):
        items: list[Item] = Field(description="d")

    assert [] == w204(Result)


def test_reasoning_is_found_by_role() -> None:
    """A text field described as the reasoning counts; a reasoning-named object field does not."""

    class Why(BaseModel):
        x: int = Field(description="d")

    class Judged(BaseModel):
        flagged: bool = Field(description="d")
        notes: str = Field(description="The reasoning behind the flag.")
        explanation: Why = Field(description="d")

    assert ["notes"] == w204(Judged)
