"""`WorkflowRunner`: run a compiled workflow, step by step, over its typed state, to a `WorkflowResult`.

The run starts from the validated run inputs and follows the steps: `when` may skip a step, a step
writes its outputs and `set` into a new, validated state, and `route` (or the order of the steps)
says where to go next, until `end` or the last step. A step that failed escalates as its
`on_failure` says. `max_visits` and the workflow's `limits` hold at run time too. Nothing here
raises for a run that failed: the result is FAILED, with the state as it was, every visit and its
cost. The implementation is async; `run` is a thin synchronous wrapper (`handlers.blocking.run_blocking`,
as `execute` uses: inside a running event loop the run goes on a worker thread).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, overload

from atomtask.executors.atomic import AtomicTaskExecutor
from atomtask.handlers.blocking import run_blocking
from atomtask.loading.model_settings import check_model_settings
from atomtask.system.errors import ConfigurationError
from atomtask.system.logs import get_logger
from atomtask.system.results import TaskStatus, UsageNotes
from atomtask.system.templates import TemplateLimits
from atomtask.system.workflow_results import StepVisit, WorkflowFailure, WorkflowFailureReason, WorkflowResult
from atomtask.system.workflows import END
from atomtask.workflows.compiled import CompiledStep, CompiledWorkflow
from atomtask.workflows.expressions import ExpressionRuntimeError
from atomtask.workflows.journal import Start, StepJournal, unjournaled_approval
from atomtask.workflows.state import Budget, StateWriteError, initial_state, write_state
from atomtask.workflows.step_runs import Attempted, RunContext, run_attempts, run_group, run_items, skipped, traced_step
from pydantic import BaseModel, ValidationError

if TYPE_CHECKING:
    from pydantic_ai.models import Model

__all__ = ["WorkflowRunner"]

log = get_logger(__name__)
S = TypeVar("S", bound=BaseModel)
_Result = WorkflowResult[Any]


class WorkflowRunner:
    """Runs compiled workflows through one `AtomicTaskExecutor`.

    Example:
        ```python
        runner = WorkflowRunner(system.executor)
        result = await runner.run_async(workflows.compiled("article_writer"), {"topic": "tides"})
        ```
    """

    def __init__(self, executor: AtomicTaskExecutor, *, on_visit: Callable[[StepVisit], None] | None = None) -> None:
        self.executor = executor
        #: Called with each visit of a top-level step as soon as it ends (the CLI's status lines).
        self.on_visit = on_visit

    @overload
    async def run_async(
        self,
        compiled: CompiledWorkflow,
        inputs: Mapping[str, Any] | None = None,
        *,
        model: Model | str | None = None,
        model_settings: Mapping[str, Any] | None = None,
        limits: TemplateLimits | Mapping[str, Any] | None = None,
        expect: None = None,
        on_visit: Callable[[StepVisit], None] | None = None,
        journal: StepJournal | None = None,
        start: Start | None = None,
    ) -> WorkflowResult[Any]: ...

    @overload
    async def run_async(
        self,
        compiled: CompiledWorkflow,
        inputs: Mapping[str, Any] | None = None,
        *,
        model: Model | str | None = None,
        model_settings: Mapping[str, Any] | None = None,
        limits: TemplateLimits | Mapping[str, Any] | None = None,
        expect: type[S],
        on_visit: Callable[[StepVisit], None] | None = None,
        journal: StepJournal | None = None,
        start: Start | None = None,
    ) -> WorkflowResult[S]: ...

    async def run_async(
        self,
        compiled: CompiledWorkflow,
        inputs: Mapping[str, Any] | None = None,
        *,
        model: Model | str | None = None,
        model_settings: Mapping[str, Any] | None = None,
        limits: TemplateLimits | Mapping[str, Any] | None = None,
        expect: type[BaseModel] | None = None,
        on_visit: Callable[[StepVisit], None] | None = None,
        journal: StepJournal | None = None,
        start: Start | None = None,
    ) -> WorkflowResult[Any]:
        """Run `compiled` on `inputs`; never raises for a run that failed.

        `model=` overrides every model the workflow and its tasks name (but not `retry_with`);
        `model_settings=` go on top of every step's (and the workflow's, and each task's), key by key;
        `limits=` tighten the workflow's `limits` for this run. `expect=Cls` types the result as
        `WorkflowResult[Cls]` and raises `ConfigurationError` when the state class is not a `Cls`.
        `on_visit` (else the runner's own) is called with each top-level step visit as it ends.
        `journal` records (or replays) each top-level step: how `atomtask.runs` makes a run durable;
        `start` begins the run from a state and step of its own instead of `inputs` (a migrated run).
        A bad `limits=` or `model_settings=` raises `ConfigurationError` before anything runs.
        """
        if expect is not None and not issubclass(compiled.state_cls, expect):
            raise ConfigurationError(
                f"Workflow {compiled.name!r} has state {compiled.state_cls.__name__}, but the caller expects "
                f"{expect.__name__}; fix `expect=` or the workflow's `state`."
            )
        settings = None
        if model_settings is not None:
            settings = check_model_settings(model_settings, where="this run (`model_settings=`)")
        own = compiled.workflow.limits
        if limits is not None:
            own = _run_limits(limits).tightest(own)
        run = self._run(
            compiled,
            dict(inputs or {}),
            model,
            settings,
            Budget(limits=own),
            notify=on_visit or self.on_visit,
            journal=journal,
            start=start,
        )
        return await self._traced(compiled, run)

    @overload
    def run(
        self,
        compiled: CompiledWorkflow,
        inputs: Mapping[str, Any] | None = None,
        *,
        model: Model | str | None = None,
        model_settings: Mapping[str, Any] | None = None,
        limits: TemplateLimits | Mapping[str, Any] | None = None,
        expect: None = None,
        on_visit: Callable[[StepVisit], None] | None = None,
    ) -> WorkflowResult[Any]: ...

    @overload
    def run(
        self,
        compiled: CompiledWorkflow,
        inputs: Mapping[str, Any] | None = None,
        *,
        model: Model | str | None = None,
        model_settings: Mapping[str, Any] | None = None,
        limits: TemplateLimits | Mapping[str, Any] | None = None,
        expect: type[S],
        on_visit: Callable[[StepVisit], None] | None = None,
    ) -> WorkflowResult[S]: ...

    def run(
        self,
        compiled: CompiledWorkflow,
        inputs: Mapping[str, Any] | None = None,
        *,
        model: Model | str | None = None,
        model_settings: Mapping[str, Any] | None = None,
        limits: TemplateLimits | Mapping[str, Any] | None = None,
        expect: type[BaseModel] | None = None,
        on_visit: Callable[[StepVisit], None] | None = None,
    ) -> WorkflowResult[Any]:
        """The synchronous form of `run_async`, on the thread's event loop (as `TaskSystem.execute` runs).

        Called where an event loop is already running (Jupyter, an async web handler), the run goes on
        a worker thread while the caller waits; `await run_async(...)` avoids blocking the loop.
        """
        options: dict[str, Any] = {
            "model": model,
            "model_settings": model_settings,
            "limits": limits,
            "expect": expect,
            "on_visit": on_visit,
        }
        return run_blocking(self.run_async(compiled, inputs, **options))

    async def _run(
        self,
        compiled: CompiledWorkflow,
        inputs: Mapping[str, Any],
        model: Model | str | None,
        model_settings: Mapping[str, Any] | None,
        budget: Budget,
        *,
        notify: Callable[[StepVisit], None] | None = None,
        journal: StepJournal | None = None,
        start: Start | None = None,
    ) -> WorkflowResult[Any]:
        started = time.perf_counter()
        log.info("workflow_started", workflow=compiled.name, inputs=sorted(inputs))
        first = initial_state(compiled, inputs) if start is None else start.state
        if start is not None:
            budget.spend(start.used)
        if isinstance(first, WorkflowFailure):
            return self._finish(compiled, None, [], first, started)
        ctx = RunContext(
            compiled=compiled,
            executor=self.executor,
            model=model,
            budget=budget,
            run_child=self._child,
            model_settings=model_settings,
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
            failure = WorkflowFailure(
                reason=WorkflowFailureReason.UNEXPECTED_ERROR,
                message=f"Unexpected {type(exc).__name__}: {exc}",
            )
        return self._finish(compiled, state, visits, failure, started)

    async def _child(
        self,
        compiled: CompiledWorkflow,
        inputs: Mapping[str, Any],
        model: Model | str | None,
        model_settings: Mapping[str, Any] | None,
        budget: Budget,
    ) -> WorkflowResult[Any]:
        return await self._traced(compiled, self._run(compiled, inputs, model, model_settings, budget))

    async def _traced(self, compiled: CompiledWorkflow, run: Awaitable[WorkflowResult[Any]]) -> WorkflowResult[Any]:
        tracing = self.executor.manager.tracing  # OpenTelemetry: the run's span, its steps' and tasks' inside it
        return await (run if tracing is None else tracing.workflow(compiled.name, run))

    @staticmethod
    def _finish(
        compiled: CompiledWorkflow,
        state: BaseModel | None,
        visits: list[StepVisit],
        failure: WorkflowFailure | None,
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
) -> tuple[BaseModel, WorkflowFailure | None]:
    """Follow the steps from the first to the end; returns the last state and the failure that stopped the run."""
    compiled = ctx.compiled
    counts: dict[str, int] = {}
    current = first or compiled.first
    while current != END:
        step = compiled.index[current]
        count = counts.get(current, 0) + 1
        bound = step.step.max_visits
        if bound is not None and count > bound:
            return state, WorkflowFailure(
                reason=WorkflowFailureReason.MAX_VISITS_EXCEEDED,
                message=f"Step {current!r} would run a {_ordinal(count)} time, over its `max_visits: {bound}`. "
                "Raise the bound, or make the route leave the loop sooner.",
                step=current,
                details={"max_visits": bound},
            )
        counts[current] = count
        try:
            skip = step.when is not None and not step.when.evaluate({"state": state})
        except ExpressionRuntimeError as exc:
            return state, _expression_failure(step, "when", exc)
        if skip:
            visits.extend([skipped(step, count)])
        else:
            outcome = await traced_step(ctx, step, count, _journaled(ctx, step, state, count, journal))
            visits.extend(outcome.visits)
            if outcome.writes:
                try:
                    state = write_state(state, outcome.writes)
                except StateWriteError as exc:  # validated on the step's own copy already; kept for safety
                    return state, WorkflowFailure(
                        reason=WorkflowFailureReason.STATE_VALIDATION_FAILURE, message=str(exc), step=current
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


async def _run_step(ctx: RunContext, step: CompiledStep, state: BaseModel, visit: int) -> Attempted:
    if step.members:
        return await run_group(ctx, step, state, visit)
    if step.for_each is not None:
        return await run_items(ctx, step, state, visit)
    return await run_attempts(ctx, step, state, visit)


async def _journaled(
    ctx: RunContext, step: CompiledStep, state: BaseModel, visit: int, journal: StepJournal | None
) -> Attempted:
    """The step run, or through `journal`: a step it replays counts against the run's limits again, unpaid.

    An approval step waits for a person's decision, which only a journal (a durable run) can wait for.
    """
    approval = step.step.kind == "approval"
    if journal is None:
        return unjournaled_approval(step, visit) if approval else await _run_step(ctx, step, state, visit)
    if approval:
        done = await journal.approval(step, visit, state)
    else:
        done = await journal.step(step, visit, state, lambda: _run_step(ctx, step, state, visit))
    if done.replayed:
        ctx.budget.spend(sum((v.usage for v in done.attempted.visits), UsageNotes()))
    return done.attempted


def _next(step: CompiledStep, state: BaseModel) -> str:
    for route in step.routes:
        if route.when is None or route.when.evaluate({"state": state}):
            return route.to
    return step.fallthrough


def _expression_failure(step: CompiledStep, where: str, exc: ExpressionRuntimeError) -> WorkflowFailure:
    return WorkflowFailure(
        reason=WorkflowFailureReason.EXPRESSION_ERROR,
        message=f"Step {step.id!r}, `{where}`: {exc}. Give the fields it reads a value first (or a default).",
        step=step.id,
    )


def _run_limits(limits: TemplateLimits | Mapping[str, Any]) -> TemplateLimits:
    """The run's `limits=`, validated; a bad one raises `ConfigurationError` naming the limit."""
    if isinstance(limits, TemplateLimits):
        return limits
    try:
        return TemplateLimits.model_validate(limits)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise ConfigurationError(
            f"Invalid `limits=` for this run: {first['msg']} ({'.'.join(str(p) for p in first['loc'])}). Limits "
            "are positive numbers for `requests`, `input_tokens`, `output_tokens`, `total_tokens` and `cost` (USD)."
        ) from None


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
