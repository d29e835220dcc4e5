"""`TaskSystem.execute_stream`: partial typed outputs in order, then the result `execute` would give."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from typing import Any, assert_type

import pytest
from atomtask import (
    OutputFormat,
    OutputMode,
    PartialOutput,
    TaskResult,
    TaskStream,
    TaskSystem,
    Template,
    UsageError,
)
from pydantic import BaseModel
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel


class Contact(BaseModel):
    name: str
    email: str
    tags: list[str] = []


ADA = {"name": "Ada Lovelace", "email": "ada@example.com", "tags": ["math", "poetry"]}


class Scripted:
    """A FunctionModel answering the scripted raw answers in order, streamed in 7-character chunks."""

    def __init__(self, *answers: str, chunk: int = 7) -> None:
        self.answers = list(answers)
        self.chunk = chunk
        self.calls = 0
        self.model = FunctionModel(self._respond, stream_function=self._stream, model_name="scripted")

    def _next(self) -> str:
        self.calls += 1
        return self.answers.pop(0)

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raw = self._next()
        if info.output_tools:
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, raw, tool_call_id="call-1")])
        return ModelResponse(parts=[TextPart(raw)])

    async def _stream(self, messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        raw = self._next()
        for start in range(0, len(raw), self.chunk):
            piece = raw[start : start + self.chunk]
            if info.output_tools:
                first = start == 0
                name = info.output_tools[0].name if first else None
                yield {0: DeltaToolCall(name=name, json_args=piece, tool_call_id="call-1" if first else None)}
            else:
                yield piece


def system_for(mode: OutputMode = OutputMode.TOOL, **extra: Any) -> TaskSystem:
    system = TaskSystem()
    system.models.register(Contact)
    system.register(
        Template(
            name="contact",
            instructions="Extract the contact.",
            output_format=OutputFormat(type="json", schema="Contact", mode=mode),
            **extra,
        )
    )
    system.register(Template(name="greet", instructions="Say hello."))
    return system


async def collect(stream: TaskStream[Any]) -> tuple[list[PartialOutput[Any]], TaskResult[Any]]:
    partials = [partial async for partial in stream]
    return partials, await stream.get_result()


def comparable(result: TaskResult[Any]) -> dict[str, Any]:
    """A result without what differs run to run (durations) or between a streamed and a whole answer (usage)."""
    dumped = result.model_dump(exclude={"notes": {"duration_ms", "usage"}})
    for attempt in dumped["notes"]["attempts"]:
        del attempt["duration_ms"], attempt["usage"]
    return dumped


@pytest.mark.parametrize("mode", [OutputMode.TOOL, OutputMode.PROMPTED])
async def test_partials_arrive_in_order_as_instances_of_the_output_class(mode: OutputMode) -> None:
    """Each partial is a Contact that grows answer by answer; the result holds the finished one."""
    scripted = Scripted(json.dumps(ADA))
    stream = system_for(mode).execute_stream("contact", model=scripted.model, expect=Contact, debounce_by=None)
    partials, result = await collect(stream)
    assert all(isinstance(p.output, Contact) for p in partials)
    emails = [p.output.email for p in partials]
    assert emails == sorted(emails, key=len)  # the e-mail only ever grows
    assert Contact(name="Ada Lovelace", email="", tags=[]) == partials[0].output  # a required field, begun
    assert Contact(**ADA) == partials[-1].output == result.parsedContent
    assert {1} == {p.attempt for p in partials}
    assert {"function:scripted"} == {p.model for p in partials} == {result.notes.model}
    assert result.ok


async def test_text_output_streams_growing_strings() -> None:
    """A text template's partials are the text so far."""
    scripted = Scripted("Hello there, Ada. Nice to meet you.")
    partials, result = await collect(system_for().execute_stream("greet", model=scripted.model, debounce_by=None))
    texts = [p.output for p in partials]
    assert all(later.startswith(earlier) for earlier, later in itertools.pairwise(texts))
    assert "Hello there, Ada. Nice to meet you." == texts[-1] == result.parsedContent


@pytest.mark.parametrize("mode", [OutputMode.TOOL, OutputMode.PROMPTED])
async def test_final_result_is_what_execute_gives(mode: OutputMode) -> None:
    """Streamed or not, the same answers give the same status, content, output and ledger."""
    answers = (json.dumps({"name": "Ada"}), json.dumps(ADA))
    system = system_for(mode)
    streamed = await system.execute_stream("contact", model=Scripted(*answers).model).get_result()
    whole = await system.execute_async("contact", model=Scripted(*answers).model)
    assert comparable(whole) == comparable(streamed)
    assert 2 == len(streamed.notes.attempts)


async def test_malformed_final_answer_is_repaired_and_partials_are_not() -> None:
    """A trailing comma costs no retry: the final answer is repaired; partials that do not validate are skipped."""
    raw = '{"name": "Ada Lovelace", "email": "ada@example.com", "tags": ["math",],}'
    scripted = Scripted(raw)
    stream = system_for(OutputMode.PROMPTED).execute_stream("contact", model=scripted.model, debounce_by=None)
    partials, result = await collect(stream)
    assert result.ok
    assert Contact(name="Ada Lovelace", email="ada@example.com", tags=["math"]) == result.parsedContent
    (attempt,) = result.notes.attempts
    assert attempt.repairs and attempt.raw_output == raw
    assert 1 == scripted.calls
    assert all(isinstance(p.output, Contact) for p in partials)


async def test_invalid_answer_is_re_asked_and_streams_again_under_the_next_attempt() -> None:
    """An answer missing a field is re-asked; the new answer's partials carry attempt 2."""
    scripted = Scripted(json.dumps({"name": "Ada", "tags": ["x"]}), json.dumps(ADA))
    partials, result = await collect(system_for().execute_stream("contact", model=scripted.model, debounce_by=None))
    assert result.ok
    first, second = result.notes.attempts
    assert first.errors and "email" in str(first.errors)
    assert second.valid
    assert [2] == sorted({p.attempt for p in partials})  # the first answer never had every required field
    assert Contact(**ADA) == partials[-1].output


async def test_exhausted_retries_fail_with_every_answer_in_the_ledger() -> None:
    """Answers that never validate end FAILED output_validation_failure, each raw answer kept."""
    bad = json.dumps({"name": "Ada"})
    scripted = Scripted(bad, bad)
    partials, result = await collect(system_for().execute_stream("contact", model=scripted.model, debounce_by=None))
    assert result.error is not None
    assert "output_validation_failure" == result.error.reason.value
    assert [bad, bad] == [a.raw_output for a in result.notes.attempts]
    assert [] == partials


async def test_a_cache_hit_yields_the_result_without_partials() -> None:
    """The second identical call is answered from the cache at once: no partials, no model call."""
    system = TaskSystem(cache=True, cache_path=":memory:")
    system.models.register(Contact)
    system.register(
        Template(name="contact", instructions="x", output_format=OutputFormat(type="json", schema="Contact"))
    )
    scripted = Scripted(json.dumps(ADA), json.dumps(ADA))
    first = await system.execute_stream("contact", model=scripted.model, debounce_by=None).get_result()
    partials, second = await collect(system.execute_stream("contact", model=scripted.model, debounce_by=None))
    assert first.ok and not first.notes.cached
    assert [] == partials
    assert second.notes.cached and Contact(**ADA) == second.parsedContent
    assert 1 == scripted.calls


async def test_a_failed_task_ends_the_stream_with_its_result() -> None:
    """An unknown template yields nothing and a FAILED result; nothing is raised."""
    partials, result = await collect(system_for().execute_stream("contakt"))
    assert [] == partials
    assert result.error is not None and "template_not_found" == result.error.reason.value


async def test_result_is_none_until_the_stream_ends_and_get_result_runs_it() -> None:
    """`result` is None before the run; `get_result()` runs the task without iterating."""
    stream = system_for().execute_stream("contact", model=Scripted(json.dumps(ADA)).model)
    assert stream.result is None
    result = await stream.get_result()
    assert result is stream.result
    assert Contact(**ADA) == result.parsedContent
    assert [] == [p async for p in stream]  # iterating an ended stream gives nothing more


async def test_leaving_the_block_early_cancels_the_run() -> None:
    """Leaving `async with` after the first partial cancels the run: the model is read no further, no result."""
    release = asyncio.Event()
    finished: list[bool] = []

    async def slow(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        yield '{"name": "Ada", "email": "a'
        await release.wait()
        finished.append(True)
        yield 'da@example.com"}'

    model = FunctionModel(stream_function=slow)
    async with system_for(OutputMode.PROMPTED).execute_stream("contact", model=model, debounce_by=None) as stream:
        async for partial in stream:
            assert "Ada" == partial.output.name
            break
    release.set()
    for _ in range(5):
        await asyncio.sleep(0)
    assert [] == finished
    assert stream.result is None
    with pytest.raises(UsageError, match="closed before its task finished"):
        await stream.get_result()


def test_expect_types_the_stream() -> None:
    """`expect=Cls` makes the stream a `TaskStream[Cls]`; without it, `TaskStream[Any]`."""
    system = system_for()
    assert_type(system.execute_stream("contact", expect=Contact), TaskStream[Contact])
    assert_type(system.execute_stream("contact"), TaskStream[Any])


async def test_a_model_that_cannot_stream_still_gives_the_result() -> None:
    """A FunctionModel without a stream function answers whole: no partials, the same result."""
    model = FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart(json.dumps(ADA))]))
    partials, result = await collect(system_for(OutputMode.PROMPTED).execute_stream("contact", model=model))
    assert [] == partials
    assert Contact(**ADA) == result.parsedContent
