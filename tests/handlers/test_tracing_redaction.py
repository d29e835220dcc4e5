"""`RedactingTracerProvider`: exceptions, events and status text reach the user's provider without an API key."""

from __future__ import annotations

import pytest
from atomtask.handlers._tracing import RedactingTracerProvider
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

KEY = "sk-redaction-sentinel-0123456789"


class ProviderRejected(Exception):
    """Stands for a provider's error whose body quotes the key it rejected."""


def _tracer(content: bool) -> tuple[InMemorySpanExporter, RedactingTracerProvider]:
    exporter = InMemorySpanExporter()
    inner = TracerProvider()
    inner.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter, RedactingTracerProvider(inner, include_content=content)


def _event(span: ReadableSpan) -> dict[str, object]:
    [event] = span.events
    return dict(event.attributes or {})


@pytest.fixture(autouse=True)
def _key_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def test_an_exception_keeps_its_text_with_content_but_not_the_key() -> None:
    """With content, the message and stack trace are recorded, the key in them replaced by `***`."""
    exporter, provider = _tracer(content=True)
    span = provider.get_tracer("t").start_span("s")
    span.record_exception(ProviderRejected(f"Incorrect API key provided: {KEY}"))
    span.end()
    event = _event(exporter.get_finished_spans()[0])
    assert "Incorrect API key provided: ***" == event["exception.message"]
    assert KEY not in str(event["exception.stacktrace"])
    assert f"{__name__}.ProviderRejected" == event["exception.type"]


def test_an_exception_keeps_only_its_type_without_content() -> None:
    """Without content, an exception event says its type (as pydantic-ai's do), never its text."""
    exporter, provider = _tracer(content=False)
    span = provider.get_tracer("t").start_span("s")
    span.record_exception(ValueError("the prompt said PRIVATE"), escaped=True)
    span.end()
    assert {"exception.type": "ValueError", "exception.escaped": "True"} == _event(exporter.get_finished_spans()[0])


def test_event_attributes_and_status_descriptions_are_redacted() -> None:
    """An event's text attributes and a status description lose the key; other values pass as they are."""
    exporter, provider = _tracer(content=True)
    span = provider.get_tracer("t").start_span("s")
    span.add_event("retry", {"why": f"HTTP 401 for {KEY}", "attempt": 2})
    span.set_status(Status(StatusCode.ERROR, f"rejected {KEY}"))
    span.end()
    finished = exporter.get_finished_spans()[0]
    assert ({"why": "HTTP 401 for ***", "attempt": 2}, "rejected ***") == (
        _event(finished),
        finished.status.description,
    )


@pytest.mark.parametrize(
    ("content", "description"), [(True, "ProviderRejected: bad key ***"), (False, "ProviderRejected")]
)
def test_an_exception_leaving_a_current_span_is_recorded_and_raised(content: bool, description: str) -> None:
    """`start_as_current_span` records the exception and sets ERROR (its text only with content), then re-raises."""
    exporter, provider = _tracer(content=content)
    with pytest.raises(ProviderRejected), provider.get_tracer("t").start_as_current_span("s"):
        raise ProviderRejected(f"bad key {KEY}")
    finished = exporter.get_finished_spans()[0]
    assert (StatusCode.ERROR, description) == (finished.status.status_code, finished.status.description)
    assert "True" == _event(finished)["exception.escaped"]


def test_spans_started_inside_nest_under_the_current_one() -> None:
    """The redacting span is a real parent: spans of any tracer started inside it are its children."""
    exporter, provider = _tracer(content=False)
    with provider.get_tracer("outer").start_as_current_span("parent") as parent:
        parent.set_attribute("atomtask.template", "extract")
        with provider.inner.get_tracer("plain").start_as_current_span("child"):
            pass
    child, outer = exporter.get_finished_spans()
    assert outer.context.span_id == (child.parent.span_id if child.parent else None)
    assert {"atomtask.template": "extract"} == dict(outer.attributes or {})
