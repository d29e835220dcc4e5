"""One model call, streamed: partial outputs as the answer arrives, then the same `CallOutcome` as `run`.

`stream_call` drives the manager's own per-call state (`LLMInteractionManager.start`: the models in
order, the budget, the ledger) exactly as `LLMInteractionManager.run` does, but runs each Agent with
`Agent.iter` and streams every model request (`ModelRequestNode.stream`). Each debounced snapshot of
the answer is validated with pydantic-ai's partial validation (`allow_partial=True`: an unfinished
trailing string or list is accepted, a required field must have begun); one that validates and
differs from the last is handed to `on_partial` with the ledger index of its attempt; one that does
not is skipped. Partials are never repaired: the graph goes on exactly as in `run`, so validation,
`OutputRepair` and re-asking apply to the finished answer only, and a re-asked answer streams again
under the next attempt number.

A provider fault after the stream reached us (a dropped connection halfway through the answer)
cannot be retried by pydantic-ai itself (`on_model_request_error` only sees faults before the first
chunk). Here it is recorded as a fault (the text received so far kept as its `raw_output`, the tokens
it used priced as a whole answer's are) and, when transient, `ProviderRetries` allow and the call's
`limits` are not used up, the run resumes from the conversation before that answer: the model never
sees the broken answer, the output retries already spent stay spent, and the same `RunState` keeps
the ledger; limits the broken answer used up end the run as `usage_limit_exceeded`. A streamed
answer that holds nothing is the same retried fault (`EmptyAnswerError`), as it is for a whole
answer. A model that cannot stream (a `FunctionModel` without a stream function) is run without
partials.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import attrs
from atomtask.handlers._ledger import EmptyAnswerError, Fault, is_transient, paid_usage, redact, remaining_limits
from atomtask.handlers._llm import CallOutcome, LLMInteractionManager, ModelCall
from atomtask.system._results import UsageNotes
from pydantic import ValidationError
from pydantic_ai import capture_run_messages
from pydantic_ai.exceptions import ModelRetry, UnexpectedModelBehavior, UsageLimitExceeded
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import Model
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.usage import UsageLimits

__all__ = ["PartialSink", "StreamingManager", "stream_call", "streams"]

#: Receives each partial output: the value, the ledger index of the attempt it belongs to, the model label.
PartialSink = Callable[[Any, int, str], None]

# The output retries of an Agent built without `retries` (the manager passes the call's when it has one).
_DEFAULT_OUTPUT_RETRIES = 1
_NOT_YET = (ValidationError, ModelRetry, UnexpectedModelBehavior)


def streams(model: Model) -> bool:
    """Whether `model` can stream a request (pydantic-ai refuses to stream one that cannot)."""
    if isinstance(model, FunctionModel):
        return model.stream_function is not None
    return type(model).request_stream is not Model.request_stream


async def stream_call(
    manager: LLMInteractionManager, call: ModelCall, on_partial: PartialSink, *, debounce_by: float | None = 0.1
) -> CallOutcome:
    """Run `call` as `manager.run` does, streaming: `on_partial` gets each new partial output on the way."""
    run = manager.start(call)
    async with run.tools_connected():  # its MCP servers, if any, for the whole call
        while (step := run.next_step()) is not None:
            before = len(run.attempts)
            prior = sum((a.usage for a in run.attempts), UsageNotes())
            attempt = _StepStream(call, step, on_partial, debounce_by, first_index=before + 1, prior=prior)
            output, error, messages = await attempt.run()
            if error is None:
                run.succeeded(step, output, messages)
            else:
                run.failed(step, error, messages)
            attempt.keep_broken_answers(run.attempts, before)
    return run.outcome()


@attrs.define
class _StepStream:
    """One model's run of a call, streamed, resumed after each mid-stream provider fault it may retry."""

    call: ModelCall
    step: Any  # the manager's step: its choice, agent, run kwargs and RunState
    on_partial: PartialSink
    debounce_by: float | None
    first_index: int
    prior: UsageNotes  # what the call's earlier models spent, for the budget of a resumed run
    agent_run: Any = None
    # The text each mid-stream fault interrupted, by fault, for the ledger's `raw_output`.
    broken: dict[int, str] = attrs.field(factory=dict)

    async def run(self) -> tuple[Any, Exception | None, list[ModelMessage]]:
        """The output (or the error) of this model's run, and its messages (a broken-off answer left out)."""
        history: list[ModelMessage] | None = None
        used = 0
        while True:
            with capture_run_messages() as captured:
                try:
                    output = await self._iterate(history, used)
                except Exception as exc:  # every failure becomes a FAILED result, never a raise
                    messages = list(captured)
                    faulty = is_transient(exc) or isinstance(exc, EmptyAnswerError)
                    if not (faulty and messages and isinstance(messages[-1], ModelResponse)):
                        # Not mid-stream: a fault before the stream began was ProviderRetry's, recorded there.
                        return None, exc, messages
                    history = messages[:-1]
                    spent = await self._fault(exc, messages[-1], history)
                    if isinstance(spent, Exception):
                        return None, spent, history
                    used += spent
                    continue
            return output, None, list(captured)

    async def _iterate(self, history: list[ModelMessage] | None, used: int) -> Any:
        kwargs = dict(self.step.kwargs)
        if history is not None:
            kwargs.update(self._resume_kwargs(history, used))
        prompt = self.call.user_prompt if history is None else None
        agent = self.step.agent  # built by the manager, the one module that builds Agents
        live = isinstance(agent.model, Model) and streams(agent.model)
        async with agent.iter(prompt, **kwargs) as agent_run:
            self.agent_run = agent_run
            async for node in agent_run:
                if live and agent.is_model_request_node(node):
                    async with node.stream(agent_run.ctx) as stream:
                        await self._partials(stream, agent_run.ctx.state.message_history)
                        if not stream.response.parts:  # as `ProviderRetry` does for a whole answer
                            raise EmptyAnswerError(agent.model)
        result = agent_run.result
        assert result is not None  # `iter` ended without raising: the run has its output
        return result.output

    async def _partials(self, stream: Any, messages: Sequence[ModelMessage]) -> None:
        answered = sum(isinstance(m, ModelResponse) for m in messages)
        faults = sum(f.after_response <= answered for f in self.step.state.faults)
        index = self.first_index + answered + faults
        last: Any = None
        async for response in stream.stream_response(debounce_by=self.debounce_by):
            try:
                partial = await stream.validate_response_output(response, allow_partial=True)
            except _NOT_YET:  # not enough of the answer yet, or one that will not validate: skipped
                continue
            if partial != last:
                last = partial
                self.on_partial(partial, index, self.step.choice.label)

    async def _fault(self, exc: Exception, broken: ModelResponse, history: list[ModelMessage]) -> int | Exception:
        """Record a fault mid-stream; after the backoff, the output retries this run spent, or the error to end with.

        The broken answer was billed (its tokens so far, priced like a whole answer), so it counts
        against the call's limits: when they are used up, the run ends with the limit reached (as a
        next attempt would), not with the provider's fault.
        """
        state = self.step.state
        answered = sum(isinstance(m, ModelResponse) for m in history)
        retry = sum(f.after_response == answered for f in state.faults) + 1
        spent = paid_usage(broken)
        budget = self._budget(history, spent)
        left = retry <= state.retries.attempts and not isinstance(budget, str)
        fault = Fault(
            after_response=answered,
            error_type=type(exc).__name__,
            status=None,
            message=redact(str(exc))[:500]
            + ("" if isinstance(exc, EmptyAnswerError) else " (the stream broke off mid-answer)"),
            retried=left,
            usage=spent,
        )
        state.faults.append(fault)
        self.broken[id(fault)] = _text(broken)
        if isinstance(budget, str) and retry <= state.retries.attempts:
            return UsageLimitExceeded(f"Resuming the answer that broke off mid-stream would exceed {budget}")
        if not left:
            return exc
        delay = state.retries.delay(retry, None)
        if delay > 0:
            await asyncio.sleep(delay)
        used: int = self.agent_run.ctx.state.output_retries_used
        return used

    def _budget(self, history: list[ModelMessage], extra: UsageNotes | None = None) -> UsageLimits | str | None:
        """The limits left for a resumed run (a description when one is used up; None without limits)."""
        if self.call.limits is None:
            return None
        spent = self.prior + _usage_of(history) + (extra or UsageNotes())
        for fault in self.step.state.faults:
            spent = spent + (fault.usage or UsageNotes())
        return remaining_limits(self.call.limits, spent)

    def _resume_kwargs(self, history: list[ModelMessage], used: int) -> dict[str, Any]:
        allowed = self.call.retries if self.call.retries is not None else _DEFAULT_OUTPUT_RETRIES
        resumed: dict[str, Any] = {"message_history": history, "retries": {"output": max(0, allowed - used)}}
        budget = self._budget(history)
        if isinstance(budget, UsageLimits):
            resumed["usage_limits"] = budget
        return resumed

    def keep_broken_answers(self, attempts: list[Any], before: int) -> None:
        """Put the text each mid-stream fault cut off into its attempt's `raw_output` (the ledger keeps none)."""
        if not self.broken:
            return
        faults = sorted(self.step.state.faults, key=lambda f: f.after_response)  # the ledger's order
        recorded = [i for i in range(before, len(attempts)) if attempts[i].fault is not None]
        for position, fault in zip(recorded, faults, strict=False):
            text = self.broken.get(id(fault))
            if text:
                attempts[position] = attempts[position].model_copy(update={"raw_output": text})


def _text(response: ModelResponse) -> str:
    """What a broken-off answer held: its output tool call's arguments as sent, or its text."""
    for part in response.parts:
        if isinstance(part, ToolCallPart):
            return part.args_as_json_str()
    return "".join(part.content for part in response.parts if isinstance(part, TextPart))


def _usage_of(messages: Sequence[ModelMessage]) -> UsageNotes:
    """What the answers among `messages` used, their cost included (a cost limit holds on a resumed run too)."""
    total = UsageNotes()
    for message in messages:
        if isinstance(message, ModelResponse):
            total = total + paid_usage(message)
    return total


class StreamingManager(LLMInteractionManager):
    """The calls of `base`, streamed: `run` is `stream_call` on `base` (its Agents, its ledger), partials to `sink`.

    An executor built over it runs the whole path of `execute` (inputs, rendering, cache, tracing,
    the result and its notes) while its one model call streams.
    """

    def __init__(self, base: LLMInteractionManager, sink: PartialSink, *, debounce_by: float | None = 0.1) -> None:
        super().__init__(base.handler, base.tracing)
        self.base = base
        self.sink = sink
        self.debounce_by = debounce_by

    async def run(self, call: ModelCall) -> CallOutcome:
        """Run `call` on the base manager's Agents, each new partial output to the sink."""
        return await stream_call(self.base, call, self.sink, debounce_by=self.debounce_by)
