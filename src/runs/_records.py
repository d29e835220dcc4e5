"""What the store says about runs: `RunInfo` (one line of `workflow runs`) and a run's checkpoints, read from DBOS.

A run is one DBOS workflow whose id is the run id; its input is the run's spec (workflow, version,
inputs, options), its steps are the run's checkpoints, its output the run's summary once it ended. A
run resumed into another version of its workflow goes on in a new segment, the DBOS workflow
`RUN_ID~2` (then `~3`, ...), which starts from the migrated state; the run is all its segments.
DBOS's status `PENDING` is a run that is going on or whose process died (`resume` continues it);
`SUCCESS` is a run that reached its end, COMPLETE or FAILED as atomtask says (the summary); `ERROR`
is a run stopped by an unexpected error. Messages and listings use atomtask's names only
(`status_name`): COMPLETE, FAILED, PENDING, WAITING, ERROR, CANCELLED, never DBOS's SUCCESS or ENQUEUED.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import attrs
from atomtask.errors import CorruptCheckpointError
from atomtask.runs._checkpoints import Checkpoint, decode
from atomtask.system._options import CallOptions
from atomtask.system._results import UsageNotes
from atomtask.system._templates import TemplateLimits
from pydantic import BaseModel, Field, ValidationError

if TYPE_CHECKING:
    from pydantic_ai.models import Model

__all__ = [
    "RESUMABLE",
    "WORKFLOW_FUNCTION",
    "RunInfo",
    "RunSpec",
    "RunStart",
    "Segment",
    "base_id",
    "load_run",
    "read_checkpoints",
    "run_info",
    "spec_of",
    "status_name",
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
    try:
        steps = await DBOS.list_workflow_steps_async(workflow_id)
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError) as exc:
        raise CorruptCheckpointError(run_id, None, f"a stored step is not JSON ({exc})") from None
    found: list[Checkpoint] = []
    for number, step in enumerate(steps, start=1):
        if step.get("error") is not None or "#" not in str(step.get("function_name")):
            continue  # a step that raised (nothing was recorded for it), or DBOS's own
        found.append(decode(run_id, number, step.get("output"), step.get("completed_at_epoch_ms")))
    return found


def base_id(workflow_id: str) -> str:
    """The run id of a DBOS workflow id (`abc~2` is segment 2 of run `abc`)."""
    return workflow_id.split("~", 1)[0]


def _segment_number(workflow_id: str) -> int:
    _, _, number = workflow_id.partition("~")
    return int(number) if number.isdigit() else 1


@attrs.frozen(kw_only=True)
class Segment:
    """One DBOS workflow of a run: its id, its DBOS status, its spec and its checkpoints."""

    workflow_id: str
    status: Any
    spec: RunSpec
    checkpoints: list[Checkpoint]
    waiting: dict[str, Any] | None = None


async def load_run(run_id: str, statuses: list[Any] | None = None) -> list[Segment]:
    """The segments of run `run_id`, in order (empty: no such run); `CorruptCheckpointError` for a bad one."""
    from dbos import DBOS

    if statuses is None:
        statuses = await DBOS.list_workflows_async(name=WORKFLOW_FUNCTION, workflow_id_prefix=run_id)
    mine = sorted(
        (s for s in statuses if base_id(s.workflow_id) == run_id), key=lambda s: _segment_number(s.workflow_id)
    )
    return [
        Segment(
            workflow_id=s.workflow_id,
            status=s,
            spec=spec_of(run_id, s),
            checkpoints=await read_checkpoints(s.workflow_id, run_id),
            waiting=await _waiting(s),
        )
        for s in mine
    ]


async def _waiting(status: Any) -> dict[str, Any] | None:
    """The approval a PENDING run waits for (its `atomtask.waiting` event), if any."""
    from atomtask.runs._checkpoints import WAITING_EVENT
    from dbos import DBOS

    if status.status != "PENDING":
        return None
    found = await DBOS.get_event_async(status.workflow_id, WAITING_EVENT, timeout_seconds=0)
    return found if isinstance(found, dict) else None


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
        error = output.get("error")
        reason = output.get("reason")
    elif state == "ERROR":
        error = str(status.error) if status.error is not None else None
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
        updated_ms=status.updated_at,
        created_ms=status.created_at,
        error=error,
        reason=reason,
        checkpoints=tuple(checkpoints),
        waiting=waiting if state == "WAITING" else None,
        model=spec.model,
        base_url=spec.base_url,
    )
