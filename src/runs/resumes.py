"""How a run resumes: as it was recorded (DBOS replays it), or, under another version, from its migrated state.

Everything here reads and checks, and writes nothing: a refusal (`MigrationError`,
`ResumeStepMissingError`) leaves the stored run exactly as it was. The point a run resumes from is its
last checkpoint (else the start of its last segment, else its run inputs). When the workflow's
version and state schema are the ones recorded there, the run just goes on. Otherwise the declared
migrations turn the recorded state into the current version's (`runs.migrations.migrate`, which
validates it), and the run goes on in a new segment: after the step it had completed (or at the
migration's `resume_at`), its earlier usage counted against its limits.
"""

from __future__ import annotations

from typing import Any

import attrs
from atomtask.runs.checkpoints import fingerprint
from atomtask.runs.errors import MigrationError, ResumeStepMissingError
from atomtask.runs.migrations import migrate
from atomtask.runs.records import Segment
from atomtask.system.errors import near_names
from atomtask.system.results import UsageNotes
from atomtask.workflows.compiled import CompiledWorkflow
from atomtask.workflows.state import StateWriteError, write_state

__all__ = ["ResumePlan", "plan_resume"]


@attrs.frozen(kw_only=True)
class ResumePlan:
    """What `resume` does: go on with the last segment as it is (`start` None), or start a new one from `start`."""

    segment: Segment
    start: dict[str, Any] | None = None
    version: str | None = None
    fingerprint: str = ""
    applied: tuple[str, ...] = ()


def plan_resume(run_id: str, segments: list[Segment], compiled: CompiledWorkflow, *, retry: bool = False) -> ResumePlan:
    """The plan for resuming run `run_id` (its `segments`, oldest first) with `compiled`, the workflow as loaded now.

    `retry`: the run ended FAILED; it goes on in a new segment from the step that failed (run again), with
    the state its completed steps left (their checkpoints reused, never run or paid again).
    """
    last = segments[-1]
    version, now = compiled.workflow.version, fingerprint(compiled.state_cls)
    spec = last.spec
    step: str | None
    checkpoints = list(last.checkpoints)
    failed = checkpoints.pop() if retry and checkpoints and checkpoints[-1].failure is not None else None
    if checkpoints:
        point = checkpoints[-1]
        recorded = (point.version, point.fingerprint)
        state, step, after = point.state, point.step, True
    elif spec.get("start"):
        recorded = (spec.get("version"), str(spec.get("fingerprint")))
        state, step, after = spec["start"]["state"], spec["start"]["step"], bool(spec["start"]["after"])
    else:
        recorded = (spec.get("version"), str(spec.get("fingerprint")))
        state, step, after = spec["inputs"], None, False
    if failed is not None:
        step, after = failed.step, False
    if recorded == (version, now) and not retry:
        return ResumePlan(segment=last, version=version, fingerprint=now)
    migrated = migrate(compiled, state, recorded[0], recorded[1], run_id=run_id)
    if migrated.resume_at is not None:
        step, after = migrated.resume_at, False
    elif step is None:
        step, after = compiled.first, False
    elif step not in compiled.index:
        raise ResumeStepMissingError(
            run_id,
            workflow=compiled.name,
            step=step,
            from_version=recorded[0],
            to_version=version,
            steps=list(compiled.index),
            suggestions=near_names(step, list(compiled.index)),
        )
    try:  # `migrate` validated it; building the state class's instance is the runner's own check
        write_state(compiled.state_cls.model_construct(), migrated.state)
    except StateWriteError as exc:
        raise MigrationError(
            f"Run {run_id!r}: the migrated state does not fit workflow {compiled.name!r} version {version!r}: {exc}.",
            run_id=run_id,
            workflow=compiled.name,
            from_version=recorded[0],
            to_version=version,
            fields=[(exc.field, exc.problem)],
        ) from None
    used = sum((v.usage for s in segments for c in s.checkpoints for v in c.visits), UsageNotes())
    start = {"state": migrated.state, "step": step, "after": after, "used": used.model_dump(mode="json")}
    return ResumePlan(segment=last, start=start, version=version, fingerprint=now, applied=migrated.applied)
