"""What a workflow run returns: `WorkflowResult`, its visits, usage and `unwrap`."""

from __future__ import annotations

from typing import Any

import pytest
from atomtask import (
    FailureReason,
    StepStatus,
    StepVisit,
    TaskError,
    TaskNotes,
    TaskResult,
    TaskStatus,
    UsageNotes,
    WorkflowFailedError,
    WorkflowResult,
)
from pydantic import BaseModel


class State(BaseModel):
    n: int = 0


def _task(requests: int) -> TaskResult[Any]:
    return TaskResult[Any](
        status=TaskStatus.COMPLETE, notes=TaskNotes(template="t", usage=UsageNotes(requests=requests))
    )


def test_unwrap_gives_the_state_or_raises_with_the_whole_result() -> None:
    """COMPLETE unwraps to the state; FAILED raises WorkflowFailedError naming the step and reason."""
    assert State(n=1) == WorkflowResult[State](workflow="w", status=TaskStatus.COMPLETE, state=State(n=1)).unwrap()
    failure = TaskError(reason=FailureReason.STEP_FAILED, message="boom", step="s")
    failed = WorkflowResult[State](workflow="w", status=TaskStatus.FAILED, state=State(), error=failure)
    with pytest.raises(WorkflowFailedError) as caught:
        failed.unwrap()
    assert ("Workflow 'w' failed at step 's' (step_failed: boom)", failed) == (str(caught.value), caught.value.result)


def test_a_visit_costs_its_task_or_its_sub_workflow() -> None:
    """`StepVisit.usage` is the task's usage, or the nested run's total, or nothing for a skipped step."""
    task_visit = StepVisit(step="a", visit=1, status=StepStatus.COMPLETE, result=_task(2))
    nested = WorkflowResult[Any](workflow="c", status=TaskStatus.COMPLETE, usage=UsageNotes(requests=3))
    child_visit = StepVisit(step="b", visit=1, status=StepStatus.COMPLETE, subworkflow=nested)
    skipped = StepVisit(step="c", visit=1, status=StepStatus.SKIPPED)
    assert [2, 3, 0] == [v.usage.requests for v in (task_visit, child_visit, skipped)]
    result = WorkflowResult[Any](workflow="w", status=TaskStatus.COMPLETE, steps=[task_visit, child_visit, task_visit])
    assert [task_visit, task_visit] == result.visits("a")
