"""Type-checking workflow expressions against the state's types, when the workflow is registered.

`expression_type` infers the type of an expression (an annotation) from the types of the paths it
reads, and refuses what can only fail or is always false: comparing a `str` field with a number,
arithmetic on text, `len` of a number, `in` over something that is not a collection, a literal field
compared with a value it can never hold. `narrowed` tells, for each path, which paths are known not to
be null where it is read (`state.obj is not null and state.obj.score > 3`).
"""

from __future__ import annotations

import ast
import typing
from collections.abc import Callable
from typing import Any

from atomtask.system.errors import did_you_mean
from atomtask.workflows.expressions import SYMBOLS, Expression, PathRef, path_of
from atomtask.workflows.type_rules import (
    NONE,
    compatible,
    describe,
    item_type,
    kinds,
    literal_values,
    members,
    strip_none,
)

__all__ = ["ExpressionTypeError", "expression_type", "narrowed", "not_null_when"]

PathType = Callable[[PathRef], Any]
_ORDERED = ({"number"}, {"str"}, {"date"}, {"datetime"})
_SIZED = {"str", "list", "dict", "any"}


class ExpressionTypeError(Exception):
    """An expression's operands do not fit its operator; `offset` is where, in the expression text."""

    def __init__(self, message: str, offset: int) -> None:
        self.message = message
        self.offset = offset
        super().__init__(message)


def expression_type(expression: Expression, path_type: PathType) -> Any:
    """The type of `expression`, given the type of each path it reads; raises `ExpressionTypeError`.

    `path_type` receives each `PathRef` and returns its annotation (or raises the caller's error).
    """
    by_offset = {ref.offset: ref for ref in expression.paths}
    return _Typer(expression, by_offset, path_type).infer(expression.tree)


class _Typer:
    def __init__(self, expression: Expression, paths: dict[int, PathRef], path_type: PathType) -> None:
        self.expression = expression
        self.paths = paths
        self.path_type = path_type

    def fail(self, node: ast.AST, message: str) -> ExpressionTypeError:
        return ExpressionTypeError(
            f"In expression {self.expression.text!r}: {message}", self.expression.offset_of(node)
        )

    def label(self, node: ast.expr, annotation: Any) -> str:
        return f"`{ast.unparse(node)}` ({describe(annotation)})"

    def infer(self, node: ast.expr) -> Any:
        match node:
            case ast.Constant(value=value):
                return NONE if value is None else type(value)
            case ast.Name() | ast.Attribute() | ast.Subscript():
                if path_of(node) is None:  # true/false/null
                    return NONE if node.id in ("null", "None") else bool  # type: ignore[union-attr]
                return self.path_type(self.paths[self.expression.offset_of(node)])
            case ast.BoolOp(values=operands):
                for operand in operands:
                    self.infer(operand)
                return bool
            case ast.UnaryOp(op=unary_op, operand=single):
                inner = self.infer(single)
                if isinstance(unary_op, ast.Not):
                    return bool
                if not kinds(strip_none(inner)) <= {"number", "any"}:
                    raise self.fail(node, f"`-` needs a number, not {self.label(single, inner)}.")
                return inner
            case ast.BinOp():
                return self.binary(node)
            case ast.Compare():
                for left, cmp_op, right in _pairs(node):
                    self.compare(node, left, cmp_op, right)
                return bool
            case ast.Call(args=[argument]):
                inner = self.infer(argument)
                if not kinds(strip_none(inner)) <= _SIZED:
                    raise self.fail(node, f"`len` needs a str, list or dict, not {self.label(argument, inner)}.")
                return int
            case ast.List(elts=elements) | ast.Tuple(elts=elements):
                types = [self.infer(e) for e in elements]
                distinct = {describe(t): t for t in types}
                only = next(iter(distinct.values())) if len(distinct) == 1 else Any
                return list.__class_getitem__(only)
            case ast.IfExp(test=test, body=body, orelse=orelse):
                self.infer(test)
                options = {describe(t): t for t in (self.infer(body), self.infer(orelse))}
                branches = tuple(options.values())
                return branches[0] if len(branches) == 1 else typing.Union.__getitem__(branches)
        raise self.fail(node, f"`{ast.unparse(node)}` is not part of the expression language.")

    def binary(self, node: ast.BinOp) -> Any:
        left, right = self.infer(node.left), self.infer(node.right)
        left_kinds, right_kinds = kinds(strip_none(left)), kinds(strip_none(right))
        symbol = SYMBOLS[type(node.op)]
        if "any" in left_kinds or "any" in right_kinds:
            return Any
        if left_kinds == right_kinds == {"number"}:
            if isinstance(node.op, ast.Div) or float in members(left) + members(right):
                return float
            return int
        if isinstance(node.op, ast.Add) and left_kinds == right_kinds and left_kinds <= {"str", "list"}:
            return strip_none(left)
        what = "joins two str or two lists, or adds numbers" if symbol == "+" else "needs numbers"
        raise self.fail(
            node, f"`{symbol}` {what}; got {self.label(node.left, left)} and {self.label(node.right, right)}."
        )

    def compare(self, node: ast.Compare, left: ast.expr, op: ast.cmpop, right: ast.expr) -> None:
        left_type, right_type = self.infer(left), self.infer(right)
        symbol = SYMBOLS[type(op)]
        left_kinds, right_kinds = kinds(left_type), kinds(right_type)
        if "any" in left_kinds or "any" in right_kinds or isinstance(op, ast.Is | ast.IsNot):
            return
        both = f"{self.label(left, left_type)} with {self.label(right, right_type)}"
        if isinstance(op, ast.In | ast.NotIn):
            self.membership(node, left, left_type, right, right_type)
        elif isinstance(op, ast.Eq | ast.NotEq):
            if not (left_kinds & right_kinds) and "none" not in left_kinds | right_kinds:
                raise self.fail(node, f"comparing {both} is always {'false' if symbol == '==' else 'true'}.")
            outcome = f"`{symbol}` is always {'false' if symbol == '==' else 'true'}"
            self.literal(node, f"`{ast.unparse(left)}`", left_type, right, outcome)
            self.literal(node, f"`{ast.unparse(right)}`", right_type, left, outcome)
        else:
            left_kinds, right_kinds = left_kinds - {"none"}, right_kinds - {"none"}
            if not any(left_kinds <= group and right_kinds <= group for group in _ORDERED):
                raise self.fail(node, f"`{symbol}` cannot compare {both}; order numbers with numbers, str with str.")

    def membership(self, node: ast.Compare, left: ast.expr, left_type: Any, right: ast.expr, right_type: Any) -> None:
        container = strip_none(right_type)
        container_kinds = kinds(container)
        element = item_type(container)
        if container_kinds == {"str"}:
            element = str
        elif container_kinds == {"dict"}:
            args = typing.get_args(container)
            element = args[0] if args else Any
        elif element is None:
            raise self.fail(node, f"`in` needs a list, str or dict on its right, not {self.label(right, right_type)}.")
        if not (compatible(left_type, element) or compatible(element, left_type)):
            raise self.fail(node, f"{self.label(left, left_type)} can never be in {self.label(right, right_type)}.")
        outcome = f"`{ast.unparse(node)}` never matches it"
        if isinstance(right, ast.List | ast.Tuple):
            for option in right.elts:
                self.literal(node, f"`{ast.unparse(left)}`", left_type, option, outcome)
        else:
            self.literal(node, f"each element of `{ast.unparse(right)}`", element, left, outcome)

    def literal(self, node: ast.expr, what: str, annotation: Any, value: ast.expr, outcome: str) -> None:
        """Refuse a constant `value` that the literal type of `typed` never holds (`state.label == 'billng'`)."""
        allowed = literal_values(annotation)
        if allowed is None or not isinstance(value, ast.Constant) or value.value is None or value.value in allowed:
            return
        listing = ", ".join(repr(v) for v in allowed)
        texts = [v for v in allowed if isinstance(v, str)]
        hint = did_you_mean(value.value, texts) if isinstance(value.value, str) else ""
        raise self.fail(
            node,
            f"{what} is one of {listing}, never {value.value!r}, so {outcome}.{hint} "
            "Compare with one of the allowed values.",
        )


def _pairs(node: ast.Compare) -> list[tuple[ast.expr, ast.cmpop, ast.expr]]:
    operands = [node.left, *node.comparators]
    return [(operands[i], op, operands[i + 1]) for i, op in enumerate(node.ops)]


def not_null_when(node: ast.expr, truth: bool) -> frozenset[str]:
    """The paths (as text, `state.obj`) known not to be null when `node` is `truth`.

    `x is not null` (or `x != null`) true, `x is null` false, and their combinations with `and`, `or`, `not`.
    """
    match node:
        case ast.UnaryOp(op=ast.Not(), operand=inner):
            return not_null_when(inner, not truth)
        case ast.BoolOp(op=ast.And(), values=values) if truth:
            return frozenset().union(*(not_null_when(v, True) for v in values))
        case ast.BoolOp(op=ast.Or(), values=values) if not truth:
            return frozenset().union(*(not_null_when(v, False) for v in values))
        case ast.Compare(left=left, ops=[op], comparators=[right]):
            tested = _null_test(left, right) or _null_test(right, left)
            negative = isinstance(op, ast.IsNot | ast.NotEq)
            if tested is not None and isinstance(op, ast.Is | ast.IsNot | ast.Eq | ast.NotEq) and negative == truth:
                return frozenset({tested})
    return frozenset()


def _null_test(path: ast.expr, other: ast.expr) -> str | None:
    found = path_of(path)
    null = (isinstance(other, ast.Constant) and other.value is None) or (
        isinstance(other, ast.Name) and other.id in ("null", "None")
    )
    if found is None or not null:
        return None
    return PathRef(root=found[0], parts=found[1], offset=0).text


def narrowed(expression: Expression) -> dict[int, frozenset[str]]:
    """For each path the expression reads (by offset), the paths known not to be null where it is read.

    `and`, `or` and `if ... else` evaluate left to right and stop early, so in `state.obj is not null and
    state.obj.score > 3` the second operand only runs when `state.obj` holds a value.
    """
    found: dict[int, frozenset[str]] = {}

    def visit(node: ast.expr, known: frozenset[str]) -> None:
        match node:
            case ast.BoolOp(op=bool_op, values=values):
                for value in values:
                    visit(value, known)
                    known = known | not_null_when(value, isinstance(bool_op, ast.And))
            case ast.IfExp(test=test, body=body, orelse=orelse):
                visit(test, known)
                visit(body, known | not_null_when(test, True))
                visit(orelse, known | not_null_when(test, False))
            case ast.Call(args=arguments):
                for argument in arguments:
                    visit(argument, known)
            case ast.Name() | ast.Attribute() | ast.Subscript() if path_of(node) is not None:
                found[expression.offset_of(node)] = known
            case _:
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, ast.expr):
                        visit(child, known)

    visit(expression.tree, frozenset())
    return found
