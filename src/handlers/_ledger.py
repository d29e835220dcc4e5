"""The ledger of one task: every attempt, repair and provider fault, and the budget left.

`ProviderRetry` is a pydantic-ai capability that records every provider fault (HTTP 429/5xx,
timeouts, refused or dropped connections, truncated streams) and retries a transient one with
exponential backoff (honouring `Retry-After`) through the supported `RetryModelRequest` signal, up
to `ProviderRetries.attempts` times. An answer that holds nothing (OpenAI `choices: []`, Anthropic
`content: []`) is such a fault too (`EmptyAnswerError`), not a model that declined to answer; a 5xx
whose body is a validation error of the request (`handlers._refusals`) is not, and is recorded unretried.
Each attempt keeps the response's `finish_reason`, and the run the `max_tokens` a cut-off answer met.
atomtask's capabilities sit on the cached Agent (a per-run capability costs ~10% of a run); what one
run records goes into its `RunState`, passed as `deps`. Failed requests are not paid for (an empty
answer, or a stream cut mid-answer, may be: its usage, priced by `paid_usage`, stays in the ledger),
but they are part of the ledger.

Two things travel with every fault: its text goes through `redact` (provider errors sometimes echo
part of the key they rejected), and a rate limit is told to `rate_limit_listener`, a context variable
a batch sets so that one 429 slows every worker down (without a listener it costs nothing).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from datetime import datetime
from decimal import Decimal
from typing import Any, NoReturn

import attrs
import pydantic_core
from atomtask.handlers._budget import Budget
from atomtask.handlers._refusals import request_refusal
from atomtask.system._options import ProviderRetries
from atomtask.system._results import Attempt, Coercion, ToolCall, UsageNotes
from atomtask.system._templates import RepairMode, TemplateLimits
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.capabilities.abstract import WrapToolExecuteHandler
from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelConnectionError,
    ModelHTTPError,
    ModelRateLimitError,
    ModelRequestTimeout,
    ModelRetry,
    ModelServerError,
    ModelUnavailableError,
    RetryModelRequest,
    ToolRetryError,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models import Model, ModelRequestContext
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.usage import UsageLimits

__all__ = [
    "EmptyAnswerError",
    "Fault",
    "ProviderRetry",
    "RunState",
    "ToolRecorder",
    "ToolRun",
    "empty_answer_cause",
    "feedback_errors",
    "is_transient",
    "ledger_attempts",
    "paid_usage",
    "rate_limit_listener",
    "reask_requests",
    "redact",
    "remaining_limits",
    "report_rate_limited",
    "run_state",
    "usage_total",
]

_SECRET_ENV = re.compile(r"(API_KEY|_TOKEN|_SECRET|_PASSWORD)$")
# Shapes of provider keys that may appear even when the environment does not hold them.
_KEY_SHAPES = re.compile(r"\b(sk-[A-Za-z0-9_\-*]{6,}|sk-ant-[A-Za-z0-9_\-*]{6,}|AIza[0-9A-Za-z_\-]{20,})")


def redact(text: str, environ: Mapping[str, str] | None = None) -> str:
    """`text` with every secret-looking environment value and key-shaped token replaced by `***`."""
    env = os.environ if environ is None else environ
    for name, value in env.items():
        if len(value) >= 8 and _SECRET_ENV.search(name) and value in text:
            text = text.replace(value, "***")
    return _KEY_SHAPES.sub("***", text)


rate_limit_listener: ContextVar[Callable[[float | None], None] | None] = ContextVar(
    "atomtask_rate_limit_listener", default=None
)
"""Called with the provider's `Retry-After` (seconds, None when it gave none) on every rate-limited request."""


def report_rate_limited(retry_after: float | None) -> None:
    """Tell the current listener, if any, that the provider refused a request with a rate limit."""
    listener = rate_limit_listener.get()
    if listener is not None:
        listener(retry_after)


_TRANSIENT = (ModelRateLimitError, ModelUnavailableError, ModelServerError, ModelConnectionError, ModelRequestTimeout)


def is_transient(error: BaseException) -> bool:
    """A provider fault worth retrying: rate limits, server errors, timeouts, connection trouble.

    A server error whose body is a validation error of the request (`handlers._refusals`) is not one:
    some local servers answer HTTP 500 for a request they refuse to parse, and the same request can
    never succeed.
    """
    if isinstance(error, ModelServerError):
        return request_refusal(error) is None
    return isinstance(error, _TRANSIENT)


class EmptyAnswerError(ModelAPIError):
    """The provider answered without any output: no `choices` (OpenAI), no `content` blocks (Anthropic)."""

    def __init__(self, model: Model, cause: BaseException | None = None) -> None:
        found = f" ({type(cause).__name__} reading it: {cause})" if cause is not None else ""
        super().__init__(
            model.model_name,
            f"The provider's answer held no output: no `choices` or no `content`{found}. "
            "This is usually a transient fault of the provider or of a proxy in front of it.",
        )


def empty_answer_cause(error: Exception) -> bool:
    """`error` is pydantic-ai's adapter indexing into an answer that held nothing (`choices: []`).

    Only an `IndexError` raised inside `pydantic_ai.models` counts, so a bug in a `FunctionModel`'s
    function (user code) stays an unexpected error.
    """
    if not isinstance(error, IndexError):
        return False
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and str(tb.tb_frame.f_globals.get("__name__", "")).startswith("pydantic_ai.models.")


@attrs.frozen(kw_only=True)
class Fault:
    """One model request that failed at the provider (no answer; nothing paid unless `usage` says so)."""

    after_response: int
    error_type: str
    status: int | None
    message: str
    retried: bool
    usage: UsageNotes | None = None


@attrs.define(kw_only=True)
class RunState:
    """What one run records beyond its messages; passed as the run's `deps` to atomtask's capabilities."""

    retries: ProviderRetries = attrs.field(factory=ProviderRetries)
    repair: RepairMode = RepairMode.SAFE
    repairs: dict[int, list[str]] = attrs.field(factory=dict)
    coercions: dict[int, list[Coercion]] = attrs.field(factory=dict)
    syntax_errors: dict[int, str] = attrs.field(factory=dict)
    faults: list[Fault] = attrs.field(factory=list)
    # The `max_tokens` of the last request, from its merged model settings (None: the model's own limit).
    max_tokens: int | None = None
    # Tools: the names of the function tools offered (as opposed to the output tool), what each call's
    # run took and raised (by tool call id), and the exception that ended the run, if a tool's did.
    function_tools: set[str] = attrs.field(factory=set)
    tool_runs: dict[str, ToolRun] = attrs.field(factory=dict)
    tool_failure: BaseException | None = None


@attrs.frozen(kw_only=True)
class ToolRun:
    """What one tool call's execution took, and what it raised (`ModelRetry` included), if anything."""

    duration_ms: float
    error: str | None = None
    retried: bool = False


def run_state(ctx: RunContext[Any], fallback: RunState) -> RunState:
    """The run's own `RunState` when atomtask runs the agent, else the capability's."""
    deps = ctx.deps
    return deps if isinstance(deps, RunState) else fallback


class ProviderRetry(AbstractCapability[Any]):
    """A pydantic-ai capability: retry transient provider faults with backoff, and record every fault.

    Retries go through pydantic-ai's `RetryModelRequest` signal, so the run stays on the same step
    and the model never sees the failed attempt.
    """

    def __init__(self, retries: ProviderRetries | None = None) -> None:
        self.state = RunState(retries=retries or ProviderRetries())

    async def on_model_request_error(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, error: Exception
    ) -> ModelResponse:
        if empty_answer_cause(error):
            await self._fault(ctx, EmptyAnswerError(request_context.model, error), cause=error)
        await self._fault(ctx, error)

    async def after_model_request(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, response: ModelResponse
    ) -> ModelResponse:
        offered = request_context.model_request_parameters.function_tools
        if offered:  # told apart from the output tool in the ledger
            run_state(ctx, self.state).function_tools.update(tool.name for tool in offered)
        if response.finish_reason == "length":  # what the answer was cut off at, for its messages
            settings = request_context.model_settings
            run_state(ctx, self.state).max_tokens = settings.get("max_tokens") if settings else None
        # A stream has reached its consumer already; a suspended response waits in a provider batch.
        if not response.parts and not request_context.streaming and response.state != "suspended":
            # Left alone, pydantic-ai would spend an output retry asking the model for an answer.
            await self._fault(ctx, EmptyAnswerError(request_context.model), usage=paid_usage(response))
        return response

    async def _fault(
        self,
        ctx: RunContext[Any],
        error: Exception,
        *,
        cause: BaseException | None = None,
        usage: UsageNotes | None = None,
    ) -> NoReturn:
        """Record `error`; retry the request after the backoff if it is transient and retries are left, else raise."""
        state = run_state(ctx, self.state)
        answered = sum(isinstance(m, ModelResponse) for m in ctx.messages)
        retry = sum(f.after_response == answered for f in state.faults) + 1
        transient = (is_transient(error) or isinstance(error, EmptyAnswerError)) and retry <= state.retries.attempts
        state.faults.append(
            Fault(
                after_response=answered,
                error_type=type(error).__name__,
                status=error.status_code if isinstance(error, ModelHTTPError) else None,
                message=redact(str(error))[:500],
                retried=transient,
                usage=usage,
            )
        )
        retry_after = error.retry_after if isinstance(error, ModelAPIError) else None
        if isinstance(error, ModelRateLimitError):  # a batch slows all its workers down (no-op otherwise)
            report_rate_limited(retry_after)
        if not transient:
            if cause is not None:
                raise error from cause
            raise error
        delay = state.retries.delay(retry, retry_after)
        if delay > 0:
            await asyncio.sleep(delay)
        raise RetryModelRequest()


class ToolRecorder(AbstractCapability[Any]):
    """A pydantic-ai capability: time every function tool call and record what it raised (not the output tool)."""

    state: RunState

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        handler: WrapToolExecuteHandler,
    ) -> Any:
        state = run_state(ctx, self.state)
        started = time.perf_counter()
        try:
            result = await handler(args)
        except (ModelRetry, ToolRetryError) as exc:  # goes back to the model, which may call again
            message = exc.message if isinstance(exc, ModelRetry) else str(exc)
            state.tool_runs[call.tool_call_id] = ToolRun(
                duration_ms=_since(started), error=f"ModelRetry: {redact(message)}", retried=True
            )
            raise
        except Exception as exc:
            state.tool_runs[call.tool_call_id] = ToolRun(
                duration_ms=_since(started), error=f"{type(exc).__name__}: {redact(str(exc))}"
            )
            state.tool_failure = exc
            raise
        state.tool_runs[call.tool_call_id] = ToolRun(duration_ms=_since(started))
        return result


def _since(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def is_reask(message: ModelMessage) -> bool:
    """Whether `message` is a re-ask: a request carrying validation feedback on the answer before it.

    The feedback is a retried return of the output tool (`final_result...`, tool output) or a retry part
    without a tool (text, native and prompted output); a function tool's retry is the tool's, not a re-ask.
    """
    if not isinstance(message, ModelRequest):
        return False
    for part in message.parts:
        if getattr(part, "retry", None) is None and not isinstance(part, RetryPromptPart):
            continue
        tool = getattr(part, "tool_name", None)
        if tool is None or tool.startswith("final_result"):
            return True
    return False


def reask_requests(messages: Sequence[ModelMessage]) -> int:
    """How many re-asks `messages` hold (`is_reask`): what a resumed run has already spent of its retries."""
    return sum(1 for message in messages if is_reask(message))


def ledger_attempts(
    messages: Sequence[ModelMessage],
    *,
    model: str,
    mode: str,
    state: RunState,
    first_index: int = 1,
) -> list[Attempt]:
    """One `Attempt` per model response and per provider fault of one run, in the order they happened."""
    answered: list[dict[str, Any]] = []
    sent_at: datetime | None = None
    # What a capability recorded, looked up only when it recorded anything (most answers need no repair).
    recorded = bool(state.repairs or state.coercions or state.syntax_errors)
    tools = state.function_tools  # empty unless function tools were offered
    calls: dict[str, ToolCall] = {}  # the function tool calls of the last answer, by call id
    for message in messages:
        if isinstance(message, ModelResponse):
            if message.state == "suspended":  # a request still waiting in a provider batch: no answer yet
                continue
            raw, tool = _raw_output(message, tools)
            usage = message.usage
            # pydantic-ai prices each response itself (genai-prices) where the model's prices are known.
            cost = usage.cost
            entry: dict[str, Any] = {
                "model": model,
                "output_mode": mode,
                "raw_output": raw,
                "tool_name": tool,
                "finish_reason": message.finish_reason,
                "usage": UsageNotes(
                    requests=1,
                    input_tokens=usage.input_tokens,
                    output_tokens=usage.output_tokens,
                    cost=float(cost) if cost is not None else None,
                ),
                # From the request's creation to the answer, provider retries included.
                "duration_ms": (message.timestamp - sent_at).total_seconds() * 1000 if sent_at else None,
            }
            if recorded:
                number = len(answered) + 1
                entry["repairs"] = state.repairs.get(number, [])
                entry["coercions"] = state.coercions.get(number, [])
                entry["parse_error"] = state.syntax_errors.get(number)
            if tools:
                calls = _tool_calls(message, tools, state)
                entry["tool_calls"] = list(calls.values())
            answered.append(entry)
        elif isinstance(message, ModelRequest):
            sent_at = message.timestamp
            if not answered:  # the first request: no answer to give feedback on
                continue
            # Validation feedback travels as a retried tool return (tool output) or a retry
            # feedback part (text output); both carry `retry` info and the error details.
            retried: list[Any] = []  # a loop, not a comprehension: no frame of its own (Python < 3.12)
            for part in message.parts:
                if tools and getattr(part, "tool_name", None) in tools:
                    _tool_returned(part, calls)  # a function tool's return: not feedback on the answer
                elif getattr(part, "retry", None) is not None:
                    retried.append(getattr(part, "content", None))
            if retried:
                answered[-1]["errors"] = feedback_errors(retried)
    entries: list[dict[str, Any]] = answered if not state.faults else []
    for position in range(len(answered) + 1 if state.faults else 0):
        for fault in state.faults:
            if fault.after_response == position:
                entry = {
                    "model": model,
                    "output_mode": mode,
                    "fault": f"{fault.error_type}: {fault.message}",
                    "status": fault.status,
                }
                if fault.usage is not None:
                    entry["usage"] = fault.usage
                entries.append(entry)
        if position < len(answered):
            entries.append(answered[position])
    attempts: list[Attempt] = []
    for entry in entries:
        entry["index"] = first_index + len(attempts)
        attempts.append(Attempt(**entry))
    return attempts


def paid_usage(response: ModelResponse) -> UsageNotes:
    """What one request that reached the provider used: its tokens, and their price where it is known.

    pydantic-ai prices every answer it completes (genai-prices, the response's own model and
    provider); an answer it never completes (a stream cut mid-answer, an answer that held nothing)
    was billed all the same, so it is priced here the same way (`ModelResponse.cost()`). A model
    genai-prices does not know, or an answer that reported no tokens, has no cost (None, not 0).
    """
    usage = response.usage
    cost = usage.cost
    if cost is None and (usage.input_tokens or usage.output_tokens) and response.model_name:
        try:
            cost = response.cost().total_price
        except (LookupError, ValueError):  # what genai-prices raises for a model or usage it cannot price
            cost = None
    return UsageNotes(
        requests=1,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cost=float(cost) if cost is not None else None,
    )


def usage_total(attempts: Sequence[Attempt]) -> UsageNotes:
    """What `attempts` used in all: a new `UsageNotes`, apart from each attempt's own."""
    total = UsageNotes()
    for attempt in attempts:
        total = total + attempt.usage
    return total


def _tool_calls(response: ModelResponse, tools: set[str], state: RunState) -> dict[str, ToolCall]:
    """The function tool calls of one answer, with what each run took and raised (their returns come later)."""
    calls: dict[str, ToolCall] = {}
    for part in response.parts:
        if isinstance(part, ToolCallPart) and part.tool_name in tools:
            run = state.tool_runs.get(part.tool_call_id)
            calls[part.tool_call_id] = ToolCall(
                name=part.tool_name,
                args=_args(part.args),
                call_id=part.tool_call_id,
                duration_ms=run.duration_ms if run is not None else None,
                error=run.error if run is not None else None,
                retried=run.retried if run is not None else False,
            )
    return calls


def _args(args: Any) -> Any:
    """A call's arguments as JSON values (as sent, when they were not valid JSON)."""
    if isinstance(args, str):
        try:
            return json.loads(args)
        except ValueError:
            return args
    return args


def _tool_returned(part: Any, calls: dict[str, ToolCall]) -> None:
    """Fill in what a function tool call gave back to the model (its result, or the error it was sent)."""
    call = calls.get(getattr(part, "tool_call_id", ""))
    if call is None:
        return
    content = getattr(part, "content", None)
    if getattr(part, "retry", None) is not None or (isinstance(part, ToolReturnPart) and part.outcome != "success"):
        call.retried = call.retried or getattr(part, "retry", None) is not None
        if call.error is None:  # arguments that did not validate never ran the tool
            errors = feedback_errors([content])
            call.error = "; ".join(
                f"{'.'.join(map(str, e['loc'])) + ': ' if e['loc'] else ''}{e['msg']}" for e in errors
            )
        return
    call.result = pydantic_core.to_jsonable_python(content, fallback=repr)


def _raw_output(response: ModelResponse, tools: set[str]) -> tuple[str | None, str | None]:
    for part in response.parts:
        if isinstance(part, ToolCallPart) and part.tool_name not in tools:
            # Arguments exactly as the model sent them when they arrived as text.
            raw = part.args if isinstance(part.args, str) else json.dumps(part.args, ensure_ascii=False)
            return raw, part.tool_name
    texts = [part.content for part in response.parts if isinstance(part, TextPart)]
    return ("".join(texts) if texts else None), None


def feedback_errors(contents: Sequence[Any]) -> list[dict[str, Any]]:
    """The validation errors (or retry message) fed back to the model, as plain dicts."""
    collected: list[dict[str, Any]] = []
    for content in contents:
        if not isinstance(content, list):
            collected.append({"type": "retry", "loc": [], "msg": str(content)})
            continue
        for err in content:
            item = {
                "type": err.get("type", "error"),
                "loc": list(err.get("loc", ())),
                "msg": err.get("msg", ""),
            }
            if "input" in err:
                item["input"] = pydantic_core.to_jsonable_python(err["input"], fallback=repr)
            collected.append(item)
    return collected


def remaining_limits(limits: TemplateLimits | None, spent: UsageNotes) -> UsageLimits | str | None:
    """pydantic-ai limits for the next run given what was `spent`; a description when one is used up."""
    if limits is None:
        return None
    budget = Budget(limits=limits, used=spent)
    reached = budget.exhausted()
    if reached is not None:
        return f"the `{reached}` limit of {getattr(limits, reached)} ({budget.spent(reached):g} used)"
    left = budget.left()
    cost = left["cost"]
    return UsageLimits(
        request_limit=_int(left["requests"]),
        input_tokens_limit=_int(left["input_tokens"]),
        output_tokens_limit=_int(left["output_tokens"]),
        total_tokens_limit=_int(left["total_tokens"]),
        cost_limit=Decimal(str(cost)) if cost is not None else None,
    )


def _int(value: float | int | None) -> int | None:
    return None if value is None else int(value)
