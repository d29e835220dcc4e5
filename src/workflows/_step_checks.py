"""Checking one step of a workflow: its task, sub-workflow or function, inputs, outputs, expressions and paths.

`compile_step` resolves what a step runs and parses everything it declares, noting each problem in
the workflow's `Problems` and going on (so `atomtask check` reports them all). What a step writes is
checked against the state: an output must name a field the task (or sub-workflow) answers with (E115),
every target of `outputs`, `output`, `collect` and `set` must be a state field (E113), and each value's
type must fit its field's (E114). An approval step's `output` takes its decision: a `bool` field gets
`approved`, a field of a class like `ApprovalDecision` all of it. The checks that need the whole
workflow (routes, reachability, cycles, data flow) are in `_checks`; those that need to know what has
been written before the step (input types, reads through null) are `check_input_types`.

A code step (`call:`) is checked as a task step is, its function's parameter annotations standing for
the task's parameters and its return annotation for the output schema (`_calls.read_call`); what only
a code step can get wrong has its own codes (E121-E124).
"""

from __future__ import annotations

import contextlib
from typing import Any

from atomtask.errors import (
    ProblemReported,
    UsageError,
    WorkflowBindingError,
    WorkflowCallDeclarationError,
    WorkflowCycleError,
    WorkflowDeclarationError,
    WorkflowError,
    WorkflowExpressionError,
    WorkflowNameError,
    WorkflowPathError,
    WorkflowTypeError,
    did_you_mean,
    near_names,
)
from atomtask.loading._providers import check_model_settings, check_model_string
from atomtask.schemas import _type_strings as type_strings
from atomtask.system._workflows import END, ApprovalDecision, Step
from atomtask.workflows._calls import CompiledCall, read_call
from atomtask.workflows._compiled import CompiledRoute, CompiledStep, Read, Value, parse_value
from atomtask.workflows._context import StepContext, check_null_reads, expression, label, typed
from atomtask.workflows._expressions import Expression, not_null_when
from atomtask.workflows._types import a_describe, compatible, describe, item_type, mismatch, strip_none, walk

__all__ = ["check_approval_output", "check_input_types", "check_outputs", "check_sets", "compile_step"]


def _state_field(ctx: StepContext, step: Step, field: str, where: str, key: str) -> Any:
    fields = ctx.state_cls.model_fields
    if field in fields:
        return fields[field].annotation
    ctx.problems.add(
        WorkflowPathError,
        f"Step {step.id!r} writes `state.{field}` ({key}), but the state has no "
        f"field {field!r}.{did_you_mean(field, fields)} State fields: {', '.join(fields)}.",
        where,
        step=step.id,
        suggestions=[f"state.{n}" for n in near_names(field, fields)],
    )
    return None


def _runs(step: Step) -> str:
    """What a step runs, for a message: `task 'x'`, `workflow 'y'` or `function 'pkg.mod:f'`."""
    if step.task is not None:
        return f"task {step.task!r}"
    return f"workflow {step.workflow!r}" if step.workflow is not None else f"function {step.call!r}"


def check_outputs(
    ctx: StepContext, step: Step, path: str, output_type: Any, item: Any
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    runs = _runs(step)
    found: list[tuple[str, tuple[str, ...]]] = []
    if step.output is not None:
        where = f"{path}.output"
        target = _state_field(ctx, step, step.output, where, "`output`")
        if target is not None:
            found.append((step.output, ()))
            _fit(ctx, step, output_type, target, f"the whole answer of {runs}", step.output, where)
    for field, source in step.outputs.items():
        where = f"{path}.outputs.{field}"
        target = _state_field(ctx, step, field, where, "`outputs`")
        parts = tuple(source.split("."))
        current = output_type
        try:
            for part in parts:
                current = walk(current, part)
        except LookupError:
            names = list(getattr(strip_none(output_type), "model_fields", {}))
            if output_type is Any:
                continue
            if not names:
                fix = f" It answers {describe(output_type)}; store it whole with `output: {field}`."
            else:
                fix = f"{did_you_mean(parts[-1], names)} Output fields: {', '.join(names)}."
            ctx.problems.add(
                WorkflowBindingError,
                f"Step {step.id!r} maps `state.{field}` to {source!r}, which is not an output field of {runs}.{fix}",
                where,
                step=step.id,
                suggestions=near_names(parts[-1], names),
            )
            continue
        if target is not None:
            found.append((field, parts))
            _fit(ctx, step, current, target, f"output field {source!r} of {runs}", field, where)
    if step.collect is not None:
        where = f"{path}.collect"
        target = _state_field(ctx, step, step.collect, where, "`collect`")
        element = item_type(target) if target is not None else None
        if target is not None and element is None:
            ctx.problems.add(
                WorkflowTypeError,
                f"Step {step.id!r} collects its answers into `state.{step.collect}`,"
                f" which is {a_describe(target)}, not a list. Declare it `list[...]`.",
                where,
                step=step.id,
            )
        elif element is not None:
            _fit(ctx, step, output_type, element, f"each answer of {runs}", f"{step.collect}[]", where)
    return tuple(found)


def check_approval_output(
    ctx: StepContext, step: Step, path: str
) -> tuple[Any, tuple[tuple[str, tuple[str, ...]], ...]]:
    """The type an approval step writes (`bool` or `ApprovalDecision`, as its field takes) and its output map."""
    where = f"{path}.output"
    field = step.output or ""
    target = _state_field(ctx, step, field, where, "`output`")
    if target is None:
        return Any, ()
    for decision in (bool, ApprovalDecision):
        if compatible(decision, target):
            return decision, ((field, ()),)
    ctx.problems.add(
        WorkflowTypeError,
        f"Approval step {step.id!r} writes its decision to `state.{field}` ({describe(target)}), which takes "
        "neither `bool` (approved or not) nor an `ApprovalDecision` (approved, note, by, at). Declare the field "
        "`bool`, or of a class with those fields.",
        where,
        step=step.id,
    )
    return Any, ()


def _fit(ctx: StepContext, step: Step, source: Any, target: Any, what: str, field: str, where: str) -> None:
    if not compatible(source, target):
        ctx.problems.add(
            WorkflowTypeError,
            f"Step {step.id!r} stores {what} ({describe(source)}) in "
            f"`state.{field}` ({describe(target)}): the types do not fit. Change the state field's type "
            "or map another field.",
            where,
            step=step.id,
        )


def check_sets(ctx: StepContext, step: Step, path: str) -> tuple[tuple[str, Expression], ...]:
    found: list[tuple[str, Expression]] = []
    for field, text in step.set_.items():
        where = f"{path}.set.{field}"
        target = _state_field(ctx, step, field, where, "`set`")
        expr = expression(ctx, step, text, where, None)
        if expr is None or target is None:
            continue
        found.append((field, expr))
        value_type = typed(ctx, expr, where, step)
        if not compatible(value_type, target):
            ctx.problems.add(
                WorkflowTypeError,
                f"Step {step.id!r} sets `state.{field}` ({describe(target)}) to "
                f"{text!r}, which is {a_describe(value_type)}{mismatch(value_type, target)}.",
                where,
                step=step.id,
            )
    return tuple(found)


def compile_step(ctx: StepContext, step: Step, path: str, fallthrough: str) -> CompiledStep:
    """Check one step (a group with its members) and return its compiled form, noting every problem."""
    if step.call is not None:
        _check_call_shape(ctx, step, path)
    declared_models = [(step.model, f"{path}.model")] if step.model else []
    declared_models += [(m, f"{path}.on_failure.retry_with") for m in step.on_failure.retry_with]
    for model, where in declared_models:
        try:
            where_model = f"step {step.id!r} of workflow {ctx.name!r}"
            check_model_string(model, where=where_model, aliases=ctx.templates.model_aliases)
        except UsageError as exc:
            ctx.problems.add(WorkflowDeclarationError, exc.message, where, step=step.id)
    if step.model_settings is not None:
        try:
            check_model_settings(step.model_settings, where=f"step {step.id!r} of workflow {ctx.name!r}")
        except UsageError as exc:
            ctx.problems.add(WorkflowDeclarationError, exc.message, f"{path}.model_settings", step=step.id)
    when = expression(ctx, step, step.when, f"{path}.when", None, condition=True)
    routes = tuple(
        CompiledRoute(
            when=expression(ctx, step, r.when, f"{path}.route.{i}.when", None, condition=True),
            to=r.to,
            where=f"{path}.route.{i}",
        )
        for i, r in enumerate(step.route or [])
    )
    common: dict[str, Any] = {
        "step": step,
        "path": path,
        "when": when,
        "routes": routes,
        "fallthrough": fallthrough,
        "reads_entry": _reads(when, f"{path}.when"),
        "reads_route": tuple(r for route in routes for r in _reads(route.when, f"{route.where}.when")),
    }
    if step.parallel is not None:
        members = tuple(compile_step(ctx, m, f"{path}.parallel.{i}", END) for i, m in enumerate(step.parallel))
        return CompiledStep(members=members, **common)
    if step.kind == "approval":
        return _approval(ctx, step, path, common)
    if step.kind == "fail":
        message = _message(ctx, step, step.fail.message if step.fail is not None else None, f"{path}.fail.message")
        reads = _value_reads(message, f"{path}.fail.message") if message is not None else ()
        return CompiledStep(message=message, reads_run=reads, **common)
    if step.kind == "set":
        sets = check_sets(ctx, step, path)
        return CompiledStep(
            sets=sets, reads_set=tuple(r for field, expr in sets for r in _reads(expr, f"{path}.set.{field}")), **common
        )
    call: CompiledCall | None = None
    if step.kind == "call":
        call, params, output_type = _call_target(ctx, step, path)
        task = child = None
    else:
        task, child, params, output_type = _target(ctx, step, path)
    for_each, item = _for_each(ctx, step, path)
    inputs = _inputs(ctx, step, path, params, item)
    output_map = check_outputs(ctx, step, path, output_type, item)
    sets = check_sets(ctx, step, path)
    reads_run = tuple(r for name, value in inputs.items() for r in _value_reads(value, f"{path}.inputs.{name}"))
    return CompiledStep(
        task=task,
        child=child,
        call=call,
        param_types={name: annotation for name, (annotation, _) in (params or {}).items()},
        output_type=output_type,
        item_type=item,
        inputs=inputs,
        for_each=for_each,
        sets=sets,
        output_map=output_map,
        reads_run=_reads(for_each, f"{path}.for_each") + reads_run,
        reads_set=tuple(r for field, expr in sets for r in _reads(expr, f"{path}.set.{field}")),
        **common,
    )


def _approval(ctx: StepContext, step: Step, path: str, common: dict[str, Any]) -> CompiledStep:
    """An approval step: its message (text with placeholders, like an input) and the field its decision goes to."""
    where = f"{path}.message"
    message = _message(ctx, step, step.message, where)
    output_type, output_map = check_approval_output(ctx, step, path)
    sets = check_sets(ctx, step, path)
    return CompiledStep(
        message=message,
        output_type=output_type,
        output_map=output_map,
        sets=sets,
        reads_run=_value_reads(message, where) if message is not None else (),
        reads_set=tuple(r for field, expr in sets for r in _reads(expr, f"{path}.set.{field}")),
        **common,
    )


def _message(ctx: StepContext, step: Step, text: str | None, where: str) -> Value | None:
    """A step's message (an approval's, a `fail`'s): text with `{{state.x}}` placeholders, checked like an input."""
    if text is None:
        return None
    try:
        message = parse_value(text, roots=("state",))
    except WorkflowExpressionError as exc:
        ctx.problems.adopt(exc, where, step=step.id, prefix=f"Step {step.id!r}, `{where.rsplit('.', 1)[-1]}`: ")
        return None
    for ref in message.all_refs():
        with contextlib.suppress(ProblemReported):
            ctx.path_type(ref, None, where, step.id)
    return message


def _target(ctx: StepContext, step: Step, path: str) -> tuple[Any, Any, dict[str, tuple[Any, bool]] | None, Any]:
    """The task or sub-workflow, its parameters (`name -> (annotation, required)`) and its answer's type."""
    if step.task is not None:
        try:
            compiled = ctx.templates.compiled(step.task)
        except UsageError as exc:
            ctx.problems.add(
                WorkflowNameError,
                f"Step {step.id!r} runs task {step.task!r}, which is not registered."
                f"{did_you_mean(step.task, ctx.templates.names())} Register or load the template first.",
                f"{path}.task",
                step=step.id,
                suggestions=exc.suggestions,
            )
            return None, None, None, Any
        params = {name: (_param_type(ctx, spec.type), spec.required) for name, spec in compiled.template.params.items()}
        return compiled, None, params, compiled.output_cls or str
    name = step.workflow or ""
    if name == ctx.name:
        ctx.problems.add(
            WorkflowCycleError,
            f"Step {step.id!r} runs workflow {name!r} inside itself, without end. Use a route back to a step "
            "(with `max_visits`) to repeat.",
            f"{path}.workflow",
            step=step.id,
        )
        return None, None, None, Any
    try:
        if ctx.resolve_workflow is None:
            raise WorkflowNameError(f"No workflow named {name!r}: no workflow registry was given.")
        child = ctx.resolve_workflow(name)
    except WorkflowError as exc:
        ctx.problems.add(
            WorkflowNameError,
            f"Step {step.id!r}: {exc.message}",
            f"{path}.workflow",
            step=step.id,
            suggestions=exc.suggestions,
        )
        return None, None, None, Any
    fields = child.state_cls.model_fields
    params = {n: (fields[n].annotation, n in child.required_inputs) for n in child.run_inputs}
    return None, child, params, child.state_cls


#: The keys that only apply to a step that calls a model.
_MODEL_KEYS = ("model", "model_settings", "repair", "limits")


def _check_call_shape(ctx: StepContext, step: Step, path: str) -> None:
    """A code step runs its function and nothing else, and takes no key that only a model call has (E121)."""
    beside = [key for key in ("task", "workflow", "parallel") if getattr(step, key) is not None]
    if beside:
        ctx.problems.add(
            WorkflowCallDeclarationError,
            f"Step {step.id!r} has `call` and `{beside[0]}`; a step runs one thing: a function (`call`), a task, a "
            "sub-workflow or a `parallel` group. Keep one, or make two steps.",
            f"{path}.call",
            step=step.id,
        )
    for key in _MODEL_KEYS:
        if getattr(step, key) is not None:
            ctx.problems.add(
                WorkflowCallDeclarationError,
                f"Step {step.id!r} calls a function, which calls no model: `{key}` applies only to a step that runs "
                "a task. Remove it.",
                f"{path}.{key}",
                step=step.id,
            )
    if step.on_failure.retry_with:
        ctx.problems.add(
            WorkflowCallDeclarationError,
            f"Step {step.id!r} calls a function, which calls no model: `on_failure: {{retry_with: ...}}` tries other "
            "models. Use `retries: N` to run the function again after an exception.",
            f"{path}.on_failure.retry_with",
            step=step.id,
        )


def _call_target(ctx: StepContext, step: Step, path: str) -> tuple[CompiledCall | None, Any, Any]:
    """A code step's function, its parameters (`name -> (annotation, required)`) and its return type."""
    try:
        call = read_call(step.call or "", importable=ctx.models.importable, step=step.id)
    except WorkflowError as exc:
        ctx.problems.add(type(exc), exc.message, f"{path}.call", step=step.id, suggestions=exc.suggestions)
        return None, None, Any
    return call, dict(call.params), call.returns


def _param_type(ctx: StepContext, type_text: str) -> Any:
    try:
        return type_strings.to_annotation(type_strings.parse_type(type_text), ctx.models.get)
    except UsageError:  # reported when the template was registered
        return Any


def _for_each(ctx: StepContext, step: Step, path: str) -> tuple[Expression | None, Any]:
    if step.for_each is None:
        return None, None
    text = step.for_each.strip()
    if text.startswith("{{") and text.endswith("}}") and text.count("{{") == 1:
        text = text[2:-2]  # `"{{state.items}}"` reads the same as `state.items`
    where = f"{path}.for_each"
    expr = expression(ctx, step, text, where, None)
    if expr is None:
        return None, Any
    element = item_type(typed(ctx, expr, where, step))
    if element is None:
        found = a_describe(typed(ctx, expr, where, step))
        ctx.problems.add(
            WorkflowTypeError,
            f"Step {step.id!r}: `for_each: {step.for_each}` is {found}, not a list.",
            where,
            step=step.id,
        )
        return expr, Any
    return expr, element


def _inputs(
    ctx: StepContext, step: Step, path: str, params: dict[str, tuple[Any, bool]] | None, item: Any
) -> dict[str, Value]:
    """Parse each input; with the parameters known (`params`), every one is bound and none is unknown (E115)."""
    roots = ("state", step.as_) if step.for_each is not None else ("state",)
    runs = _runs(step)
    what = "run input" if step.workflow is not None else "parameter"
    values: dict[str, Value] = {}
    for name, raw in step.inputs.items():
        where = f"{path}.inputs.{name}"
        if params is not None and name not in params:
            declared = ", ".join(params) or "none"
            ctx.problems.add(
                WorkflowBindingError,
                f"Step {step.id!r} binds {name!r}, which is not a {what} of "
                f"{runs}.{did_you_mean(name, params)} {what.capitalize()}s: {declared}.",
                where,
                step=step.id,
                suggestions=near_names(name, params),
            )
            continue
        try:
            values[name] = parse_value(raw, roots=roots)
        except WorkflowExpressionError as exc:
            ctx.problems.adopt(exc, where, step=step.id, prefix=f"Step {step.id!r}, {label(where)}: ")
            continue
        for ref in values[name].all_refs():
            with contextlib.suppress(ProblemReported):
                ctx.path_type(ref, item, where, step.id)
    missing = [n for n, (_, required) in (params or {}).items() if required and n not in step.inputs]
    if missing:
        ctx.problems.add(
            WorkflowBindingError,
            f"Step {step.id!r} does not bind the required {what}(s) "
            f"{', '.join(repr(m) for m in missing)} of {runs}. Add them under `inputs`.",
            f"{path}.inputs",
            step=step.id,
        )
    return values


def _value_reads(value: Value, where: str) -> tuple[Read, ...]:
    return tuple(Read(field=ref.field, ref=ref, where=where) for ref in value.all_refs() if ref.field is not None)


def _reads(expr: Expression | None, where: str) -> tuple[Read, ...]:
    if expr is None:
        return ()
    return tuple(Read(field=ref.field, ref=ref, where=where) for ref in expr.paths if ref.field is not None)


def check_input_types(ctx: StepContext, step: CompiledStep, written: frozenset[str]) -> None:
    """Each input's type against its parameter's (E114), and every read through a value that may be null (E116).

    `written` are the fields written on every path before the step; a path its `when` tests against
    null (`when: state.obj is not null`) holds a value in its inputs, `for_each` and `set`.
    """
    runs = _runs(step.step)
    known = not_null_when(step.when.tree, True) if step.when is not None else frozenset()
    _check_null_reads(ctx, step, written, known)
    if step.message is not None:
        where = f"{step.path}.fail.message" if step.step.kind == "fail" else f"{step.path}.message"
        with contextlib.suppress(ProblemReported):
            step.message.static_type(
                lambda ref: ctx.path_type(ref, None, where, step.id, written=written, guarded=known)
            )
    for name, value in step.inputs.items():
        target = step.param_types.get(name)
        where = f"{step.path}.inputs.{name}"
        try:
            source = value.static_type(
                lambda ref: ctx.path_type(ref, step.item_type, where, step.id, written=written, guarded=known)  # noqa: B023
            )
        except ProblemReported:
            continue
        if target is None or compatible(source, target):
            continue
        shown = value.raw if value.kind == "whole" else repr(value.raw)
        hint = ""
        if value.kind == "whole" and compatible(strip_none(source), target):
            text = value.refs[0].text
            hint = (
                f" `{text}` may be null here: give it a default, write it on every path before this step, or skip "
                f"the step unless it is set (`when: {text} is not null`)."
            )
        ctx.problems.add(
            WorkflowTypeError,
            f"Step {step.id!r} passes {shown} ({describe(source)}) to parameter "
            f"{name!r} ({describe(target)}) of {runs}: the types do not fit.{hint}",
            where,
            step=step.id,
        )
    for member in step.members:
        check_input_types(ctx, member, written)


def _check_null_reads(ctx: StepContext, step: CompiledStep, written: frozenset[str], known: frozenset[str]) -> None:
    """Reads through null in the step's expressions, each with what is written (and tested) when it runs."""
    check_null_reads(ctx, step.when, f"{step.path}.when", step.id, None, written)
    check_null_reads(ctx, step.for_each, f"{step.path}.for_each", step.id, None, written, known)
    after = written | step.output_writes
    for field, expr in step.sets:
        check_null_reads(ctx, expr, f"{step.path}.set.{field}", step.id, None, after, known)
    # Routes are also followed when `when` skipped the step or `on_failure: continue` went on past it.
    partial = step.step.when is not None or step.step.on_failure.action == "continue"
    leaving = written if partial else written | step.sure_writes
    for index, route in enumerate(step.routes):
        check_null_reads(ctx, route.when, f"{step.path}.route.{index}.when", step.id, None, leaving)
