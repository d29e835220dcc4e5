"""Registration checks: a `Workflow` against the registered tasks, schemas and workflows, before any call.

`check_workflow` finds every problem (for `atomtask check`) and, when there is none, returns the
`CompiledWorkflow` the runner takes; `compile_workflow` raises the first problem instead. The checks,
each with its code (the `WorkflowError` classes of `atomtask.errors`):

- E110 the declaration's shape (duplicate step ids, the state's fields, model strings and settings);
- E111 task, sub-workflow and state schema names exist ("did you mean");
- E112 expressions and placeholders stay inside the expression language;
- E113 every `state.x.y` path exists in the state;
- E114 input types fit the parameters, output types fit the state fields, operators fit their operands;
- E115 every required parameter is bound, no unknown one is, every output field exists;
- E116 data flow: a step reads only fields written on every path to it, run inputs, or fields with defaults;
- E117 route targets exist, every step is reachable, no route entry is dead;
- E118 every cycle has `max_visits`; E119 no two steps of a `parallel` group write the same field;
- E120 the `migrations` chain to the current `version`, and what each migration names (`_migration_checks`);
- W110-W112 (warnings, only for a valid workflow): values nothing uses (`_usage_checks`).

The checks of one step are `_step_checks`. The control flow is checked here over the graph the steps
form: after a step control goes to its route targets (or the next step), along an `ok` edge (its
writes done), a `skip` edge (`when` was false) or a `fail` edge (`on_failure: continue` or `{to:
...}`). The data-flow check is a must-analysis over that graph: the fields written on *every* path to
a step; reading a field outside that set, with no default and not a run input, is an error, reported
with a path on which it is unwritten.

A state field may say `redact: true` (a boolean, E110 otherwise); a named state class says it with
`Field(json_schema_extra={"redact": True})`. The compiled workflow lists those fields (`redacted_fields`).
The run inputs are the fields no step writes, and those declared `input: true` (the same two ways):
the caller gives their first value, and steps may write them after (`current = step(current)`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs
from atomtask.errors import (
    UsageError,
    WorkflowControlError,
    WorkflowCycleError,
    WorkflowDataFlowError,
    WorkflowDeclarationError,
    WorkflowError,
    WorkflowNameError,
    WorkflowParallelError,
    did_you_mean,
    near_names,
)
from atomtask.loading._providers import check_model_settings, check_model_string
from atomtask.loading._template_registry import TemplateRegistry
from atomtask.schemas._declarations import SchemaDef
from atomtask.schemas._fields import build_models
from atomtask.schemas._model_registry import ModelRegistry
from atomtask.system._workflows import END, Workflow
from atomtask.workflows._compiled import CompiledStep, CompiledWorkflow, EdgeKind, Read
from atomtask.workflows._context import Problems, StepContext
from atomtask.workflows._migration_checks import check_migrations
from atomtask.workflows._step_checks import check_input_types, compile_step
from atomtask.workflows._usage_checks import WorkflowWarning, usage_warnings
from pydantic import BaseModel, ValidationError

__all__ = ["WorkflowCheck", "check_flow", "check_workflow", "compile_workflow"]

_Graph = dict[str, list[tuple[str, EdgeKind]]]


def check_flow(
    problems: Problems, steps: tuple[CompiledStep, ...], readable: frozenset[str], fields: Iterable[str]
) -> dict[str, frozenset[str]]:
    """Run every flow check; returns, per step id, the fields written by steps on every path to it.

    `readable` are the fields that may always be read (run inputs and fields with a default).
    """
    by_id = {step.id: step for step in steps}
    known_before = len(problems.errors)
    graph = _graph(problems, steps, by_id)
    reachable = _reachable(steps[0].id, graph)
    # A route to an unknown step is likely meant for the step that it leaves unreachable: say it once.
    targets_ok = not any(e.code == WorkflowControlError.code for e in problems.errors[known_before:])
    for step in steps:
        if step.id not in reachable and targets_ok:
            problems.add(
                WorkflowControlError,
                f"Step {step.id!r} is never reached: no route leads to it, and the step before it always goes "
                "elsewhere. Route to it, or remove it.",
                step.path,
                step=step.id,
            )
    _check_cycles(problems, by_id, graph, reachable)
    for step in steps:
        _check_parallel(problems, step)
    written = _must_write(steps[0].id, by_id, graph, reachable)
    state_fields = set(fields)
    for step in steps:
        if step.id in reachable:
            _check_reads(problems, step, written, readable, state_fields, graph, by_id)
    return written


def _graph(problems: Problems, steps: tuple[CompiledStep, ...], by_id: Mapping[str, CompiledStep]) -> _Graph:
    members = {m.id: step.id for step in steps for m in step.members}
    graph: _Graph = {}
    for step in steps:
        declared = step.step.route or []
        for index, route in enumerate(step.routes):
            if index > 0 and declared[index - 1].when is None:
                problems.add(
                    WorkflowControlError,
                    f"Route {index + 1} of step {step.id!r} is never taken: route "
                    f"{index} before it has no `when`. Remove it or give route {index} a `when`.",
                    route.where,
                    step=step.id,
                )
                break
        targets = [(r.to, f"{r.where}.to") for r in step.routes]
        if step.step.on_failure.to is not None:
            targets.append((step.step.on_failure.to, f"{step.path}.on_failure.to"))
        if step.step.on_max_visits.to is not None:
            targets.append((step.step.on_max_visits.to, f"{step.path}.on_max_visits.to"))
        bad = {target for target, where in targets if not _known_target(problems, step, target, where, by_id, members)}
        graph[step.id] = [(t, kind) for t, kind in step.edges() if t not in bad and t != END]
    return graph


def _known_target(
    problems: Problems,
    step: CompiledStep,
    target: str,
    where: str,
    by_id: Mapping[str, CompiledStep],
    members: Mapping[str, str],
) -> bool:
    if target == END or target in by_id:
        return True
    if target in members:
        fix = f" Step {target!r} is inside the `parallel` group {members[target]!r}; go to the group."
    else:
        fix = f"{did_you_mean(target, [*by_id, END])} Steps: {', '.join(by_id)} (or `{END}`)."
    problems.add(
        WorkflowControlError,
        f"Step {step.id!r} goes to {target!r}, which is not a step of the workflow.{fix}",
        where,
        step=step.id,
        suggestions=near_names(target, [*by_id, END]),
    )
    return False


def _reachable(first: str, graph: _Graph) -> set[str]:
    seen = {first}
    todo = [first]
    while todo:
        for target, _ in graph.get(todo.pop(), []):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def _check_cycles(problems: Problems, by_id: Mapping[str, CompiledStep], graph: _Graph, reachable: set[str]) -> None:
    order = {step_id: index for index, step_id in enumerate(by_id)}
    for component in _components(graph, reachable):
        looping = len(component) > 1 or any(t == component[0] for t, _ in graph[component[0]])
        if not looping:
            continue
        for step_id in component:
            escape = by_id[step_id].step.on_max_visits.to
            if by_id[step_id].step.max_visits is not None and escape in component:
                problems.add(
                    WorkflowCycleError,
                    f"Step {step_id!r} goes on at {escape!r} when it reaches its `max_visits`, but {escape!r} is "
                    f"inside the loop the bound ends ({' -> '.join(_cycle_through(step_id, set(component), graph))}),"
                    " so the run would go round without end. Go to a step after the loop, or use `end` or `fail`.",
                    f"{by_id[step_id].path}.on_max_visits.to",
                    step=step_id,
                )
        if any(by_id[s].step.max_visits is not None for s in component):
            continue
        first = min(component, key=order.__getitem__)
        cycle = _cycle_through(first, set(component), graph)
        location = problems.workflow.location
        bound = (
            "(max_visits N)" if location is not None and (location.file or "").endswith(".sexp") else "max_visits: N"
        )
        problems.add(
            WorkflowCycleError,
            f"Steps {' -> '.join(cycle)} form a cycle with no bound. Add `{bound}` to one of them (e.g. {first!r}).",
            by_id[first].path,
            step=first,
        )


def _components(graph: _Graph, nodes: set[str]) -> list[list[str]]:
    """Strongly connected components (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter([t for t, _ in graph.get(root, []) if t in nodes]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter([t for t, _ in graph.get(child, []) if t in nodes])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                found.append(component)
    return found


def _cycle_through(first: str, component: set[str], graph: _Graph) -> list[str]:
    """A shortest cycle from `first` back to it inside its component."""
    parents: dict[str, str] = {}
    queue = deque([first])
    while queue:
        node = queue.popleft()
        for target, _ in graph[node]:
            if target == first:
                path = [node]
                while path[-1] != first:
                    path.append(parents[path[-1]])
                return [*reversed(path), first]
            if target in component and target not in parents:
                parents[target] = node
                queue.append(target)
    return [first, first]


def _check_parallel(problems: Problems, group: CompiledStep) -> None:
    writers: dict[str, list[str]] = {}
    for member in group.members:
        for field in sorted(member.writes):
            writers.setdefault(field, []).append(member.id)
    for field, ids in writers.items():
        if len(ids) > 1:
            problems.add(
                WorkflowParallelError,
                f"Steps {' and '.join(repr(i) for i in ids)} of the `parallel` group "
                f"{group.id!r} both write `state.{field}`; which one wins would depend on timing. Write "
                "separate fields and combine them in a later step.",
                f"{group.path}.parallel",
                step=group.id,
            )


def _must_write(
    first: str, by_id: Mapping[str, CompiledStep], graph: _Graph, reachable: set[str]
) -> dict[str, frozenset[str]]:
    """For each reachable step, the fields written by steps on every path from the start to it."""
    universe = frozenset().union(*(step.writes for step in by_id.values()))
    written: dict[str, frozenset[str]] = {s: universe for s in reachable}
    written[first] = frozenset()
    changed = True
    while changed:
        changed = False
        incoming: dict[str, list[frozenset[str]]] = {s: [] for s in reachable}
        for source in reachable:
            for target, kind in graph[source]:
                carried = written[source] | (by_id[source].sure_writes if kind == "ok" else frozenset())
                incoming[target].append(carried)
        for node in reachable:
            if node == first or not incoming[node]:
                continue
            meet = frozenset.intersection(*incoming[node])
            if meet != written[node]:
                written[node] = meet
                changed = True
    return written


def _check_reads(
    problems: Problems,
    step: CompiledStep,
    written: Mapping[str, frozenset[str]],
    readable: frozenset[str],
    fields: set[str],
    graph: _Graph,
    by_id: Mapping[str, CompiledStep],
) -> None:
    before = written[step.id] | readable
    phases: list[tuple[CompiledStep, Iterable[Read], frozenset[str]]] = []
    for reader in (step, *step.members):  # members run on the state as it was before their group
        phases += [(reader, reader.reads_entry, before), (reader, reader.reads_run, before)]
        # `set` assigns in order: each expression sees the outputs and the fields set before it.
        done = before | reader.output_writes
        for field, _ in reader.sets:
            where = f"{reader.path}.set.{field}"
            phases.append((reader, [r for r in reader.reads_set if r.where == where], done))
            done = done | {field}
    # Routes are also followed when `when` skipped the step or `on_failure: continue` went on past it.
    partial = step.step.when is not None or step.step.on_failure.action == "continue"
    phases.append((step, step.reads_route, before if partial else before | step.sure_writes))
    for reader, reads, available in phases:
        for read in reads:
            if read.field in fields and read.field not in available:
                path = _unwritten_path(read.field, step.id, graph, by_id)
                inside = f" (in the `parallel` group {step.id!r})" if reader is not step else ""
                problems.add(
                    WorkflowDataFlowError,
                    f"Step {reader.id!r}{inside} reads `{read.ref.text}` but on the path {path} no step has written "
                    f"`state.{read.field}`, and it has no default. Write it on every path before this step, or give "
                    "the field a default.",
                    read.where,
                    step=reader.id,
                    offset=read.ref.offset,
                )


def _unwritten_path(field: str, target: str, graph: _Graph, by_id: Mapping[str, CompiledStep]) -> str:
    """A path from the start to `target` along which no step writes `field`, as text."""
    first = next(iter(by_id))
    parents: dict[str, tuple[str, EdgeKind]] = {}
    queue = deque([first])
    seen = {first}
    while queue and target not in parents and target != first:
        node = queue.popleft()
        for nxt, kind in graph[node]:
            if kind == "ok" and field in by_id[node].sure_writes:
                continue
            if nxt not in seen:
                seen.add(nxt)
                parents[nxt] = (node, kind)
                queue.append(nxt)
    hops: list[str] = [target]
    node = target
    while node in parents:
        node, kind = parents[node]
        note = {"ok": "", "skip": " (skipped)", "fail": " (failed)"}[kind]
        hops.append(node + note)
    return " -> ".join(reversed(hops))


#: Finds a registered workflow's compiled form by name; raises `WorkflowNotFoundError` (E111).
WorkflowResolver = Callable[[str], CompiledWorkflow]


@attrs.frozen(kw_only=True)
class WorkflowCheck:
    """Every problem of one workflow, and its compiled form when there is none."""

    workflow: Workflow
    errors: tuple[WorkflowError, ...]
    compiled: CompiledWorkflow | None
    #: What looks wrong in a valid workflow (W110-W112): values nothing uses. Empty when there are errors.
    warnings: tuple[WorkflowWarning, ...] = ()

    def unwrap(self) -> CompiledWorkflow:
        """The compiled workflow, or raise the first problem (saying how many more there are)."""
        if self.compiled is not None:
            return self.compiled
        first = self.errors[0]
        if len(self.errors) == 1:
            raise first
        more = len(self.errors) - 1
        raise type(first)(
            f"{first.message} (and {more} more problem{'s' if more > 1 else ''}; `atomtask check` lists them all)",
            location=first.location,
            suggestions=first.suggestions,
            workflow=first.workflow,
            step=first.step,
        )


def compile_workflow(
    workflow: Workflow,
    *,
    templates: TemplateRegistry,
    models: ModelRegistry,
    resolve_workflow: WorkflowResolver | None = None,
) -> CompiledWorkflow:
    """Check `workflow` and return its compiled form; raises the first `WorkflowError` found."""
    return check_workflow(workflow, templates=templates, models=models, resolve_workflow=resolve_workflow).unwrap()


def check_workflow(
    workflow: Workflow,
    *,
    templates: TemplateRegistry,
    models: ModelRegistry,
    resolve_workflow: WorkflowResolver | None = None,
) -> WorkflowCheck:
    """Find every problem of `workflow` (in the order found); compile it when there is none.

    `resolve_workflow` finds sub-workflows (a `WorkflowRegistry` passes its own `compiled`).
    """
    problems = Problems(workflow)
    _check_ids(problems, workflow)
    if workflow.model is not None:
        try:
            check_model_string(workflow.model, where=f"workflow {workflow.name!r}", aliases=templates.model_aliases)
        except UsageError as exc:
            problems.add(WorkflowDeclarationError, exc.message, "model")
    if workflow.model_settings is not None:
        try:
            check_model_settings(workflow.model_settings, where=f"workflow {workflow.name!r}")
        except UsageError as exc:
            problems.add(WorkflowDeclarationError, exc.message, "model_settings")
    state_cls = _state_class(problems, workflow, models)
    if state_cls is None:
        return WorkflowCheck(workflow=workflow, errors=tuple(problems.errors), compiled=None)
    ctx = StepContext(
        problems=problems, state_cls=state_cls, templates=templates, models=models, resolve_workflow=resolve_workflow
    )
    ids = [step.id for step in workflow.steps] + [END]
    steps = tuple(
        compile_step(ctx, step, f"steps.{index}", ids[index + 1]) for index, step in enumerate(workflow.steps)
    )
    index: dict[str, CompiledStep] = {}
    for step in steps:
        index[step.id] = step
        index.update((member.id, member) for member in step.members)
    written_by_steps = frozenset().union(*(step.writes for step in steps))
    fields = state_cls.model_fields
    declared_inputs = _declared_inputs(problems, workflow, state_cls)
    run_inputs = tuple(name for name in fields if name not in written_by_steps or name in declared_inputs)
    required = tuple(name for name in run_inputs if fields[name].is_required())
    readable = frozenset(run_inputs) | {name for name, info in fields.items() if not info.is_required()}
    written = check_flow(problems, steps, readable, fields)
    for step in steps:
        if step.id in written:
            check_input_types(ctx, step, written[step.id])
    migrations = check_migrations(problems, workflow, state_cls, models)
    redacted = _redacted(problems, workflow, state_cls)
    if problems:
        return WorkflowCheck(workflow=workflow, errors=tuple(problems.errors), compiled=None)
    compiled = CompiledWorkflow(
        workflow=workflow,
        state_cls=state_cls,
        steps=steps,
        run_inputs=run_inputs,
        required_inputs=required,
        index=index,
        migrations=migrations,
        redacted_fields=redacted,
    )
    return WorkflowCheck(workflow=workflow, errors=(), compiled=compiled, warnings=tuple(usage_warnings(compiled)))


def _check_ids(problems: Problems, workflow: Workflow) -> None:
    seen: dict[str, str] = {}
    for path, step in workflow.all_steps():
        if step.id in seen:
            problems.add(
                WorkflowDeclarationError,
                f"Step id {step.id!r} is used twice in workflow {workflow.name!r} (first at "
                f"{workflow.location_of(seen[step.id]) or seen[step.id]}); step ids are unique, group members "
                "included.",
                f"{path}.id",
                step=step.id,
            )
        else:
            seen[step.id] = path


def _state_class(problems: Problems, workflow: Workflow, models: ModelRegistry) -> type[BaseModel] | None:
    state = workflow.state
    if state.schema_ is not None:
        try:
            return models.get(state.schema_)
        except UsageError as exc:
            problems.add(WorkflowNameError, f"The state of workflow {workflow.name!r}: {exc.message}", "state.schema",
                         suggestions=exc.suggestions)  # fmt: skip
            return None
    definition: dict[str, Any] = {
        "name": _class_name(workflow.name) + "State",
        "description": state.description or f"The state of workflow {workflow.name!r}.",
        "fields": [_schema_field(f) for f in state.fields or []],
    }
    try:
        schema = SchemaDef.model_validate(definition)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = [str(p) for p in error["loc"]]
        where = "state." + ".".join(loc)
        problems.add(WorkflowDeclarationError, f"Invalid state of workflow {workflow.name!r}: `{'.'.join(loc[2:])}`"
                     f" of field {_field_label(state.fields, loc)}: {error['msg']}.", where)  # fmt: skip
        return None
    schema.location = workflow.location_of("state")
    for number, field in enumerate(schema.fields):
        field.location = workflow.location_of(f"state.fields.{number}.type")
    try:
        known = {name: models.get(name) for name in models.names()}
        return build_models([schema], known=known)[schema.name]
    except UsageError as exc:
        message = exc.message.replace(f" of schema {schema.name!r}", "").replace(f" in schema {schema.name!r}", "")
        problems.add(WorkflowDeclarationError, f"Invalid state of workflow {workflow.name!r}: {message}", "state")
        if exc.location is not None:
            problems.errors[-1] = problems.errors[-1].__class__(
                problems.errors[-1].message, location=exc.location, workflow=workflow.name, suggestions=exc.suggestions
            )
        return None


#: The options of a state field that are the workflow's, not the schema's.
_WORKFLOW_FIELD_OPTIONS = ("redact", "input")


def _schema_field(field: Any) -> Any:
    """A state field as the schemas layer takes it: `redact` and `input` are the workflow's options."""
    if not isinstance(field, dict):
        return field
    return {k: v for k, v in field.items() if k not in _WORKFLOW_FIELD_OPTIONS}


def _flagged(problems: Problems, workflow: Workflow, state_cls: type[BaseModel], option: str) -> frozenset[str]:
    """The state fields declared `option: true` (a non-boolean value is noted, E110).

    A named state class says it with `Field(json_schema_extra={option: True})`.
    """
    found: set[str] = set()
    for number, field in enumerate(workflow.state.fields or []):
        if not isinstance(field, dict) or option not in field:
            continue
        if not isinstance(field[option], bool):
            problems.add(
                WorkflowDeclarationError,
                f"`{option}` of state field {field.get('name')!r} in workflow {workflow.name!r} is true or false, "
                f"not {field[option]!r}.",
                f"state.fields.{number}.{option}",
            )
        elif field[option]:
            found.add(str(field.get("name")))
    for name, info in state_cls.model_fields.items():
        extra = info.json_schema_extra
        if isinstance(extra, dict) and extra.get(option) is True:
            found.add(name)
    return frozenset(found)


def _redacted(problems: Problems, workflow: Workflow, state_cls: type[BaseModel]) -> frozenset[str]:
    """The state fields declared `redact: true`: never stored in clear, never logged."""
    return _flagged(problems, workflow, state_cls, "redact")


def _declared_inputs(problems: Problems, workflow: Workflow, state_cls: type[BaseModel]) -> frozenset[str]:
    """The state fields declared `input: true`: run inputs even when steps write them (`current = step(current)`)."""
    return _flagged(problems, workflow, state_cls, "input")


def _field_label(fields: list[dict[str, Any]] | None, loc: list[str]) -> str:
    if len(loc) >= 2 and loc[0] == "fields" and loc[1].isdigit() and fields is not None:
        raw = fields[int(loc[1])]
        if isinstance(raw, dict) and isinstance(raw.get("name"), str):
            return repr(raw["name"])
        return f"#{int(loc[1]) + 1}"
    return "?"


def _class_name(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.replace("-", "_").split("_") if part) or "Workflow"
