"""One checkpoint per completed top-level step: what it is stored as, read back as, and the journal that records it.

A checkpoint is a JSON document, the output of one DBOS step of the run's DBOS workflow: the step id
and visit, the workflow's `version` and state-schema fingerprint, the step's validated writes, the
whole state after it, and every visit of it with its `TaskResult` (the attempt ledger: raw outputs,
usage). DBOS writes it before the run goes on to the next step, so a run killed at any instant
resumes after its last checkpoint: the steps recorded are replayed from their checkpoints (never run
or paid again), a step that was in flight runs again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import attrs
from atomtask.runs.errors import CorruptCheckpointError
from atomtask.runs.migrations import state_fingerprint
from atomtask.system.logs import get_logger
from atomtask.system.workflow_results import StepVisit, WorkflowFailure
from atomtask.workflows.compiled import CompiledStep, CompiledWorkflow
from atomtask.workflows.journal import Journaled
from atomtask.workflows.state import StateWriteError, write_state
from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python

if TYPE_CHECKING:  # step_runs imports the executor (pydantic-ai): `runs` and `show` read checkpoints without it
    from atomtask.workflows.step_runs import Attempted

__all__ = ["FORMAT", "Checkpoint", "DbosJournal", "decode", "fingerprint", "plain_state"]

log = get_logger(__name__)

#: The layout of a checkpoint document; a reader refuses any other.
FORMAT = 1


def fingerprint(state_cls: type[BaseModel]) -> str:
    """The fingerprint of a state schema (`runs.migrations.state_fingerprint`), stored with every checkpoint."""
    return state_fingerprint(state_cls)


def plain_state(state: BaseModel, hidden: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The fields a state has a value for, as JSON values (fields in `hidden` left out)."""
    values = {name: value for name, value in state.__dict__.items() if name not in hidden}
    return dict(to_jsonable_python(values))


@attrs.frozen(kw_only=True)
class Checkpoint:
    """A checkpoint read back: one completed top-level step visit of a run."""

    number: int
    step: str
    visit: int
    version: str | None
    fingerprint: str
    writes: dict[str, Any]
    state: dict[str, Any]
    visits: list[StepVisit]
    failure: WorkflowFailure | None
    terminal: bool
    completed_at_ms: int | None = None
    #: The `redact: true` fields the step wrote, left out of the checkpoint (given again on resume).
    redacted: tuple[str, ...] = ()

    def attempted(self, secrets: dict[str, Any] | None = None) -> Attempted:
        """The step's outcome, as the runner takes it (with the redacted fields it wrote, from `secrets`)."""
        from atomtask.workflows.step_runs import Attempted

        writes = {**self.writes, **{f: (secrets or {})[f] for f in self.redacted if f in (secrets or {})}}
        return Attempted(visits=self.visits, writes=writes, failure=self.failure, terminal=self.terminal)


def encode(
    step: CompiledStep, visit: int, compiled: CompiledWorkflow, attempted: Attempted, after: BaseModel
) -> dict[str, Any]:
    """The JSON document of a completed step (its outcome and the state after it), redacted fields left out.

    A step that wrote a `redact: true` field keeps its ledger without the answers that held the value.
    """
    hidden = compiled.redacted_fields
    secret = sorted(hidden.intersection(attempted.writes))
    visits = [v.model_dump(mode="json") for v in attempted.visits]
    if secret:
        visits = [_scrubbed(v) for v in visits]
    return {
        "format": FORMAT,
        "step": step.id,
        "visit": visit,
        "version": compiled.workflow.version,
        "fingerprint": fingerprint(compiled.state_cls),
        "writes": to_jsonable_python({k: v for k, v in attempted.writes.items() if k not in hidden}),
        "redacted": secret,
        "state": plain_state(after, hidden),
        "visits": visits,
        "failure": attempted.failure.model_dump(mode="json") if attempted.failure is not None else None,
        "terminal": attempted.terminal,
    }


REDACTED = "[redacted]"


def _scrubbed(visit: dict[str, Any]) -> dict[str, Any]:
    """A visit's JSON without the model's answers (they held a redacted value); usage and errors are kept."""
    result = visit.get("result")
    if isinstance(result, dict):
        result.update(content=REDACTED, parsedContent=REDACTED)
        notes = result.get("notes")
        for attempt in notes.get("attempts", []) if isinstance(notes, dict) else []:
            if isinstance(attempt, dict):
                attempt["raw_output"] = REDACTED
    if visit.get("subworkflow") is not None:
        visit["subworkflow"] = {**visit["subworkflow"], "state": REDACTED, "steps": []}
    return visit


def decode(run_id: str, number: int, document: Any, completed_at_ms: int | None = None) -> Checkpoint:
    """Read a checkpoint document back; `CorruptCheckpointError` when it is not one."""
    step = document.get("step") if isinstance(document, dict) else None
    where = str(step) if isinstance(step, str) else None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise CorruptCheckpointError(run_id, where, f"checkpoint #{number} is not a format-{FORMAT} checkpoint")
    try:
        failure = document["failure"]
        return Checkpoint(
            number=number,
            step=str(document["step"]),
            visit=int(document["visit"]),
            version=document["version"],
            fingerprint=str(document["fingerprint"]),
            writes=dict(document["writes"]),
            state=dict(document["state"]),
            visits=[StepVisit.model_validate(v) for v in document["visits"]],
            failure=WorkflowFailure.model_validate(failure) if failure is not None else None,
            terminal=bool(document["terminal"]),
            completed_at_ms=completed_at_ms,
            redacted=tuple(str(f) for f in document.get("redacted", ())),
        )
    except (KeyError, TypeError, ValueError, ValidationError) as exc:
        problem = f"checkpoint #{number}: {type(exc).__name__}: {str(exc).splitlines()[0]}"
        raise CorruptCheckpointError(run_id, where, problem) from None


@attrs.define
class DbosJournal:
    """The `StepJournal` of a durable run: each top-level step is one DBOS step, its checkpoint the step's output.

    Called inside the run's DBOS workflow function. A step DBOS has recorded comes back from its
    checkpoint (`replayed`); any other runs, and its checkpoint is written before the run goes on.
    """

    run_id: str
    compiled: CompiledWorkflow
    #: The values of the run's `redact: true` fields, given again on resume (never stored).
    secrets: dict[str, Any] = attrs.field(factory=dict)
    #: Told when the run starts waiting for an approval: the run id and the wait (step, message, ...).
    on_waiting: Callable[[str, dict[str, Any]], None] | None = None
    _number: int = 0

    async def step(
        self, step: CompiledStep, visit: int, state: BaseModel, run: Callable[[], Awaitable[Attempted]]
    ) -> Journaled:
        from dbos import DBOS

        live: list[Attempted] = []

        async def body() -> dict[str, Any]:
            attempted = await run()
            live.append(attempted)
            try:
                after = write_state(state, attempted.writes) if attempted.writes else state
            except StateWriteError:  # the runner reports it; the checkpoint keeps the state before
                after = state
            return encode(step, visit, self.compiled, attempted, after)

        self._number += 1
        document = await DBOS.run_step_async({"name": f"{step.id}#{visit}"}, body)
        if live:
            return Journaled(attempted=live[0])
        checkpoint = decode(self.run_id, self._number, document)
        return Journaled(attempted=checkpoint.attempted(self.secrets), replayed=True)

    async def approval(self, step: CompiledStep, visit: int, state: BaseModel) -> Journaled:
        """Mark the run WAITING, wait for the decision (or the timeout), and checkpoint what it writes."""
        from atomtask.runs import decisions
        from atomtask.system.workflow_results import StepStatus
        from atomtask.workflows.step_runs import Attempted
        from dbos import DBOS

        message = str(step.message.render({"state": state})) if step.message is not None else f"Approve {step.id!r}?"
        waiting = {"step": step.id, "visit": visit, "message": message, "timeout": step.step.timeout}
        waiting.update(decisions.waiter())
        await DBOS.set_event_async(decisions.WAITING_EVENT, waiting)
        log.info("run_waiting", run_id=self.run_id, step=step.id, message=message, approve=self.run_id)
        if self.on_waiting is not None:
            self.on_waiting(self.run_id, waiting)
        received = await decisions.wait(step.step.timeout)
        await DBOS.set_event_async(decisions.WAITING_EVENT, None)
        live: list[Attempted] = []

        async def body() -> dict[str, Any]:
            chosen = received if received is not None else decisions.timed_out(step.step)
            writes = {field: decisions.value(step.output_type, chosen) for field, _ in step.output_map}
            done = StepVisit(step=step.id, visit=visit, status=StepStatus.COMPLETE)
            attempted = Attempted(visits=[done], writes=writes)
            live.append(attempted)
            return encode(step, visit, self.compiled, attempted, write_state(state, writes))

        self._number += 1
        document = await DBOS.run_step_async({"name": f"{step.id}#{visit}"}, body)
        if live:
            return Journaled(attempted=live[0])
        return Journaled(attempted=decode(self.run_id, self._number, document).attempted(), replayed=True)
