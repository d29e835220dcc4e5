"""One checkpoint per completed top-level step (and a record per unit of one), and how a run waits for an approval.

A checkpoint is a JSON document, the output of one DBOS step of the run's DBOS workflow: the step id
and visit, the workflow's `version` and state-schema fingerprint, the step's validated writes, the
whole state after it, and every visit of it with its `TaskResult` (the attempt ledger: raw outputs,
usage). DBOS writes it before the run goes on to the next step, so a run killed at any instant
resumes after its last checkpoint: the steps recorded are replayed from their checkpoints (never run
or paid again), a step that was in flight runs again. `DbosJournal` is the `StepJournal` that does this.
Inside a step, each unit (a `for_each` element, a `parallel` member, a sub-workflow's step) has a
record of its own, written as it ends: a step killed half-way runs again, but its recorded units
come back from their records, and only the units that were in flight are asked again.

A run at an approval step sets its DBOS event `atomtask.waiting` (the step, its visit, the message
built from the state, and the topic it listens on) and waits for a DBOS message on the topic of that
one visit, `atomtask.approval:STEP#VISIT`; `approve` (any process) sends one. A decision is thus bound
to the step visit it was given for: it can never approve a later gate, nor the same gate's next
visit. (A run stored before topics were per visit waits on `atomtask.approval`; its event says no
topic, and it is answered there.) Without a decision within the step's `timeout`, `on_timeout`
decides. The decision goes to the step's `output:` field: `approved` alone for a `bool` field, else
the whole `ApprovalDecision`.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import attrs
from atomtask._logs import get_logger
from atomtask.errors import CorruptCheckpointError, StateWriteError
from atomtask.runs._migrations import state_fingerprint
from atomtask.system._results import StepVisit, TaskError
from atomtask.system._workflows import ApprovalDecision, Step
from atomtask.workflows._compiled import CompiledStep, CompiledWorkflow
from atomtask.workflows._runner import unjournaled_approval
from atomtask.workflows._state import write_state
from atomtask.workflows._steps import Journaled
from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python

if TYPE_CHECKING:
    from atomtask.workflows._steps import Attempted, StepJournal, Unit

__all__ = [
    "APPROVAL_TOPIC",
    "FORMAT",
    "WAITING_EVENT",
    "Checkpoint",
    "DbosJournal",
    "approval_topic",
    "cut_out",
    "decision",
    "decode",
    "decode_unit",
    "encode_unit",
    "fingerprint",
    "plain_state",
    "recorded",
    "secret_texts",
    "timed_out",
    "value",
    "wait",
    "waiter",
    "waiter_alive",
]

WAITING_EVENT = "atomtask.waiting"
#: The topic of every approval of a run stored before topics were per step visit (see `approval_topic`).
APPROVAL_TOPIC = "atomtask.approval"
#: How long one wait lasts when the step has no `timeout` (it waits again, as long as it takes).
_WAIT_SLICE = 3600.0


def approval_topic(step: str, visit: int) -> str:
    """The topic the decision for visit `visit` of approval step `step` is sent on: that visit's, no other's."""
    return f"{APPROVAL_TOPIC}:{step}#{visit}"


def decision(approved: bool, note: str | None = None, by: str | None = None) -> dict[str, Any]:
    """The message `approve` sends: the decision, a note, who decided, and when."""
    return {"approved": approved, "note": note, "by": by, "at": datetime.now(UTC).isoformat()}


def waiter() -> dict[str, Any]:
    """Who waits: this process (host and pid), stored with the wait so `approve` can tell whether it still runs."""
    return {"host": socket.gethostname(), "pid": os.getpid()}


def waiter_alive(waiting: dict[str, Any]) -> bool | None:
    """Whether the process that waits still runs: None when unknown (another host, or not recorded)."""
    pid = waiting.get("pid")
    if not isinstance(pid, int) or waiting.get("host") != socket.gethostname():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process under that pid
        return None
    return True


def timed_out(step: Step) -> dict[str, Any]:
    """The decision of `on_timeout` once the step's `timeout` has passed without one."""
    note = f"no decision within {step.timeout:g}s: `on_timeout: {step.on_timeout}`"
    return {"approved": step.on_timeout == "approve", "note": note, "by": None, "at": datetime.now(UTC).isoformat()}


def value(output_type: Any, received: dict[str, Any]) -> Any:
    """What the decision writes to the output field: a `bool`, or an `ApprovalDecision`."""
    if output_type is bool:
        return bool(received["approved"])
    return ApprovalDecision.model_validate(received)


async def wait(timeout: float | None, topic: str) -> dict[str, Any] | None:
    """The decision sent to the run on `topic` (recorded by DBOS: on resume it comes back); None: timed out."""
    from dbos import DBOS

    while True:
        received = await DBOS.recv_async(topic, timeout_seconds=timeout if timeout else _WAIT_SLICE)
        if received is not None or timeout:
            return received if isinstance(received, dict) else None


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
    failure: TaskError | None
    terminal: bool
    completed_at_ms: int | None = None
    #: The `redact: true` fields the step wrote, left out of the checkpoint (given again on resume).
    redacted: tuple[str, ...] = ()

    def attempted(self, secrets: dict[str, Any] | None = None) -> Attempted:
        """The step's outcome, as the runner takes it (with the redacted fields it wrote, from `secrets`)."""
        from atomtask.workflows._steps import Attempted

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


def secret_texts(values: Iterable[Any], *, shortest: int = 1, numbers: bool = False) -> list[str]:
    """The texts of redacted values to cut out of other texts, the longest first: every string in `values` (nested
    in mappings and sequences) at least `shortest` characters long, and with `numbers` the JSON text of every
    other leaf (a number, ...); never the marker itself."""

    def leaves(value: Any) -> Iterator[str]:
        if isinstance(value, str):
            yield value
        elif isinstance(value, Mapping):
            for item in value.values():
                yield from leaves(item)
        elif isinstance(value, list | tuple | set | frozenset):
            for item in value:
                yield from leaves(item)
        elif numbers and value is not None and not isinstance(value, bool):
            yield json.dumps(value)

    found = {text for value in values for text in leaves(value) if len(text) >= max(1, shortest) and text != REDACTED}
    return sorted(found, key=len, reverse=True)


def cut_out(value: Any, texts: Sequence[str]) -> Any:
    """`value` (a JSON-like value) with each of `texts` replaced by the marker in every string in it."""
    if isinstance(value, str):
        for text in texts:
            value = value.replace(text, REDACTED)
        return value
    if isinstance(value, Mapping):
        return {key: cut_out(item, texts) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [cut_out(item, texts) for item in value]
    return value


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


def encode_unit(attempted: Attempted) -> dict[str, Any]:
    """The JSON document of one unit of a step visit (an element, a member, ...): its visits, writes and answer.

    A unit that would write a `redact: true` field is never journaled (`workflows._steps`), so none holds one.
    """
    return {
        "format": FORMAT,
        "visits": [v.model_dump(mode="json") for v in attempted.visits],
        "writes": to_jsonable_python(attempted.writes),
        "answer": to_jsonable_python(attempted.answer),
        "failure": attempted.failure.model_dump(mode="json") if attempted.failure is not None else None,
        "terminal": attempted.terminal,
    }


def decode_unit(run_id: str, name: str, document: Any) -> Attempted:
    """A unit's outcome read back (its answer and writes as JSON values); `CorruptCheckpointError` when unreadable."""
    from atomtask.workflows._steps import Attempted

    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise CorruptCheckpointError(run_id, name, f"record {name!r} is not a format-{FORMAT} unit record")
    try:
        failure = document["failure"]
        return Attempted(
            visits=[StepVisit.model_validate(v) for v in document["visits"]],
            writes=dict(document["writes"]),
            answer=document["answer"],
            failure=TaskError.model_validate(failure) if failure is not None else None,
            terminal=bool(document["terminal"]),
        )
    except (KeyError, TypeError, ValueError, ValidationError) as exc:
        problem = f"record {name!r}: {type(exc).__name__}: {str(exc).splitlines()[0]}"
        raise CorruptCheckpointError(run_id, name, problem) from None


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
            failure=TaskError.model_validate(failure) if failure is not None else None,
            terminal=bool(document["terminal"]),
            completed_at_ms=completed_at_ms,
            redacted=tuple(str(f) for f in document.get("redacted", ())),
        )
    except (KeyError, TypeError, ValueError, ValidationError) as exc:
        problem = f"checkpoint #{number}: {type(exc).__name__}: {str(exc).splitlines()[0]}"
        raise CorruptCheckpointError(run_id, where, problem) from None


@attrs.define
class DbosJournal:
    """The `StepJournal` of a durable run: each step visit, and each unit of one, is one DBOS step.

    Called inside the run's DBOS workflow function. A step DBOS has recorded comes back from its
    checkpoint (`replayed`); any other runs, and its checkpoint is written before the run goes on.
    A step's units (elements, members, a sub-workflow's steps: see `workflows._steps`) are DBOS steps
    of their own, written as each ends, before the step's checkpoint; the checkpoint says how many
    DBOS step ids its units took (`units`), so a resumed run that replays the checkpoint draws as many
    without reading them (DBOS replays steps by the order of their ids). The top-level checkpoint of
    visit V of step S is the DBOS step `S#V`; the records under it are named `S@V/...` (no `#`: run
    listings read only checkpoints): `S@V/3` for element 3, `S@V/MEMBER` for a member, `S@V/CHILD@1` for
    a sub-workflow's step (`S@V/retry1/CHILD@1` for its run under `retry_with`'s first model).
    """

    run_id: str
    compiled: CompiledWorkflow
    #: The values of the run's `redact: true` fields, given again on resume (never stored).
    secrets: dict[str, Any] = attrs.field(factory=dict)
    #: Told when the run starts waiting for an approval: the run id and the wait (step, message, ...).
    on_waiting: Callable[[str, dict[str, Any]], None] | None = None
    #: The approvals (`step#visit`) already decided in the store: replayed on resume, they wait for nothing.
    decided: frozenset[str] = frozenset()
    #: The approval (step, visit) the run was WAITING at when it was resumed: a decision may have been sent since.
    resumed_wait: tuple[str, int] | None = None
    #: The topic that wait listens on, as its event recorded it (`APPROVAL_TOPIC` for a run stored before topics
    #: were per visit: it is answered where it listened).
    resumed_topic: str | None = None
    #: The DBOS steps the segment has recorded (a resumed run), by name: the step ids their units took.
    recorded: Mapping[str, int] = attrs.field(factory=dict)
    #: Where this journal's records are named: "" for the run's own steps, `S@V/` (and deeper) under a step visit.
    prefix: str = ""
    _number: int = 0
    #: The DBOS step ids drawn so far by the run's journals (shared by every journal `within` it).
    _drawn: list[int] = attrs.field(factory=lambda: [0])

    def _name(self, step: CompiledStep, visit: int) -> str:
        return f"{step.id}#{visit}" if not self.prefix else f"{self.prefix}{step.id}@{visit}"

    def _draw(self) -> Any:
        from dbos import DBOS

        self._drawn[0] += 1
        return DBOS.reserve_step()

    async def step(
        self,
        step: CompiledStep,
        visit: int,
        state: BaseModel,
        run: Callable[[StepJournal | None], Awaitable[Attempted]],
    ) -> Journaled:
        name = self._name(step, visit)
        if self.prefix and not self.compiled.redacted_fields.isdisjoint(step.writes):
            return Journaled(attempted=await run(None))  # a sub-workflow step writing a redacted field: never stored
        self._number += 1
        if name in self.recorded:  # done before: its units' ids are drawn unread, its checkpoint comes back
            for _ in range(self.recorded[name]):
                self._draw()
            document = await self._draw().run_async({"name": name}, _unrecorded, self.run_id, name)
            checkpoint = decode(self.run_id, self._number, document)
            return Journaled(attempted=checkpoint.attempted(self.secrets), replayed=True)
        before = self._drawn[0]
        units = attrs.evolve(self, prefix=f"{self.prefix}{step.id}@{visit}/", number=0)
        attempted = await run(units)
        try:
            after = write_state(state, attempted.writes) if attempted.writes else state
        except StateWriteError:  # the runner reports it; the checkpoint keeps the state before
            after = state
        document = {**encode(step, visit, self.compiled, attempted, after), "units": self._drawn[0] - before}
        written: list[bool] = []

        async def body() -> dict[str, Any]:
            written.append(True)
            return document

        await self._draw().run_async({"name": name}, body)
        if not written:  # recorded by an earlier process, though the resume did not list it: its units came back
            log.warning("checkpoint_recorded_before", run_id=self.run_id, step=name)
        return Journaled(attempted=attempted)

    def units(self, names: Sequence[str]) -> list[Unit]:
        return [self._unit(f"{self.prefix}{name}", self._draw()) for name in names]

    def within(self, name: str, compiled: CompiledWorkflow) -> DbosJournal:
        return attrs.evolve(self, prefix=f"{self.prefix}{name}/" if name else self.prefix, compiled=compiled, number=0)

    def _unit(self, name: str, reserved: Any) -> Unit:
        async def unit(run: Callable[[], Awaitable[Attempted]]) -> Journaled:
            live: list[Attempted] = []

            async def body() -> dict[str, Any]:
                attempted = await run()
                live.append(attempted)
                return encode_unit(attempted)

            document = await reserved.run_async({"name": name}, body)
            if live:
                return Journaled(attempted=live[0])
            return Journaled(attempted=decode_unit(self.run_id, name, document), replayed=True)

        return unit

    async def approval(self, step: CompiledStep, visit: int, state: BaseModel) -> Journaled:
        """Mark the run WAITING, wait for the decision (or the timeout), and checkpoint what it writes.

        Only a run's own approval steps wait: one in a sub-workflow fails, as in a run that is not durable.
        """
        from atomtask.system._results import StepStatus
        from atomtask.workflows._steps import Attempted
        from dbos import DBOS

        if self.prefix:
            return Journaled(attempted=unjournaled_approval(step, visit))

        message = str(step.message.render({"state": state})) if step.message is not None else f"Approve {step.id!r}?"
        topic = approval_topic(step.id, visit)
        if self.resumed_wait == (step.id, visit) and self.resumed_topic is not None:
            topic = self.resumed_topic
        waiting = {"step": step.id, "visit": visit, "message": message, "timeout": step.step.timeout, "topic": topic}
        waiting.update(waiter())
        await DBOS.set_event_async(WAITING_EVENT, waiting)
        log.info("run_waiting", run_id=self.run_id, step=step.id, message=message, approve=self.run_id)
        if self.on_waiting is not None and f"{step.id}#{visit}" not in self.decided:
            again = self.resumed_wait == (step.id, visit)  # told apart: it may not wait at all now
            self.on_waiting(self.run_id, {**waiting, "resumed": True} if again else waiting)
        received = await wait(step.step.timeout, topic)
        await DBOS.set_event_async(WAITING_EVENT, None)
        live: list[Attempted] = []

        async def body() -> dict[str, Any]:
            chosen = received if received is not None else timed_out(step.step)
            writes = {field: value(step.output_type, chosen) for field, _ in step.output_map}
            done = StepVisit(step=step.id, visit=visit, status=StepStatus.COMPLETE)
            attempted = Attempted(visits=[done], writes=writes)
            live.append(attempted)
            return encode(step, visit, self.compiled, attempted, write_state(state, writes))

        self._number += 1
        document = await self._draw().run_async({"name": f"{step.id}#{visit}"}, body)
        if live:
            return Journaled(attempted=live[0])
        return Journaled(attempted=decode(self.run_id, self._number, document).attempted(), replayed=True)


async def recorded(workflow_id: str) -> dict[str, int]:
    """The steps and units a run's DBOS workflow has recorded, by name: the DBOS step ids each one's units took."""
    from dbos import DBOS

    found: dict[str, int] = {}
    for step in await DBOS.list_workflow_steps_async(workflow_id):
        name, output = str(step.get("function_name")), step.get("output")
        if step.get("error") is None and ("#" in name or "@" in name) and isinstance(output, dict):
            units = output.get("units", 0)  # none in a checkpoint written before units were recorded apart
            found[name] = units if isinstance(units, int) else 0
    return found


async def _unrecorded(run_id: str, name: str) -> dict[str, Any]:
    """The body of a checkpoint the resume found recorded: DBOS gives the record back and never calls it."""
    raise CorruptCheckpointError(run_id, name, f"checkpoint {name!r} was listed as recorded, but DBOS has no record")
