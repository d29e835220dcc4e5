"""OpenTelemetry spans for tasks, workflow runs, steps and batches, with pydantic-ai's own spans nested inside.

Imported only when tracing is on (`TraceSettings`); a TaskSystem without it never imports this module,
and its Agents are built without instrumentation. A `Tracing` holds atomtask's tracer and the
pydantic-ai `InstrumentationSettings` its Agents get, both from the same tracer provider. Every span
is the current span while its work runs, so what runs inside nests under it through the OpenTelemetry
context (asyncio tasks copy it):

    batch {name} > workflow {name} > step {id} > task {template} > invoke_agent (pydantic-ai) > chat {model}

Attributes follow the OpenTelemetry GenAI semantic conventions where they apply (`gen_ai.operation.name`,
`gen_ai.request.model`, `gen_ai.provider.name`, `gen_ai.output.type`, ...), and atomtask's own go under
`atomtask.`. Usage on these parent spans is `gen_ai.aggregated_usage.*` and `atomtask.usage.*`, never
`gen_ai.usage.*`: pydantic-ai's model-request spans inside already carry that, and backends add it
up over a trace (pydantic-ai's own agent-run span does the same for the same reason). Prompt and output
text (the answer, failure messages that may quote inputs or answers) only with `include_content`; the
bytes of an image, document or audio input never (its media type, size and hash: `atomtask.media`).

No span can carry an API key: a provider's error body can quote the key it rejected, and with content
opted in pydantic-ai records a failed request's exception in full. atomtask hands pydantic-ai (and its
own tracer) `RedactingTracerProvider(user's provider)`: every exception event, event attribute and
status description is redacted before it reaches the user's provider, and without content an exception
keeps only its type (as pydantic-ai does then). Attributes set directly pass as they are: a key only
ever arrives inside a provider's error, and attribute writes are the spans' hot path. This wraps the
OpenTelemetry API's `TracerProvider`, `Tracer` and `Span` interfaces; nothing is patched.
"""

from __future__ import annotations

import traceback
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from atomtask.handlers._ledger import redact
from atomtask.system._options import SubtaskRequest, TraceSettings
from atomtask.system._results import (
    StepVisit,
    TaskError,
    TaskResult,
    TaskStatus,
    UsageNotes,
    WorkflowResult,
)
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode, Tracer, TracerProvider
from opentelemetry.util import types
from opentelemetry.util._decorator import _agnosticcontextmanager
from opentelemetry.util.types import AttributeValue
from pydantic import BaseModel
from pydantic_ai.models.instrumented import InstrumentationSettings

if TYPE_CHECKING:
    from atomtask.loading._template_registry import TemplateRegistry
    from atomtask.system._workflows import Step

__all__ = [
    "BatchSpan",
    "RedactingTracerProvider",
    "StepOutcome",
    "Tracing",
    "provider_name",
    "step_attributes",
    "task_attributes",
    "workflow_attributes",
]


class RedactingTracerProvider(TracerProvider):
    """`inner`'s tracers, whose spans redact what may quote a provider's error (kept, redacted, with content)."""

    def __init__(self, inner: TracerProvider, *, include_content: bool) -> None:
        self.inner = inner
        self.include_content = include_content

    def get_tracer(
        self,
        instrumenting_module_name: str,
        instrumenting_library_version: str | None = None,
        schema_url: str | None = None,
        attributes: types.Attributes = None,
    ) -> Tracer:
        tracer = self.inner.get_tracer(instrumenting_module_name, instrumenting_library_version, schema_url, attributes)
        return _RedactingTracer(tracer, self.include_content)


class _RedactingTracer(Tracer):
    def __init__(self, inner: Tracer, include_content: bool) -> None:
        self.inner = inner
        self.include_content = include_content

    def start_span(
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: types.Attributes = None,
        links: Sequence[Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
    ) -> Span:
        return self._start(
            name, context, kind, attributes, links, start_time, record_exception, set_status_on_exception
        )

    @_agnosticcontextmanager
    def start_as_current_span(
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: types.Attributes = None,
        links: Sequence[Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
        end_on_exit: bool = True,
    ) -> Iterator[Span]:
        span = self._start(
            name, context, kind, attributes, links, start_time, record_exception, set_status_on_exception
        )
        with trace.use_span(span, end_on_exit=end_on_exit, record_exception=False, set_status_on_exception=False):
            try:
                yield span
            except Exception as exc:
                span.failed(exc)
                raise

    def _start(
        self,
        name: str,
        context: Context | None,
        kind: SpanKind,
        attributes: types.Attributes,
        links: Sequence[Link] | None,
        start_time: int | None,
        record_exception: bool,
        set_status_on_exception: bool,
    ) -> _RedactingSpan:
        # The inner span never records an exception itself (as a context manager): this one does, redacted.
        span = self.inner.start_span(name, context, kind, attributes, links, start_time, False, False)
        return _RedactingSpan(span, self.include_content, record_exception, set_status_on_exception)


class _RedactingSpan(Span):
    def __init__(self, inner: Span, include_content: bool, record_exception: bool, set_status: bool) -> None:
        self.inner = inner
        self.include_content = include_content
        self._record_on_exit = record_exception
        self._status_on_exit = set_status

    def end(self, end_time: int | None = None) -> None:
        self.inner.end(end_time)

    def get_span_context(self) -> SpanContext:
        return self.inner.get_span_context()

    def set_attributes(self, attributes: Mapping[str, types.AnyValue]) -> None:
        self.inner.set_attributes(attributes)

    def set_attribute(self, key: str, value: types.AnyValue) -> None:
        self.inner.set_attribute(key, value)

    def add_event(self, name: str, attributes: types.Attributes = None, timestamp: int | None = None) -> None:
        self.inner.add_event(name, _redacted(attributes), timestamp)

    def add_link(self, context: SpanContext, attributes: types.Attributes = None) -> None:
        self.inner.add_link(context, attributes)

    def update_name(self, name: str) -> None:
        self.inner.update_name(name)

    def is_recording(self) -> bool:
        return self.inner.is_recording()

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        if isinstance(status, Status):
            status = Status(status.status_code, redact(status.description) if status.description else None)
        self.inner.set_status(status, redact(description) if description else None)

    def record_exception(
        self,
        exception: BaseException,
        attributes: types.Attributes = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        # The attributes the SDK's `record_exception` writes; the message and stack trace only with content.
        kind = type(exception)
        name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
        event: dict[str, types.AnyValue] = {"exception.type": name, "exception.escaped": str(escaped)}
        if self.include_content:
            event["exception.message"] = str(exception)
            event["exception.stacktrace"] = "".join(traceback.format_exception(exception))
        self.add_event("exception", {**event, **(attributes or {})}, timestamp)

    def failed(self, exc: BaseException) -> None:
        """Record `exc` leaving the span's scope, as the SDK would (its text only with content, redacted)."""
        if not self.is_recording():
            return
        if self._record_on_exit:
            self.record_exception(exc, escaped=True)
        if self._status_on_exit:
            text = f"{type(exc).__name__}: {exc}" if self.include_content else type(exc).__name__
            self.set_status(Status(StatusCode.ERROR, text))

    def __exit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> None:
        if exc_val is not None:
            self.failed(exc_val)
        self.end()


def _redacted(attributes: types.Attributes) -> types.Attributes:
    if not attributes:
        return attributes
    return {key: redact(value) if isinstance(value, str) else value for key, value in attributes.items()}


#: The instrumentation scope of atomtask's spans (pydantic-ai's is `pydantic-ai`).
SCOPE = "atomtask"
Attributes = dict[str, AttributeValue]
_O = TypeVar("_O", bound="StepOutcome")

# pydantic-ai provider prefixes -> the GenAI conventions' well-known `gen_ai.provider.name` values.
_PROVIDERS = {
    "openai": "openai",
    "openai-chat": "openai",
    "openai-responses": "openai",
    "azure": "azure.ai.openai",
    "anthropic": "anthropic",
    "google-gla": "gcp.gemini",
    "google-vertex": "gcp.vertex_ai",
    "bedrock": "aws.bedrock",
    "mistral": "mistral_ai",
    "grok": "x_ai",
    "xai": "x_ai",
}


class StepOutcome(Protocol):
    """What a step span reads from a step's outcome (the workflow runner's `Attempted`)."""

    @property
    def visits(self) -> list[StepVisit]: ...

    @property
    def failure(self) -> TaskError | None: ...


class Tracing:
    """A TaskSystem's tracer, and the instrumentation its pydantic-ai Agents get (`Agent.instrument`)."""

    def __init__(self, settings: TraceSettings) -> None:
        inner = settings.tracer_provider or trace.get_tracer_provider()
        # No exception, event or status text reaches `inner` with an API key in it (`RedactingTracerProvider`).
        provider = RedactingTracerProvider(inner, include_content=settings.include_content)
        self.settings = settings
        self.include_content = settings.include_content
        self.tracer = provider.get_tracer(SCOPE, _version())
        #: Given to every Agent: pydantic-ai's agent-run and model-request spans, on the same provider.
        self.instrumentation = InstrumentationSettings(
            tracer_provider=provider,
            include_content=settings.include_content,
            # An image's, document's or audio's bytes never go into a span, content or not: its media type does.
            include_binary_content=False,
        )

    async def task(
        self,
        request: str | SubtaskRequest,
        run: Awaitable[TaskResult[Any]],
        *,
        templates: TemplateRegistry,
        fingerprint: Callable[[type[BaseModel] | None], str],
    ) -> TaskResult[Any]:
        """Await `run` (one task) inside a `task {template}` span; `fingerprint` names the output schema."""
        name = request.name if isinstance(request, SubtaskRequest) else request
        start: Attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}
        with self.tracer.start_as_current_span(f"task {name}", attributes=start) as span:
            result = await run
            schema = fingerprint(templates.compiled(name).output_cls) if name in templates else None
            self._end(span, task_attributes(result, schema, content=self.include_content), result.error)
        return result

    async def workflow(self, name: str, run: Awaitable[WorkflowResult[Any]]) -> WorkflowResult[Any]:
        """Await `run` (one workflow run, or a sub-workflow's) inside a `workflow {name}` span."""
        start: Attributes = {"gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": name}
        with self.tracer.start_as_current_span(f"workflow {name}", attributes=start) as span:
            result = await run
            self._end(span, workflow_attributes(result), result.error)
        return result

    async def step(self, workflow: str, step: Step, visit: int, run: Awaitable[_O]) -> _O:
        """Await `run` (one visit of a top-level step, with its retries, items or members) inside a `step {id}` span."""
        start: Attributes = {
            "atomtask.workflow": workflow,
            "atomtask.step": step.id,
            "atomtask.step.kind": step.kind,
            "atomtask.step.visit": visit,
        }
        named = step.task or step.workflow
        if named is not None:
            start["atomtask.step.runs"] = named
        if step.for_each is not None:
            start["atomtask.step.for_each"] = True
        with self.tracer.start_as_current_span(f"step {step.id}", attributes=start) as span:
            outcome = await run
            self._end(span, step_attributes(outcome.visits, outcome.failure), outcome.failure)
        return outcome

    @contextmanager
    def batch(
        self, name: str, *, kind: str, batch_id: str | None = None, items: int | None = None
    ) -> Iterator[BatchSpan]:
        """A `batch {name}` span, current while the batch runs, so its items' spans nest inside.

        Example (for `atomtask.batch`):
            ```python
            with tracing.batch("extract", kind="template", batch_id=run_id, items=len(items)) as span:
                for result in results:
                    span.item(ok=result.status is TaskStatus.COMPLETE, usage=result.usage)
            ```
        """
        start: Attributes = {"atomtask.batch.name": name, "atomtask.batch.kind": kind}
        if batch_id is not None:
            start["atomtask.batch.id"] = batch_id
        if items is not None:
            start["atomtask.batch.items"] = items
        with self.tracer.start_as_current_span(f"batch {name}", attributes=start) as span:
            counts = BatchSpan(span)
            yield counts
            counts.close()

    def _end(self, span: Span, attributes: Attributes, error: TaskError | TaskError | None) -> None:
        """Set the finished work's attributes; a failure is ERROR, said by its reason (its message with content)."""
        span.set_attributes(attributes)
        if error is not None:
            reason = str(attributes.get("atomtask.failure.reason", "failed"))
            span.set_status(Status(StatusCode.ERROR, redact(error.message) if self.include_content else reason))


class BatchSpan:
    """The counts a batch span ends with: items completed, failed and resumed, and their usage."""

    def __init__(self, span: Span) -> None:
        self.span = span
        self.completed = 0
        self.failed = 0
        self.resumed = 0
        self.usage = UsageNotes()

    def item(self, *, ok: bool, usage: UsageNotes | None = None, resumed: bool = False) -> None:
        """Count one finished item (`resumed`: taken from the batch's record, not run again)."""
        if ok:
            self.completed += 1
        else:
            self.failed += 1
        self.resumed += resumed
        if usage is not None and not resumed:
            self.usage = self.usage + usage

    def close(self) -> None:
        attributes: Attributes = {
            "atomtask.batch.completed": self.completed,
            "atomtask.batch.failed": self.failed,
            "atomtask.batch.resumed": self.resumed,
            **_usage(self.usage),
        }
        self.span.set_attributes(attributes)
        if self.failed:
            self.span.set_status(Status(StatusCode.ERROR, f"{self.failed} item(s) failed"))


def task_attributes(result: TaskResult[Any], schema: str | None, *, content: bool = False) -> Attributes:
    """The attributes of a finished task's span: what ran, how it went, what it cost; the answer only with `content`."""
    notes = result.notes
    attempts = notes.attempts
    attributes: Attributes = {
        "gen_ai.prompt.name": notes.template,
        "gen_ai.output.type": "text" if notes.output_mode in (None, "text") else "json",
        "atomtask.template": notes.template,
        "atomtask.status": result.status.value,
        "atomtask.attempts": len(attempts),
        "atomtask.invalid_answers": sum(1 for a in attempts if a.errors),
        "atomtask.provider_faults": sum(1 for a in attempts if a.fault is not None),
        "atomtask.repairs": sum(len(a.repairs) for a in attempts),
        "atomtask.coercions": sum(len(a.coercions) for a in attempts),
        "atomtask.cached": notes.cached,
        **_usage(notes.usage),
    }
    if schema is not None:
        attributes["atomtask.schema.fingerprint"] = schema
    if notes.output_mode is not None:
        attributes["atomtask.output.mode"] = notes.output_mode
    if notes.model is not None:
        attributes |= _model(notes.model)
        if notes.model_source is not None:
            attributes["atomtask.model.source"] = notes.model_source
    if len(notes.models_tried) > 1:
        attributes["atomtask.models_tried"] = list(notes.models_tried)
    if notes.media:  # what was sent beside the prompt: never the bytes
        attributes["atomtask.media"] = [
            f"{m.param}: {m.media_type or m.kind}" + ("" if m.size is None else f", {m.size} bytes, sha256 {m.sha256}")
            for m in notes.media
        ]
    if result.error is not None:
        attributes["atomtask.failure.reason"] = attributes["error.type"] = result.error.reason.value
    if content and result.content is not None:
        attributes["atomtask.output"] = redact(result.content)
    return attributes


def workflow_attributes(result: WorkflowResult[Any]) -> Attributes:
    """The attributes of a finished workflow run's span: its steps, outcome and usage (all its tasks')."""
    attributes: Attributes = {
        "atomtask.workflow": result.workflow,
        "atomtask.status": result.status.value,
        "atomtask.steps": len(result.steps),
        **_usage(result.usage),
    }
    if result.run_id is not None:
        attributes["atomtask.run_id"] = result.run_id
    attributes |= _failure(result.error)
    return attributes


def step_attributes(visits: Sequence[StepVisit], failure: TaskError | None) -> Attributes:
    """The attributes of a finished step visit's span: how many calls it made, how it ended, its usage."""
    usage = sum((v.usage for v in visits), UsageNotes())
    attributes: Attributes = {
        "atomtask.status": (TaskStatus.FAILED if failure is not None else TaskStatus.COMPLETE).value,
        "atomtask.step.calls": len(visits),
        **_usage(usage),
    }
    return attributes | _failure(failure)


def provider_name(provider: str) -> str:
    """`gen_ai.provider.name` for a pydantic-ai provider prefix (`openai-chat` -> `openai`); others as they are."""
    return _PROVIDERS.get(provider, provider)


def _model(label: str) -> Attributes:
    provider, _, name = label.partition(":")
    if not name:
        return {"gen_ai.request.model": label, "atomtask.model": label}
    known = provider_name(provider)
    # `gen_ai.system` is the older name of `gen_ai.provider.name`; pydantic-ai's spans carry both.
    return {
        "gen_ai.request.model": name,
        "gen_ai.provider.name": known,
        "gen_ai.system": known,
        "atomtask.model": label,
    }


def _usage(usage: UsageNotes) -> Attributes:
    attributes: Attributes = {
        "gen_ai.aggregated_usage.input_tokens": usage.input_tokens,
        "gen_ai.aggregated_usage.output_tokens": usage.output_tokens,
        "atomtask.usage.requests": usage.requests,
        "atomtask.usage.input_tokens": usage.input_tokens,
        "atomtask.usage.output_tokens": usage.output_tokens,
    }
    if usage.cost is not None:
        attributes["atomtask.usage.cost"] = usage.cost
    return attributes


def _failure(failure: TaskError | None) -> Attributes:
    if failure is None:
        return {}
    attributes: Attributes = {"atomtask.failure.reason": failure.reason.value, "error.type": failure.reason.value}
    if failure.step is not None:
        attributes["atomtask.failure.step"] = failure.step
    task_reason = failure.details.get("task_reason")
    if isinstance(task_reason, str):
        attributes["atomtask.failure.task_reason"] = task_reason
    return attributes


def _version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("atomtask")
    except PackageNotFoundError:  # pragma: no cover - run from a checkout that was never installed
        return None
