"""What callers get back: a task's `TaskResult[T]`, a workflow's `WorkflowResult[S]`, a batch item's `BatchItemResult`.

`TaskResult.parsedContent` is the validated instance of the template's declared class; its `notes`
keep every attempt, raw output and usage whether the task succeeded or not, and a failure is a
`TaskError` with a reason from a fixed set. A `WorkflowResult` holds the final state, every
`StepVisit` and the run's usage; a `BatchItemResult` is the JSON line `atomtask batch` writes per item.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Generic, TypeVar, cast

from atomtask.errors import TaskFailedError, WorkflowFailedError
from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Attempt",
    "BatchItemResult",
    "Coercion",
    "FailureReason",
    "MediaNote",
    "StepStatus",
    "StepVisit",
    "TaskError",
    "TaskNotes",
    "TaskResult",
    "TaskStatus",
    "ToolCall",
    "UsageNotes",
    "WorkflowResult",
]

T = TypeVar("T")


class TaskStatus(StrEnum):
    """Whether a task produced a validated answer."""

    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


class FailureReason(StrEnum):
    """Why a task, a workflow run or a batch item failed; a fixed set so callers can branch on it.

    A task fails for the first seven or `tool_error` (a tool it called raised an exception that is not a
    retry: `details` name the tool and the exception's type); a workflow run also for the next four
    (`step_failed`: a step's task
    or sub-workflow failed, and its `details` say why) and `code_error` (a code step's function raised or
    timed out: `details` name the function and the exception's type) and `failed_by_step` (a step with
    `fail:` ended the run on purpose: `details.name` is the reason it declares); a batch item for any of them, or
    `cancelled` (taken off the queue before it ran, when a DBOS batch stopped).
    """

    TEMPLATE_NOT_FOUND = "template_not_found"
    INPUT_VALIDATION_FAILURE = "input_validation_failure"
    OUTPUT_VALIDATION_FAILURE = "output_validation_failure"
    PROVIDER_ERROR = "provider_error"
    USAGE_LIMIT_EXCEEDED = "usage_limit_exceeded"
    CONFIGURATION_ERROR = "configuration_error"
    UNEXPECTED_ERROR = "unexpected_error"
    STEP_FAILED = "step_failed"
    STATE_VALIDATION_FAILURE = "state_validation_failure"
    EXPRESSION_ERROR = "expression_error"
    MAX_VISITS_EXCEEDED = "max_visits_exceeded"
    CANCELLED = "cancelled"
    TOOL_ERROR = "tool_error"
    CODE_ERROR = "code_error"
    FAILED_BY_STEP = "failed_by_step"


class TaskError(BaseModel):
    """Why something failed: the reason, a message that says what to do, structured details, and the step.

    The one failure record of a task (`TaskResult.error`), a workflow run and each of its step visits
    (`WorkflowResult.error`, `StepVisit.error`, with the `step` at fault) and a batch item
    (`BatchItemResult.error`). `details` carries what a program may act on: the failing parameter names,
    the HTTP status and provider, near template names, the environment variable to set, the state
    `field` and `value` of a write that did not fit, a step's task's own reason, the `max_visits` reached.
    """

    model_config = ConfigDict(frozen=True)

    reason: FailureReason
    message: str
    details: dict[str, Any] = Field(default_factory=dict)
    #: The workflow step at fault, when the failure is a step's.
    step: str | None = None


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


class ToolCall(BaseModel):
    """One call the model made to a tool (a Python function or an MCP server's) within an attempt.

    `args` are the arguments as the model sent them; `result` is what went back to the model (as JSON,
    or its text), `error` what the tool raised (`ModelRetry` messages and argument validation errors
    are sent back to the model, which may call again; any other exception ends the task as
    `tool_error`). `duration_ms` is the tool's own running time, when it ran.
    """

    name: str
    args: Any = None
    call_id: str | None = None
    result: Any = None
    error: str | None = None
    retried: bool = False
    duration_ms: float | None = None


class Attempt(BaseModel):
    """One model call: what it answered, what was repaired, and the errors it drew, if any.

    `model` is the model that answered (or failed), `output_mode` how it was asked; `repairs` lists
    the local repairs that made the answer valid without a retry (`coercions` holds the ones `repair:
    lenient` made toward the schema, structured); `parse_error` says what was wrong
    with the JSON as sent; `errors` are the validation errors fed back to the model; `fault` is a
    provider failure (HTTP status, timeout, dropped connection) for a request that got no answer.
    `finish_reason` is why the model stopped, as pydantic-ai normalises it (`stop`, `length`: cut off at
    the output token limit, `tool_call`, `content_filter`, `error`; None for a fault or when the provider
    did not say).
    """

    index: int
    model: str | None = None
    output_mode: str | None = None
    raw_output: str | None = None
    tool_name: str | None = None
    finish_reason: str | None = None
    repairs: list[str] = Field(default_factory=list)
    coercions: list[Coercion] = Field(default_factory=list)
    parse_error: str | None = None
    errors: list[dict[str, Any]] | str | None = None
    fault: str | None = None
    status: int | None = None
    usage: UsageNotes = Field(default_factory=UsageNotes)
    duration_ms: float | None = None
    #: The tools this answer called, in order, with what each returned or raised.
    tool_calls: list[ToolCall] = Field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.errors and self.fault is None


class MediaNote(BaseModel):
    """An image, document or audio value a task sent the model: what it was, never its bytes.

    `param` names the parameter (`photos[1]` for an item of a list); `size` and `sha256` are the bytes'
    (None for a URL, which is sent as it is); `source` is the file's name or the URL without its query.
    """

    param: str
    kind: str
    media_type: str | None = None
    size: int | None = None
    sha256: str | None = None
    source: str | None = None


class TaskNotes(BaseModel):
    """Everything known about a run, kept whether it succeeded or not."""

    template: str
    model: str | None = None
    model_source: str | None = None
    model_alias: str | None = None
    """The model alias `model` was named by (`fast`), when it was one; `model` is the model it stands for."""
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
    media: list[MediaNote] = Field(default_factory=list, exclude_if=lambda media: not media)
    """The images, documents and audio sent beside the prompt, in order: media type, size, hash (never the bytes)."""
    warnings: list[str] = Field(default_factory=list, exclude_if=lambda warnings: not warnings)
    """What the run went on with but a person should know, e.g. a prompt larger than `TaskSystem(large_prompt=...)`."""


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


S = TypeVar("S")


class StepStatus(StrEnum):
    """How one visit of a step ended."""

    COMPLETE = "COMPLETE"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"


class StepVisit(BaseModel):
    """One visit of one step: its task's `TaskResult` (or its sub-workflow's `WorkflowResult`).

    `visit` counts the visits of this step (1 for the first); `attempt` counts the escalations of
    `on_failure: {retry_with: ...}` within a visit (0 for the first try); `item` is the element's
    index in a `for_each` step.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    step: str
    visit: int
    status: StepStatus
    attempt: int = 0
    item: int | None = None
    task: str | None = None
    workflow: str | None = None
    #: The function a code step ran (`package.module:function`).
    call: str | None = None
    model: str | None = None
    result: TaskResult[Any] | None = None
    subworkflow: WorkflowResult[Any] | None = None
    error: TaskError | None = None

    @property
    def usage(self) -> UsageNotes:
        """What this visit cost (its task's usage, or everything its sub-workflow ran)."""
        if self.result is not None:
            return self.result.notes.usage
        if self.subworkflow is not None:
            return self.subworkflow.usage
        return UsageNotes()


class WorkflowResult(BaseModel, Generic[S]):
    """The outcome of one workflow run.

    `state` is an instance of the workflow's state class (None only when the run inputs did not
    validate); `steps` holds every visit in order; `usage` sums every visit, sub-workflows included.

    Example:
        ```python
        result = system.run_workflow("article_writer", {"topic": "tides"})
        final = result.unwrap()  # the state; raises WorkflowFailedError if the run failed
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    workflow: str
    status: TaskStatus
    state: S | None = None
    steps: list[StepVisit] = Field(default_factory=list)
    usage: UsageNotes = Field(default_factory=UsageNotes)
    duration_ms: float = 0.0
    error: TaskError | None = None
    #: The durable run's id (`atomtask.runs`), None for a run that was not recorded.
    run_id: str | None = None

    @property
    def ok(self) -> bool:
        """True when the run reached its end."""
        return self.status is TaskStatus.COMPLETE

    def unwrap(self) -> S:
        """The final state, or raise `WorkflowFailedError` carrying this result."""
        if self.status is not TaskStatus.COMPLETE:
            raise WorkflowFailedError(self)
        return cast(S, self.state)

    def visits(self, step: str) -> list[StepVisit]:
        """The visits of one step, in order."""
        return [visit for visit in self.steps if visit.step == step]


StepVisit.model_rebuild()


class BatchItemResult(BaseModel):
    """One item of a batch, finished: COMPLETE with its `output`, or FAILED with an `error`.

    Attributes:
        id: the item's id (its `id` field, `--id-field`, else `item-<hash of its inputs>`).
        status: COMPLETE or FAILED.
        output: the validated value in JSON form (None when FAILED).
        error: the reason and message (None when COMPLETE).
        usage: tokens, requests and cost the item spent when it ran (kept by the record).
        attempts: how many model answers and provider faults the item went through.
        tool_calls: every tool call its tasks made, in order (in the JSON line only when there are some).
        media: the images, documents and audio a template's item sent, never their bytes (only when there are some).
        raw_answers: a FAILED template item's answers as the model sent them, in order (only when there are
            some): what was paid for, kept for a look or a later repair.
        index: the item's 0-based position in the input (not written to the JSON line).
        resumed: True when the result was read from the durable record, not run now (not written either).
    """

    id: str
    status: TaskStatus
    output: Any = None
    error: TaskError | None = None
    usage: UsageNotes = Field(default_factory=UsageNotes)
    attempts: int = 0
    tool_calls: list[ToolCall] = Field(default_factory=list, exclude_if=lambda calls: not calls)
    media: list[MediaNote] = Field(default_factory=list, exclude_if=lambda media: not media)
    raw_answers: list[str] = Field(default_factory=list, exclude_if=lambda answers: not answers)
    index: int = Field(default=0, exclude=True)
    resumed: bool = Field(default=False, exclude=True)

    @property
    def ok(self) -> bool:
        """True when the item is COMPLETE."""
        return self.status == TaskStatus.COMPLETE

    def json_line(self) -> str:
        """The item's line of a results file (no newline): `id`, `status`, `output`, `error`, `usage`, `attempts`."""
        return self.model_dump_json()
