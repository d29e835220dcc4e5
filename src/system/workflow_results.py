"""What a workflow run gives back: `WorkflowResult[S]`, each `StepVisit`, the `WorkflowFailure`, `WorkflowFailedError`.

Like `TaskResult`, a run that failed is a FAILED result, never an exception: the state as it was
when the run stopped, every step visit with its `TaskResult` (ledger included) and the usage of all
of them are kept, so nothing paid for is lost.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Generic, TypeVar, cast

from atomtask.system.errors import AtomTaskError
from atomtask.system.results import TaskResult, TaskStatus, UsageNotes
from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "StepStatus",
    "StepVisit",
    "WorkflowFailedError",
    "WorkflowFailure",
    "WorkflowFailureReason",
    "WorkflowResult",
]

S = TypeVar("S")


class WorkflowFailureReason(StrEnum):
    """Why a workflow run failed; a fixed set so callers can branch on it."""

    INPUT_VALIDATION_FAILURE = "input_validation_failure"
    STEP_FAILED = "step_failed"
    STATE_VALIDATION_FAILURE = "state_validation_failure"
    EXPRESSION_ERROR = "expression_error"
    MAX_VISITS_EXCEEDED = "max_visits_exceeded"
    USAGE_LIMIT_EXCEEDED = "usage_limit_exceeded"
    UNEXPECTED_ERROR = "unexpected_error"


class WorkflowFailure(BaseModel):
    """Why a run (or one step visit) failed: the reason, the step, a message that says what to do, details.

    `details` carries what a program may act on: the state `field` and `value` of a write that did
    not fit, the task's `TaskError` reason, the `max_visits` reached.
    """

    model_config = ConfigDict(frozen=True)

    reason: WorkflowFailureReason
    message: str
    step: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)


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
    model: str | None = None
    result: TaskResult[Any] | None = None
    subworkflow: WorkflowResult[Any] | None = None
    error: WorkflowFailure | None = None

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
    error: WorkflowFailure | None = None
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


class WorkflowFailedError(AtomTaskError):
    """Raised by `WorkflowResult.unwrap()` on a FAILED run; the whole result rides along.

    Attributes:
        result: the failed `WorkflowResult`, with its error, state, visits and usage.
    """

    def __init__(self, result: WorkflowResult[Any]) -> None:
        self.result = result
        error = result.error
        at = f" at step {error.step!r}" if error is not None and error.step else ""
        detail = f"{error.reason.value}: {error.message}" if error is not None else "no error recorded"
        super().__init__(f"Workflow {result.workflow!r} failed{at} ({detail})")


StepVisit.model_rebuild()
