"""OpenTelemetry spans of tasks, workflow runs, steps and batches, pydantic-ai's nested inside, read back in memory."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest
from atomtask import TaskStatus, TaskSystem, Template, TraceSettings, Workflow
from atomtask.executors._cache import schema_fingerprint
from atomtask.handlers._tracing import Tracing
from atomtask.testing import FakeProviderServer, Reply
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from pydantic import BaseModel
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.conftest import REPO
from tests.workflow_fixtures import Article, Summary, TaskAnswers, task

# Text that must not reach a span unless content is opted in: in the instructions, the inputs and the answers.
PROMPT = "PROMPT-SENTINEL"
SYSTEM = "SYSTEM-SENTINEL"
INPUT = "INPUT-SENTINEL"
ANSWER = "ANSWER-SENTINEL"
CONTENT = (PROMPT, SYSTEM, INPUT, ANSWER)


class Contact(BaseModel):
    name: str
    age: int


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    with_memory = InMemorySpanExporter()
    yield with_memory
    with_memory.clear()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    """A provider of the test's own, never the global one, so no span leaks between tests."""
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    return tracer_provider


def _answers(*answers: Any) -> FunctionModel:
    """A model answering the output tool with each of `answers` in turn (a dict, or raw JSON text)."""
    queue = list(answers)

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, answer)])

    return FunctionModel(respond, model_name="scripted")


def _system(provider: TracerProvider, model: Any, *, content: bool = False, retries: int = 1) -> TaskSystem:
    settings = TraceSettings(tracer_provider=provider, include_content=content)
    system = TaskSystem(model=model, instrument=settings)
    system.models.register(Contact)
    system.register(
        Template.model_validate(
            {
                "name": "extract",
                "params": {"text": {"type": "str"}},
                "system": f"You are careful. {SYSTEM}",
                "instructions": f"{PROMPT}: read {{{{text}}}}",
                "output_format": {"type": "json", "schema": "Contact"},
                "retries": retries,
            }
        )
    )
    return system


def _tree(spans: tuple[ReadableSpan, ...]) -> list[tuple[int, str]]:
    """The spans as (depth, name), parents before children, siblings by start time."""
    by_parent: dict[int | None, list[ReadableSpan]] = {}
    ids = {span.context.span_id for span in spans}
    for span in spans:
        parent = span.parent.span_id if span.parent is not None and span.parent.span_id in ids else None
        by_parent.setdefault(parent, []).append(span)

    def walk(parent: int | None, depth: int) -> list[tuple[int, str]]:
        rows: list[tuple[int, str]] = []
        for span in sorted(by_parent.get(parent, []), key=lambda s: s.start_time or 0):
            rows.append((depth, span.name))
            rows.extend(walk(span.context.span_id, depth + 1))
        return rows

    return walk(None, 0)


def _span(spans: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    [found] = [span for span in spans if span.name == name]
    return found


def _texts(spans: tuple[ReadableSpan, ...]) -> str:
    """Every attribute value, event attribute and status description of every span, as one text."""
    parts: list[str] = []
    for span in spans:
        parts.extend(str(v) for v in (span.attributes or {}).values())
        parts.append(span.status.description or "")
        for event in span.events:
            parts.append(event.name)
            parts.extend(str(v) for v in (event.attributes or {}).values())
    return "\n".join(parts)


def test_a_repaired_answer_gives_one_task_span_over_pydantic_ais_spans(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """A trailing comma repaired locally: task > invoke_agent > one chat, with atomtask's counts and usage."""
    system = _system(provider, _answers(f'{{"name": "{ANSWER}", "age": 3,}}'))
    result = system.execute("extract", {"text": INPUT})
    assert result.ok, result.error
    spans = exporter.get_finished_spans()
    assert [(0, "task extract"), (1, "invoke_agent atomtask:Contact"), (2, "chat scripted")] == _tree(spans)
    task_span = _span(spans, "task extract")
    usage = result.notes.usage
    expected = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "extract",
        "gen_ai.prompt.name": "extract",
        "gen_ai.output.type": "json",
        "gen_ai.request.model": "scripted",
        "gen_ai.provider.name": "function",
        "gen_ai.system": "function",
        "gen_ai.aggregated_usage.input_tokens": usage.input_tokens,
        "gen_ai.aggregated_usage.output_tokens": usage.output_tokens,
        "atomtask.template": "extract",
        "atomtask.status": "COMPLETE",
        "atomtask.schema.fingerprint": schema_fingerprint(Contact),
        "atomtask.output.mode": "tool",
        "atomtask.model": "function:scripted",
        "atomtask.model.source": "system",
        "atomtask.attempts": 1,
        "atomtask.invalid_answers": 0,
        "atomtask.provider_faults": 0,
        "atomtask.repairs": 1,
        "atomtask.coercions": 0,
        "atomtask.cached": False,
        "atomtask.usage.requests": 1,
        "atomtask.usage.input_tokens": usage.input_tokens,
        "atomtask.usage.output_tokens": usage.output_tokens,
    }
    assert expected == dict(task_span.attributes or {})
    assert StatusCode.UNSET == task_span.status.status_code
    assert usage.input_tokens == _span(spans, "chat scripted").attributes["gen_ai.usage.input_tokens"]


def test_a_reasked_answer_nests_one_chat_span_per_model_request(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """An answer missing a field is re-asked, then valid: two chat spans, two attempts, one invalid."""
    system = _system(provider, _answers({"name": ANSWER}, {"name": ANSWER, "age": 4}))
    result = system.execute("extract", {"text": INPUT})
    assert result.ok, result.error
    spans = exporter.get_finished_spans()
    assert [
        (0, "task extract"),
        (1, "invoke_agent atomtask:Contact"),
        (2, "chat scripted"),
        (2, "chat scripted"),
    ] == _tree(spans)
    attributes = _span(spans, "task extract").attributes or {}
    counts = ("atomtask.attempts", "atomtask.invalid_answers", "atomtask.repairs", "atomtask.usage.requests")
    assert (2, 1, 0, 2) == tuple(attributes[name] for name in counts)


def test_a_failed_task_sets_status_error_and_its_reason(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """Answers that never validate: the task span is ERROR, described by the reason alone; the ledger counts stay."""
    system = _system(provider, _answers({"name": ANSWER}), retries=1)
    result = system.execute("extract", {"text": INPUT})
    assert "output_validation_failure" == result.error.reason
    spans = exporter.get_finished_spans()
    task_span = _span(spans, "task extract")
    attributes = task_span.attributes or {}
    assert (StatusCode.ERROR, "output_validation_failure") == (
        task_span.status.status_code,
        task_span.status.description,
    )
    assert ("output_validation_failure", "output_validation_failure") == (
        attributes["atomtask.failure.reason"],
        attributes["error.type"],
    )
    assert ("FAILED", 2, 2) == (
        attributes["atomtask.status"],
        attributes["atomtask.attempts"],
        attributes["atomtask.invalid_answers"],
    )
    assert [(0, "task extract"), (1, "invoke_agent atomtask:Contact")] == _tree(spans)[:2]


def test_a_task_nests_under_the_callers_span_from_sync_and_async_code(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """A service's request span is the task's parent: `execute` outside a loop, inside one, and `execute_async`."""
    system = _system(provider, _answers({"name": "x", "age": 1}))
    tracer = provider.get_tracer("service")

    async def handler() -> None:
        with tracer.start_as_current_span("request inside a loop"):
            assert system.execute("extract", {"text": "a"}).ok
            assert (await system.execute_async("extract", {"text": "b"})).ok

    with tracer.start_as_current_span("request"):
        assert system.execute("extract", {"text": "c"}).ok
    asyncio.run(handler())
    shallow = [row for row in _tree(exporter.get_finished_spans()) if row[0] < 2]
    assert [
        (0, "request"),
        (1, "task extract"),
        (0, "request inside a loop"),
        (1, "task extract"),
        (1, "task extract"),
    ] == shallow


def test_a_cached_answer_is_a_task_span_without_a_model_call(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """A response cache hit: `atomtask.cached` is true, no pydantic-ai span inside, zero usage."""
    settings = TraceSettings(tracer_provider=provider)
    system = TaskSystem(model=_answers({"name": "x", "age": 1}), instrument=settings, cache_path=":memory:")
    system.models.register(Contact)
    system.register(task("extract", {"text": "str"}, "Contact"))
    assert system.execute("extract", {"text": "a"}, cache=True).ok
    exporter.clear()
    assert system.execute("extract", {"text": "a"}, cache=True).notes.cached
    [hit] = exporter.get_finished_spans()
    attributes = hit.attributes or {}
    assert ("task extract", True, 0) == (hit.name, attributes["atomtask.cached"], attributes["atomtask.usage.requests"])


def test_a_task_that_fails_before_the_model_still_has_its_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """Bad inputs and an unknown template fail without a model call: a lone task span each, ERROR with the reason."""
    system = _system(provider, _answers({"name": "x", "age": 1}))
    system.execute("extract", {"txt": INPUT})
    system.execute("extrakt", {"text": INPUT})
    spans = exporter.get_finished_spans()
    assert [(0, "task extract"), (0, "task extrakt")] == _tree(spans)
    reasons = [(span.attributes or {})["atomtask.failure.reason"] for span in spans]
    assert ["input_validation_failure", "template_not_found"] == reasons
    assert "atomtask.schema.fingerprint" not in (_span(spans, "task extrakt").attributes or {})
    assert {StatusCode.ERROR} == {span.status.status_code for span in spans}


def test_no_prompt_or_output_text_reaches_any_span_unless_opted_in(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """Without `include_content`, neither atomtask's spans nor pydantic-ai's hold the prompt, inputs or answers."""
    system = _system(provider, _answers({"name": ANSWER}, {"name": ANSWER, "age": 4}), retries=1)
    system.execute("extract", {"text": INPUT})
    failing = _system(provider, _answers({"name": ANSWER}), retries=0)
    failing.execute("extract", {"text": INPUT})
    failing.execute("extract", {"text": INPUT, "extra": INPUT})  # an input error's message quotes the value
    text = _texts(exporter.get_finished_spans())
    assert [] == [sentinel for sentinel in CONTENT if sentinel in text]


def test_content_opted_in_reaches_atomtasks_and_pydantic_ais_spans(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """`include_content=True`: the answer on the task span, the prompt and system text in pydantic-ai's messages."""
    system = _system(provider, _answers({"name": ANSWER, "age": 4}), content=True)
    result = system.execute("extract", {"text": INPUT})
    spans = exporter.get_finished_spans()
    assert result.content == (_span(spans, "task extract").attributes or {})["atomtask.output"]
    assert [] == [sentinel for sentinel in CONTENT if sentinel not in _texts(spans)]


def test_content_opted_in_describes_a_failure_with_its_message(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """With content, the ERROR status says the failure's message (which may quote inputs), not only its reason."""
    system = _system(provider, _answers({"name": "x", "age": 1}), content=True)
    result = system.execute("extract", {"txt": INPUT})
    assert result.error.message == _span(exporter.get_finished_spans(), "task extract").status.description


@pytest.mark.usefixtures("allow_model_requests")
@pytest.mark.parametrize("content", [False, True])
def test_an_api_key_never_reaches_a_span(
    provider: TracerProvider, exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch, content: bool
) -> None:
    """Over real HTTP with a key in the environment, a provider that echoes it in a 401: no span holds it."""
    key = "sk-tracing-sentinel-0123456789abcdef"
    with FakeProviderServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", key)
        server.script(
            Reply.tool_call(args={"name": ANSWER, "age": 4}),
            Reply.error(401, f"Incorrect API key provided: {key}", error_type="invalid_request_error"),
        )
        system = _system(provider, "openai-chat:gpt-4o-mini", content=content)
        assert system.execute("extract", {"text": INPUT}).ok
        assert "provider_error" == system.execute("extract", {"text": INPUT}).error.reason
    spans = exporter.get_finished_spans()
    assert "openai" == (spans[-1].attributes or {})["gen_ai.provider.name"]
    assert key not in _texts(spans)
    assert key[:20] not in _texts(spans)
    assert content == ("Incorrect API key provided: ***" in _texts(spans))  # the provider's error, redacted


def _workflow_system(provider: TracerProvider, answers: TaskAnswers) -> TaskSystem:
    system = TaskSystem(model=answers.model, instrument=TraceSettings(tracer_provider=provider))
    system.models.register(Summary)
    system.models.register(Article)
    system.register(task("research_topic", {"topic": "str"}, "Summary"))
    system.register(task("write_article", {"topic": "str", "notes": "str"}, "Article"))
    system.register(task("shout", {"word": "str"}))
    system.workflows.register_all([Workflow.model_validate(_researcher()), Workflow.model_validate(_writer())])
    return system


def _researcher() -> dict[str, Any]:
    return {
        "name": "researcher",
        "state": [{"name": "subject", "type": "str"}, {"name": "notes", "type": "str"}],
        "steps": [
            {
                "id": "look",
                "task": "research_topic",
                "inputs": {"topic": "{{state.subject}}"},
                "outputs": {"notes": "summary"},
            }
        ],
    }


def _writer() -> dict[str, Any]:
    return {
        "name": "writer",
        "state": [
            {"name": "topic", "type": "str"},
            {"name": "research", "type": "str", "default": ""},
            {"name": "words", "type": "list[str]", "default": ["a", "b"]},
            {"name": "loud", "type": "list[str]", "default": []},
            {"name": "article", "type": "Article?"},
        ],
        "steps": [
            {
                "id": "research",
                "workflow": "researcher",
                "inputs": {"subject": "{{state.topic}}"},
                "outputs": {"research": "notes"},
            },
            {
                "id": "shout",
                "task": "shout",
                "for_each": "state.words",
                "inputs": {"word": "{{item}}"},
                "collect": "loud",
            },
            {
                "id": "write",
                "task": "write_article",
                "inputs": {"topic": "{{state.topic}}", "notes": "{{state.research}}"},
                "output": "article",
            },
        ],
    }


def test_a_workflow_run_nests_its_steps_sub_workflows_and_tasks(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """workflow > step > (sub-workflow > step > task | one task per item | task) > pydantic-ai's spans."""
    answers = TaskAnswers(
        research_topic=[{"summary": "notes"}], shout=["A"], write_article=[{"title": "T", "body": "B"}]
    )
    system = _workflow_system(provider, answers)
    result = system.run_workflow("writer", {"topic": "tides"})
    assert TaskStatus.COMPLETE == result.status, result.error
    spans = exporter.get_finished_spans()
    assert [
        (0, "workflow writer"),
        (1, "step research"),
        (2, "workflow researcher"),
        (3, "step look"),
        (4, "task research_topic"),
        (1, "step shout"),
        (2, "task shout"),
        (2, "task shout"),
        (1, "step write"),
        (2, "task write_article"),
    ] == [row for row in _tree(spans) if row[1].split()[0] in ("workflow", "step", "task")]
    run = _span(spans, "workflow writer").attributes or {}
    expected = {
        "gen_ai.operation.name": "invoke_workflow",
        "gen_ai.workflow.name": "writer",
        "atomtask.workflow": "writer",
        "atomtask.status": "COMPLETE",
        "atomtask.steps": 4,
        "atomtask.usage.requests": 4,
    }
    assert expected == {name: run[name] for name in expected}
    shout = _span(spans, "step shout").attributes or {}
    assert ("writer", "shout", "task", 1, "shout", True, 2, 2) == tuple(
        shout[name]
        for name in (
            "atomtask.workflow",
            "atomtask.step",
            "atomtask.step.kind",
            "atomtask.step.visit",
            "atomtask.step.runs",
            "atomtask.step.for_each",
            "atomtask.step.calls",
            "atomtask.usage.requests",
        )
    )
    assert "workflow" == (_span(spans, "step research").attributes or {})["atomtask.step.kind"]


def test_a_failed_workflow_marks_its_run_and_failed_step_as_errors(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """A task that fails stops the run: the task, its step and the run are ERROR, each with its reason."""
    answers = TaskAnswers(research_topic=[{"wrong": 1}], shout=["A"], write_article=[{"title": "T", "body": "B"}])
    system = _workflow_system(provider, answers)
    result = system.run_workflow("writer", {"topic": "tides"})
    assert TaskStatus.FAILED == result.status
    spans = exporter.get_finished_spans()
    errors = [span for span in spans if span.status.status_code is StatusCode.ERROR]
    assert "invoke_agent atomtask:Summary" == errors[0].name  # pydantic-ai's run, inside the task
    failed = {span.name: (span.attributes or {}) for span in errors[1:]}
    assert ["task research_topic", "step look", "workflow researcher", "step research", "workflow writer"] == list(
        failed
    )
    assert ("step_failed", "research", "step_failed") == (
        failed["workflow writer"]["atomtask.failure.reason"],
        failed["workflow writer"]["atomtask.failure.step"],
        _span(spans, "workflow writer").status.description,
    )
    assert "output_validation_failure" == failed["step look"]["atomtask.failure.task_reason"]


def test_the_batch_helper_nests_its_items_and_counts_them(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """`Tracing.batch`: one span over the items' task spans, ending with the counts and the usage."""
    system = _system(provider, _answers({"name": ANSWER, "age": 4}))
    tracing = system.manager.tracing
    assert isinstance(tracing, Tracing)

    async def run_batch() -> None:
        with tracing.batch("extract", kind="template", batch_id="b1", items=3) as span:
            results = await asyncio.gather(*(system.execute_async("extract", {"text": t}) for t in ("a", "b")))
            for result in results:
                span.item(ok=result.ok, usage=result.notes.usage)
            span.item(ok=False, resumed=True)

    asyncio.run(run_batch())
    spans = exporter.get_finished_spans()
    assert [(0, "batch extract"), (1, "task extract"), (1, "task extract")] == [r for r in _tree(spans) if r[0] < 2]
    batch = _span(spans, "batch extract")
    counts = ("atomtask.batch.items", "atomtask.batch.completed", "atomtask.batch.failed", "atomtask.batch.resumed")
    assert (3, 2, 1, 1, 2) == (
        *(batch.attributes[name] for name in counts),
        batch.attributes["atomtask.usage.requests"],
    )
    assert (StatusCode.ERROR, "1 item(s) failed") == (batch.status.status_code, batch.status.description)


def test_tracing_off_leaves_agents_uninstrumented_and_cached_as_before() -> None:
    """Off (the default): no Tracing, no instrumentation on the Agent, one Agent reused across calls."""
    system = TaskSystem(model=_answers({"name": "x", "age": 1}), instrument=False)
    system.models.register(Contact)
    system.register(task("extract", {"text": "str"}, "Contact"))
    assert system.execute("extract", {"text": "a"}).ok and system.execute("extract", {"text": "b"}).ok
    assert (None, 1) == (system.manager.tracing, system.manager.agent_count())
    [(agent, _)] = system.manager._agents.values()
    assert None is agent.instrument


def test_tracing_on_instruments_the_agent_with_the_systems_settings(provider: TracerProvider) -> None:
    """On: the cached Agent carries the Tracing's pydantic-ai settings, content switched off with atomtask's."""
    system = _system(provider, _answers({"name": "x", "age": 1}))
    assert system.execute("extract", {"text": "a"}).ok and system.execute("extract", {"text": "b"}).ok
    tracing = system.manager.tracing
    assert tracing is not None and 1 == system.manager.agent_count()
    [(agent, _)] = system.manager._agents.values()
    assert (tracing.instrumentation, False) == (agent.instrument, tracing.instrumentation.include_content)


_NO_COST = textwrap.dedent(
    """
    import json, sys
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    before = sorted(m for m in sys.modules if m.startswith("opentelemetry"))
    from atomtask import TaskSystem
    system = TaskSystem(templates=sys.argv[1])
    system.templates.names()
    loaded = any(m.startswith("opentelemetry") for m in sys.modules if m not in before)

    from opentelemetry import trace
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    result = system.execute("summarize", {"document": "tides"}, model="test")
    print(json.dumps({
        "loaded_on_load": loaded,
        "ok": result.ok,
        "spans": [span.name for span in exporter.get_finished_spans()],
        "tracing_module": "atomtask.handlers._tracing" in sys.modules,
    }))
    """
)


@pytest.mark.parametrize("env", [{}, {"ATOMTASK_OTEL": "1"}])
def test_off_costs_no_import_and_no_span_and_the_environment_turns_it_on(env: dict[str, str]) -> None:
    """In a fresh process: loading imports no OpenTelemetry; a run makes spans only with `ATOMTASK_OTEL=1`."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("ATOMTASK_OTEL", "ATOMTASK_MODEL"))}
    completed = subprocess.run(
        [sys.executable, "-c", _NO_COST, str(REPO / "templates")],
        env={**environ, **env, "PYDANTIC_AI_NO_BANNER": "1"},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    seen = json.loads(completed.stdout.strip().splitlines()[-1])
    on = bool(env)
    assert (False, True, on) == (seen["loaded_on_load"], seen["ok"], seen["tracing_module"])
    assert (["task summarize"] if on else []) == [name for name in seen["spans"] if name.startswith("task")]
    assert on == ("invoke_agent atomtask:Summary" in seen["spans"])


def test_tool_calls_nest_pydantic_ais_tool_spans_under_the_task(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """task > invoke_agent > chat, the tool's span (`execute_tool lookup_price`), chat: the tool's call is traced."""
    from atomtask.testing import ToolCallReply, scripted_model

    settings = TraceSettings(tracer_provider=provider)
    system = TaskSystem(
        model=scripted_model(
            ToolCallReply({"product": "grinder"}, name="lookup_price"),
            ToolCallReply({"name": "Grinder", "age": 3}, name="final_result"),
        ),
        instrument=settings,
        importable=["tests"],
    )
    system.models.register(Contact)
    system.register(
        Template(
            name="priced",
            instructions="Price it.",
            tools=["tests.handlers.tool_funcs:lookup_price"],
            output_format={"type": "json", "schema": "Contact"},
        )
    )
    result = system.execute("priced")
    assert result.ok, result.error
    assert [
        (0, "task priced"),
        (1, "invoke_agent atomtask:Contact"),
        (2, "chat scripted"),
        (2, "execute_tool lookup_price"),
        (2, "chat scripted"),
    ] == _tree(exporter.get_finished_spans())
