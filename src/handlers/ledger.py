"""What happens inside one run, beyond what pydantic-ai's messages show: timings, provider faults.

`RunRecorder` is a per-run pydantic-ai capability. It times every model request, records every
provider fault (HTTP 429/5xx, timeouts, refused or dropped connections, truncated streams) and
retries a transient one with exponential backoff (honouring `Retry-After`) through the supported
`RetryModelRequest` signal, up to `ProviderRetries.attempts` times. Failed requests are not paid
for, but they are part of the ledger.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import attrs
import pydantic_core
from atomtask.handlers.redact import redact
from atomtask.system.results import Attempt, UsageNotes
from atomtask.system.retry_policy import ProviderRetries
from atomtask.system.templates import TemplateLimits
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelConnectionError,
    ModelHTTPError,
    ModelRateLimitError,
    ModelRequestTimeout,
    ModelServerError,
    ModelUnavailableError,
    RetryModelRequest,
)
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.usage import UsageLimits

if TYPE_CHECKING:
    from atomtask.handlers.repair import OutputRepair

__all__ = [
    "Fault",
    "ProviderRetries",
    "RunRecorder",
    "feedback_errors",
    "is_transient",
    "ledger_attempts",
    "remaining_limits",
]

_TRANSIENT = (ModelRateLimitError, ModelUnavailableError, ModelServerError, ModelConnectionError, ModelRequestTimeout)


def is_transient(error: BaseException) -> bool:
    """A provider fault worth retrying: rate limits, server errors, timeouts, connection trouble."""
    return isinstance(error, _TRANSIENT)


@attrs.frozen(kw_only=True)
class Fault:
    """One model request that failed at the provider (no answer, nothing paid)."""

    after_response: int
    error_type: str
    status: int | None
    message: str
    duration_ms: float
    retried: bool


class RunRecorder(AbstractCapability[Any]):
    """Per run: the duration of each answered request, and every provider fault with its retry."""

    def __init__(self, retries: ProviderRetries) -> None:
        self.retries = retries
        self.durations_ms: list[float] = []
        self.faults: list[Fault] = []
        self._started = 0.0

    async def prepare_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        self._started = time.perf_counter()
        return request_context

    async def after_model_request(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, response: ModelResponse
    ) -> ModelResponse:
        self.durations_ms.append((time.perf_counter() - self._started) * 1000)
        return response

    async def on_model_request_error(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, error: Exception
    ) -> ModelResponse:
        retry = len([f for f in self.faults if f.after_response == len(self.durations_ms)]) + 1
        transient = is_transient(error) and retry <= self.retries.attempts
        self.faults.append(
            Fault(
                after_response=len(self.durations_ms),
                error_type=type(error).__name__,
                status=error.status_code if isinstance(error, ModelHTTPError) else None,
                message=redact(str(error))[:500],
                duration_ms=(time.perf_counter() - self._started) * 1000,
                retried=transient,
            )
        )
        if not transient:
            raise error
        retry_after = error.retry_after if isinstance(error, ModelAPIError) else None
        delay = self.retries.delay(retry, retry_after)
        if delay > 0:
            await asyncio.sleep(delay)
        raise RetryModelRequest()



def ledger_attempts(
    messages: Sequence[ModelMessage],
    *,
    model: str,
    mode: str,
    recorder: RunRecorder,
    repair: OutputRepair | None,
    first_index: int = 1,
) -> list[Attempt]:
    """One `Attempt` per model response and per provider fault of one run, in the order they happened."""
    answered: list[Attempt] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            number = len(answered) + 1
            raw, tool = _raw_output(message)
            usage = message.usage
            durations = recorder.durations_ms
            answered.append(
                Attempt(
                    index=0,
                    model=model,
                    output_mode=mode,
                    raw_output=raw,
                    tool_name=tool,
                    repairs=repair.repairs.get(number, []) if repair is not None else [],
                    parse_error=repair.syntax_errors.get(number) if repair is not None else None,
                    usage=UsageNotes(
                        requests=1,
                        input_tokens=usage.input_tokens,
                        output_tokens=usage.output_tokens,
                        cost=_cost(message),
                    ),
                    duration_ms=durations[number - 1] if number <= len(durations) else None,
                )
            )
        elif isinstance(message, ModelRequest) and answered:
            # Validation feedback travels as a retried tool return (tool output) or a retry
            # feedback part (text output); both carry `retry` info and the error details.
            retried = [p for p in message.parts if getattr(p, "retry", None) is not None]
            if retried:
                answered[-1] = answered[-1].model_copy(
                    update={"errors": feedback_errors([getattr(p, "content", None) for p in retried])}
                )
    ordered: list[Attempt] = []
    faults = list(recorder.faults)
    for position in range(len(answered) + 1):
        for fault in (f for f in faults if f.after_response == position):
            ordered.append(
                Attempt(
                    index=0,
                    model=model,
                    output_mode=mode,
                    fault=f"{fault.error_type}: {fault.message}",
                    status=fault.status,
                    duration_ms=fault.duration_ms,
                )
            )
        if position < len(answered):
            ordered.append(answered[position])
    return [a.model_copy(update={"index": first_index + i}) for i, a in enumerate(ordered)]


def _raw_output(response: ModelResponse) -> tuple[str | None, str | None]:
    for part in response.parts:
        if isinstance(part, ToolCallPart):
            # Arguments exactly as the model sent them when they arrived as text.
            raw = part.args if isinstance(part.args, str) else json.dumps(part.args, ensure_ascii=False)
            return raw, part.tool_name
    texts = [part.content for part in response.parts if isinstance(part, TextPart)]
    return ("".join(texts) if texts else None), None


def _cost(response: ModelResponse) -> float | None:
    if not response.model_name or (response.usage.input_tokens == 0 and response.usage.output_tokens == 0):
        return None
    try:
        return float(response.cost().total_price)
    except (LookupError, ValueError, AssertionError):
        return None  # no known prices for this model (or no usage reported): cost unknown, not zero


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
    left: dict[str, float | int | None] = {}
    for name, used in (
        ("requests", spent.requests),
        ("input_tokens", spent.input_tokens),
        ("output_tokens", spent.output_tokens),
        ("total_tokens", spent.total_tokens),
        ("cost", spent.cost or 0.0),
    ):
        limit = getattr(limits, name)
        if limit is None:
            left[name] = None
            continue
        if used >= limit:
            return f"the `{name}` limit of {limit} ({used:g} used)"
        left[name] = limit - used
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
