"""What the store says about runs: `RunInfo` (one line of `workflow runs`) and a run's checkpoints, read from DBOS.

A run is one DBOS workflow whose id is the run id; its input is the run's spec (workflow, version,
inputs, options), its steps are the run's checkpoints, its output the run's summary once it ended. A
run resumed into another version of its workflow goes on in a new segment, the DBOS workflow
`RUN_ID~2` (then `~3`, ...), which starts from the migrated state; the run is all its segments.
DBOS's status `PENDING` is a run that is going on or whose process died (`resume` continues it);
`SUCCESS` is a run that reached its end, COMPLETE or FAILED as atomtask says (the summary); `ERROR`
is a run stopped by an unexpected error. Messages and listings use atomtask's names only
(`status_name`): COMPLETE, FAILED, PENDING, WAITING, ERROR, CANCELLED, never DBOS's SUCCESS or ENQUEUED.

A run's rows that DBOS cannot decode (a damaged column of its status, a step, its approval event) make that run
unreadable, never the store: reading it is a `CorruptCheckpointError` naming it, and a listing shows it CORRUPT
beside every other run (`workflow_statuses`). The database failing is the store's `RunStoreError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import unicodedata
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import attrs
from atomtask.errors import AtomTaskError, CorruptCheckpointError, RunIdError
from atomtask.runs import _store as engine
from atomtask.runs._checkpoints import Checkpoint, decode
from atomtask.system._options import CallOptions
from atomtask.system._results import UsageNotes
from atomtask.system._templates import TemplateLimits
from pydantic import BaseModel, Field, ValidationError

if TYPE_CHECKING:
    from pydantic_ai.models import Model

__all__ = [
    "MAX_RUN_ID",
    "RESUMABLE",
    "WORKFLOW_FUNCTION",
    "RunInfo",
    "RunSpec",
    "RunStart",
    "Segment",
    "Unreadable",
    "base_id",
    "check_run_id",
    "check_runnable",
    "corrupt_info",
    "load_run",
    "read_checkpoints",
    "run_info",
    "spec_of",
    "status_name",
    "unreadable",
    "workflow_statuses",
]

#: The statuses of a run `resume` goes on with (a FAILED one from its failed step).
RESUMABLE = frozenset({"PENDING", "WAITING", "FAILED"})

_STATUS_NAMES = {
    "SUCCESS": "COMPLETE",
    "ENQUEUED": "PENDING",
    "MAX_RECOVERY_ATTEMPTS_EXCEEDED": "ERROR",
}


def status_name(status: Any) -> str:
    """atomtask's name for a DBOS workflow status (its `.status`, or the string): COMPLETE, FAILED, PENDING, ..."""
    raw = str(getattr(status, "status", status))
    output = getattr(status, "output", None)
    if raw == "SUCCESS" and isinstance(output, dict) and output.get("status"):
        return str(output["status"])
    return _STATUS_NAMES.get(raw, raw)


class RunStart(BaseModel):
    """Where a segment of a run begins when not at its first step: a migrated state, a step, the spend before."""

    state: dict[str, Any]
    step: str
    #: Go where `step`'s routes lead from `state` (its last completed step), rather than run `step`.
    after: bool = False
    used: UsageNotes = Field(default_factory=UsageNotes)


class RunSpec(BaseModel):
    """What a durable run was started with: the input of its DBOS workflow, stored as JSON.

    Only model strings are stored (a `Model` instance is given again on resume), never a redacted field's
    value (`redacted_inputs` names them), never a key.
    """

    run_id: str | None = None
    workflow: str
    version: str | None = None
    #: The state schema's fingerprint when the segment started (`_checkpoints.fingerprint`).
    fingerprint: str | None = None
    inputs: dict[str, Any] = Field(default_factory=dict)
    redacted_inputs: list[str] = Field(default_factory=list)
    model: str | None = None
    #: The provider's endpoint the run was started with (`--base-url`, `TaskSystem(base_url=)`); never a key.
    base_url: str | None = None
    model_settings: dict[str, Any] | None = None
    limits: TemplateLimits | None = None
    start: RunStart | None = None

    def options(self, model: Model | str | None = None) -> CallOptions:
        """The run's options (`model` given again wins over the stored model string)."""
        return CallOptions(
            model=model if model is not None else self.model,
            model_settings=self.model_settings,
            limits=self.limits,
        )

    def stored(self) -> dict[str, Any]:
        """The JSON document DBOS keeps as the workflow's input."""
        return self.model_dump(mode="json", exclude_none=True)


#: The name of the DBOS workflow function every run is an execution of.
WORKFLOW_FUNCTION = "atomtask.workflow_run"


@attrs.frozen(kw_only=True)
class RunInfo:
    """One durable run as stored: its id, workflow, version, status, last completed step, cost, last update."""

    run_id: str
    workflow: str
    version: str | None
    #: PENDING (going on, or interrupted: resume it), WAITING (for an approval), COMPLETE, FAILED, ERROR, ...
    status: str
    current_step: str | None
    usage: UsageNotes
    updated_ms: int | None
    created_ms: int | None
    error: str | None = None
    #: Why a FAILED run failed (a `FailureReason` value: `failed_by_step` for a `fail:` step), when recorded.
    reason: str | None = None
    checkpoints: tuple[Checkpoint, ...] = ()
    #: What a WAITING run waits for: its approval step's `step`, `message` and `timeout`.
    waiting: dict[str, Any] | None = None
    #: The model string and the endpoint the run was started with (a resume uses them unless told otherwise).
    model: str | None = None
    base_url: str | None = None

    def as_json(self, *, checkpoints: bool = False) -> dict[str, Any]:
        """A JSON document of the run (with `checkpoints`, each step's state after it and its ledger)."""
        document: dict[str, Any] = {
            "run_id": self.run_id,
            "workflow": self.workflow,
            "version": self.version,
            "status": self.status,
            "current_step": self.current_step,
            "requests": self.usage.requests,
            "total_tokens": self.usage.total_tokens,
            "cost": self.usage.cost,
            "created_ms": self.created_ms,
            "updated_ms": self.updated_ms,
            "error": self.error,
            "waiting": self.waiting,
            "model": self.model,
            "base_url": self.base_url,
        }
        if checkpoints:
            document["steps"] = [
                {
                    "step": c.step,
                    "visit": c.visit,
                    "version": c.version,
                    "fingerprint": c.fingerprint,
                    "state": c.state,
                    "failure": c.failure.model_dump(mode="json") if c.failure is not None else None,
                    "visits": [v.model_dump(mode="json") for v in c.visits],
                }
                for c in self.checkpoints
            ]
        return document


def spec_of(run_id: str, status: Any) -> RunSpec:
    """The spec a run was started with (its DBOS workflow's input); `CorruptCheckpointError` when unreadable."""
    inputs = getattr(status, "input", None)
    try:
        spec = inputs["args"][0] if inputs is not None else None
    except (KeyError, IndexError, TypeError):
        spec = None
    if not isinstance(spec, dict) or "workflow" not in spec:
        raise CorruptCheckpointError(run_id, None, "its recorded inputs are not an atomtask run's")
    try:
        return RunSpec.model_validate(spec)
    except ValidationError as exc:
        problem = f"its recorded inputs do not read as a run's spec: {str(exc).splitlines()[0]}"
        raise CorruptCheckpointError(run_id, None, problem) from None


async def read_checkpoints(workflow_id: str, run_id: str | None = None) -> list[Checkpoint]:
    """Every checkpoint of a run's DBOS workflow, in order; `CorruptCheckpointError` for one that cannot be read."""
    from dbos import DBOS

    run_id = run_id or workflow_id
    with unreadable(run_id, "a stored step"), engine.store_errors():
        steps = await DBOS.list_workflow_steps_async(workflow_id)
    found: list[Checkpoint] = []
    for number, step in enumerate(steps, start=1):
        if step.get("error") is not None or "#" not in str(step.get("function_name")):
            continue  # a step that raised (nothing was recorded for it), or DBOS's own
        found.append(decode(run_id, number, step.get("output"), step.get("completed_at_epoch_ms")))
    return found


def base_id(workflow_id: str) -> str:
    """The run id of a DBOS workflow id (`abc~2` is segment 2 of run `abc`)."""
    return workflow_id.split("~", 1)[0]


#: The longest run id a user may give (a new one is 12 characters).
MAX_RUN_ID = 200
_ID_FIX = (
    "give `--run-id` (Python: `run_id=`) an id without `~`, `#`, whitespace or control characters, or leave it out for "
    "a new one"
)


def check_run_id(run_id: str) -> str:
    """`run_id` when a user may name a run so: `RunIdError` for an id that would not come back the same from the store.

    `~` is refused because `RUN_ID~N` is segment N of run RUN_ID (`base_id`): a run named `q~2` would become a
    segment of run `q`. `#` is refused because an approval's decision is recorded under `SEGMENT@STEP#VISIT`
    (a run of that name would take its place). Empty, over `MAX_RUN_ID` characters, whitespace and control or
    unprintable characters are refused because they do not survive a shell, a listing or the database
    (PostgreSQL refuses NUL).
    """
    if "~" in run_id:
        owner, _, number = run_id.partition("~")
        if owner and number.isdecimal():
            raise RunIdError(
                run_id,
                f"`~` separates a run from its later segments: {run_id!r} names segment {number} of run {owner!r}, "
                "not a run of its own",
                f"use the run's own id: `atomtask workflow show {owner}`, `atomtask workflow resume {owner}`; a new "
                f"run needs an id without `~` ({_ID_FIX})",
            )
        raise RunIdError(run_id, "`~` separates a run from its later segments (`RUN_ID~2`)", _ID_FIX)
    if "#" in run_id:  # an approval's decision is recorded as DBOS workflow `SEGMENT@STEP#VISIT`
        raise RunIdError(run_id, "`#` is kept for the records of a run's approvals (`RUN_ID@STEP#VISIT`)", _ID_FIX)
    if not run_id:
        raise RunIdError(run_id, "it is empty", _ID_FIX)
    if len(run_id) > MAX_RUN_ID:
        raise RunIdError(
            run_id, f"it is {len(run_id)} characters long, over the limit of {MAX_RUN_ID} characters", _ID_FIX
        )
    for char in run_id:
        if char.isspace():
            raise RunIdError(run_id, f"it contains whitespace ({_codepoint(char)})", _ID_FIX)
        if unicodedata.category(char).startswith("C"):
            raise RunIdError(run_id, f"it contains a control or unprintable character ({_codepoint(char)})", _ID_FIX)
    return run_id


def _codepoint(char: str) -> str:
    return f"U+{ord(char):04X}"


def _in_run(workflow_id: str, run_id: str) -> bool:
    """Whether DBOS workflow `workflow_id` is a segment of run `run_id`: the run id itself, or `RUN_ID~N`."""
    owner, tilde, number = workflow_id.partition("~")
    return owner == run_id and (not tilde or number.isdecimal())


def _segment_number(workflow_id: str) -> int:
    _, _, number = str(workflow_id).partition("~")
    return int(number) if number.isdecimal() else 1


@contextlib.contextmanager
def unreadable(run_id: str, what: str) -> Iterator[None]:
    """Around DBOS's decoding of one run's rows: whatever it raises (bad JSON, a bad serialization name, a value of
    the wrong type, ...) is that run's `CorruptCheckpointError`; the database's own errors are the store's."""
    try:
        yield
    except Exception as exc:
        if not _undecodable(exc):
            raise
        raise CorruptCheckpointError(run_id, None, _problem(what, exc)) from None


def _undecodable(exc: Exception) -> bool:
    """Whether DBOS raised `exc` decoding a row: anything but atomtask's own errors and the database's."""
    return not isinstance(exc, AtomTaskError) and not engine.database_error(exc)


def _problem(what: str, exc: Exception) -> str:
    first = (str(exc).strip().splitlines() or [""])[0][:200]
    return f"{what}: {type(exc).__name__}: {first}"


@attrs.frozen(kw_only=True)
class Unreadable:
    """A DBOS workflow whose status row DBOS cannot decode: in a listing, in its run's place, so that run is CORRUPT."""

    workflow_id: str
    problem: str
    status: str = "CORRUPT"
    input: Any = None
    output: Any = None
    error: Any = None
    created_at: int | None = None
    updated_at: int | None = None


async def workflow_statuses(*, prefix: str | None = None, limit: int | None = None) -> list[Any]:
    """The DBOS statuses of the runs' workflows, the latest first; with `prefix`, of every DBOS workflow whose id
    starts with it, whatever its function (`load_run` tells a run's segments, and one of another function in
    their place, by their ids).

    DBOS decodes a listing's rows all at once: when one cannot be decoded, the ids are read alone and each
    status on its own, and a status that still cannot be is an `Unreadable` in its place.
    """
    from dbos import DBOS

    name = WORKFLOW_FUNCTION if prefix is None else None
    with engine.store_errors():
        try:
            return await DBOS.list_workflows_async(name=name, workflow_id_prefix=prefix, sort_desc=True, limit=limit)
        except Exception as exc:
            if not _undecodable(exc):
                raise
        found: list[Any] = []
        with engine.store_errors(any_error=True):
            ids = await asyncio.to_thread(engine.workflow_ids, name, prefix=prefix, limit=limit)
        for workflow_id in ids:
            try:
                found += await DBOS.list_workflows_async(name=name, workflow_ids=[workflow_id])
            except Exception as exc:
                if not _undecodable(exc):
                    raise
                found.append(Unreadable(workflow_id=workflow_id, problem=_problem("its status", exc)))
        return found


@attrs.frozen(kw_only=True)
class Segment:
    """One DBOS workflow of a run: its id, its DBOS status, its spec and its checkpoints."""

    workflow_id: str
    status: Any
    spec: RunSpec
    checkpoints: list[Checkpoint]
    waiting: dict[str, Any] | None = None


async def load_run(run_id: str, statuses: list[Any] | None = None) -> list[Segment]:
    """The segments of run `run_id`, in order (empty: no such run); `CorruptCheckpointError` for a bad one.

    An id with `~` is a `RunIdError` saying which run's segment it names (no run can have one: `check_run_id`).
    """
    if "~" in run_id:
        check_run_id(run_id)
    if statuses is None:
        statuses = await workflow_statuses(prefix=run_id)
    mine = sorted(
        (s for s in statuses if _in_run(str(s.workflow_id), run_id)), key=lambda s: _segment_number(s.workflow_id)
    )
    for s in mine:
        if isinstance(s, Unreadable):
            raise CorruptCheckpointError(run_id, None, s.problem)
        if s.name != WORKFLOW_FUNCTION:  # a resume would meet it as the next segment's id, taken
            problem = f"its DBOS workflow {s.workflow_id!r} is of function {str(s.name)[:40]!r}, not a run's"
            raise CorruptCheckpointError(run_id, None, problem)
    return [
        Segment(
            workflow_id=s.workflow_id,
            status=s,
            spec=spec_of(run_id, s),
            checkpoints=await read_checkpoints(s.workflow_id, run_id),
            waiting=await _waiting(run_id, s),
        )
        for s in mine
    ]


async def _waiting(run_id: str, status: Any) -> dict[str, Any] | None:
    """The approval a PENDING run waits for (its `atomtask.waiting` event), if any."""
    from atomtask.runs._checkpoints import WAITING_EVENT
    from dbos import DBOS

    if status.status != "PENDING":
        return None
    with unreadable(run_id, "its approval wait"), engine.store_errors():
        found = await DBOS.get_event_async(status.workflow_id, WAITING_EVENT, timeout_seconds=0)
    if found is None:
        return None
    if not isinstance(found, dict) or not isinstance(found.get("step"), str) or not _count(found.get("visit", 1)):
        raise CorruptCheckpointError(run_id, None, "its approval wait is not a step and a visit")
    return found


def check_runnable(run_id: str, status: Any) -> None:
    """`CorruptCheckpointError` unless DBOS can run a segment's workflow (its `status`) in this process again: a plain
    function (no class or configured instance) of atomtask's application version, with no DBOS authentication and
    the run's spec as its only input. DBOS leaves any other queued, or PENDING, for ever: a resume would wait for
    nothing."""
    version = getattr(status, "app_version", None)
    if version not in (None, engine.APP_VERSION):
        problem = f"its DBOS record is of application version {str(version)[:40]!r}, not {engine.APP_VERSION!r}"
        raise CorruptCheckpointError(run_id, None, problem)
    # What DBOS reads when it starts the workflow again, which atomtask never sets: one of these, and DBOS fails the
    # start in its queue's thread, leaving the workflow PENDING with nothing running it.
    for column in ("class_name", "config_name", "authenticated_user", "authenticated_roles", "assumed_role"):
        if getattr(status, column, None) is not None:
            raise CorruptCheckpointError(run_id, None, f"its DBOS record sets `{column}`, which a run never does")
    inputs = getattr(status, "input", None)
    if not isinstance(inputs, dict) or inputs.get("kwargs") not in (None, {}):
        raise CorruptCheckpointError(run_id, None, "its DBOS record's inputs are not a run's spec alone")


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _ms(value: Any) -> int | None:
    """A stored time in ms, or None when the column holds something else."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def corrupt_info(run_id: str, statuses: list[Any], exc: CorruptCheckpointError) -> RunInfo:
    """The listing's line of a run whose record cannot be read: CORRUPT, with what its latest status still says."""
    last = statuses[0]
    inputs = last.input if isinstance(last.input, dict) else {}
    args = inputs.get("args")
    spec = args[0] if isinstance(args, (list, tuple)) and args and isinstance(args[0], dict) else {}
    return RunInfo(
        run_id=run_id,
        workflow=str(spec.get("workflow", "?")),
        version=_text(spec.get("version")),
        status="CORRUPT",
        current_step=exc.step,
        usage=UsageNotes(),
        updated_ms=_ms(last.updated_at),
        created_ms=_ms(last.created_at),
        error=exc.problem,
    )


def run_info(
    run_id: str,
    status: Any,
    checkpoints: list[Checkpoint],
    spec: RunSpec | None = None,
    waiting: dict[str, Any] | None = None,
) -> RunInfo:
    """A run's `RunInfo` from its (last segment's) DBOS status, its checkpoints, its spec and its approval wait."""
    spec = spec if spec is not None else spec_of(run_id, status)
    usage = sum((v.usage for c in checkpoints for v in c.visits), UsageNotes())
    state = str(status.status)
    error: str | None = None
    reason: str | None = None
    output = status.output if isinstance(getattr(status, "output", None), dict) else None
    if state == "SUCCESS" and output is not None:
        state = str(output.get("status", state))
        error = _text(output.get("error"))
        reason = _text(output.get("reason"))
    elif state == "ERROR":
        error = _text(status.error)
    last = checkpoints[-1] if checkpoints else None
    current = last.step if last is not None else None
    if state == "PENDING" and waiting is not None:
        state, current = "WAITING", str(waiting.get("step"))
    state = _STATUS_NAMES.get(state, state)
    return RunInfo(
        run_id=run_id,
        workflow=spec.workflow,
        version=last.version if last is not None else spec.version,
        status=state,
        current_step=current,
        usage=usage,
        updated_ms=_ms(status.updated_at),
        created_ms=_ms(status.created_at),
        error=error,
        reason=reason,
        checkpoints=tuple(checkpoints),
        waiting=waiting if state == "WAITING" else None,
        model=spec.model,
        base_url=spec.base_url,
    )
