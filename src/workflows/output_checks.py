"""Checking what a step writes: `outputs`, `output`, `collect` and `set` against the state's fields and types.

An output must name a field the task (or sub-workflow) answers with (E115), every target must be a
state field (E113), and each value's type must fit its field's (E114). An approval step's `output`
takes its decision: a `bool` field gets `approved`, a field of a class like `ApprovalDecision` all of it.
"""

from __future__ import annotations

from typing import Any

from atomtask.system.errors import did_you_mean, near_names
from atomtask.system.workflow_errors import WorkflowBindingError, WorkflowPathError, WorkflowTypeError
from atomtask.system.workflows import ApprovalDecision, Step
from atomtask.workflows.expressions import Expression
from atomtask.workflows.step_context import StepContext, expression, typed
from atomtask.workflows.type_rules import a_describe, compatible, describe, item_type, strip_none, walk

__all__ = ["check_approval_output", "check_outputs", "check_sets"]


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


def check_outputs(
    ctx: StepContext, step: Step, path: str, output_type: Any, item: Any
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    runs = f"task {step.task!r}" if step.task is not None else f"workflow {step.workflow!r}"
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
                f"{text!r}, which is {a_describe(value_type)}.",
                where,
                step=step.id,
            )
    return tuple(found)
