"""The expression language of workflows (`when`, `route.when`, `set`, `for_each`): small, safe, typed.

    expr       := ternary
    ternary    := or_expr ["if" or_expr "else" ternary]
    or_expr    := and_expr ("or" and_expr)*                  -> bool
    and_expr   := not_expr ("and" not_expr)*                 -> bool
    not_expr   := "not" not_expr | comparison
    comparison := sum ((== | != | < | <= | > | >= | in | not in | is | is not) sum)*
    sum        := term (("+" | "-") term)*                   numbers; `+` also joins str and lists
    term       := unary (("*" | "/" | "//" | "%") unary)*
    unary      := ("-" | "+") unary | primary
    primary    := literal | path | "len(" expr ")" | "(" expr ")" | "[" [expr ("," expr)*] "]"
    path       := ("state" | LOOP_NAME) ("." NAME | "[" INT | STRING "]")*
    literal    := INT | FLOAT | STRING | true | false | null  (also True, False, None)

The text is parsed with Python's `ast` (which only parses; nothing is executed) and every node that
is not in the grammar above is refused. Evaluation walks the tree here; there is no `eval`.

When the workflow is registered, `expression_type` infers the type of an expression (an annotation)
from the types of the paths it reads, and refuses what can only fail or is always false: comparing a
`str` field with a number, arithmetic on text, `len` of a number, `in` over something that is not a
collection, a literal field compared with a value it can never hold. `narrowed` tells, for each path,
which paths are known not to be null where it is read (`state.obj is not null and state.obj.score > 3`).
"""

from __future__ import annotations

import ast
import operator
import typing
from collections.abc import Callable, Collection, Mapping
from typing import Any

import attrs
from atomtask.errors import (
    ExpressionRuntimeError,
    ExpressionTypeError,
    WorkflowExpressionError,
    did_you_mean,
    near_names,
)
from atomtask.workflows._types import NONE, compatible, describe, item_type, kinds, literal_values, members, strip_none
from pydantic import BaseModel

__all__ = [
    "Expression",
    "PathRef",
    "evaluate",
    "expression_type",
    "narrowed",
    "not_null_when",
    "parse_expression",
]

_CONSTANTS = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}
_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}
SYMBOLS: dict[type[ast.AST], str] = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
    ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not",
}  # fmt: skip


@attrs.frozen(kw_only=True)
class PathRef:
    """One path an expression reads: its root (`state` or the loop name) and the parts after it."""

    root: str
    parts: tuple[str | int, ...]
    offset: int

    @property
    def text(self) -> str:
        return self.root + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in self.parts)

    @property
    def field(self) -> str | None:
        """The state field read (the first part of a `state.` path), None for the loop item or `state` itself."""
        return self.parts[0] if self.root == "state" and self.parts and isinstance(self.parts[0], str) else None


@attrs.frozen(kw_only=True)
class Expression:
    """A parsed expression: its text, its tree and the paths it reads."""

    text: str
    tree: ast.expr
    paths: tuple[PathRef, ...]

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        """The value on `env` (`{"state": state, "item": ...}`); raises `ExpressionRuntimeError`."""
        return evaluate(self.tree, env)

    def offset_of(self, node: ast.AST) -> int:
        """The offset in `text` where `node` starts."""
        return _offset(node)


def parse_expression(text: str, *, roots: Collection[str] = ("state",), fields: Collection[str] = ()) -> Expression:
    """Parse `text`; raises `WorkflowExpressionError` (with `offset`) for anything outside the language.

    `roots` are the names a path may start with; `fields` (the state's) only improve the messages.

    Example:
        ```python
        parse_expression("state.score < 7 and len(state.notes) > 0").paths[0].text  # 'state.score'
        ```
    """
    # Wrapped in parentheses so that leading spaces and line breaks (YAML folded text) parse.
    try:
        tree = ast.parse("(" + text + "\n)", mode="eval").body
    except SyntaxError as exc:
        offset = max((exc.offset or 1) - 2, 0) if exc.lineno == 1 else None
        raise _error(f"Invalid expression {text!r}: {exc.msg}.", offset) from None
    paths: list[PathRef] = []
    _Checker(text, set(roots), fields, paths).visit(tree)
    return Expression(text=text, tree=tree, paths=tuple(paths))


def _offset(node: ast.AST) -> int:
    return max(getattr(node, "col_offset", 1) - 1, 0)


def _error(message: str, offset: int | None) -> WorkflowExpressionError:
    error = WorkflowExpressionError(message)
    error.offset = offset
    return error


def path_of(node: ast.expr) -> tuple[str, tuple[str | int, ...]] | None:
    """`(root, parts)` when `node` is a path (`state.a.b`, `item[0]`), else None."""
    parts: list[str | int] = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            key = node.slice.value
            if not isinstance(key, int | str) or isinstance(key, bool):
                return None
            parts.append(key)
            node = node.value
        elif isinstance(node, ast.Name) and node.id not in _CONSTANTS:
            return node.id, tuple(reversed(parts))
        else:
            return None


class _Checker(ast.NodeVisitor):
    """Refuses every node outside the grammar and notes the paths read."""

    def __init__(self, text: str, roots: set[str], fields: Collection[str], paths: list[PathRef]) -> None:
        self.text = text
        self.roots = roots
        self.fields = fields
        self.paths = paths

    def refuse(self, node: ast.AST, what: str, fix: str = "") -> None:
        raise _error(f"{what} in expression {self.text!r} is not part of the expression language.{fix}", _offset(node))

    def generic_visit(self, node: ast.AST) -> None:
        self.refuse(node, f"`{ast.unparse(node)}`" if isinstance(node, ast.expr) else type(node).__name__)

    def visit_Constant(self, node: ast.Constant) -> None:
        if not isinstance(node.value, str | int | float | bool | type(None)):
            self.refuse(node, f"The literal {node.value!r}")

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in _CONSTANTS:
            return
        if node.id not in self.roots:
            hint = (
                f" Did you mean `state.{node.id}`?"
                if node.id in self.fields
                else did_you_mean(node.id, self.roots) or f" Paths start with {' or '.join(sorted(self.roots))}."
            )
            raise _error(f"Unknown name {node.id!r} in expression {self.text!r}.{hint}", _offset(node))
        self.paths.append(PathRef(root=node.id, parts=(), offset=_offset(node)))

    def _path(self, node: ast.Attribute | ast.Subscript) -> None:
        found = path_of(node)
        if found is None:
            if isinstance(node, ast.Subscript):
                self.refuse(node, f"The index `{ast.unparse(node)}`", " Index with a number or a quoted key.")
            self.refuse(node, f"`{ast.unparse(node)}`", " Only fields of `state` (or of the loop item) can be read.")
            return
        root, parts = found
        self.visit_Name(ast.Name(id=root, col_offset=node.col_offset))
        self.paths[-1] = PathRef(root=root, parts=parts, offset=_offset(node))

    visit_Attribute = _path
    visit_Subscript = _path

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        for value in node.values:
            self.visit(value)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if not isinstance(node.op, ast.Not | ast.USub | ast.UAdd):
            self.refuse(node, "The operator `~`")
        self.visit(node.operand)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if type(node.op) not in _BINARY:
            self.refuse(node, f"The operator in `{ast.unparse(node)}`", " Operators: + - * / // %.")
        self.visit(node.left)
        self.visit(node.right)

    def visit_Compare(self, node: ast.Compare) -> None:
        for op, right in zip(node.ops, node.comparators, strict=True):
            null = (isinstance(right, ast.Constant) and right.value is None) or (
                isinstance(right, ast.Name) and right.id in ("null", "None")
            )
            if isinstance(op, ast.Is | ast.IsNot) and not null:
                self.refuse(node, f"`{ast.unparse(node)}`", " `is` and `is not` compare with `null` only.")
        self.visit(node.left)
        for right in node.comparators:
            self.visit(right)

    def visit_Call(self, node: ast.Call) -> None:
        name = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
        if name != "len":
            raise _error(
                f"Unknown function {name!r} in expression {self.text!r}; the only function is `len`.",
                _offset(node),
            )
        if len(node.args) != 1 or node.keywords:
            self.refuse(node, f"`{ast.unparse(node)}`", " `len` takes one argument.")
        self.visit(node.args[0])

    def visit_List(self, node: ast.List) -> None:
        for element in node.elts:
            self.visit(element)

    def visit_Tuple(self, node: ast.Tuple) -> None:  # `(a, b)` reads as a list
        for element in node.elts:
            self.visit(element)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self.visit(node.test)
        self.visit(node.body)
        self.visit(node.orelse)


def evaluate(node: ast.expr, env: Mapping[str, Any]) -> Any:
    """The value of a checked tree on `env`; raises `ExpressionRuntimeError` for a value that does not fit."""
    try:
        return _eval(node, env)
    except ExpressionRuntimeError:
        raise
    except (TypeError, ZeroDivisionError, ValueError, OverflowError) as exc:
        raise ExpressionRuntimeError(f"`{ast.unparse(node)}` failed: {exc}") from None


def _eval(node: ast.expr, env: Mapping[str, Any]) -> Any:
    match node:
        case ast.Constant(value=value):
            return value
        case ast.Name(id=name):
            return _CONSTANTS[name] if name in _CONSTANTS else env[name]
        case ast.Attribute() | ast.Subscript():
            found = path_of(node)
            assert found is not None  # the checker refused other subscripts
            return read_path(env[found[0]], found[1], found[0])
        case ast.BoolOp(op=bool_op, values=values):
            if isinstance(bool_op, ast.And):
                return all(bool(_eval(v, env)) for v in values)
            return any(bool(_eval(v, env)) for v in values)
        case ast.UnaryOp(op=unary_op, operand=operand):
            value = _eval(operand, env)
            if isinstance(unary_op, ast.Not):
                return not value
            return -value if isinstance(unary_op, ast.USub) else +value
        case ast.BinOp(left=left, op=bin_op, right=right):
            return _BINARY[type(bin_op)](_eval(left, env), _eval(right, env))
        case ast.Compare(left=left, ops=ops, comparators=comparators):
            current = _eval(left, env)
            for cmp_op, right_node in zip(ops, comparators, strict=True):
                right_value = _eval(right_node, env)
                if not _COMPARE[type(cmp_op)](current, right_value):
                    return False
                current = right_value
            return True
        case ast.Call(args=[argument]):
            return len(_eval(argument, env))
        case ast.List(elts=elements) | ast.Tuple(elts=elements):
            return [_eval(e, env) for e in elements]
        case ast.IfExp(test=test, body=body, orelse=orelse):
            return _eval(body, env) if _eval(test, env) else _eval(orelse, env)
    raise ExpressionRuntimeError(f"`{ast.unparse(node)}` is not part of the expression language")


def read_path(value: Any, parts: tuple[str | int, ...], root: str) -> Any:
    """Follow `parts` from `value` (fields of a model, keys of a mapping, list indexes)."""
    walked = root
    for part in parts:
        if value is None:
            raise ExpressionRuntimeError(f"`{walked}` is null, so `{part}` cannot be read from it")
        if isinstance(value, BaseModel) and isinstance(part, str):
            if part not in value.__dict__:
                fields = list(type(value).model_fields)
                if part in fields:
                    raise ExpressionRuntimeError(f"`{walked}.{part}` has no value yet: no step has written it")
                raise ExpressionRuntimeError(f"`{walked}` has no field {part!r}.{did_you_mean(part, fields)}")
            value = getattr(value, part)
        elif isinstance(value, Mapping):
            if part not in value:
                keys = [str(k) for k in value]
                raise ExpressionRuntimeError(f"`{walked}` has no key {part!r} (keys: {', '.join(keys) or 'none'})")
            value = value[part]
        elif isinstance(value, list | tuple) and isinstance(part, int):
            if not -len(value) <= part < len(value):
                raise ExpressionRuntimeError(f"`{walked}[{part}]` is out of range: it has {len(value)} element(s)")
            value = value[part]
        else:
            raise ExpressionRuntimeError(f"`{walked}` is a {type(value).__name__}, which has no {part!r}")
        walked += f"[{part}]" if isinstance(part, int) else f".{part}"
    return value


def suggest_field(name: str, fields: Collection[str]) -> list[str]:
    """Near state field names, best first."""
    return near_names(name, fields)


PathType = Callable[[PathRef], Any]
_ORDERED = ({"number"}, {"str"}, {"date"}, {"datetime"})
_SIZED = {"str", "list", "dict", "any"}


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
