"""One model call: what is sent (`ModelCall`), what comes back (`CallOutcome`), and its failures.

Every way a pydantic-ai run can fail (an HTTP error, an unreachable provider, answers that never
validated, a usage limit, a missing provider package) is mapped here to a `TaskError` with a fixed
`FailureReason` and a message that says the fix; the validation errors of the last answer are read
from the exception's cause.
"""

from __future__ import annotations

from typing import Any

import attrs
from atomtask.handlers.base import ModelChoice
from atomtask.handlers.ledger import feedback_errors
from atomtask.handlers.redact import redact
from atomtask.loading.providers import API_KEY_ENV, install_command, provider_of
from atomtask.system.errors import UsageError
from atomtask.system.logs import get_logger
from atomtask.system.results import Attempt, FailureReason, TaskError
from atomtask.system.templates import OutputMode, RepairMode, TemplateLimits
from pydantic import BaseModel, ValidationError
from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelHTTPError,
    ToolRetryError,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
    UserError,
)

__all__ = ["CallOutcome", "ModelCall", "budget_error", "configuration_error", "errors_of_last_answer", "map_error"]

log = get_logger(__name__)


# Built for every call, and only read after: `attrs.define`, not `frozen`, whose `__init__` sets each field
# through `object.__setattr__` (about twice the cost, measured on the happy path).
@attrs.define(kw_only=True)
class ModelCall:
    """One request to a model, fully rendered (read-only by convention)."""

    template: str
    model: ModelChoice
    system: str | None
    prompt: str
    output_cls: type[BaseModel] | None
    mode: OutputMode = OutputMode.TOOL
    retries: int | None = None
    limits: TemplateLimits | None = None
    fallbacks: tuple[ModelChoice, ...] = ()
    repair: RepairMode = RepairMode.SAFE
    # The template's and the call's model settings, merged (the TaskSystem's go under them at run time).
    model_settings: dict[str, Any] | None = None
    # The system text is the template's own, the same for every call (no placeholders): it goes on the Agent.
    fixed_system: bool = False


@attrs.define(kw_only=True)  # one per call, read-only by convention (see `ModelCall`)
class CallOutcome:
    """What came back: the validated output or an error, and the ledger of attempts either way."""

    output: Any
    content: str | None
    attempts: list[Attempt]  # their usage in all: `ledger.usage_total`
    error: TaskError | None = None
    model: str | None = None
    models_tried: list[str] = attrs.field(factory=list)


def configuration_error(choice: ModelChoice, exc: Exception) -> TaskError:
    """A model that cannot be used (missing provider package, missing key): a `configuration_error` naming the fix."""
    label = choice.label
    if isinstance(exc, ImportError):
        message = (
            f"Model {label!r} needs a provider package that is not installed; "
            f"install it with `{install_command(label)}`."
        )
    elif isinstance(exc, UsageError):
        message = exc.message
    elif (env := API_KEY_ENV.get(provider_of(label) or "")) is not None and env in str(exc):
        # pydantic-ai's text points at `Agent('test')` and `...Provider(api_key=...)`, which atomtask users never write.
        message = f"Model {label!r} needs an API key: set the `{env}` environment variable, or choose another model."
        return TaskError(
            reason=FailureReason.CONFIGURATION_ERROR, message=message, details={"model": label, "env_var": env}
        )
    else:
        message = f"Model {label!r} cannot be used: {redact(str(exc))}"
    return TaskError(reason=FailureReason.CONFIGURATION_ERROR, message=message, details={"model": label})


def budget_error(call: ModelCall, choice: ModelChoice, exceeded: str, attempts: list[Attempt]) -> TaskError:
    """The next attempt would exceed the task's limits: a `usage_limit_exceeded` naming the models tried."""
    models = sorted({a.model for a in attempts if a.model})
    return TaskError(
        reason=FailureReason.USAGE_LIMIT_EXCEEDED,
        message=f"The next attempt (model {choice.label!r}) would exceed {exceeded} of template {call.template!r}, "
        f"after {len(attempts)} attempt(s) on {', '.join(map(repr, models)) or 'no model'}. Raise the "
        "template's `limits` (or the call's `limits=`) if this is expected; every attempt is in `notes.attempts`.",
        details={"model": choice.label, "limits": call.limits.model_dump() if call.limits else None},
    )


def map_error(call: ModelCall, choice: ModelChoice, exc: Exception, attempts: list[Attempt]) -> TaskError:
    """A failed pydantic-ai run as a `TaskError`: its reason, a message that says what to do, and details."""
    label = choice.label
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
        # A dropped or refused connection says only "Connection error.": name where it was going.
        url = _request_url(exc)
        where = f" (request to {redact(url)})" if url is not None else ""
        return TaskError(
            reason=FailureReason.PROVIDER_ERROR,
            message=f"Provider {provider!r} failed for model {label!r}: {redact(str(exc)).rstrip('.')}{where}.",
            details={
                "provider": provider,
                "model": label,
                "status": None,
                "error_type": type(exc).__name__,
                "url": redact(url) if url is not None else None,
            },
        )
    if isinstance(exc, UnexpectedModelBehavior):
        invalid = [a for a in attempts if a.errors and a.model == label]
        if invalid:
            last = _describe_errors(invalid[-1].errors)
            return TaskError(
                reason=FailureReason.OUTPUT_VALIDATION_FAILURE,
                message=(
                    f"The model's answer failed validation on all {len(invalid)} attempt(s) for template "
                    f"{call.template!r}; last errors: {last}. Raise `retries`, tighten the instructions, or "
                    "use a stronger model; every raw answer is in `notes.attempts`."
                ),
                details={"model": label, "attempts": len(invalid)},
            )
        return TaskError(
            reason=FailureReason.PROVIDER_ERROR,
            message=f"Model {label!r} behaved unexpectedly: {redact(str(exc))}",
            details={"model": label, "provider": provider, "status": None},
        )
    if isinstance(exc, UserError):
        return configuration_error(choice, exc)
    log.exception("task_unexpected_error", template=call.template, model=label)
    return TaskError(
        reason=FailureReason.UNEXPECTED_ERROR,
        message=f"Unexpected {type(exc).__name__} while running template {call.template!r}: {redact(str(exc))}",
        details={"model": label, "error_type": type(exc).__name__},
    )


def _request_url(exc: BaseException) -> str | None:
    """The URL of the HTTP request behind a provider error: the SDK's exception (the cause) carries it."""
    cause: BaseException | None = exc
    for _ in range(8):  # the chain is pydantic-ai's error, the SDK's, httpx's, the socket's
        if cause is None:
            return None
        try:
            url = cause.request.url  # type: ignore[attr-defined]  # httpx raises RuntimeError when unset
        except Exception:
            url = None
        if url:
            return str(url)
        cause = cause.__cause__ or cause.__context__
    return None


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


def errors_of_last_answer(exc: BaseException) -> list[dict[str, Any]] | None:
    """The validation errors of the answer that exhausted the retries, when `exc` carries them."""
    cause = exc.__cause__
    if isinstance(cause, ValidationError):
        return feedback_errors([list(cause.errors(include_url=False))])
    if isinstance(cause, ToolRetryError):
        return feedback_errors([cause.tool_retry.content])
    return None
