"""The attempt ledger and provider faults: retried with backoff over real HTTP, then reported with the status."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from atomtask import (
    FailureReason,
    OutputFormat,
    ProviderRetries,
    TaskSystem,
    Template,
    TemplateLimits,
    UsageNotes,
)
from atomtask.handlers._ledger import remaining_limits
from atomtask.testing import FakeProviderServer, Reply, ServerReply, TokenUsage
from pydantic import BaseModel
from pydantic_ai.settings import ModelSettings

pytestmark = pytest.mark.usefixtures("allow_model_requests")

ITEM = {"name": "apple", "qty": 3}
NO_WAIT = ProviderRetries(attempts=2, backoff=0, max_backoff=0)  # Retry-After too


class Item(BaseModel):
    name: str
    qty: int


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


def system_for(retries: ProviderRetries = NO_WAIT) -> TaskSystem:
    system = TaskSystem(provider_retries=retries)
    system.models.register(Item)
    system.register(
        Template(name="item", instructions="give an item", output_format=OutputFormat(type="json", schema="Item"))
    )
    return system


FAULTS: dict[str, tuple[ServerReply, int | None, str]] = {
    "429": (Reply.error(429, "slow down"), 429, "ModelRateLimitError"),
    "500": (Reply.error(500, "boom"), 500, "ModelServerError"),
    "503": (Reply.error(503, "overloaded"), 503, "Model"),
    "disconnect": (Reply.disconnect(), None, "ModelConnectionError"),
    "truncated": (Reply.truncated_stream('{"name": "apple", "qty": 3}'), None, "ModelConnectionError"),
    "timeout": (Reply.delay(1.0, Reply.tool_call(args=ITEM)), None, "ModelTimeoutError"),
}


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_provider_fault_is_retried_and_kept_in_the_ledger(server: FakeProviderServer, fault: str, wire: str) -> None:
    """429, 5xx, a dropped connection, a truncated stream and a timeout are retried; the fault is in the ledger."""
    reply, status, error_type = FAULTS[fault]
    settings = ModelSettings(timeout=0.2)
    model = (
        server.openai_chat_model(settings=settings) if wire == "openai" else server.anthropic_model(settings=settings)
    )
    server.script(reply, Reply.tool_call(args=ITEM))
    result = system_for().execute("item", model=model)
    assert result.ok, result.error
    assert Item(**ITEM) == result.parsedContent
    faulted, answered = result.notes.attempts
    assert status == faulted.status
    assert faulted.fault is not None and faulted.fault.startswith(error_type)
    assert not faulted.valid
    assert faulted.raw_output is None
    assert answered.valid and answered.raw_output is not None
    assert [1, 2] == [a.index for a in result.notes.attempts]
    assert 1 == result.notes.usage.requests


def test_exhausted_provider_retries_report_provider_error_with_status(server: FakeProviderServer) -> None:
    """After the allowed retries the task is FAILED provider_error with the HTTP status, every try in the ledger."""
    server.script(*[Reply.error(503, "overloaded, try later")] * 3)
    result = system_for(ProviderRetries(attempts=2, backoff=0)).execute("item", model=server.openai_chat_model())
    assert result.error is not None
    assert FailureReason.PROVIDER_ERROR == result.error.reason
    assert 503 == result.error.details["status"]
    assert [503, 503, 503] == [a.status for a in result.notes.attempts]
    assert 3 == len(server.requests)


def test_client_errors_are_not_retried(server: FakeProviderServer) -> None:
    """A 400 is the request's fault: retrying would fail the same way, so it is reported at once."""
    server.script(Reply.error(400, "bad request"))
    result = system_for().execute("item", model=server.openai_chat_model())
    assert result.error is not None
    assert 400 == result.error.details["status"]
    assert 1 == len(server.requests)


def test_connection_refused_is_retried_then_reported() -> None:
    """A server that is gone is retried, then FAILED provider_error."""
    with FakeProviderServer() as gone:
        model = gone.openai_chat_model()
    result = system_for().execute("item", model=model)
    assert result.error is not None
    assert FailureReason.PROVIDER_ERROR == result.error.reason
    assert 3 == len(result.notes.attempts)
    assert all(a.fault and "ModelConnectionError" in a.fault for a in result.notes.attempts)


def test_ledger_records_model_mode_usage_and_duration(server: FakeProviderServer) -> None:
    """Each answered attempt names its model and output mode and carries its usage, cost and duration."""
    server.script(Reply.tool_call(args={"name": "apple"}), Reply.tool_call(args=ITEM))
    result = system_for().execute("item", model=server.openai_chat_model())
    first, second = result.notes.attempts
    assert "openai:gpt-4o-mini" == first.model == second.model
    assert "tool" == first.output_mode
    assert first.errors and "qty" in str(first.errors)
    assert first.usage.input_tokens > 0 and first.usage.output_tokens > 0
    assert first.usage.cost is not None and first.usage.cost > 0
    assert first.duration_ms is not None and first.duration_ms >= 0
    assert first.usage + second.usage == result.notes.usage


def test_backoff_doubles_and_honours_retry_after_within_the_cap() -> None:
    """The n-th retry waits backoff * 2**(n-1), or the provider's Retry-After, never more than the cap."""
    policy = ProviderRetries(attempts=5, backoff=0.5, max_backoff=3.0)
    assert [0.5, 1.0, 2.0, 3.0] == [policy.delay(n) for n in range(1, 5)]
    assert 1.5 == policy.delay(1, retry_after=1.5)
    assert 3.0 == policy.delay(1, retry_after=60)


def test_remaining_limits_subtract_what_was_spent() -> None:
    """The next run gets the limits minus the usage so far; a used-up limit is named."""
    limits = TemplateLimits(requests=3, total_tokens=100, cost=0.5)
    left = remaining_limits(limits, UsageNotes(requests=1, input_tokens=30, output_tokens=10, cost=0.2))
    assert not isinstance(left, str) and left is not None
    assert 2 == left.request_limit
    assert 60 == left.total_tokens_limit
    assert left.cost_limit is not None and abs(float(left.cost_limit) - 0.3) < 1e-9
    assert "the `requests` limit of 3 (3 used)" == remaining_limits(limits, UsageNotes(requests=3))
    assert None is remaining_limits(None, UsageNotes())


def test_failed_result_after_every_model_carries_the_whole_ledger(server: FakeProviderServer) -> None:
    """When the model and its fallback both fail validation, FAILED keeps every raw answer of both."""
    system = TaskSystem(base_url=server.openai_base_url, provider_retries=NO_WAIT)
    system.models.register(Item)
    system.register(
        Template(
            name="item",
            instructions="give an item",
            output_format=OutputFormat(type="json", schema="Item"),
            model="openai-chat:gpt-4o-mini",
            fallbacks=["openai-chat:gpt-4o"],
            retries=1,
        )
    )
    server.script(*[Reply.tool_call(args={"name": f"answer {n}"}) for n in range(4)])
    result = system.execute("item")
    assert result.error is not None
    assert FailureReason.OUTPUT_VALIDATION_FAILURE == result.error.reason
    ledger = result.notes.attempts
    assert ["openai-chat:gpt-4o-mini"] * 2 + ["openai-chat:gpt-4o"] * 2 == [a.model for a in ledger]
    assert [f'{{"name": "answer {n}"}}' for n in range(4)] == [a.raw_output for a in ledger]
    assert all(a.errors for a in ledger)
    assert sum(a.usage.output_tokens for a in ledger) == result.notes.usage.output_tokens


def test_provider_error_moves_on_to_the_fallback(server: FakeProviderServer) -> None:
    """A model that keeps failing at the provider hands over to the next one."""
    system = TaskSystem(base_url=server.openai_base_url, provider_retries=ProviderRetries(attempts=0))
    system.models.register(Item)
    system.register(
        Template(
            name="item",
            instructions="give an item",
            output_format=OutputFormat(type="json", schema="Item"),
            model="openai-chat:gpt-4o-mini",
            fallbacks=["test"],
        )
    )
    server.script(Reply.error(500, "down"))
    result = system.execute("item")
    assert result.ok, result.error
    assert [500, None] == [a.status for a in result.notes.attempts]
    assert 1 == len(server.requests)  # the SDK's own retries are off: atomtask owns retrying
    assert "test" == result.notes.model


def test_cost_limit_stops_before_the_next_attempt(server: FakeProviderServer) -> None:
    """With known prices, a cost limit reached by earlier attempts ends the task before another call."""
    system = system_for()
    system.register(
        Template(
            name="priced",
            instructions="give an item",
            output_format=OutputFormat(type="json", schema="Item"),
            retries=3,
            limits=TemplateLimits(cost=0.001),
        ),
    )
    usage = TokenUsage(input_tokens=10_000, output_tokens=1_000)  # about $0.002 on gpt-4o-mini
    server.script(*[Reply.tool_call(args={"name": "no qty"}, usage=usage)] * 4)
    result = system.execute("priced", model=server.openai_chat_model())
    assert result.error is not None
    assert FailureReason.USAGE_LIMIT_EXCEEDED == result.error.reason
    assert 1 == len(server.requests)
    assert result.notes.usage.cost is not None and result.notes.usage.cost > 0.001


EMPTY_ANSWER_MODELS = {
    "openai": lambda server: server.openai_chat_model(),
    "anthropic-streamed": lambda server: server.anthropic_model(),
    "anthropic": lambda server: server.anthropic_model(settings=ModelSettings(max_tokens=256)),
}


@pytest.mark.parametrize("wire", list(EMPTY_ANSWER_MODELS))
def test_empty_answer_is_a_provider_fault_that_is_retried(server: FakeProviderServer, wire: str) -> None:
    """`choices: []` or `content: []` is retried as a provider fault, kept in the ledger; no output retry is spent."""
    server.script(Reply.empty(usage=TokenUsage(input_tokens=7, output_tokens=0)), Reply.tool_call(args=ITEM))
    result = system_for().execute("item", model=EMPTY_ANSWER_MODELS[wire](server))
    assert result.ok, result.error
    assert Item(**ITEM) == result.parsedContent
    faulted, answered = result.notes.attempts
    assert faulted.fault is not None and faulted.fault.startswith("EmptyAnswerError: ")
    assert None is faulted.errors
    assert answered.valid and not answered.errors
    assert 2 == len(server.requests)
    # A well-formed empty answer reports its usage, which is kept (an `IndexError` leaves none to read).
    assert (7 if wire != "openai" else 0) == faulted.usage.input_tokens


@pytest.mark.parametrize("wire", list(EMPTY_ANSWER_MODELS))
def test_empty_answers_exhaust_into_a_provider_error(server: FakeProviderServer, wire: str) -> None:
    """Empty answers past the allowed retries are FAILED provider_error, not an unexpected error."""
    server.script(*[Reply.empty()] * 3)
    result = system_for(ProviderRetries(attempts=2, backoff=0)).execute("item", model=EMPTY_ANSWER_MODELS[wire](server))
    assert result.error is not None
    assert FailureReason.PROVIDER_ERROR == result.error.reason
    assert "held no output" in result.error.message
    assert 3 == len(server.requests)
    assert 3 * ["EmptyAnswerError"] == [(a.fault or "").split(":")[0] for a in result.notes.attempts]
