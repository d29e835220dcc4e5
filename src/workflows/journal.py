"""The seam for durable runs: a `StepJournal` that each top-level step of a run goes through.

The runner knows nothing of storage. Given a journal, it hands it every top-level step (a task, a
sub-workflow, a `for_each` or a `parallel` group) together with the call that runs it; the journal
either runs the call and records its outcome, or returns the outcome it recorded before (a resumed
run), marked `replayed` so the runner counts that step's usage against the run's limits without
paying for it again. `atomtask.runs` implements it on a durable-execution engine; the runner only
needs the step's outcome back, in the same `Attempted` form `_run_step` gives.

An approval step (`type: approval`) goes to the journal too: only a durable run can wait for a
person's decision (across processes, for hours); without one the step fails and says so.

A `Start` begins a run elsewhere than at its first step with its run inputs: a run resumed into
another version of its workflow goes on from its migrated state, after its last completed step.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

import attrs
from atomtask.system.results import UsageNotes
from atomtask.workflows.compiled import CompiledStep
from pydantic import BaseModel

if TYPE_CHECKING:  # step_runs imports the executor (pydantic-ai): reading runs back must not pay for it
    from atomtask.workflows.step_runs import Attempted

__all__ = ["Journaled", "Start", "StepJournal", "unjournaled_approval"]


@attrs.frozen(kw_only=True)
class Journaled:
    """A step's outcome through a journal: `replayed` when it was recorded before and not run again."""

    attempted: Attempted
    replayed: bool = False


class StepJournal(Protocol):
    """Runs (or replays) one top-level step of a run; the runner calls it in the order the steps run."""

    async def step(
        self, step: CompiledStep, visit: int, state: BaseModel, run: Callable[[], Awaitable[Attempted]]
    ) -> Journaled:
        """The outcome of visit `visit` of `step` on `state`: `await run()`'s, recorded, or the one recorded before."""
        ...

    async def approval(self, step: CompiledStep, visit: int, state: BaseModel) -> Journaled:
        """An approval step: wait for the decision (or its timeout); its outcome writes it to the step's `output`."""
        ...


def unjournaled_approval(step: CompiledStep, visit: int) -> Attempted:
    """The outcome of an approval step in a run that is not durable: it fails, saying how to run it."""
    from atomtask.system.workflow_results import StepStatus, StepVisit, WorkflowFailure, WorkflowFailureReason
    from atomtask.workflows.step_runs import Attempted

    failure = WorkflowFailure(
        reason=WorkflowFailureReason.STEP_FAILED,
        message=f"Step {step.id!r} waits for an approval, which needs a durable run: give it a run id "
        "(`run_workflow(..., run_id=...)`, or `atomtask workflow run` with the `durable` extra installed).",
        step=step.id,
    )
    visits = [StepVisit(step=step.id, visit=visit, status=StepStatus.FAILED, error=failure)]
    return Attempted(visits=visits, failure=failure, terminal=True)


@attrs.frozen(kw_only=True)
class Start:
    """Where a run begins instead of its first step: a validated `state` and a step.

    With `after`, the run goes where `step`'s routes (on `state`) lead; else it runs `step` first.
    `used` is what the run spent before, counted against its limits.
    """

    state: BaseModel
    step: str
    after: bool = False
    used: UsageNotes = attrs.field(factory=UsageNotes)
