"""What a template, a workflow or a batch would cost: each call traced without a model, then measured.

A dry run goes the way a run goes, minus the model: the executor checks the inputs, renders the
prompts and resolves the options exactly as for a run (`AtomicTaskExecutor`, the response cache off),
and the `WorkflowRunner` runs the workflow's steps, but each model call is handed to `_Tracer`, which
keeps the `ModelCall` and answers it with a valid synthetic value (`atomtask:synthetic`'s kind, seeded
by the call's prompt), so the steps after it render their prompts from plausible state and the routes
go where such answers lead. Code steps (`call:`) do not run (user code has effects): each returns a
synthetic value of its function's return type (`workflows._calls.STAND_IN`).

Counted (see `_requests` for one call):

- expected: the calls the traced run made, each on its first model, once (no re-ask); the branches
  and loop rounds are those the synthetic answers took, and a `for_each` has the items of its list
  (the run's inputs, else the synthetic answer's: the notes say which).
- worst: every call with every retry on every model (fallbacks), each step as often as its loop
  allows (`max_visits` of the step, else the largest bound of the loop it is in), every `for_each`
  item of the traced run, and every task step the traced run did not reach (another branch, or after
  a failure) once at its bound, its prompt rendered from the traced state where it can be, else
  without its inputs (said in the notes).
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs
from atomtask.errors import TaskFailedError, WorkflowFailedError
from atomtask.estimate._figures import (
    ZERO,
    Estimate,
    Figures,
    ItemEstimate,
    TemplateEstimate,
    Totals,
    add_costs,
)
from atomtask.estimate._requests import Measured, Meter
from atomtask.executors._atomic import AtomicTaskExecutor, resolve_options
from atomtask.executors._cache import CacheConfig
from atomtask.handlers._llm import CallOutcome, LLMInteractionManager, ModelCall
from atomtask.system._options import CallOptions
from atomtask.system._results import FailureReason, TaskError, WorkflowResult
from atomtask.workflows._calls import STAND_IN, CompiledCall

if TYPE_CHECKING:
    from atomtask.handlers._base import BaseHandler
    from atomtask.loading._template_registry import TemplateRegistry
    from atomtask.workflows._compiled import CompiledStep, CompiledWorkflow
    from atomtask.workflows._registry import WorkflowRegistry

__all__ = ["EstimateHost", "estimate_items", "estimate_task", "estimate_workflow"]


class EstimateHost(Protocol):
    """The parts of `TaskSystem` an estimate uses (a protocol, so this layer sits below it)."""

    templates: TemplateRegistry
    workflows: WorkflowRegistry
    handler: BaseHandler


class _Tracer(LLMInteractionManager):
    """A manager that keeps each call and answers it with a valid synthetic value: no model is called."""

    def __init__(self, host: EstimateHost, *, vary: bool = False) -> None:
        super().__init__(host.handler)
        self.calls: list[ModelCall] = []
        # A template's answer is read by no one: one per output class does. A workflow's steps route on theirs:
        # each call gets the synthetic model's kind of answer, seeded by what it was asked (`vary`).
        self.vary = vary
        self._answers: dict[Any, tuple[Any, str]] = {}

    async def run(self, call: ModelCall) -> CallOutcome:
        self.calls.append(call)
        key: Any = (call.output_cls, call.system, call.prompt) if self.vary else call.output_cls
        answer = self._answers.get(key)
        if answer is None:
            try:
                answer = self._answers[key] = _synthetic_answer(call, _seed(call) if self.vary else 0)
            except Exception as exc:  # a schema the synthetic model cannot answer: the trace ends at this call
                error = TaskError(
                    reason=FailureReason.OUTPUT_VALIDATION_FAILURE,
                    message=f"no synthetic answer for template {call.template!r}: {exc}",
                )
                return CallOutcome(output=None, content=None, attempts=[], error=error, model=call.model.label)
        output, content = answer
        return CallOutcome(output=output, content=content, attempts=[], model=call.model.label)


def _seed(call: ModelCall) -> int:
    digest = hashlib.sha256(f"{call.template}\x00{call.system}\x00{call.prompt}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def _stand_in(call: CompiledCall) -> Any:
    """A code step's stand-in answer in a dry run: a valid synthetic value of its function's return type."""
    from atomtask.handlers._synthetic import synthetic_instance
    from pydantic import TypeAdapter

    if call.returns in (None, type(None), Any, inspect.Parameter.empty):
        return None
    adapter: TypeAdapter[Any] = TypeAdapter(call.returns)
    seed = int.from_bytes(hashlib.sha256(call.reference.encode()).digest()[:4], "big")
    return adapter.validate_python(synthetic_instance(adapter.json_schema(), seed))


def _synthetic_answer(call: ModelCall, seed: int) -> tuple[Any, str]:
    """A valid answer to `call` (the synthetic model's) and its text, for the steps after it to render."""
    import json
    from random import Random

    from atomtask.handlers._plausible import plausible_text
    from atomtask.handlers._synthetic import synthetic_instance

    if call.output_cls is None:
        text = plausible_text(Random(seed))
        return text, text
    instance = synthetic_instance(call.output_cls.model_json_schema(), seed)
    return call.output_cls.model_validate(instance), json.dumps(instance)


@attrs.define
class _Trace:
    """The calls of one traced run, the executor that made them, and what the trace could not follow."""

    tracer: _Tracer
    executor: AtomicTaskExecutor
    notes: list[str] = attrs.field(factory=list)


def _trace(host: EstimateHost, *, vary: bool = False) -> _Trace:
    tracer = _Tracer(host, vary=vary)
    return _Trace(tracer=tracer, executor=AtomicTaskExecutor(host.templates, tracer, CacheConfig(enabled=False)))


def _options(options: CallOptions) -> CallOptions:
    """The run's options with the response cache off: a dry run neither reads nor stores answers."""
    return attrs.evolve(options, cache=False)


def _declared(host: EstimateHost, template: str) -> int | None:
    try:
        return host.templates.compiled(template).template.expected_output_tokens
    except Exception:  # a template compiled for one call only (`ask`): nothing declared
        return None


# -- a template ------------------------------------------------------------------------------------------


def _task_calls(
    host: EstimateHost, trace: _Trace, name: str, inputs: Mapping[str, Any] | None, options: CallOptions
) -> list[ModelCall]:
    """The calls a run of template `name` makes; raises `TaskFailedError` with the run's own FAILED result."""
    before = len(trace.tracer.calls)
    result = trace.executor.execute(name, inputs or {}, _options(options))
    calls = trace.tracer.calls[before:]
    if not calls:  # refused before any model call: the run's own reason (inputs, template, configuration)
        raise TaskFailedError(result)
    return calls


def estimate_task(
    host: EstimateHost,
    name: str,
    inputs: Mapping[str, Any] | None,
    options: CallOptions,
    *,
    provider_batch: bool = False,
) -> Estimate:
    """What one run of template `name` on `inputs` would take; calls no model.

    Raises `TaskFailedError` (its `result` the run's FAILED result) when the run would fail before
    any model call: an unknown template, inputs that do not fit, a model that cannot be used.
    """
    meter = Meter(host.handler, provider_batch=provider_batch)
    calls = _task_calls(host, _trace(host), name, inputs, options)
    measured = [m for call in calls for m in meter.measure(call, _declared(host, call.template))]
    return _estimate(name, "template", _rows(measured), provider_batch=provider_batch)


# -- a workflow ------------------------------------------------------------------------------------------


def _workflow_rows(
    host: EstimateHost, meter: Meter, name: str, inputs: Mapping[str, Any] | None, options: CallOptions
) -> tuple[list[_Row], list[str]]:
    from atomtask.handlers._blocking import run_blocking
    from atomtask.workflows._runner import WorkflowRunner

    compiled = host.workflows.compiled(name)  # raises WorkflowNotFoundError, as a run does
    trace = _trace(host, vary=True)
    runner = WorkflowRunner(trace.executor)

    async def traced() -> WorkflowResult[Any]:
        token = STAND_IN.set(_stand_in)  # no code step runs: each returns a synthetic value of its type
        try:
            return await runner.run_async(compiled, inputs or {}, _options(options))
        finally:
            STAND_IN.reset(token)

    result: WorkflowResult[Any] = run_blocking(traced())
    calls = trace.tracer.calls
    notes: list[str] = []
    if result.error is not None:
        if not calls:  # failed before any model call (run inputs that do not fit the state, ...): as the run would
            raise WorkflowFailedError(result)
        at = f" at step {result.error.step!r}" if result.error.step else ""
        notes.append(
            f"the dry run on synthetic answers stopped{at} ({result.error.reason.value}); the steps after it are "
            "counted in the worst case only"
        )
    observed: dict[str, list[ModelCall]] = {}
    for call in calls:
        observed.setdefault(call.template, []).append(call)
    bounds = _worst_calls(compiled, observed, notes)
    state = result.state
    rows: list[_Row] = []
    for template, worst_calls in bounds.items():
        seen = observed.get(template, [])
        measured_calls = [meter.measure(call, _declared(host, template)) for call in seen]
        if not seen:
            unreached = _unreached_call(host, trace, compiled, template, state, options, notes)
            if unreached is None:
                continue
            measured_calls = [meter.measure(unreached, _declared(host, template))]
        rows.extend(_bounded(measured_calls, worst_calls, expected=bool(seen)))
    return rows, notes


def estimate_workflow(
    host: EstimateHost,
    name: str,
    inputs: Mapping[str, Any] | None,
    options: CallOptions,
    *,
    provider_batch: bool = False,
) -> Estimate:
    """What one run of workflow `name` on `inputs` would take; calls no model and runs no code step.

    Raises `WorkflowNotFoundError` for an unknown workflow and `WorkflowFailedError` (its `result` the
    run's FAILED result) when the run inputs do not fit the state, as a run would.
    """
    meter = Meter(host.handler, provider_batch=provider_batch)
    rows, notes = _workflow_rows(host, meter, name, inputs, options)
    return _estimate(name, "workflow", rows, provider_batch=provider_batch, notes=notes)


def _task_steps(compiled: CompiledWorkflow) -> list[CompiledStep]:
    """Every step that runs a task (members of `parallel` groups included; sub-workflows' steps too)."""
    found: list[CompiledStep] = []
    for step in compiled.index.values():
        if step.step.task is not None:
            found.append(step)
        if step.child is not None:
            found.extend(_task_steps(step.child))
    return found


def _loop_bounds(compiled: CompiledWorkflow) -> dict[str, int | None]:
    """How often each top-level step may run: 1 off a loop; on a loop its `max_visits`, else the loop's largest + 1.

    None: a loop with no `max_visits` at all (unbounded).
    """
    steps = {step.id: step for step in compiled.steps}
    reach: dict[str, set[str]] = {}
    for start in steps:
        seen: set[str] = set()
        todo = [target for target, _ in steps[start].edges()]
        while todo:
            node = todo.pop()
            if node in seen or node not in steps:
                continue
            seen.add(node)
            todo.extend(target for target, _ in steps[node].edges())
        reach[start] = seen
    bounds: dict[str, int | None] = {}
    for sid, step in steps.items():
        if sid not in reach[sid]:
            bounds[sid] = 1
            continue
        loop = [other for other in steps.values() if other.id in reach[sid] and sid in reach[other.id]]
        declared = [other.step.max_visits for other in loop if other.step.max_visits is not None]
        # A loop's other steps run once more than its bounded step: the visit that finds the bound reached.
        bounds[sid] = step.step.max_visits or (max(declared) + 1 if declared else None)
    return bounds


def _worst_calls(
    compiled: CompiledWorkflow, observed: Mapping[str, Sequence[ModelCall]], notes: list[str]
) -> dict[str, int]:
    """How many calls each template of the workflow makes at worst (at least as many as the traced run made)."""
    bounds = _loop_bounds(compiled)
    owner = {}
    for step in compiled.steps:
        owner[step.id] = step.id
        for member in step.members:
            owner[member.id] = step.id
    worst: dict[str, int] = {}
    for step in _task_steps(compiled):
        template = step.step.task
        assert template is not None
        seen = len(observed.get(template, ()))
        bound = bounds.get(owner.get(step.id, ""), 1)
        if bound is None:
            notes.append(f"step {step.id!r} is on a loop with no `max_visits`: counted as often as the dry run took it")
            bound = max(1, seen)
        items = 1
        if step.for_each is not None:
            items = max(1, seen)
            given = all(ref.parts and ref.parts[0] in compiled.run_inputs for ref in step.for_each.paths)
            origin = "the run inputs' list" if given else "the list a synthetic answer gave: an assumption"
            notes.append(f"step {step.id!r}: for_each counted over {seen} items ({origin})")
        worst[template] = worst.get(template, 0) + bound * items
    for template, calls in observed.items():
        worst[template] = max(worst.get(template, 0), len(calls))
    return worst


def _unreached_call(
    host: EstimateHost,
    trace: _Trace,
    compiled: CompiledWorkflow,
    template: str,
    state: Any,
    options: CallOptions,
    notes: list[str],
) -> ModelCall | None:
    """The call of a step the traced run did not reach: rendered from the traced state, else without its inputs."""
    step = next(s for s in _task_steps(compiled) if s.step.task == template)
    asked = options.over(step.options).over(compiled.options)
    env = {"state": state}
    try:
        inputs = {key: value.render(env) for key, value in step.inputs.items()}
        return _task_calls(host, trace, template, inputs, asked)[-1]
    except Exception:
        pass
    try:
        task = host.templates.compiled(template)
        resolved = resolve_options(_options(asked), task, host.handler, CacheConfig(enabled=False))
    except Exception as exc:
        notes.append(f"template {template!r} (step {step.id!r}) not estimated: {exc}")
        return None
    notes.append(f"step {step.id!r} was not reached on synthetic answers: its prompt is counted without its inputs")
    return ModelCall(
        template=template,
        model=resolved.model,
        system=task.template.system or None,
        prompt=task.template.instructions,
        output_cls=task.output_cls,
        mode=task.output_mode,
        retries=resolved.retries,
        limits=resolved.limits,
        fallbacks=resolved.fallbacks,
        repair=resolved.repair,
        model_settings=resolved.model_settings,
        tools=task.tools,
    )


# -- adding up -------------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class _Row:
    template: str
    model: str
    requests: Figures
    input_tokens: Figures
    output_tokens: Figures
    cost: Figures | None
    priced: bool
    notes: tuple[str, ...]


def _rows(measured: Sequence[Measured]) -> list[_Row]:
    return [
        _Row(
            template=m.template,
            model=m.model,
            requests=m.requests,
            input_tokens=m.input_tokens,
            output_tokens=m.output_tokens,
            cost=m.cost,
            priced=m.priced,
            notes=m.notes,
        )
        for m in measured
    ]


def _bounded(measured_calls: Sequence[Sequence[Measured]], worst_calls: int, *, expected: bool) -> list[_Row]:
    """One template's calls: the expected figures summed, the worst the largest call's times `worst_calls`.

    `expected` False: the traced run did not make these calls (another branch): they count at worst only.
    """
    by_model: dict[str, list[Measured]] = {}
    for call in measured_calls:
        for m in call:
            by_model.setdefault(m.model, []).append(m)
    rows = []
    for model, ms in by_model.items():
        largest = max(ms, key=lambda m: m.input_tokens.worst)
        share = 1 if expected else 0
        costs = [m.cost for m in ms if m.cost is not None]
        cost = None
        if len(costs) == len(ms):
            cost = Figures(
                expected=share * sum(c.expected for c in costs), worst=max(c.worst for c in costs) * worst_calls
            )
        notes = tuple(dict.fromkeys(n for m in ms for n in m.notes if not n.startswith("price unknown")))
        rows.append(
            _Row(
                template=largest.template,
                model=model,
                requests=_sum_bounded([m.requests for m in ms], largest.requests, share, worst_calls),
                input_tokens=_sum_bounded([m.input_tokens for m in ms], largest.input_tokens, share, worst_calls),
                output_tokens=_sum_bounded([m.output_tokens for m in ms], largest.output_tokens, share, worst_calls),
                cost=cost,
                priced=cost is not None,
                notes=(*notes, f"worst case: {worst_calls} calls") if worst_calls > 1 else notes,
            )
        )
    return rows


def _sum_bounded(each: Sequence[Figures], largest: Figures, share: int, worst_calls: int) -> Figures:
    return Figures(expected=share * sum(f.expected for f in each), worst=largest.worst * worst_calls)


def _merge(rows: Sequence[_Row]) -> list[TemplateEstimate]:
    """The rows of one template and model added up, in the order they first appear."""
    merged: dict[tuple[str, str], TemplateEstimate] = {}
    for row in rows:
        key = (row.template, row.model)
        notes = tuple(n for n in row.notes if not n.startswith("price unknown"))
        found = merged.get(key)
        if found is None:
            merged[key] = TemplateEstimate(
                template=row.template,
                model=row.model,
                requests=row.requests,
                input_tokens=row.input_tokens,
                output_tokens=row.output_tokens,
                cost=row.cost,
                notes=notes,
            )
            continue
        merged[key] = attrs.evolve(
            found,
            requests=found.requests + row.requests,
            input_tokens=found.input_tokens + row.input_tokens,
            output_tokens=found.output_tokens + row.output_tokens,
            cost=found.cost + row.cost if found.cost is not None and row.cost is not None else None,
            notes=tuple(dict.fromkeys((*found.notes, *notes))),
        )
    return list(merged.values())


def _estimate(
    name: str,
    kind: str,
    rows: Sequence[_Row],
    *,
    provider_batch: bool,
    notes: Sequence[str] = (),
    items: Sequence[ItemEstimate] = (),
) -> Estimate:
    merged = _merge(rows)
    total = Totals(
        requests=sum((row.requests for row in merged), ZERO),
        input_tokens=sum((row.input_tokens for row in merged), ZERO),
        output_tokens=sum((row.output_tokens for row in merged), ZERO),
        cost=add_costs(row.cost for row in merged),
    )
    unknown = tuple(dict.fromkeys(row.model for row in merged if row.cost is None))
    return Estimate(
        name=name,
        kind=kind,
        rows=tuple(merged),
        total=total,
        unknown_prices=unknown,
        items=tuple(items),
        provider_batch=provider_batch,
        notes=tuple(dict.fromkeys(notes)),
    )


# -- a batch ---------------------------------------------------------------------------------------------


def estimate_items(
    host: EstimateHost,
    name: str,
    items: Sequence[Mapping[str, Any]],
    options: CallOptions,
    *,
    provider_batch: bool = False,
    id_field: str = "id",
) -> Estimate:
    """What a batch of template or workflow `name` over `items` would take: in total, and per item (`items`).

    An item's `id_field` value names it (else its position); it is an input only when the template or
    workflow declares it. `items[i].worst_cost` is what `--max-cost` admission counts for item i (None:
    a price is unknown). Raises as `estimate_task` / `estimate_workflow` for the first item that would fail.
    """
    is_workflow = name in host.workflows.names() and name not in host.templates.names()
    meter = Meter(host.handler, provider_batch=provider_batch)
    accepted = _accepted(host, name, is_workflow)
    rows: list[_Row] = []
    notes: list[str] = []
    per_item: list[ItemEstimate] = []
    trace = _trace(host)
    for index, item in enumerate(items):
        inputs = {k: v for k, v in item.items() if k != id_field or k in accepted}
        if is_workflow:
            found, said = _workflow_rows(host, meter, name, inputs, options)
            notes.extend(said)
        else:
            calls = _task_calls(host, trace, name, inputs, options)
            found = _rows([m for call in calls for m in meter.measure(call, _declared(host, call.template))])
        rows.extend(found)
        costs = [row.cost for row in found]
        known = None if any(cost is None for cost in costs) else add_costs(costs)
        per_item.append(
            ItemEstimate(
                id=str(item.get(id_field, index)),
                index=index,
                expected_cost=known.expected if known is not None else None,
                worst_cost=known.worst if known is not None else None,
                input_tokens=sum((row.input_tokens for row in found), ZERO),
                output_tokens=sum((row.output_tokens for row in found), ZERO),
            )
        )
    kind = "workflow" if is_workflow else "template"
    return _estimate(name, kind, rows, provider_batch=provider_batch, notes=notes, items=per_item)


def _accepted(host: EstimateHost, name: str, is_workflow: bool) -> frozenset[str]:
    """The inputs the template or workflow declares (an item's id goes in only when it is one of them)."""
    try:
        if is_workflow:
            return frozenset(host.workflows.compiled(name).run_inputs)
        return frozenset(host.templates.compiled(name).template.params)
    except Exception:  # an unknown name: the first item's trace raises the run's own error
        return frozenset()
