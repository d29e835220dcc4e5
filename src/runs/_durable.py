"""Durable workflow runs on DBOS: start a run under a run id, resume it after a crash, approve it, list runs.

A run is one execution of the DBOS workflow function `atomtask.workflow_run`, whose workflow id is the
run id and whose input is the run's spec (workflow name, version, run inputs, model, settings,
limits). The function runs the workflow with the ordinary `WorkflowRunner`, through a `DbosJournal`
(one DBOS step, one checkpoint, per top-level step). `resume` hands the interrupted DBOS workflow
back to this process (on its own queue): DBOS runs the function again, every recorded step comes back
from its checkpoint, and the run goes on from the first step without one. A FAILED run (a provider
outage at a step, ...) resumes in a new segment `RUN_ID~N` from the step that failed, started from the
state its completed steps left. Limits hold across resumes: the replayed steps' usage counts against
them again.

Before a run resumes, everything is read and checked, and nothing written (`plan_resume`): its
checkpoints, its workflow, its version and state schema. The point a run resumes from is its last
checkpoint (else the start of its last segment, else its run inputs). When the workflow's version and
state schema are the ones recorded there, the run just goes on; otherwise the declared migrations turn
the recorded state into the current version's (`_migrations.migrate`, which validates it) and the run
goes on in a new segment, after the step it had completed (or at the migration's `resume_at`). A
refusal (`MigrationError`, `ResumeStepMissingError`, ...) leaves the stored run exactly as it was.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs
from atomtask._logs import get_logger
from atomtask.errors import (
    ApprovalError,
    ConfigurationError,
    CorruptCheckpointError,
    DurableRunsUnavailableError,
    MigrationError,
    RedactedInputsError,
    ResumeStepMissingError,
    RunExistsError,
    RunNotFoundError,
    RunStateError,
    StateWriteError,
    near_names,
)
from atomtask.runs import _checkpoints as decisions
from atomtask.runs import _store as engine
from atomtask.runs._checkpoints import DbosJournal, fingerprint, plain_state
from atomtask.runs._migrations import migrate
from atomtask.runs._records import (
    RESUMABLE,
    WORKFLOW_FUNCTION,
    RunInfo,
    RunSpec,
    RunStart,
    Segment,
    base_id,
    check_run_id,
    check_runnable,
    corrupt_info,
    load_run,
    run_info,
    status_name,
    unreadable,
    workflow_statuses,
)
from atomtask.system._options import NO_OPTIONS, CallOptions
from atomtask.system._results import StepVisit, TaskError, UsageNotes, WorkflowResult
from atomtask.workflows._compiled import CompiledWorkflow
from atomtask.workflows._runner import Start
from atomtask.workflows._state import initial_state, write_state
from pydantic_core import to_jsonable_python

__all__ = ["ResumePlan", "plan_resume"]


@attrs.frozen(kw_only=True)
class ResumePlan:
    """What `resume` does: go on with the last segment as it is (`start` None), or start a new one from `start`."""

    segment: Segment
    start: RunStart | None = None
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
    elif spec.start is not None:
        recorded = (spec.version, str(spec.fingerprint))
        state, step, after = spec.start.state, spec.start.step, spec.start.after
    else:
        recorded = (spec.version, str(spec.fingerprint))
        state, step, after = spec.inputs, None, False
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
    start = RunStart(state=migrated.state, step=step, after=after, used=used)
    return ResumePlan(segment=last, start=start, version=version, fingerprint=now, applied=migrated.applied)


try:
    from dbos import DBOS, SetWorkflowID
except ImportError:  # the `durable` extra is not installed
    raise DurableRunsUnavailableError() from None

if TYPE_CHECKING:
    from atomtask.workflows._registry import WorkflowRegistry
    from atomtask.workflows._runner import WorkflowRunner
    from pydantic import BaseModel
    from pydantic_ai.models import Model

__all__ = ["approve", "list_runs", "new_run_id", "resume", "run", "show"]

log = get_logger(__name__)


@attrs.define
class _Host:
    """What a run needs from the process that runs it (not storable): the workflows, the runner, a model, a listener."""

    workflows: WorkflowRegistry
    runner: WorkflowRunner
    model: Model | str | None
    on_visit: Callable[[StepVisit], None] | None
    expect: type[BaseModel] | None = None
    on_waiting: Callable[[str, dict[str, Any]], None] | None = None
    #: The values of the run's `redact: true` fields: given by the caller, never stored.
    secrets: dict[str, Any] = attrs.field(factory=dict)
    #: The approvals (`step#visit`) the resumed segment has checkpoints of (`DbosJournal.decided`).
    decided: frozenset[str] = frozenset()
    #: The approval (step, visit) the run was WAITING at when resumed (`DbosJournal.resumed_wait`), and its topic.
    resumed_wait: tuple[str, int] | None = None
    resumed_topic: str | None = None
    #: The DBOS steps the resumed segment has recorded, by name (`DbosJournal.recorded`).
    recorded: dict[str, int] = attrs.field(factory=dict)
    result: WorkflowResult[Any] | None = None
    done: threading.Event = attrs.field(factory=threading.Event)


_hosts: dict[str, _Host] = {}
_hosts_lock = threading.Lock()


@DBOS.workflow(name=WORKFLOW_FUNCTION)
async def _workflow_run(stored: dict[str, Any]) -> dict[str, Any]:
    """The DBOS workflow of one run: the workflow through a `DbosJournal`; returns the run's summary."""
    spec = RunSpec.model_validate(stored)
    run_id = spec.run_id or DBOS.workflow_id
    assert run_id is not None
    with _hosts_lock:
        host = _hosts.get(run_id)
    if host is None:  # DBOS gave this process a run it was not asked to run
        raise RuntimeError(f"Run {run_id!r} was handed to a process that did not ask for it; resume it again.")
    try:
        compiled = host.workflows.compiled(spec.workflow)
        journal = DbosJournal(
            run_id=run_id,
            compiled=compiled,
            secrets=host.secrets,
            on_waiting=host.on_waiting,
            decided=host.decided,
            resumed_wait=host.resumed_wait,
            resumed_topic=host.resumed_topic,
            recorded=host.recorded,
        )
        given = {name: host.secrets[name] for name in spec.redacted_inputs if name in host.secrets}
        result = await host.runner.run_async(
            compiled,
            {**spec.inputs, **given},
            spec.options(host.model),
            expect=host.expect,
            on_visit=host.on_visit,
            journal=journal,
            start=_start(compiled, spec.start, host.secrets) if spec.start is not None else None,
        )
        host.result = result
        return {
            "status": result.status.value,
            "error": result.error.message if result.error is not None else None,
            "reason": result.error.reason.value if result.error is not None else None,
            "state": plain_state(result.state, compiled.redacted_fields) if result.state is not None else None,
        }
    finally:
        host.done.set()


def _start(compiled: CompiledWorkflow, start: RunStart, secrets: dict[str, Any]) -> Start:
    """The `Start` of a segment that goes on from a migrated state (validated again into the state class)."""
    state = write_state(compiled.state_cls.model_construct(), {**start.state, **secrets})
    return Start(state=state, step=start.step, after=start.after, used=start.used)


def new_run_id() -> str:
    """A fresh run id: short, unique, safe in a shell."""
    return uuid.uuid4().hex[:12]


async def _open(db: str | None) -> str:
    """Launch DBOS on the store `db`, on a thread of its own (not the loop's default executor: DBOS makes that
    its own, and it dies with DBOS: the store gives the loop a live one back whenever DBOS goes)."""
    url = engine.store_url(db)
    loop = asyncio.get_running_loop()
    engine.using_loop(loop)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        await loop.run_in_executor(pool, engine.launch, url)
    return url


async def run(
    workflows: WorkflowRegistry,
    runner: WorkflowRunner,
    name: str,
    inputs: Mapping[str, Any] | None,
    options: CallOptions = NO_OPTIONS,
    *,
    run_id: str | None = None,
    db: str | None = None,
    on_visit: Callable[[StepVisit], None] | None = None,
    expect: type[BaseModel] | None = None,
    on_waiting: Callable[[str, dict[str, Any]], None] | None = None,
    base_url: str | None = None,
) -> WorkflowResult[Any]:
    """Run workflow `name` durably under `run_id` (else a new one); the result carries the run id.

    Raises before anything is stored: `WorkflowNotFoundError`, `RunIdError` for an id no run can have (`~`, empty,
    whitespace, ...: `check_run_id`), `RunExistsError` for an id already used.
    Run inputs that do not fit the state are a FAILED result (no run id), and nothing is stored either.
    A `Model` instance is not stored with the run: resume it with the same `model=` again. `base_url` (the
    endpoint the run's models are sent to; never a key) is stored, so a resume can use it again. `on_waiting`
    is told (run id, the wait: step, message) when the run stops to wait for an approval.
    """
    if run_id is not None:
        check_run_id(run_id)
    compiled = workflows.compiled(name)
    if expect is not None and not issubclass(compiled.state_cls, expect):
        raise ConfigurationError(
            f"Workflow {compiled.name!r} has state {compiled.state_cls.__name__}, but the caller expects "
            f"{expect.__name__}; fix `expect=` or the workflow's `state`."
        )
    inputs = dict(inputs or {})
    if isinstance(initial_state(compiled, inputs), TaskError):  # a run that cannot start leaves no record
        return await runner.run_async(compiled, inputs, options, expect=expect, on_visit=on_visit)
    run_id = run_id or new_run_id()
    secrets = {name: value for name, value in inputs.items() if name in compiled.redacted_fields}
    await _open(db)
    try:
        with unreadable(run_id, "its status"), engine.store_errors():
            existing = await DBOS.get_workflow_status_async(run_id)
        segments = await load_run(run_id) if existing is not None else []
    except CorruptCheckpointError:  # a record under that id, unreadable: the id is taken all the same
        raise RunExistsError(run_id, "CORRUPT") from None
    if existing is not None:
        raise RunExistsError(run_id, _info(run_id, segments).status if segments else status_name(existing))
    model = options.model
    settings = options.model_settings
    spec = RunSpec(
        run_id=run_id,
        workflow=compiled.name,
        version=compiled.workflow.version,
        fingerprint=fingerprint(compiled.state_cls),
        inputs=to_jsonable_python({k: v for k, v in inputs.items() if k not in secrets}),
        redacted_inputs=sorted(secrets),
        model=model if isinstance(model, str) else None,
        base_url=base_url,
        model_settings=to_jsonable_python(dict(settings)) if settings is not None else None,
        limits=options.limits,
    )
    host = _Host(workflows=workflows, runner=runner, model=model, on_visit=on_visit, expect=expect, secrets=secrets)
    host.on_waiting = on_waiting
    with _hosts_lock:
        _hosts[run_id] = host
    try:
        log.info("run_started", run_id=run_id, workflow=compiled.name)
        with SetWorkflowID(run_id):
            await _workflow_run(spec.stored())
    finally:
        with _hosts_lock:
            _hosts.pop(run_id, None)
    assert host.result is not None
    return host.result.model_copy(update={"run_id": run_id})


async def resume(
    workflows: WorkflowRegistry,
    runner: WorkflowRunner,
    run_id: str,
    *,
    db: str | None = None,
    model: Model | str | None = None,
    on_visit: Callable[[StepVisit], None] | None = None,
    inputs: Mapping[str, Any] | None = None,
    on_waiting: Callable[[str, dict[str, Any]], None] | None = None,
    base_url: str | None = None,
) -> WorkflowResult[Any]:
    """Resume an interrupted run from its last checkpoint; its completed steps are not run again.

    `base_url` is the endpoint the resuming `TaskSystem` sends to: when it is not the one the run was started
    with (`RunInfo.base_url`), a warning (`run_endpoint_changed`) says so (the CLI's `resume` uses the
    recorded one unless `--base-url` says otherwise).

    A FAILED run (a provider outage at a step, ...) goes on from the step that failed, in a new segment
    (`RUN_ID~N`) started from the state its completed steps left: they are not run or paid again. A
    COMPLETE run is refused (`RunStateError`).

    `inputs` gives the values of its `redact: true` fields again (never stored; `RedactedInputsError` when
    one it needs is missing).

    Under another version of its workflow, the declared migrations turn its state into the current
    version's first (see `runs.resumes`). Raises before anything is run or written: `RunNotFoundError`,
    `RunStateError` (the run ended), `CorruptCheckpointError`, `WorkflowNotFoundError` (its workflow is not
    loaded), `MigrationError`, `ResumeStepMissingError`.
    """
    url = await _open(db)
    segments = await load_run(run_id)
    if not segments:
        raise RunNotFoundError(run_id, engine.display_url(url))
    last = segments[-1]
    info = _info(run_id, segments)
    retry = info.status == "FAILED" and str(last.status.status) == "SUCCESS"
    if info.status not in RESUMABLE and not retry:
        raise RunStateError(
            run_id,
            info.status,
            f"Run {run_id!r} has ended ({info.status}); nothing to resume. See it with "
            f"`atomtask workflow show {run_id}`, or start the workflow again under a new run id.",
        )
    plan = plan_resume(run_id, segments, workflows.compiled(last.spec.workflow), retry=retry)
    if base_url != segments[0].spec.base_url:
        log.warning("run_endpoint_changed", run_id=run_id, recorded=segments[0].spec.base_url, now=base_url)
    secrets = dict(inputs or {})
    needed = {
        *segments[0].spec.redacted_inputs,
        *(f for g in segments for c in g.checkpoints for f in c.redacted),
    }
    missing = sorted(needed.difference(secrets))
    if missing:
        raise RedactedInputsError(run_id, missing)
    host = _Host(workflows=workflows, runner=runner, model=model, on_visit=on_visit, secrets=secrets)
    host.on_waiting = on_waiting
    host.decided = frozenset(f"{c.step}#{c.visit}" for c in last.checkpoints)
    if info.waiting is not None:
        host.resumed_wait = (str(info.waiting.get("step")), int(info.waiting.get("visit", 1)))
        host.resumed_topic = str(info.waiting.get("topic") or decisions.APPROVAL_TOPIC)
    with _hosts_lock:
        _hosts[run_id] = host
    try:
        log.info("run_resumed", run_id=run_id, after=info.current_step, retry=retry, migrations=list(plan.applied))
        if plan.start is None:
            host.recorded = await decisions.recorded(last.workflow_id)
            await _resume_segment(run_id, last.workflow_id, host)
        else:
            update = {"run_id": run_id, "start": plan.start, "version": plan.version, "fingerprint": plan.fingerprint}
            spec = last.spec.model_copy(update=update)
            with SetWorkflowID(f"{run_id}~{len(segments) + 1}"):
                handle = await DBOS.start_workflow_async(_workflow_run, spec.stored())
            if not retry:
                await DBOS.cancel_workflow_async(last.workflow_id)  # superseded by the new segment
            await handle.get_result()
    finally:
        with _hosts_lock:
            _hosts.pop(run_id, None)
    if host.result is None:
        raise RunStateError(run_id, "ERROR", f"Run {run_id!r} stopped on an unexpected error; see the log.")
    return host.result.model_copy(update={"run_id": run_id})


async def _resume_segment(run_id: str, workflow_id: str, host: _Host) -> None:
    """Hand DBOS workflow `workflow_id` back to this process (on its own queue) and wait for its end.

    `CorruptCheckpointError` when its DBOS record cannot run here (`check_runnable`), or DBOS leaves it queued
    for `_START_WITHIN` seconds (this process's queue takes it within 0.05 s otherwise): never a wait for nothing.
    """
    with unreadable(run_id, "its status"), engine.store_errors():
        check_runnable(run_id, await DBOS.get_workflow_status_async(workflow_id))
    with engine.store_errors():
        await DBOS.register_queue_async(engine.resume_queue(), polling_interval_sec=0.05)
        await DBOS.resume_workflow_async(workflow_id, queue_name=engine.resume_queue())
    queued_since = time.monotonic()
    while not await asyncio.to_thread(host.done.wait, 0.5):
        now = await DBOS.get_workflow_status_async(workflow_id)
        if now is not None and now.status in ("ERROR", "CANCELLED", "SUCCESS") and not host.done.is_set():
            ended = status_name(now)
            raise RunStateError(run_id, ended, f"Run {run_id!r} ended in another process ({ended}).")
        if now is None or now.status != "ENQUEUED":
            queued_since = time.monotonic()
        elif time.monotonic() - queued_since > _START_WITHIN:
            problem = (
                f"DBOS left it queued for {_START_WITHIN:g}s: its record keeps it from running (a delay, a partition)"
            )
            raise CorruptCheckpointError(run_id, None, problem)


#: How long a resumed segment may stay queued before `resume` gives up on DBOS starting it.
_START_WITHIN = 30.0


def _info(run_id: str, segments: list[Segment]) -> RunInfo:
    checkpoints = [c for segment in segments for c in segment.checkpoints]
    return run_info(run_id, segments[-1].status, checkpoints, spec=segments[0].spec, waiting=segments[-1].waiting)


async def list_runs(*, db: str | None = None, limit: int | None = None) -> list[RunInfo]:
    """Every run in the store, the most recently started first; one whose record cannot be read is CORRUPT.

    Raises `RunStoreError` only for the store as a whole (it cannot be opened, or the database fails a read).
    """
    await _open(db)
    runs: dict[str, list[Any]] = {}
    for status in await workflow_statuses(limit=limit):
        runs.setdefault(base_id(str(status.workflow_id)), []).append(status)
    return [await _listed(run_id, group) for run_id, group in runs.items()]


async def _listed(run_id: str, statuses: list[Any]) -> RunInfo:
    """A run's line in the listing; a run whose record cannot be read is listed as CORRUPT, not skipped."""
    try:
        segments = await load_run(run_id, statuses)
        if not segments:  # only ids like `RUN_ID~x`, stored before `~` was refused in run ids
            raise CorruptCheckpointError(run_id, None, "its DBOS workflows' ids name no run's segments")
        return _info(run_id, segments)
    except CorruptCheckpointError as exc:
        return corrupt_info(run_id, statuses, exc)


async def show(run_id: str, *, db: str | None = None) -> RunInfo:
    """One run with its checkpoints; `RunNotFoundError` for an unknown id, `RunIdError` for an id with `~` (a
    segment's), `CorruptCheckpointError` for a run whose record cannot be read, `RunStoreError` for the store."""
    url = await _open(db)
    segments = await load_run(run_id)
    if not segments:
        raise RunNotFoundError(run_id, engine.display_url(url))
    return _info(run_id, segments)


async def approve(
    run_id: str,
    *,
    approved: bool = True,
    note: str | None = None,
    by: str | None = None,
    db: str | None = None,
    step: str | None = None,
) -> RunInfo:
    """Send the decision to run `run_id`, WAITING at an approval step; returns the run as it was.

    The decision is for the step visit the run waits at, and for no other: it is sent on that visit's topic,
    and recorded first, once per visit (a DBOS workflow `SEGMENT@STEP#VISIT` whose input is the decision,
    created only if absent: of two `approve` calls, at once or one after the other, exactly one creates it).
    The run's own process goes on with it; a run whose process has gone gets it when resumed. Raises
    `RunNotFoundError`, or `ApprovalError` when the run is not WAITING, waits at another step than `step` (when
    given: a decision meant for one gate never reaches the next), or that visit was decided already (naming the
    decision that stands; nothing more is sent).
    """
    from dbos._error import DBOSWorkflowIDInUseError  # not exported by `dbos`: a "reject" start's refusal

    url = await _open(db)
    segments = await load_run(run_id)
    if not segments:
        raise RunNotFoundError(run_id, engine.display_url(url))
    info = _info(run_id, segments)
    if info.status != "WAITING":
        raise ApprovalError(run_id, status=info.status, step=info.current_step)
    waiting = info.waiting or {}
    if step is not None and waiting.get("step") != step:
        raise ApprovalError(run_id, status=info.status, step=str(waiting.get("step")), expected=step)
    step, visit = str(waiting.get("step")), int(waiting.get("visit", 1))
    topic = str(waiting.get("topic") or decisions.APPROVAL_TOPIC)  # a run stored before topics were per visit
    target = segments[-1].workflow_id
    record = f"{target}@{step}#{visit}"
    message = decisions.decision(approved, note, by)
    try:
        with SetWorkflowID(record, workflow_id_reuse_policy="reject"):
            handle = await DBOS.start_workflow_async(_decision, message)
    except DBOSWorkflowIDInUseError:
        standing = await _standing(record)
        # Delivered again under the same key (a no-op once sent): the `approve` that recorded it may have died.
        await DBOS.send_async(target, standing, topic=topic, idempotency_key=record)
        raise ApprovalError(run_id, status=info.status, step=step, decided=standing) from None
    await handle.get_result()
    await DBOS.send_async(target, message, topic=topic, idempotency_key=record)
    log.info("run_decided", run_id=run_id, step=step, visit=visit, approved=approved)
    return info


#: The name of the DBOS workflow that records the decision of one approval step visit (its input).
DECISION_FUNCTION = "atomtask.approval_decision"


@DBOS.workflow(name=DECISION_FUNCTION)
async def _decision(message: dict[str, Any]) -> dict[str, Any]:
    """The record of one approval's decision: its workflow id names the step visit, its input is the decision."""
    return message


async def _standing(record: str) -> dict[str, Any]:
    """The decision recorded under `record` (the input of its `_decision` workflow)."""
    found = await DBOS.list_workflows_async(workflow_ids=[record], load_output=False)
    inputs = found[0].input if found else None
    standing = inputs.get("args", [None])[0] if isinstance(inputs, dict) else None
    return standing if isinstance(standing, dict) else {"approved": None}
