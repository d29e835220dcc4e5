"""What every step of a workflow is checked against (`StepContext`), and how its problems are collected.

`Problems` collects every problem of one workflow (for `atomtask check`), each located at its part of
the declaration. `StepContext.path_type` resolves a `state.x.y` (or loop item) path to its type,
noting an unknown path (E113) with "did you mean"; `expression` parses and type-checks one expression
(E112, E114); `check_null_reads` types it again once the data flow is known, noting reads through
null (E116).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any

import attrs
from atomtask.errors import (
    ExpressionTypeError,
    ProblemReported,
    SourceLocation,
    WorkflowDataFlowError,
    WorkflowError,
    WorkflowExpressionError,
    WorkflowPathError,
    WorkflowTypeError,
    near_names,
)
from atomtask.loading._template_registry import TemplateRegistry
from atomtask.schemas._model_registry import ModelRegistry
from atomtask.system._workflows import Step, Workflow
from atomtask.workflows._compiled import CompiledWorkflow
from atomtask.workflows._expressions import Expression, PathRef, expression_type, narrowed, parse_expression
from atomtask.workflows._types import describe, field_names, kinds, may_be_none, strip_none, walk
from pydantic import BaseModel

__all__ = ["Problems", "StepContext", "check_null_reads", "expression", "label", "shift", "typed"]


def shift(location: SourceLocation | None, offset: int | None) -> SourceLocation | None:
    """`location` moved `offset` characters right, when both its column and the offset are known."""
    if location is None or offset is None or location.column is None:
        return location
    return SourceLocation(file=location.file, line=location.line, column=location.column + offset)


@attrs.define
class Problems:
    """The problems found so far in `workflow`, in the order found (a key is reported once)."""

    workflow: Workflow
    errors: list[WorkflowError] = attrs.field(factory=list)
    _seen: set[tuple[str, str]] = attrs.field(factory=set)

    def add(
        self,
        kind: type[WorkflowError],
        message: str,
        where: str,
        *,
        step: str | None = None,
        offset: int | None = None,
        suggestions: Iterable[str] = (),
    ) -> None:
        """Note one problem at the declaration path `where` (`steps.2.inputs.topic`), `offset` into its text."""
        key = (kind.code, message)
        if key in self._seen:
            return
        self._seen.add(key)
        location = shift(self.workflow.location_of(where), offset)
        self.errors.append(
            kind(message, location=location, suggestions=suggestions, workflow=self.workflow.name, step=step)
        )

    def adopt(self, error: WorkflowError, where: str, *, step: str | None = None, prefix: str = "") -> None:
        """Note an error raised by a helper (a parser), locating it at `where` plus its own offset."""
        offset = getattr(error, "offset", None)
        self.add(type(error), prefix + error.message, where, step=step, offset=offset, suggestions=error.suggestions)

    def __bool__(self) -> bool:
        return bool(self.errors)


@attrs.define
class StepContext:
    """What every step is checked against."""

    problems: Problems
    state_cls: type[BaseModel]
    templates: TemplateRegistry
    models: ModelRegistry
    resolve_workflow: Callable[[str], CompiledWorkflow] | None = None

    @property
    def name(self) -> str:
        return self.problems.workflow.name

    def path_type(
        self,
        ref: PathRef,
        item: Any,
        where: str,
        step: str,
        *,
        written: frozenset[str] = frozenset(),
        guarded: frozenset[str] | None = None,
    ) -> Any:
        """The annotation `ref` reaches; notes an unknown path (E113) and raises `ProblemReported`.

        A field in `written` has been written by a step, so its `None` default no longer applies. With
        `guarded` (the paths known not to be null there, e.g. by `state.obj is not null and ...`), reading
        through a value that may be null is noted too (E116): the run would fail on it.
        """
        if ref.root != "state":
            current, walked = (Any if item is None else item), ref.root
        else:
            current, walked = self.state_cls, "state"
        for depth, part in enumerate(ref.parts):
            if guarded is not None and may_be_none(current):
                self._through_null(ref, depth, walked, current, where, step)
            try:
                following = walk(current, part)
            except LookupError as exc:
                self._unknown_path(ref, part, walked, current, str(exc), where, step)
            walked += f"[{part}]" if isinstance(part, int) else f".{part}"
            top_written = depth == 0 and ref.root == "state" and part in written
            current = strip_none(following) if top_written or walked in (guarded or ()) else following
        return current

    def _through_null(self, ref: PathRef, depth: int, walked: str, owner: Any, where: str, step: str) -> None:
        field = ref.field
        if depth == 1 and field is not None and self.state_cls.model_fields[field].is_required():
            return  # a field with no default: the data-flow check reports a read before any write
        if where.endswith(".inputs") or ".inputs." in where or where.endswith(".for_each"):
            test = f"skip the step unless it is set (`when: {walked} is not null`)"
        else:
            test = f"test it first (`{walked} is not null and ...`)"
        message = (
            f"Step {step!r} reads `{ref.text}` in {label(where)}, but `{walked}` ({describe(owner)}) may be null "
            f"there, and reading through null fails the run. Give it a default, write it on every path before, "
            f"or {test}."
        )
        self.problems.add(WorkflowDataFlowError, message, where, step=step, offset=ref.offset)
        raise ProblemReported

    def _unknown_path(
        self, ref: PathRef, part: str | int, walked: str, owner: Any, why: str, where: str, step: str
    ) -> None:
        names = field_names(owner) or []
        close = near_names(str(part), names)
        suggestions = [f"{walked}.{c}" for c in close]
        hint = f" Did you mean `{suggestions[0]}`?" if suggestions else ""
        if owner is self.state_cls:
            why = f"the state has no field {part!r}"
        listing = f" Fields there: {', '.join(names)}." if names else ""
        message = f"Unknown path `{ref.text}` in {label(where)} of step {step!r}: {why}.{hint}{listing}"
        self.problems.add(WorkflowPathError, message, where, step=step, offset=ref.offset, suggestions=suggestions)
        raise ProblemReported


def label(where: str) -> str:
    """`steps.2.inputs.topic` -> "input 'topic'"; `steps.2.route.0.when` -> "route 1"."""
    parts = where.split(".")
    while parts and (parts[0] in ("steps", "parallel") or parts[0].isdigit()):
        parts.pop(0)
    if parts[:1] == ["inputs"] and len(parts) > 1:
        return f"input {parts[1]!r}"
    if parts[:1] == ["route"] and len(parts) > 1:
        return f"route {int(parts[1]) + 1}"
    if parts[:1] == ["set"] and len(parts) > 1:
        return f"`set: {parts[1]}`"
    return f"`{'.'.join(parts)}`" if parts else "the step"


def expression(
    ctx: StepContext,
    step: Step,
    text: str | None,
    where: str,
    item: Any,
    *,
    roots: tuple[str, ...] = ("state",),
    condition: bool = False,
) -> Expression | None:
    """Parse and type-check one expression of `step`, noting its problems (E112, E113, E114); None if unparsable.

    A `condition` (`when`, a route's `when`) must be true or false, not a number or a text.
    """
    if text is None:
        return None
    try:
        expr = parse_expression(text, roots=roots, fields=list(ctx.state_cls.model_fields))
    except WorkflowExpressionError as exc:
        ctx.problems.adopt(exc, where, step=step.id, prefix=f"Step {step.id!r}, {label(where)}: ")
        return None
    try:
        found = expression_type(expr, lambda ref: ctx.path_type(ref, item, where, step.id))
    except ExpressionTypeError as exc:
        ctx.problems.add(
            WorkflowTypeError,
            f"Step {step.id!r}, {label(where)}: {exc.message}",
            where,
            step=step.id,
            offset=exc.offset,
        )
    except ProblemReported:
        pass
    else:
        if condition and kinds(found) - {"bool", "none", "any"}:
            ctx.problems.add(
                WorkflowTypeError,
                f"Step {step.id!r}, {label(where)}: `{text.strip()}` ({describe(found)}) is not true or false, as a "
                f"condition must be; compare it, e.g. `{_comparison(text.strip(), found)}`.",
                where,
                step=step.id,
            )
    return expr


def _comparison(text: str, annotation: Any) -> str:
    """A condition testing `text` the way its type suggests (`state.score > 0`, `len(state.items) > 0`)."""
    found = kinds(strip_none(annotation))
    if found == {"number"}:
        return f"{text} > 0"
    if found == {"str"}:
        return f"{text} != ''"
    if found <= {"list", "dict"}:
        return f"len({text}) > 0"
    return f"{text} is not null"


def check_null_reads(
    ctx: StepContext,
    expr: Expression | None,
    where: str,
    step: str,
    item: Any,
    written: frozenset[str],
    known: frozenset[str] = frozenset(),
) -> None:
    """Type `expr` again knowing what is written before it and what it tests: a read through null, or a str
    method, function argument or comprehension list that may be null there, is noted (E116).

    `known` are the paths known not to be null there (tested by the step's `when`).
    """
    if expr is None:
        return
    guards = narrowed(expr)

    def null_read(message: str, offset: int) -> None:  # e.g. a str method called on a value that may be null
        ctx.problems.add(
            WorkflowDataFlowError, f"Step {step!r}, {label(where)}: {message}", where, step=step, offset=offset
        )

    with contextlib.suppress(ExpressionTypeError, ProblemReported):
        expression_type(
            expr,
            lambda ref: ctx.path_type(
                ref, item, where, step, written=written, guarded=known | guards.get(ref.offset, frozenset())
            ),
            on_null=null_read,
        )


def typed(ctx: StepContext, expr: Expression, where: str, step: Step) -> Any:
    """The type of an expression already checked by `expression` (`Any` where it had a problem)."""
    try:
        return expression_type(expr, lambda ref: ctx.path_type(ref, None, where, step.id))
    except (ExpressionTypeError, ProblemReported):
        return Any  # reported by `expression`
