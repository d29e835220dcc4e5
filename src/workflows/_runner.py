"""`WorkflowRunner`: run a compiled workflow, step by step, over its typed state, to a `WorkflowResult`.

The run starts from the validated run inputs and follows the steps: `when` may skip a step, a step
writes its outputs and `set` into a new, validated state, and `route` (or the order of the steps)
says where to go next, until `end` or the last step. A step that failed escalates as its
`on_failure` says. `max_visits` and the workflow's `limits` hold at run time too. Nothing here
raises for a run that failed: the result is FAILED, with the state as it was, every visit and its
cost. The implementation is async; `run` is a thin synchronous wrapper (`handlers._blocking.run_blocking`,
as `execute` uses: inside a running event loop the run goes on a worker thread).

The runner knows nothing of storage: the seam for durable runs is a `StepJournal` (`_steps`). Given one,
the runner hands it every top-level step (a task, a sub-workflow, a `for_each` or a `parallel` group)
together with the call that runs it; the journal either runs the call and records its outcome, or
returns the outcome it recorded before (a resumed run), marked `replayed` so the runner counts that
step's usage against the run's limits without paying for it again. The call is given the journal of
the visit's units: each `for_each` element, `parallel` member and sub-workflow step is recorded on
its own (`_steps`), so a step killed half-way pays again only for its units in flight.
`atomtask.runs` implements it on a durable-execution engine. An approval step (`type: approval`)
goes to the journal too: only a durable run can wait for a person's decision (across processes, for
hours); without one the step fails and says so. A `Start` begins a run elsewhere than at its first
step with its run inputs: a run resumed into another version of its workflow goes on from its
migrated state, after its last completed step.

Without tracing and without a journal, a step is awaited directly: no frame only forwards it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import attrs
from atomtask._logs import get_logger
from atomtask.errors import ConfigurationError, ExpressionRuntimeError, StateWriteError
from atomtask.executors._atomic import AtomicTaskExecutor
from atomtask.handlers._blocking import run_blocking
from atomtask.handlers._budget import Budget
from atomtask.system._options import NO_OPTIONS, CallOptions
from atomtask.system._results import (
    FailureReason,
    StepStatus,
    StepVisit,
    TaskError,
    TaskStatus,
    UsageNotes,
    WorkflowResult,
)
from atomtask.system._workflows import END
from atomtask.workflows._compiled import CompiledStep, CompiledWorkflow
from atomtask.workflows._state import initial_state, write_state
from atomtask.workflows._steps import (
    Attempted,
    RunContext,
    StepJournal,
    counted,
    run_attempts,
    run_fail,
    run_group,
    run_items,
    run_sets,
    skipped,
)
from pydantic import BaseModel

__all__ = ["Start", "WorkflowRunner", "unjournaled_approval"]


def unjournaled_approval(step: CompiledStep, visit: int) -> Attempted:
    """The outcome of an approval step in a run that is not durable: it fails, saying how to run it."""
    failure = TaskError(
        reason=FailureReason.STEP_FAILED,
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


log = get_logger(__name__)
_Result = WorkflowResult[Any]


class WorkflowRunner:
    """Runs compiled workflows through one `AtomicTaskExecutor`.

    Example:
        ```python
        runner = WorkflowRunner(system.executor)
        result = await runner.run_async(system.workflows.compiled("article_writer"), {"topic": "tides"})
        ```
    """

    def __init__(self, executor: AtomicTaskExecutor, *, on_visit: Callable[[StepVisit], None] | None = None) -> None:
        self.executor = executor
        #: Called with each visit of a top-level step as soon as it ends (the CLI's status lines).
        self.on_visit = on_visit

    async def run_async(
        self,
        compiled: CompiledWorkflow,
        inputs: Mapping[str, Any] | None = None,
        options: CallOptions = NO_OPTIONS,
        *,
        expect: type[BaseModel] | None = None,
        on_visit: Callable[[StepVisit], None] | None = None,
        journal: StepJournal | None = None,
        start: Start | None = None,
    ) -> WorkflowResult[Any]:
        """Run `compiled` on `inputs`; never raises for a run that failed.

        `options` are the run's (checked, `check_options`): its `model` wins over every model the workflow
        and its tasks name (but not `retry_with`), its `model_settings` go on top of every step's (and the
        workflow's, and each task's), key by key, and its `limits` tighten the workflow's `limits`, which
        hold across all steps. `expect=Cls` raises `ConfigurationError` when the state class is not a `Cls`.
        `on_visit` (else the runner's own) is called with each top-level step visit as it ends.
        `journal` records (or replays) each top-level step: how `atomtask.runs` makes a run durable;
        `start` begins the run from a state and step of its own instead of `inputs` (a migrated run).
        """
        if expect is not None and not issubclass(compiled.state_cls, expect):
            raise ConfigurationError(
                f"Workflow {compiled.name!r} has state {compiled.state_cls.__name__}, but the caller expects "
                f"{expect.__name__}; fix `expect=` or the workflow's `state`."
            )
        limits = compiled.workflow.limits
        if options.limits is not None:  # the run's limits hold across its steps, through its budget
            limits = options.limits.tightest(limits)
            options = attrs.evolve(options, limits=None)
        budget = Budget(limits=limits)
        run = self._run(compiled, dict(inputs or {}), options, budget, on_visit or self.on_visit, journal, start)
        return await self._traced(compiled, run)

    def run(
        self,
        compiled: CompiledWorkflow,
        inputs: Mapping[str, Any] | None = None,
        options: CallOptions = NO_OPTIONS,
        *,
        expect: type[BaseModel] | None = None,
        on_visit: Callable[[StepVisit], None] | None = None,
    ) -> WorkflowResult[Any]:
        """The synchronous form of `run_async`, on the thread's event loop (as `TaskSystem.execute` runs).

        Called where an event loop is already running (Jupyter, an async web handler), the run goes on
        a worker thread while the caller waits; `await run_async(...)` avoids blocking the loop.
        """
        return run_blocking(self.run_async(compiled, inputs, options, expect=expect, on_visit=on_visit))

    async def _run(
        self,
        compiled: CompiledWorkflow,
        inputs: Mapping[str, Any],
        options: CallOptions,
        budget: Budget,
        notify: Callable[[StepVisit], None] | None = None,
        journal: StepJournal | None = None,
        start: Start | None = None,
    ) -> WorkflowResult[Any]:
        started = time.perf_counter()
        log.info("workflow_started", workflow=compiled.name, inputs=sorted(inputs))
        first = initial_state(compiled, inputs) if start is None else start.state
        if start is not None:
            budget.spend(start.used)
        if isinstance(first, TaskError):
            return self._finish(compiled, None, [], first, started)
        ctx = RunContext(
            compiled=compiled, executor=self.executor, options=options, budget=budget, run_child=self._child
        )
        visits: list[StepVisit] = []
        state: BaseModel = first
        try:
            current = compiled.first if start is None else start.step
            if start is not None and start.after:
                current = _next(compiled.index[start.step], state)
            state, failure = await _walk(ctx, state, _Visits(visits, notify), journal, current)
        except Exception as exc:  # a bug must not lose what was paid for: report it in the result
            log.exception("workflow_unexpected_error", workflow=compiled.name)
            failure = TaskError(
                reason=FailureReason.UNEXPECTED_ERROR,
                message=f"Unexpected {type(exc).__name__}: {exc}",
            )
        return self._finish(compiled, state, visits, failure, started)

    def _child(
        self,
        compiled: CompiledWorkflow,
        inputs: Mapping[str, Any],
        options: CallOptions,
        budget: Budget,
        journal: StepJournal | None,
    ) -> Awaitable[WorkflowResult[Any]]:
        return self._traced(compiled, self._run(compiled, inputs, options, budget, journal=journal))

    def _traced(
        self, compiled: CompiledWorkflow, run: Awaitable[WorkflowResult[Any]]
    ) -> Awaitable[WorkflowResult[Any]]:
        tracing = self.executor.manager.tracing  # OpenTelemetry: the run's span, its steps' and tasks' inside it
        return run if tracing is None else tracing.workflow(compiled.name, run)

    @staticmethod
    def _finish(
        compiled: CompiledWorkflow,
        state: BaseModel | None,
        visits: list[StepVisit],
        failure: TaskError | None,
        started: float,
    ) -> WorkflowResult[Any]:
        usage = sum((v.usage for v in visits), UsageNotes())
        status = TaskStatus.COMPLETE if failure is None else TaskStatus.FAILED
        log.info(
            "workflow_completed",
            workflow=compiled.name,
            status=status.value,
            steps=len(visits),
            requests=usage.requests,
            reason=failure.reason.value if failure is not None else None,
        )
        return _Result(
            workflow=compiled.name,
            status=status,
            state=state,
            steps=visits,
            usage=usage,
            duration_ms=(time.perf_counter() - started) * 1000,
            error=failure,
        )


class _Visits:
    """The visits of a run, in order, each announced to `notify` as it is added."""

    def __init__(self, visits: list[StepVisit], notify: Callable[[StepVisit], None] | None) -> None:
        self.visits = visits
        self.notify = notify

    def extend(self, new: Iterable[StepVisit]) -> None:
        for visit in new:
            self.visits.append(visit)
            if self.notify is not None:
                self.notify(visit)


async def _walk(
    ctx: RunContext, state: BaseModel, visits: _Visits, journal: StepJournal | None = None, first: str | None = None
) -> tuple[BaseModel, TaskError | None]:
    """Follow the steps from the first to the end; returns the last state and the failure that stopped the run."""
    compiled = ctx.compiled
    tracing = ctx.executor.manager.tracing
    counts: dict[str, int] = {}
    current = first or compiled.first
    while current != END:
        step = compiled.index[current]
        count = counts.get(current, 0) + 1
        bound = step.step.max_visits
        if bound is not None and count > bound:
            at_bound = step.step.on_max_visits.action
            if at_bound == "fail":
                return state, TaskError(
                    reason=FailureReason.MAX_VISITS_EXCEEDED,
                    message=f"Step {current!r} would run a {_ordinal(count)} time, over its `max_visits: {bound}`. "
                    "Raise the bound, make the route leave the loop sooner, or say what the bound does "
                    "(`on_max_visits: end` or `{to: STEP}`).",
                    step=current,
                    details={"max_visits": bound},
                )
            log.info("step_bound_reached", workflow=compiled.name, step=current, max_visits=bound, then=at_bound)
            counts[current] = count
            visits.extend([skipped(step, count)])
            current = END if at_bound == "end" else step.step.on_max_visits.to or END
            continue
        counts[current] = count
        try:
            skip = step.when is not None and not step.when.evaluate({"state": state})
        except ExpressionRuntimeError as exc:
            return state, _expression_failure(step, "when", exc)
        if skip:
            visits.extend([skipped(step, count)])
        else:
            # A step that only computes (or fails on purpose) costs nothing and gives the same on a replay.
            run: Awaitable[Attempted] = (
                _journaled(ctx, step, state, count, journal)
                if journal is not None and step.step.kind not in ("set", "fail")
                else _step_run(ctx, step, state, count)
            )
            if tracing is not None:  # the step's span, its tasks' inside it
                run = tracing.step(compiled.name, step.step, count, run)
            outcome = await run
            visits.extend(outcome.visits)
            if outcome.state is not None:  # validated by the step itself
                state = outcome.state
            elif outcome.writes:  # recorded by an earlier process: validated into this run's state now
                try:
                    state = write_state(state, outcome.writes)
                except StateWriteError as exc:
                    return state, TaskError(
                        reason=FailureReason.STATE_VALIDATION_FAILURE, message=str(exc), step=current
                    )
            if outcome.failure is not None:
                action = step.step.on_failure.action
                if outcome.terminal or action == "stop":
                    return state, outcome.failure
                if action == "to" and step.step.on_failure.to is not None:
                    current = step.step.on_failure.to
                    continue
        try:
            current = _next(step, state)
        except ExpressionRuntimeError as exc:
            return state, _expression_failure(step, "route", exc)
    return state, None


def _step_run(ctx: RunContext, step: CompiledStep, state: BaseModel, visit: int) -> Awaitable[Attempted]:
    """The run of one visit of a step, as an awaitable (a group, a `for_each`, or the step's task or sub-workflow)."""
    if step.step.kind == "approval":  # only a journal (a durable run) can wait for a person's decision
        return _ready(unjournaled_approval(step, visit))
    if step.step.kind == "fail":
        return _ready(run_fail(step, state, visit))
    if step.step.kind == "set":
        return _ready(run_sets(ctx, step, state, visit))
    if step.members:
        return run_group(ctx, step, state, visit)
    if step.for_each is not None:
        return run_items(ctx, step, state, visit)
    return run_attempts(ctx, step, state, visit)


async def _ready(attempted: Attempted) -> Attempted:
    return attempted


async def _journaled(
    ctx: RunContext, step: CompiledStep, state: BaseModel, visit: int, journal: StepJournal
) -> Attempted:
    """The step run through `journal` (its units through the journal of the visit's units): a step it replays
    counts against the run's limits again, unpaid."""
    if step.step.kind == "approval":
        done = await journal.approval(step, visit, state)
    else:
        done = await journal.step(
            step, visit, state, lambda units: _step_run(attrs.evolve(ctx, units=units), step, state, visit)
        )
    return counted(ctx, done)


def _next(step: CompiledStep, state: BaseModel) -> str:
    for route in step.routes:
        if route.when is None or route.when.evaluate({"state": state}):
            return route.to
    return step.fallthrough


def _expression_failure(step: CompiledStep, where: str, exc: ExpressionRuntimeError) -> TaskError:
    hint = " Give the fields it reads a value first (or a default)." if exc.missing else ""
    return TaskError(reason=FailureReason.EXPRESSION_ERROR, message=f"Step {step.id!r}, `{where}`: {exc}.{hint}",
                     step=step.id)  # fmt: skip


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
