"""`LLMInteractionManager`: the only module that builds and runs pydantic-ai `Agent`s.

One request in, one outcome out. Agents are cached by what changes them (the model and the output
type and mode); everything that varies per call (the rendered system text, the prompt, retries,
limits) is passed to the run, where the model really receives it. Every pydantic-ai outcome is
mapped to a `CallOutcome`: the validated output, or a `TaskError` with a fixed reason. The raw
answer of every attempt and the usage are kept either way, read from the run's messages
(`capture_run_messages`), because pydantic-ai's exceptions do not carry them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

import attrs
import pydantic_core
import structlog
from atomtask.handlers.base import BaseHandler, ModelChoice
from atomtask.handlers.redact import redact
from atomtask.system.errors import UsageError
from atomtask.system.providers import API_KEY_ENV, provider_of
from atomtask.system.results import Attempt, FailureReason, TaskError, UsageNotes
from atomtask.system.templates import OutputMode, TemplateLimits
from pydantic import BaseModel, ValidationError
from pydantic_ai import Agent, NativeOutput, PromptedOutput, ToolOutput, capture_run_messages
from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelHTTPError,
    ToolRetryError,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
    UserError,
)
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.profiles import ModelProfileSpec
from pydantic_ai.usage import UsageLimits

__all__ = ["CallOutcome", "LLMInteractionManager", "ModelCall"]

log = structlog.get_logger()

# Providers whose SDK one of atomtask's extras installs (the OpenAI SDK serves every OpenAI-compatible one).
_SDK_EXTRAS = {"openai": "openai", "openai-chat": "openai", "openai-responses": "openai", "anthropic": "anthropic"}


@attrs.frozen(kw_only=True)
class ModelCall:
    """One request to a model, fully rendered."""

    template: str
    model: ModelChoice
    system: str | None
    prompt: str
    output_cls: type[BaseModel] | None
    mode: OutputMode = OutputMode.TOOL
    retries: int | None = None
    limits: TemplateLimits | None = None


@attrs.frozen(kw_only=True)
class CallOutcome:
    """What came back: the validated output or an error, and the ledger of attempts either way."""

    output: Any
    content: str | None
    attempts: list[Attempt]
    usage: UsageNotes
    error: TaskError | None = None


class LLMInteractionManager:
    """Builds, caches and runs pydantic-ai Agents for the `BaseHandler`'s models."""

    def __init__(self, handler: BaseHandler) -> None:
        self.handler = handler
        self._agents: dict[tuple[Any, ...], tuple[Agent[None, Any], Any]] = {}
        self._lock = threading.Lock()

    def run_sync(self, call: ModelCall) -> CallOutcome:
        """Run `call` with `Agent.run_sync`."""
        prepared = self._prepare(call)
        if isinstance(prepared, CallOutcome):
            return prepared
        agent, kwargs = prepared
        with capture_run_messages() as messages:
            try:
                result = agent.run_sync(call.prompt, **kwargs)
            except Exception as exc:  # every run failure becomes a FAILED result, never a raise
                return self._failure(call, exc, messages)
        return self._success(call, result.output, messages)

    async def run(self, call: ModelCall) -> CallOutcome:
        """Run `call` with `await Agent.run`."""
        prepared = self._prepare(call)
        if isinstance(prepared, CallOutcome):
            return prepared
        agent, kwargs = prepared
        with capture_run_messages() as messages:
            try:
                result = await agent.run(call.prompt, **kwargs)
            except Exception as exc:  # every run failure becomes a FAILED result, never a raise
                return self._failure(call, exc, messages)
        return self._success(call, result.output, messages)

    def agent_count(self) -> int:
        """How many distinct Agents have been built (for tests of the cache)."""
        return len(self._agents)

    def _prepare(self, call: ModelCall) -> tuple[Agent[None, Any], dict[str, Any]] | CallOutcome:
        try:
            agent = self._agent(call)
        except Exception as exc:
            return _outcome(_configuration_error(call, exc))
        kwargs: dict[str, Any] = {"instructions": call.system}
        if self.handler.model_settings is not None:
            kwargs["model_settings"] = self.handler.model_settings
        if call.retries is not None:
            kwargs["retries"] = {"output": call.retries}
        if call.limits is not None:
            kwargs["usage_limits"] = UsageLimits(
                request_limit=call.limits.requests,
                input_tokens_limit=call.limits.input_tokens,
                output_tokens_limit=call.limits.output_tokens,
                total_tokens_limit=call.limits.total_tokens,
            )
        return agent, kwargs

    def _agent(self, call: ModelCall) -> Agent[None, Any]:
        spec = call.model.spec
        model_key: Any = spec if isinstance(spec, str) else ("instance", id(spec))
        key = (model_key, call.output_cls, call.mode)
        cached = self._agents.get(key)
        if cached is not None:
            return cached[0]
        with self._lock:
            cached = self._agents.get(key)
            if cached is not None:
                return cached[0]
            agent: Agent[None, Any] = Agent(
                self.handler.build(call.model),
                output_type=output_spec(call.output_cls, call.mode),
                name=f"atomtask:{call.template}",
            )
            # The model instance is kept with its Agent so its id() cannot be reused by another.
            self._agents[key] = (agent, spec)
            return agent

    def _success(self, call: ModelCall, output: Any, messages: Sequence[ModelMessage]) -> CallOutcome:
        attempts = _attempts(messages)
        _log_attempts(call, attempts)
        content = attempts[-1].raw_output if attempts else None
        return CallOutcome(output=output, content=content, attempts=attempts, usage=_total(attempts))

    def _failure(self, call: ModelCall, exc: Exception, messages: Sequence[ModelMessage]) -> CallOutcome:
        attempts = _attempts(messages)
        final_errors = _final_errors(exc)
        if final_errors is not None and attempts and not attempts[-1].errors:
            # The answer that exhausted the retries draws no feedback message; its errors ride on
            # the exception's cause instead.
            attempts[-1] = attempts[-1].model_copy(update={"errors": final_errors})
        _log_attempts(call, attempts)
        error = _map_error(call, exc, attempts)
        content = attempts[-1].raw_output if attempts else None
        return CallOutcome(output=None, content=content, attempts=attempts, usage=_total(attempts), error=error)


def output_spec(output_cls: type[BaseModel] | None, mode: OutputMode) -> Any:
    """The pydantic-ai output type for `output_cls` in `mode` (`str` for text)."""
    if output_cls is None:
        return str
    if mode is OutputMode.NATIVE:
        return NativeOutput(output_cls)
    if mode is OutputMode.PROMPTED:
        return PromptedOutput(output_cls)
    return ToolOutput(output_cls)


def _outcome(error: TaskError) -> CallOutcome:
    return CallOutcome(output=None, content=None, attempts=[], usage=UsageNotes(), error=error)


def _configuration_error(call: ModelCall, exc: Exception) -> TaskError:
    label = call.model.label
    if isinstance(exc, ImportError):
        provider = provider_of(label) or label
        install = (
            f"pip install 'atomtask[{_SDK_EXTRAS[provider]}]'"
            if provider in _SDK_EXTRAS
            else f"pip install 'pydantic-ai-slim[{provider}]'"
        )
        message = f"Model {label!r} needs a provider package that is not installed; install it with `{install}`."
    elif isinstance(exc, UsageError):
        message = exc.message
    else:
        message = f"Model {label!r} cannot be used: {redact(str(exc))}"
    return TaskError(reason=FailureReason.CONFIGURATION_ERROR, message=message, details={"model": label})


def _map_error(call: ModelCall, exc: Exception, attempts: list[Attempt]) -> TaskError:
    label = call.model.label
    provider = provider_of(label) or label
    if isinstance(exc, UsageLimitExceeded):
        return TaskError(
            reason=FailureReason.USAGE_LIMIT_EXCEEDED,
            message=f"{exc} (template {call.template!r}, {len(attempts)} model call(s) made). Raise the "
            "template's `limits` if this is expected.",
            details={"model": label, "limits": call.limits.model_dump() if call.limits else None},
        )
    if isinstance(exc, ModelHTTPError):
        status = exc.status_code
        body = redact(_body_message(exc.body) or str(exc))
        message = f"Provider {provider!r} answered HTTP {status} for model {exc.model_name!r}: {body}"
        details: dict[str, Any] = {"status": status, "provider": provider, "model": label}
        if status in (401, 403):
            env = API_KEY_ENV.get(provider)
            if env is not None:
                message += f". Check the `{env}` environment variable: the key is missing, wrong or not allowed."
                details["env_var"] = env
        return TaskError(reason=FailureReason.PROVIDER_ERROR, message=message, details=details)
    if isinstance(exc, ModelAPIError):
        return TaskError(
            reason=FailureReason.PROVIDER_ERROR,
            message=f"Provider {provider!r} failed for model {label!r}: {redact(str(exc))}",
            details={"provider": provider, "model": label, "status": None, "error_type": type(exc).__name__},
        )
    if isinstance(exc, UnexpectedModelBehavior):
        invalid = [a for a in attempts if a.errors]
        if invalid:
            last = _describe_errors(invalid[-1].errors)
            return TaskError(
                reason=FailureReason.OUTPUT_VALIDATION_FAILURE,
                message=(
                    f"The model's answer failed validation on all {len(invalid)} attempt(s) for template "
                    f"{call.template!r}; last errors: {last}. Raise `retries`, tighten the instructions, or "
                    "use a stronger model; every raw answer is in `notes.attempts`."
                ),
                details={"model": label, "attempts": len(attempts)},
            )
        return TaskError(
            reason=FailureReason.PROVIDER_ERROR,
            message=f"Model {label!r} behaved unexpectedly: {redact(str(exc))}",
            details={"model": label, "provider": provider, "status": None},
        )
    if isinstance(exc, UserError):
        return _configuration_error(call, exc)
    log.exception("task_unexpected_error", template=call.template, model=label)
    return TaskError(
        reason=FailureReason.UNEXPECTED_ERROR,
        message=f"Unexpected {type(exc).__name__} while running template {call.template!r}: {redact(str(exc))}",
        details={"model": label, "error_type": type(exc).__name__},
    )


def _body_message(body: object) -> str | None:
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(body.get("message"), str):
            return str(body["message"])
    if isinstance(body, str) and body:
        return body
    return None


def _describe_errors(errors: list[dict[str, Any]] | str | None) -> str:
    if not errors:
        return "none"
    if isinstance(errors, str):
        return errors
    parts = []
    for err in errors[:3]:
        loc = ".".join(str(p) for p in err.get("loc", ()))
        parts.append(f"{loc + ': ' if loc else ''}{err.get('msg', '')}")
    more = f" (+{len(errors) - 3} more)" if len(errors) > 3 else ""
    return "; ".join(parts) + more


def _attempts(messages: Sequence[ModelMessage]) -> list[Attempt]:
    """One `Attempt` per model response, with the retry feedback that followed it."""
    attempts: list[Attempt] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            raw, tool = _raw_output(message)
            usage = message.usage
            attempts.append(
                Attempt(
                    index=len(attempts) + 1,
                    model=message.model_name,
                    raw_output=raw,
                    tool_name=tool,
                    usage=UsageNotes(requests=1, input_tokens=usage.input_tokens, output_tokens=usage.output_tokens),
                )
            )
        elif isinstance(message, ModelRequest) and attempts:
            # Validation feedback travels as a retried tool return (tool output) or a retry
            # feedback part (text output); both carry `retry` info and the error details.
            retried = [p for p in message.parts if getattr(p, "retry", None) is not None]
            if retried:
                attempts[-1] = attempts[-1].model_copy(
                    update={"errors": _errors([getattr(p, "content", None) for p in retried])}
                )
    return attempts


def _raw_output(response: ModelResponse) -> tuple[str | None, str | None]:
    for part in response.parts:
        if isinstance(part, ToolCallPart):
            # Arguments exactly as the model sent them when they arrived as text.
            raw = part.args if isinstance(part.args, str) else json.dumps(part.args, ensure_ascii=False)
            return raw, part.tool_name
    texts = [part.content for part in response.parts if isinstance(part, TextPart)]
    return ("".join(texts) if texts else None), None


def _final_errors(exc: BaseException) -> list[dict[str, Any]] | None:
    cause = exc.__cause__
    if isinstance(cause, ValidationError):
        return _errors([list(cause.errors(include_url=False))])
    if isinstance(cause, ToolRetryError):
        return _errors([cause.tool_retry.content])
    return None


def _errors(contents: Sequence[Any]) -> list[dict[str, Any]]:
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


def _total(attempts: list[Attempt]) -> UsageNotes:
    total = UsageNotes()
    for attempt in attempts:
        total = total + attempt.usage
    return total


def _log_attempts(call: ModelCall, attempts: list[Attempt]) -> None:
    for attempt in attempts:
        log.debug(
            "task_attempt",
            template=call.template,
            attempt=attempt.index,
            model=attempt.model,
            valid=attempt.valid,
            errors=len(attempt.errors or ()),
            input_tokens=attempt.usage.input_tokens,
            output_tokens=attempt.usage.output_tokens,
        )


class _Seen(Exception):
    """Stops a probe run once the request parameters have been read."""

    def __init__(self, info: AgentInfo) -> None:
        super().__init__("request captured")
        self.info = info


def _capture(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    raise _Seen(info)


def probe_request(profile: ModelProfileSpec | None, output_type: Any) -> AgentInfo:
    """What a model with `profile` would be sent for `output_type`: one request, stopped before any call.

    Runs the Agent on a `FunctionModel` carrying the profile, so the output tool or output object and
    the profile's schema transformations are pydantic-ai's own; nothing leaves the process.
    """
    agent: Agent[None, Any] = Agent(
        FunctionModel(_capture, model_name="atomtask-schema-probe", profile=profile), output_type=output_type
    )
    try:
        agent.run_sync("")
    except _Seen as seen:
        return seen.info
    raise AssertionError("the probe model was not called")  # pragma: no cover - the model always runs once
