"""A streamed model call over real HTTP: a stream that breaks off mid-answer is recorded and resumed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from atomtask import FailureReason, OutputFormat, ProviderRetries, TaskResult, TaskSystem, Template
from atomtask.handlers._streaming import streams
from atomtask.testing import FakeProviderServer, Reply
from pydantic import BaseModel
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.models.test import TestModel

pytestmark = pytest.mark.usefixtures("allow_model_requests")

ITEM = {"name": "apple", "qty": 3}
NO_WAIT = ProviderRetries(attempts=2, backoff=0, max_backoff=0)


class Item(BaseModel):
    name: str
    qty: int


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


def system_for(retries: int | None = None) -> TaskSystem:
    system = TaskSystem(provider_retries=NO_WAIT)
    system.models.register(Item)
    system.register(
        Template(
            name="item",
            instructions="give an item",
            output_format=OutputFormat(type="json", schema="Item"),
            retries=retries,
        )
    )
    return system


async def streamed(system: TaskSystem, model: Any) -> tuple[list[Any], TaskResult[Any]]:
    stream = system.execute_stream("item", model=model, debounce_by=None)
    partials = [partial async for partial in stream]
    return partials, await stream.get_result()


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_a_stream_broken_off_mid_answer_is_retried(server: FakeProviderServer, wire: str) -> None:
    """The dropped stream is a fault in the ledger with the text received so far; the retry answers."""
    model = server.openai_chat_model() if wire == "openai" else server.anthropic_model()
    server.script(Reply.truncated_stream(json.dumps(ITEM)), Reply.tool_call(args=ITEM))
    partials, result = await streamed(system_for(), model)
    assert result.ok, result.error
    assert Item(**ITEM) == result.parsedContent
    broken, answered = result.notes.attempts
    assert broken.fault is not None and broken.fault.startswith("ModelConnectionError")
    assert "broke off mid-answer" in broken.fault
    assert broken.raw_output and json.dumps(ITEM).startswith(broken.raw_output.strip())
    assert answered.valid
    assert {2} == {p.attempt for p in partials}
    assert [True, True] == [r.streamed for r in server.requests]


async def test_a_fault_after_a_re_ask_resumes_the_conversation(server: FakeProviderServer) -> None:
    """Resumed after a re-ask, the model still gets the feedback; the re-ask spent stays spent."""
    server.script(
        Reply.tool_call(args={"name": "apple"}),
        Reply.truncated_stream(json.dumps(ITEM)),
        Reply.tool_call(args=ITEM),
    )
    partials, result = await streamed(system_for(retries=1), server.openai_chat_model())
    assert result.ok, result.error
    invalid, broken, answered = result.notes.attempts
    assert invalid.errors and broken.fault and answered.valid
    resumed = server.requests[2].body["messages"]
    assert len(resumed) == len(server.requests[1].body["messages"])  # the broken answer is not sent back
    assert "qty" in json.dumps(resumed[-1])
    assert [3] == sorted({p.attempt for p in partials})


async def test_re_asks_spent_before_a_fault_are_not_given_back(server: FakeProviderServer) -> None:
    """With one re-ask allowed and used, an invalid answer after a resumed stream fails the task."""
    server.script(
        Reply.tool_call(args={"name": "apple"}),
        Reply.truncated_stream(json.dumps(ITEM)),
        Reply.tool_call(args={"name": "pear"}),
    )
    _, result = await streamed(system_for(retries=1), server.openai_chat_model())
    assert result.error is not None
    assert FailureReason.OUTPUT_VALIDATION_FAILURE == result.error.reason
    assert 3 == len(result.notes.attempts) == len(server.requests)


async def test_exhausted_mid_stream_retries_fail_with_every_fault_kept(server: FakeProviderServer) -> None:
    """Three broken streams with two retries allowed: FAILED provider_error, three faults, no answer."""
    server.script(*[Reply.truncated_stream(json.dumps(ITEM))] * 3)
    _, result = await streamed(system_for(), server.openai_chat_model())
    assert result.error is not None
    assert FailureReason.PROVIDER_ERROR == result.error.reason
    assert [True, True, True] == [a.fault is not None for a in result.notes.attempts]
    assert 3 == result.notes.usage.requests


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_an_empty_streamed_answer_is_a_retried_fault(server: FakeProviderServer, wire: str) -> None:
    """A stream that holds no output is a retried provider fault, as for a whole answer, not a re-ask."""
    model = server.openai_chat_model() if wire == "openai" else server.anthropic_model()
    server.script(Reply.empty(), Reply.tool_call(args=ITEM))
    _, result = await streamed(system_for(), model)
    assert result.ok, result.error
    empty, answered = result.notes.attempts
    assert empty.fault is not None and empty.fault.startswith("EmptyAnswerError")
    assert empty.errors is None and answered.valid


async def test_a_fault_before_the_stream_begins_is_retried_once_in_the_ledger(server: FakeProviderServer) -> None:
    """A 500 before any chunk is retried by the usual provider retries and recorded once."""
    server.script(Reply.error(500, "boom"), Reply.tool_call(args=ITEM))
    _, result = await streamed(system_for(), server.openai_chat_model())
    assert result.ok
    assert [500, None] == [a.status for a in result.notes.attempts]


async def test_streamed_and_whole_results_match_over_http(server: FakeProviderServer) -> None:
    """Over the wire, a streamed call's ledger is the one `execute` keeps (the fake bills the longer request more)."""
    server.script(Reply.tool_call(args={"name": "apple"}), Reply.tool_call(args=ITEM))
    _, streamed_result = await streamed(system_for(), server.openai_chat_model())
    server.script(Reply.tool_call(args={"name": "apple"}), Reply.tool_call(args=ITEM))
    whole = await system_for().execute_async("item", model=server.openai_chat_model())

    def ledger(result: TaskResult[Any]) -> list[dict[str, Any]]:
        return [a.model_dump(exclude={"duration_ms", "usage"}) for a in result.notes.attempts]

    assert ledger(whole) == ledger(streamed_result)
    assert 2 == whole.notes.usage.requests == streamed_result.notes.usage.requests
    assert streamed_result.notes.usage.output_tokens == whole.notes.usage.output_tokens


def test_which_models_stream() -> None:
    """A FunctionModel streams only with a stream function; TestModel streams."""
    answer = FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("x")]))
    assert (False, True, True) == (
        streams(answer),
        streams(FunctionModel(stream_function=lambda m, i: _chunks())),
        streams(TestModel()),
    )


async def _chunks() -> Any:
    yield "x"
