"""What callers get back: `TaskResult[T]`, its `TaskError`, the notes kept for every run, and `TaskFailedError`."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Generic, TypeVar, cast

from atomtask.system.errors import AtomTaskError
from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Attempt",
    "Coercion",
    "FailureReason",
    "TaskError",
    "TaskFailedError",
    "TaskNotes",
    "TaskResult",
    "TaskStatus",
    "UsageNotes",
]

T = TypeVar("T")


class TaskStatus(StrEnum):
    """Whether a task produced a validated answer."""

    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


class FailureReason(StrEnum):
    """Why a task failed; a fixed set so callers can branch on it."""

    TEMPLATE_NOT_FOUND = "template_not_found"
    INPUT_VALIDATION_FAILURE = "input_validation_failure"
    OUTPUT_VALIDATION_FAILURE = "output_validation_failure"
    PROVIDER_ERROR = "provider_error"
    USAGE_LIMIT_EXCEEDED = "usage_limit_exceeded"
    CONFIGURATION_ERROR = "configuration_error"
    UNEXPECTED_ERROR = "unexpected_error"


class TaskError(BaseModel):
    """A run failure: the reason, a message that says what to do, and structured details.

    `details` carries what a program may act on: the failing parameter names, the HTTP status and
    provider, near template names, the environment variable to set.
    """

    model_config = ConfigDict(frozen=True)

    reason: FailureReason
    message: str
    details: dict[str, Any] = Field(default_factory=dict)


class UsageNotes(BaseModel):
    """Tokens, requests and cost (USD, when the provider's prices are known), summed like pydantic-ai."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: UsageNotes) -> UsageNotes:
        return UsageNotes(
            requests=self.requests + other.requests,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cost=None if self.cost is None and other.cost is None else (self.cost or 0.0) + (other.cost or 0.0),
        )


class Coercion(BaseModel):
    """One value `repair: lenient` read toward the schema: what kind of reading, where, and the text before and after.

    `path` is the place in the answer (`items[0].qty`, empty for the whole answer); `before` is the
    text as the model wrote it, `after` the JSON it became. `str(coercion)` is the line kept in `repairs`.
    """

    model_config = ConfigDict(frozen=True)

    kind: str
    path: str
    before: str
    after: str

    def __str__(self) -> str:
        return f"lenient {self.kind} at {self.path or '(root)'!r}: {self.before!r} -> {self.after!r}"


class Attempt(BaseModel):
    """One model call: what it answered, what was repaired, and the errors it drew, if any.

    `model` is the model that answered (or failed), `output_mode` how it was asked; `repairs` lists
    the local repairs that made the answer valid without a retry (`coercions` holds the ones `repair:
    lenient` made toward the schema, structured); `parse_error` says what was wrong
    with the JSON as sent; `errors` are the validation errors fed back to the model; `fault` is a
    provider failure (HTTP status, timeout, dropped connection) for a request that got no answer.
    """

    index: int
    model: str | None = None
    output_mode: str | None = None
    raw_output: str | None = None
    tool_name: str | None = None
    repairs: list[str] = Field(default_factory=list)
    coercions: list[Coercion] = Field(default_factory=list)
    parse_error: str | None = None
    errors: list[dict[str, Any]] | str | None = None
    fault: str | None = None
    status: int | None = None
    usage: UsageNotes = Field(default_factory=UsageNotes)
    duration_ms: float | None = None

    @property
    def valid(self) -> bool:
        return not self.errors and self.fault is None


class TaskNotes(BaseModel):
    """Everything known about a run, kept whether it succeeded or not."""

    template: str
    model: str | None = None
    model_source: str | None = None
    output_mode: str | None = None
    duration_ms: float = 0.0
    usage: UsageNotes = Field(default_factory=UsageNotes)
    attempts: list[Attempt] = Field(default_factory=list)
    models_tried: list[str] = Field(default_factory=list)
    default_model_notice: str | None = None
    cached: bool = False
    """True when the answer came from the response cache (no model was called: usage is zero)."""
    cache_key: str | None = None
    """The response cache key the answer was served from or stored under; None when the cache was off."""


class TaskResult(BaseModel, Generic[T]):
    """The outcome of one task run.

    `parsedContent` is the validated instance of the template's declared class (never a dict dump);
    `content` is the model's raw final answer (text, or the JSON it produced). `execute` never raises
    for a task that failed: check `status`, or call `unwrap()`.

    Example:
        ```python
        result = system.execute("extract_contact", {"text": "..."})
        contact = result.unwrap()  # raises TaskFailedError if the task failed
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    status: TaskStatus
    content: str | None = None
    parsedContent: T | None = None
    notes: TaskNotes
    error: TaskError | None = None

    @property
    def ok(self) -> bool:
        """True when the task completed with a validated answer."""
        return self.status is TaskStatus.COMPLETE

    def unwrap(self) -> T:
        """The validated answer, or raise `TaskFailedError` carrying this result."""
        if self.status is not TaskStatus.COMPLETE:
            raise TaskFailedError(self)
        # COMPLETE implies the answer was set (and validated) by the executor.
        return cast(T, self.parsedContent)


class TaskFailedError(AtomTaskError):
    """Raised by `TaskResult.unwrap()` on a FAILED result; the whole result rides along.

    Attributes:
        result: the failed `TaskResult`, with its error, raw outputs and usage.
    """

    def __init__(self, result: TaskResult[Any]) -> None:
        self.result = result
        error = result.error
        detail = f"{error.reason.value}: {error.message}" if error is not None else "no error recorded"
        template = result.notes.template if result.notes is not None else "?"
        super().__init__(f"Task {template!r} failed ({detail})")
