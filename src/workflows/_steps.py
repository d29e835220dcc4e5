"""Running one step: its task (or sub-workflow) call with `on_failure` escalation, a code step's function with its
`retries`, `for_each` items, `parallel` groups.

Each call gets the options that apply to it, stacked with `CallOptions.over` (a `retry_with` model over
the run's options over the step's over the workflow's; the task's own lie below, in the executor) and
what is left of the run's budget. A call's answer is validated into the state before the step counts
as done (once: the state it makes is the run's next state); a value that does not fit fails the step
(and `retry_with` tries the next model). Every call is recorded as a `StepVisit`, in order, whatever
happens next. A code step (`call:`) validates its inputs into the function's parameter types, runs the
function (again after an exception, up to `retries` more times) and validates what it returns into the
return type; an exception or a timeout fails the visit as `code_error`, with the exception's type and
message in its record.

In a durable run each step visit's units are journaled one by one (`StepJournal.units`): every
`for_each` element, every `parallel` member, and every top-level step of a sub-workflow (its own
`StepJournal.within`), so a run killed in the middle of a step pays again only for the units that
were in flight. Their ids are drawn before any of them starts, in a fixed order (element index,
member declaration order), whatever order concurrency finishes them in. A unit that would write a
`redact: true` field is not journaled (its value is never stored): it runs again on resume.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import attrs
from atomtask._logs import get_logger
from atomtask.errors import ExpressionRuntimeError, StateWriteError
from atomtask.executors._atomic import AtomicTaskExecutor
from atomtask.handlers._budget import Budget
from atomtask.system._options import CallOptions
from atomtask.system._results import (
    FailureReason,
    StepStatus,
    StepVisit,
    TaskError,
    TaskResult,
    TaskStatus,
    UsageNotes,
    WorkflowResult,
)
from atomtask.workflows._calls import run_call
from atomtask.workflows._compiled import CompiledStep, CompiledWorkflow, to_plain
from atomtask.workflows._expressions import read_path
from atomtask.workflows._state import write_state
from pydantic import BaseModel, ValidationError

__all__ = [
    "Attempted",
    "Journaled",
    "RunContext",
    "StepJournal",
    "Unit",
    "counted",
    "run_attempts",
    "run_fail",
    "run_group",
    "run_items",
    "run_sets",
    "skipped",
]

log = get_logger(__name__)
_T = TypeVar("_T")


@attrs.frozen(kw_only=True)
class Journaled:
    """A step's (or unit's) outcome through a journal: `replayed` when it was recorded before and not run again."""

    attempted: Attempted
    replayed: bool = False


class Unit(Protocol):
    """One unit of a step visit, its place in the journal drawn already: runs `run` once, or gives its record back."""

    async def __call__(self, run: Callable[[], Awaitable[Attempted]]) -> Journaled: ...


class StepJournal(Protocol):
    """Runs (or replays) the steps of one walk, and the units of one step visit; called in the order they run.

    The runner hands it each top-level step (and, through `within`, each step of a sub-workflow); a step's
    run is given the journal of that visit's units (`units`), or None when they are not journaled one by one.
    """

    async def step(
        self,
        step: CompiledStep,
        visit: int,
        state: BaseModel,
        run: Callable[[StepJournal | None], Awaitable[Attempted]],
    ) -> Journaled:
        """The outcome of visit `visit` of `step` on `state`: `await run(units)`'s, recorded, or the one recorded."""
        ...

    async def approval(self, step: CompiledStep, visit: int, state: BaseModel) -> Journaled:
        """An approval step: wait for the decision (or its timeout); its outcome writes it to the step's `output`."""
        ...

    def units(self, names: Sequence[str]) -> list[Unit]:
        """The units `names` of this step visit, their places drawn now, in this order (before any of them runs)."""
        ...

    def within(self, name: str, compiled: CompiledWorkflow) -> StepJournal:
        """The journal of a sub-workflow (`compiled`) run in this step visit, its records named under `name`."""
        ...


#: Runs a sub-workflow: (compiled, inputs, the options it runs with, its budget, its journal) -> its result.
ChildRunner = Callable[
    [CompiledWorkflow, Mapping[str, Any], CallOptions, Budget, StepJournal | None], Awaitable[WorkflowResult[Any]]
]


@attrs.define
class RunContext:
    """One run: its workflow, executor, options (its limits are the budget's), and how to run a sub-workflow."""

    compiled: CompiledWorkflow
    executor: AtomicTaskExecutor
    options: CallOptions
    budget: Budget
    run_child: ChildRunner
    #: The journal of the current step visit's units (durable runs), None inside a unit or without a journal.
    units: StepJournal | None = None


@attrs.frozen(kw_only=True)
class Attempted:
    """How a step (or one item or member of it) ended: its visits, and its writes or its failure."""

    visits: list[StepVisit]
    writes: dict[str, Any] = attrs.field(factory=dict)
    #: The state after the writes, validated once, by the step; None when there is nothing new (or the
    #: writes come from a checkpoint, to be validated into the run's state).
    state: BaseModel | None = None
    answer: Any = None
    failure: TaskError | None = None
    #: The run must stop whatever `on_failure` says (its limits are reached, a `when` could not be evaluated).
    terminal: bool = False


def _failure(reason: FailureReason, message: str, step: CompiledStep, **details: Any) -> TaskError:
    return TaskError(reason=reason, message=message, step=step.id, details=details)


async def run_attempts(
    ctx: RunContext, step: CompiledStep, state: BaseModel, visit: int, *, item: Any = None, index: int | None = None
) -> Attempted:
    """Run a task or sub-workflow step once per model of its escalation until one fits; `state` is not changed.

    When the run's limits are reached before a call, no call is made and the outcome is `terminal`.
    """
    env = {"state": state, step.step.as_: item} if index is not None else {"state": state}
    try:
        inputs = {name: _fit(value.render(env), step.param_types.get(name)) for name, value in step.inputs.items()}
    except ExpressionRuntimeError as exc:
        unrendered = _failure(FailureReason.EXPRESSION_ERROR, f"Step {step.id!r}: {exc}.", step)
        _log_failed(ctx, step, unrendered)
        return Attempted(
            visits=[_visit(step, visit, 0, index, StepStatus.FAILED, error=unrendered)], failure=unrendered
        )
    if step.call is not None:
        return await _run_code(ctx, step, state, visit, inputs, index)
    visits: list[StepVisit] = []
    failure: TaskError | None = None
    for attempt, retry_model in enumerate([None, *step.step.on_failure.retry_with]):
        spent = ctx.budget.exhausted()
        if spent is not None:
            limit = ctx.budget.describe(spent)
            over = _failure(
                FailureReason.USAGE_LIMIT_EXCEEDED,
                f"The run reached its limit `{limit}` before step {step.id!r} could run; raise `limits` or "
                "shorten the run.",
                step,
                limit=limit,
            )
            _log_failed(ctx, step, over)
            return Attempted(visits=visits, failure=over, terminal=True)
        log.info("step_started", workflow=ctx.compiled.name, step=step.id, visit=visit, attempt=attempt, item=index)
        result, child = await _call(ctx, step, inputs, retry_model, attempt)
        usage = result.notes.usage if result is not None else child.usage if child is not None else None
        if result is not None and usage is not None:
            ctx.budget.spend(usage)  # a sub-workflow's calls were counted by its own budget
        answer, failure = _answer(step, result, child)
        writes: dict[str, Any] = {}
        new: BaseModel | None = None
        if failure is None:
            try:
                writes, new = _writes(step, state, answer)
            except (StateWriteError, ExpressionRuntimeError) as exc:
                failure = _write_failure(step, exc)
        status = StepStatus.COMPLETE if failure is None else StepStatus.FAILED
        visits.append(
            _visit(step, visit, attempt, index, status, result=result, child=child, error=failure, model=retry_model)
        )
        if failure is None:
            log.info(
                "step_completed", workflow=ctx.compiled.name, step=step.id, visit=visit, attempt=attempt, item=index
            )
            return Attempted(visits=visits, writes=writes, state=new, answer=answer)
        _log_failed(ctx, step, failure)
    return Attempted(visits=visits, failure=failure)


async def _run_code(
    ctx: RunContext, step: CompiledStep, state: BaseModel, visit: int, inputs: dict[str, Any], index: int | None
) -> Attempted:
    """A code step: its function on the validated inputs, again after an exception up to `retries` more times.

    A value that does not fit (an input, the return, a state field) fails at once: running again would
    not change it.
    """
    call = step.call
    assert call is not None
    arguments: dict[str, Any] = {}
    for name, value in inputs.items():
        try:
            arguments[name] = call.argument(name, value)
        except ValidationError as exc:
            refused = _failure(
                FailureReason.INPUT_VALIDATION_FAILURE,
                f"Step {step.id!r} passes {_short(value)} to parameter {name!r} of {call.reference}, which does not "
                f"fit: {_first_error(exc)}.",
                step,
                function=call.reference,
                parameter=name,
                errors=_errors(exc),
            )
            _log_failed(ctx, step, refused)
            return Attempted(visits=[_visit(step, visit, 0, index, StepStatus.FAILED, error=refused)], failure=refused)
    visits: list[StepVisit] = []
    failure: TaskError | None = None
    runs = (step.step.retries or 0) + 1
    for attempt in range(runs):
        log.info("step_started", workflow=ctx.compiled.name, step=step.id, visit=visit, attempt=attempt, item=index)
        outcome = await run_call(call, arguments, step.step.timeout)
        if outcome.error is not None:
            error = outcome.error
            said = str(error) if outcome.timed_out else f"{call.reference} raised {type(error).__name__}: {error}"
            tries = f" (run {attempt + 1} of {runs})" if runs > 1 else ""
            failure = _failure(
                FailureReason.CODE_ERROR,
                f"Step {step.id!r}: {said}{tries}",
                step,
                function=call.reference,
                **outcome.details(),
                **({"timeout": step.step.timeout} if outcome.timed_out else {}),
            )
            visits.append(_visit(step, visit, attempt, index, StepStatus.FAILED, error=failure))
            _log_failed(ctx, step, failure)
            continue
        writes: dict[str, Any] = {}
        new: BaseModel | None = None
        answer: Any = None
        try:
            answer = call.answer(outcome.value)
            writes, new = _writes(step, state, answer)
        except ValidationError as exc:
            failure = _failure(
                FailureReason.OUTPUT_VALIDATION_FAILURE,
                f"Step {step.id!r}: {call.reference} returned {_short(outcome.value)}, which does not fit its return "
                f"type: {_first_error(exc)}.",
                step,
                function=call.reference,
                errors=_errors(exc),
            )
        except (StateWriteError, ExpressionRuntimeError) as exc:
            failure = _write_failure(step, exc)
        else:
            failure = None
        status = StepStatus.COMPLETE if failure is None else StepStatus.FAILED
        visits.append(_visit(step, visit, attempt, index, status, error=failure))
        if failure is not None:
            _log_failed(ctx, step, failure)
            return Attempted(visits=visits, failure=failure)
        log.info("step_completed", workflow=ctx.compiled.name, step=step.id, visit=visit, attempt=attempt, item=index)
        return Attempted(visits=visits, writes=writes, state=new, answer=answer)
    return Attempted(visits=visits, failure=failure)


def run_sets(ctx: RunContext, step: CompiledStep, state: BaseModel, visit: int) -> Attempted:
    """A step that only computes: its `set` expressions, in order, validated into a new state."""
    try:
        writes, new = _writes(step, state, None)
    except (StateWriteError, ExpressionRuntimeError) as exc:
        failure = _write_failure(step, exc)
        _log_failed(ctx, step, failure)
        return Attempted(visits=[_visit(step, visit, 0, None, StepStatus.FAILED, error=failure)], failure=failure)
    return Attempted(visits=[_visit(step, visit, 0, None, StepStatus.COMPLETE)], writes=writes, state=new)


def run_fail(step: CompiledStep, state: BaseModel, visit: int) -> Attempted:
    """A `fail` step: the run ends FAILED, with the step's reason and its message rendered from the state."""
    declared = step.step.fail
    assert declared is not None
    message = f"Step {step.id!r} ended the run: {declared.reason}."
    if step.message is not None:
        try:
            message = str(step.message.render({"state": state}))
        except ExpressionRuntimeError as exc:
            message = f"Step {step.id!r} ended the run ({declared.reason}); its message could not be rendered: {exc}."
    failure = _failure(FailureReason.FAILED_BY_STEP, message, step, name=declared.reason)
    return Attempted(visits=[_visit(step, visit, 0, None, StepStatus.FAILED, error=failure)], failure=failure,
                     terminal=True)  # fmt: skip


def _errors(exc: ValidationError) -> list[dict[str, Any]]:
    """Pydantic's errors as JSON values (a checkpoint keeps them): where, what, and the kind."""
    return [
        {"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]}
        for e in exc.errors(include_url=False, include_context=False, include_input=False)
    ]


def _first_error(exc: ValidationError) -> str:
    error = exc.errors(include_url=False)[0]
    inner = ".".join(str(p) for p in error["loc"])
    return error["msg"] + (f" (at `{inner}`)" if inner else "")


def _log_failed(ctx: RunContext, step: CompiledStep, failure: TaskError) -> None:
    log.warning(
        "step_failed", workflow=ctx.compiled.name, step=step.id, reason=failure.reason.value, message=failure.message
    )


def _fit(value: Any, annotation: Any) -> Any:
    """A value for a parameter: a class instance goes as it is into its own class, as its fields elsewhere."""
    if isinstance(value, BaseModel) and not (isinstance(annotation, type) and isinstance(value, annotation)):
        return to_plain(value)
    return value


async def _call(
    ctx: RunContext, step: CompiledStep, inputs: dict[str, Any], retry_model: str | None, attempt: int = 0
) -> tuple[TaskResult[Any] | None, WorkflowResult[Any] | None]:
    asked = ctx.options if retry_model is None else CallOptions(model=retry_model).over(ctx.options)
    if step.child is not None:  # the sub-workflow's own steps and workflow decide the rest
        child_budget = Budget(limits=step.child.workflow.limits, parent=ctx.budget)
        options = asked.over(CallOptions(model=step.step.model))
        journal = None  # its steps journaled one by one, unless what it gives back goes to a redacted field
        if ctx.units is not None and not _secret(ctx, step):
            journal = ctx.units.within(f"retry{attempt}" if attempt else "", step.child)
        return None, await ctx.run_child(step.child, inputs, options, child_budget, journal)
    assert step.step.task is not None
    options = CallOptions(limits=ctx.budget.remaining()).over(asked).over(step.options).over(ctx.compiled.options)
    if _secret(ctx, step):  # the answer holds a `redact: true` value: the response cache never stores it
        options = CallOptions(cache=False).over(options)
    return await ctx.executor.execute_async(step.step.task, inputs, options), None


def _answer(
    step: CompiledStep, result: TaskResult[Any] | None, child: WorkflowResult[Any] | None
) -> tuple[Any, TaskError | None]:
    if result is not None:
        if result.status is TaskStatus.COMPLETE:
            return result.parsedContent if result.parsedContent is not None else result.content, None
        error = result.error
        why = f"{error.reason.value}: {error.message}" if error is not None else "no error recorded"
        return None, _failure(
            FailureReason.STEP_FAILED,
            f"Step {step.id!r}: task {step.step.task!r} failed ({why})",
            step,
            task_reason=error.reason.value if error is not None else None,
        )
    assert child is not None
    if child.status is TaskStatus.COMPLETE:
        return child.state, None
    inner = child.error
    why = f"{inner.reason.value} at step {inner.step!r}: {inner.message}" if inner is not None else "no error recorded"
    return None, _failure(
        FailureReason.STEP_FAILED, f"Step {step.id!r}: workflow {step.step.workflow!r} failed ({why})", step
    )


def _writes(step: CompiledStep, state: BaseModel, answer: Any) -> tuple[dict[str, Any], BaseModel]:
    """The values the step writes (outputs, then `set`), and the state they make: a copy of `state`, validated."""
    writes = {field: read_path(answer, parts, "answer") for field, parts in step.output_map}
    new = write_state(state, writes)
    for field, expr in step.sets:
        value = expr.evaluate({"state": new})
        new = write_state(new, {field: value})
        writes[field] = value
    return writes, new


def _write_failure(step: CompiledStep, exc: StateWriteError | ExpressionRuntimeError) -> TaskError:
    if isinstance(exc, ExpressionRuntimeError):
        return _failure(FailureReason.EXPRESSION_ERROR, f"Step {step.id!r}: {exc}.", step)
    return _failure(
        FailureReason.STATE_VALIDATION_FAILURE,
        f"Step {step.id!r} wrote {_short(exc.value)} to `state.{exc.field}`, which does not fit: {exc.problem}.",
        step,
        field=exc.field,
        value=to_plain(exc.value),
        problem=exc.problem,
    )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def _visit(
    step: CompiledStep,
    visit: int,
    attempt: int,
    index: int | None,
    status: StepStatus,
    *,
    result: TaskResult[Any] | None = None,
    child: WorkflowResult[Any] | None = None,
    error: TaskError | None = None,
    model: str | None = None,
) -> StepVisit:
    # The model that ran (an alias resolved: its name is in the result's notes), else the one asked for.
    chosen = (result.notes.model if result is not None else None) or model
    return StepVisit(
        step=step.id,
        visit=visit,
        status=status,
        attempt=attempt,
        item=index,
        task=step.step.task,
        workflow=step.step.workflow,
        call=step.step.call,
        model=chosen,
        result=result,
        subworkflow=child,
        error=error,
    )


def skipped(step: CompiledStep, visit: int) -> StepVisit:
    """The visit of a step that `when` skipped."""
    return _visit(step, visit, 0, None, StepStatus.SKIPPED)


async def run_items(ctx: RunContext, step: CompiledStep, state: BaseModel, visit: int) -> Attempted:
    """A `for_each` step: each element, at most `concurrency` at a time; the answers collected in order.

    Once an element has failed, elements not yet started are not started (they would cost calls for a step
    that failed), unless the step's `on_failure` is `continue`: then every element runs, and `collect` keeps
    the answers of the elements that succeeded, in order (the failed ones left out), before `set` applies.
    """
    assert step.for_each is not None
    try:
        items = step.for_each.evaluate({"state": state})
        items = list(items)
    except (ExpressionRuntimeError, TypeError) as exc:
        failure = _failure(FailureReason.EXPRESSION_ERROR, f"Step {step.id!r}, `for_each`: {exc}.", step)
        return Attempted(visits=[_visit(step, visit, 0, None, StepStatus.FAILED, error=failure)], failure=failure)
    gate = asyncio.Semaphore(step.step.concurrency)
    bare = attrs.evolve(step, output_map=(), sets=())  # items only answer; the step writes once, after
    keep_going = step.step.on_failure.action == "continue"
    stopped = False
    inner = attrs.evolve(ctx, units=None)  # an element is one unit: nothing inside it is journaled apart
    units = ctx.units.units([str(i) for i in range(len(items))]) if ctx.units and not _secret(ctx, step) else None

    async def one(index: int, item: Any) -> Attempted | None:
        nonlocal stopped
        async with gate:
            if stopped:
                return None  # an earlier element failed: this one is not started

            def run() -> Awaitable[Attempted]:
                return run_attempts(inner, bare, state, visit, item=item, index=index)

            attempted = await run() if units is None else counted(ctx, await units[index](run))
            if attempted.failure is not None and (attempted.terminal or not keep_going):
                stopped = True
            return attempted

    done = [a for a in await _gather([one(i, item) for i, item in enumerate(items)]) if a is not None]
    visits = [v for attempted in done for v in attempted.visits]
    failed = next((a for a in done if a.failure is not None and a.terminal), None) or next(
        (a for a in done if a.failure is not None), None
    )
    if failed is not None and not (keep_going and not failed.terminal):
        return Attempted(visits=visits, failure=failed.failure, terminal=failed.terminal)
    writes: dict[str, Any] = {}
    try:
        new = state
        if step.step.collect is not None:
            writes[step.step.collect] = [a.answer for a in done if a.failure is None]
            new = write_state(state, writes)
        for field, expr in step.sets:
            writes[field] = expr.evaluate({"state": new})
            new = write_state(new, {field: writes[field]})
    except (StateWriteError, ExpressionRuntimeError) as exc:
        return Attempted(visits=visits, failure=_write_failure(step, exc))
    left = failed.failure if failed is not None else None  # an element failed, and `on_failure` is `continue`
    return Attempted(visits=visits, writes=writes, state=new if writes else None, failure=left)


async def run_group(ctx: RunContext, group: CompiledStep, state: BaseModel, visit: int) -> Attempted:
    """A `parallel` group: every member at once on the same state; joined in declaration order."""
    inner = attrs.evolve(ctx, units=None)  # a member is one unit: nothing inside it is journaled apart
    journaled = [m.id for m in group.members if not _secret(ctx, m)]
    units = dict(zip(journaled, ctx.units.units(journaled), strict=True)) if ctx.units is not None else {}

    async def one(member: CompiledStep) -> Attempted:
        unit = units.get(member.id)
        if unit is None:
            return await member_run(member)
        done = await unit(lambda: member_run(member))
        if not done.replayed or not done.attempted.writes:
            return counted(ctx, done)
        try:  # recorded by an earlier process: validated into this run's state now, as the member did
            return attrs.evolve(counted(ctx, done), state=write_state(state, done.attempted.writes))
        except StateWriteError as exc:
            failure = _write_failure(member, exc)
            return Attempted(visits=done.attempted.visits, failure=failure, terminal=True)

    async def member_run(member: CompiledStep) -> Attempted:
        try:
            skip = member.when is not None and not member.when.evaluate({"state": state})
        except ExpressionRuntimeError as exc:
            failure = _failure(FailureReason.EXPRESSION_ERROR, f"Step {member.id!r}, `when`: {exc}.", member)
            return Attempted(visits=[_visit(member, visit, 0, None, StepStatus.FAILED, error=failure)],
                             failure=failure, terminal=True)  # fmt: skip
        if skip:
            return Attempted(visits=[skipped(member, visit)])
        if member.for_each is not None:
            return await run_items(inner, member, state, visit)
        return await run_attempts(inner, member, state, visit)

    done = await _gather([one(member) for member in group.members])
    visits = [v for attempted in done for v in attempted.visits]
    writes: dict[str, Any] = {}
    values: dict[str, Any] = {}  # each member's fields as its own copy validated them (members write apart)
    failed: Attempted | None = None
    for member, attempted in zip(group.members, done, strict=True):
        writes.update(attempted.writes)  # a failed member writes nothing, but `for_each` with `continue` may
        if attempted.state is not None:
            values.update((field, getattr(attempted.state, field)) for field in attempted.writes)
        if attempted.failure is None:
            continue
        if (attempted.terminal or member.step.on_failure.action == "stop") and (failed is None or attempted.terminal):
            failed = attempted if failed is None or not failed.terminal else failed
    new = state.model_copy(update=values) if values else None
    if failed is None:
        return Attempted(visits=visits, writes=writes, state=new)
    return Attempted(visits=visits, writes=writes, state=new, failure=failed.failure, terminal=failed.terminal)


def _secret(ctx: RunContext, step: CompiledStep) -> bool:
    """Whether `step` writes a `redact: true` field: its units are not journaled and its answers not cached (their
    records would hold it)."""
    return not ctx.compiled.redacted_fields.isdisjoint(step.writes)


def counted(ctx: RunContext, done: Journaled) -> Attempted:
    """A step's or unit's outcome through a journal; one recorded before (not run again) counts against the run's
    limits again, unpaid."""
    if done.replayed:
        ctx.budget.spend(sum((v.usage for v in done.attempted.visits), UsageNotes()))
    return done.attempted


async def _gather(runs: list[Awaitable[_T]]) -> list[_T]:
    """Every run to its end, in the order given: nothing paid for is dropped when one of them fails."""
    return list(await asyncio.gather(*runs))
