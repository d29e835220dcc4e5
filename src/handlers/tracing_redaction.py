"""Spans that cannot carry an API key: a tracer provider whose spans redact exceptions, events and status text.

A provider's error body can quote the key it rejected ("Incorrect API key provided: sk-..."), and with
content opted in pydantic-ai records a failed request's exception in full on its spans. atomtask hands
pydantic-ai (and its own tracer) `RedactingTracerProvider(user's provider)`: every exception event,
event attribute and status description goes through `handlers.redact` before it reaches the user's
provider, and without content an exception keeps only its type (as pydantic-ai does then). Attributes
set directly pass as they are: a key only ever arrives inside a provider's error, and attribute writes
are the spans' hot path. This wraps the OpenTelemetry API's `TracerProvider`, `Tracer` and `Span`
interfaces; nothing of the SDK or of pydantic-ai is patched.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator, Mapping, Sequence
from types import TracebackType

from atomtask.handlers.redact import redact
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode, Tracer, TracerProvider
from opentelemetry.util import types

# What every `Tracer` of the API and SDK decorates `start_as_current_span` with (a context manager usable
# as a decorator of sync and async functions too); the override must keep that type.
from opentelemetry.util._decorator import _agnosticcontextmanager

__all__ = ["RedactingTracerProvider"]


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
