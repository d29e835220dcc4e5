"""Checking a case's expectations against its template's output class, before any case runs.

A field named in `output:`, in `expect_subset:` (at any depth) or read by an `expect:` predicate
(`output.name`) must be a field of the output class: a typo is a `CasesFileError` at its
file:line:col with a did-you-mean, not a failing case that reads as schema drift. Predicates are
type-checked with the workflow expression language's checker (`output.score > "3"` is refused).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs
from atomtask.template_tests.cases import Case, CasesFileError

if TYPE_CHECKING:
    from atomtask.loading.checks import CompiledTemplate
    from atomtask.system.errors import SourceLocation
    from atomtask.workflows.expressions import Expression, PathRef

__all__ = ["check_expectations"]


class _UnknownPath(Exception):
    """A predicate reads a path the output class does not have (carries the message and the path's offset)."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


def check_expectations(case: Case, compiled: CompiledTemplate, predicates: tuple[Expression, ...]) -> None:
    """Refuse a field of `output`, `expect_subset` or an `expect` predicate that the output class lacks."""
    root: Any = compiled.output_cls if compiled.output_cls is not None else str
    name = getattr(root, "__name__", str(root))
    if case.has_output:
        _check_keys(case, case.output, root, ("output",), name)
    if case.has_subset:
        _check_keys(case, case.expect_subset, root, ("expect_subset",), name)
    for number, predicate in enumerate(predicates):
        _check_predicate(case, predicate, number, root, name)


def _check_keys(case: Case, value: Any, annotation: Any, path: tuple[str | int, ...], name: str) -> None:
    from atomtask.system.errors import did_you_mean
    from atomtask.workflows.type_rules import field_names, walk

    if isinstance(value, dict):
        names = field_names(annotation)
        for key, sub in value.items():
            try:
                inner = walk(annotation, str(key))
            except LookupError as exc:
                where = _dotted(path)
                hint = did_you_mean(str(key), names or ()) or (f" Its fields: {', '.join(names)}." if names else "")
                raise CasesFileError(
                    f"`{where}` of case {case.name!r}: {exc} (the output of template {case.template!r} is "
                    f"{name}).{hint}",
                    location=case.where_path((*path, str(key))),
                ) from None
            _check_keys(case, sub, inner, (*path, str(key)), name)
    elif isinstance(value, list):
        for number, sub in enumerate(value):
            try:
                inner = walk(annotation, number)
            except LookupError:
                return  # a list where the class has none: the replay reports the value itself
            _check_keys(case, sub, inner, (*path, number), name)


def _dotted(path: tuple[str | int, ...]) -> str:
    return str(path[0]) + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path[1:])


def _check_predicate(case: Case, predicate: Expression, number: int, root: Any, name: str) -> None:
    from atomtask.workflows.expression_types import ExpressionTypeError, expression_type

    def path_type(ref: PathRef) -> Any:
        return _path_type(ref, root, name)

    try:
        expression_type(predicate, path_type)
    except _UnknownPath as exc:
        raise CasesFileError(
            f"`expect: {predicate.text}` of case {case.name!r}: {exc.message}",
            location=_at_offset(case, number, predicate.text, exc.offset),
        ) from None
    except ExpressionTypeError as exc:
        raise CasesFileError(
            f"`expect` of case {case.name!r}: {exc.message.rstrip('.')}.",
            location=_at_offset(case, number, predicate.text, exc.offset),
        ) from None


def _path_type(ref: PathRef, root: Any, name: str) -> Any:
    from atomtask.system.errors import near_names
    from atomtask.workflows.type_rules import field_names, walk

    current, walked = root, ref.root
    for part in ref.parts:
        try:
            current = walk(current, part)
        except LookupError as exc:
            names = field_names(current) or []
            close = near_names(str(part), names)
            hint = f" Did you mean `{walked}.{close[0]}`?" if close else ""
            listing = f" Fields there: {', '.join(names)}." if names else ""
            raise _UnknownPath(f"unknown path `{ref.text}` ({name}): {exc}.{hint}{listing}", ref.offset) from None
        walked += f"[{part}]" if isinstance(part, int) else f".{part}"
    return current


def _at_offset(case: Case, number: int, text: str, offset: int) -> SourceLocation:
    """Where `offset` of the predicate's text is in the file (exact when the text is on one line)."""
    start = case.where_path(("expect", number))
    if start is not case.paths.get(("expect", number)) or "\n" in text or start.column is None:
        return start
    return attrs.evolve(start, column=start.column + offset)
