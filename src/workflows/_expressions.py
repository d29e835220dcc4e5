"""The expression language of workflows (`when`, `route.when`, `set`, `for_each`): small, safe, typed.

    expr          := ternary
    ternary       := or_expr ["if" or_expr "else" ternary]
    or_expr       := and_expr ("or" and_expr)*                  -> bool
    and_expr      := not_expr ("and" not_expr)*                 -> bool
    not_expr      := "not" not_expr | comparison
    comparison    := sum ((== | != | < | <= | > | >= | in | not in | is | is not) sum)*   `in` a str: a substring
    sum           := term (("+" | "-") term)*                   numbers; `+` also joins two str or two lists
    term          := unary (("*" | "/" | "//" | "%") unary)*    numbers only
    unary         := ("-" | "+") unary | postfix
    postfix       := primary ("." METHOD "(" [args] ")" | "[" INDEX "]")*
    primary       := literal | path | FUNCTION "(" [args] ")" | "(" expr ")" | list | object | comprehension
    list          := "[" [expr ("," expr)*] "]"
    object        := "{" [STRING ":" expr ("," STRING ":" expr)*] "}"
    comprehension := "[" expr "for" NAME "in" expr ["if" expr] "]"      one `for`, never nested
    path          := ("state" | LOOP_NAME | NAME) ("." NAME | "[" INDEX "]")*   NAME: a comprehension's variable
    INDEX         := ["-"] INT | STRING
    literal       := INT | FLOAT | STRING | true | false | null  (also True, False, None)
    FUNCTION      := len | str | int | float | round                       (see `FUNCTIONS`)
    METHOD        := lower | upper | strip | lstrip | rstrip | startswith | endswith | replace | split | join
                     (methods of str, see `METHODS`; the separator comes first: `", ".join(state.tags)`)

The text is parsed with Python's `ast` (which only parses; nothing is executed) and every node that
is not in the grammar above is refused, as is a name starting with `_` (`state._x`). Before that, a
text longer than `MAX_LENGTH` (10,000) characters, or whose brackets nest deeper than `MAX_DEPTH` (100),
is refused (`WorkflowExpressionLimitError`, E125, at the opener that goes too deep), and so is a tree
deeper than `MAX_DEPTH` (`not not ...`, `1 + 1 + ...`, at the first node too deep): every later walk
(the checks, the types, the evaluation) recurses, and stays well inside Python's recursion limit.

Evaluation walks the tree here; there is no `eval`. One evaluation makes no str longer than `MAX_TEXT`
(1,000,000) characters, no list longer than `MAX_ITEMS` (100,000) elements, no whole number longer than
`MAX_INT_DIGITS` (4,300) digits, and does at most `MAX_WORK` (10,000,000) units of work (a node
evaluated, or an element or character an operation goes through). A result's size is predicted before
it is made where it could grow fast (`+` of two str or lists, `*` of whole numbers, `replace`, `join`;
`*` and `%` never apply to str or lists, and there is no `**`, `format`, `ljust`, `center` or `zfill`);
past a limit the evaluation stops with `ExpressionRuntimeError` naming the operation, the size and the
limit. A comprehension goes through its list once, so its work is bounded by the list's length.

When the workflow is registered, `expression_type` infers the type of an expression (an annotation)
from the types of the paths it reads, and refuses what can only fail or is always false: comparing a
`str` field with a number, arithmetic on text, `len` of a number, a str method on a number, `in` over
something that is not a collection, a literal field compared with a value it can never hold. An object
literal's type (`_types.object_type`) fits a `dict` or a class by its keys. `narrowed` tells, for each
path, which paths are known not to be null where it is read (`state.obj is not null and
state.obj.score > 3`); the types follow the same tests, so `state.a if state.a is not null else 'none'`
is a `str`.
"""

from __future__ import annotations

import ast
import math
import operator
import typing
from collections.abc import Callable, Collection, Mapping
from typing import Any

import attrs
import pydantic_core
from atomtask.errors import (
    ExpressionRuntimeError,
    ExpressionTypeError,
    WorkflowExpressionError,
    WorkflowExpressionLimitError,
    did_you_mean,
    near_names,
)
from atomtask.workflows._types import (
    NONE,
    compatible,
    describe,
    field_names,
    item_type,
    kinds,
    literal_values,
    may_be_none,
    members,
    object_type,
    strip_none,
    union,
    walk,
)
from pydantic import BaseModel

__all__ = [
    "FUNCTIONS",
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_ITEMS",
    "MAX_LENGTH",
    "MAX_TEXT",
    "MAX_WORK",
    "METHODS",
    "Expression",
    "PathRef",
    "evaluate",
    "expression_type",
    "narrowed",
    "not_null_when",
    "parse_expression",
]

MAX_TEXT = 1_000_000
"""The longest str one evaluation may make, in characters."""
MAX_ITEMS = 100_000
"""The longest list one evaluation may make, in elements."""
MAX_WORK = 10_000_000
"""The work one evaluation may do: one unit a node evaluated, and one an element or character an operation reads."""
MAX_DEPTH = 100
"""The deepest an expression may nest (brackets, `not`, `((a + b) + c) + ...`): checking and evaluating it recurse."""
MAX_LENGTH = 10_000
"""The longest expression text, in characters: longer ones are refused before Python's parser reads them."""
MAX_INT_DIGITS = 4_300
"""The longest whole number one evaluation may make, in decimal digits (Python's own limit for printing one)."""
_MAX_INT_BITS = math.ceil(MAX_INT_DIGITS * math.log2(10))
MAX_DIGITS = 100
"""The most digits `round(x, digits)` rounds to (either way)."""

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
class Param:
    """One argument of a function or method: the kinds of value it takes (`any`: every kind), as said in a message."""

    kinds: frozenset[str]
    shown: str


@attrs.frozen(kw_only=True)
class Signature:
    """A function or str method of the language: how it is written, its arguments, its result type and its run."""

    usage: str
    params: tuple[Param, ...] = ()
    required: int = 0
    result: Callable[[list[Any]], Any]
    run: Callable[..., Any]


def _text_of(value: Any) -> str:
    """`str(x)`: Python's `str` of a str, number, bool or null; a model, list or dict as JSON (as placeholders)."""
    if isinstance(value, str | int | float | bool) or value is None:
        return str(value)
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return pydantic_core.to_json(value).decode()


def _round(value: Any, digits: Any = None) -> Any:
    if digits is None:
        return round(value)
    if not isinstance(digits, int) or not -MAX_DIGITS <= digits <= MAX_DIGITS:
        raise ValueError(f"the digits must be a whole number from {-MAX_DIGITS} to {MAX_DIGITS}, not {digits!r}")
    return round(value, digits)


def _round_type(arguments: list[Any]) -> Any:
    if len(arguments) == 1:
        return int
    found = [typing.get_origin(m) or m for m in members(strip_none(arguments[0]))]
    if Any in found or object in found:
        return Any
    return float if float in found else int


_TEXT = Param(kinds=frozenset({"str"}), shown="a str")
_NUMBER = Param(kinds=frozenset({"number"}), shown="a number")
_CONVERTIBLE = Param(kinds=frozenset({"str", "number", "bool"}), shown="a str or a number")

FUNCTIONS: dict[str, Signature] = {
    "len": Signature(
        usage="len(x)",
        params=(Param(kinds=frozenset({"str", "list", "dict"}), shown="a str, list or dict"),),
        required=1,
        result=lambda _: int,
        run=len,
    ),
    "str": Signature(
        usage="str(x)",
        params=(Param(kinds=frozenset({"any"}), shown="a value"),),
        required=1,
        result=lambda _: str,
        run=_text_of,
    ),
    "int": Signature(usage="int(x)", params=(_CONVERTIBLE,), required=1, result=lambda _: int, run=int),
    "float": Signature(usage="float(x)", params=(_CONVERTIBLE,), required=1, result=lambda _: float, run=float),
    "round": Signature(
        usage="round(x[, digits])",
        params=(_NUMBER, Param(kinds=frozenset({"number"}), shown="a whole number of digits")),
        required=1,
        result=_round_type,
        run=_round,
    ),
}
"""The functions an expression may call, by name."""

METHODS: dict[str, Signature] = {
    "lower": Signature(usage="s.lower()", result=lambda _: str, run=str.lower),
    "upper": Signature(usage="s.upper()", result=lambda _: str, run=str.upper),
    "strip": Signature(usage="s.strip([chars])", params=(_TEXT,), result=lambda _: str, run=str.strip),
    "lstrip": Signature(usage="s.lstrip([chars])", params=(_TEXT,), result=lambda _: str, run=str.lstrip),
    "rstrip": Signature(usage="s.rstrip([chars])", params=(_TEXT,), result=lambda _: str, run=str.rstrip),
    "startswith": Signature(
        usage="s.startswith(prefix)", params=(_TEXT,), required=1, result=lambda _: bool, run=str.startswith
    ),
    "endswith": Signature(
        usage="s.endswith(suffix)", params=(_TEXT,), required=1, result=lambda _: bool, run=str.endswith
    ),
    "replace": Signature(
        usage="s.replace(old, new)", params=(_TEXT, _TEXT), required=2, result=lambda _: str, run=str.replace
    ),
    "split": Signature(usage="s.split([sep])", params=(_TEXT,), result=lambda _: list[str], run=str.split),
    "join": Signature(
        usage="sep.join(strings)",
        params=(Param(kinds=frozenset({"list"}), shown="a list of str"),),
        required=1,
        result=lambda _: str,
        run=str.join,
    ),
}
"""The methods of str an expression may call, by name."""


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
    """A parsed expression: its text, its tree and the paths it reads (a comprehension's variable is not one)."""

    text: str
    tree: ast.expr
    paths: tuple[PathRef, ...]

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        """The value on `env` (`{"state": state, "item": ...}`); raises `ExpressionRuntimeError`."""
        return evaluate(self.tree, env, text=" ".join(self.text.split()))  # folded YAML on one line

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
    _within_limits(text)
    # Wrapped in parentheses so that leading spaces and line breaks (YAML folded text) parse.
    try:
        tree = ast.parse("(" + text + "\n)", mode="eval").body
    except SyntaxError as exc:
        offset = max((exc.offset or 1) - 2, 0) if exc.lineno == 1 else None
        raise _error(f"Invalid expression {_shown(text)!r}: {exc.msg}.", offset) from None
    except (RecursionError, MemoryError):  # CPython's own parser gave up: too deep, wherever it was
        raise _too_deep(text, None) from None
    deepest = _too_deep_at(tree)
    if deepest is not None:
        raise _too_deep(text, deepest)
    paths: list[PathRef] = []
    _Checker(text, set(roots), fields, paths).visit(tree)
    return Expression(text=text, tree=tree, paths=tuple(paths))


def _shown(text: str) -> str:
    """`text` for a message: whole when short, else its start (a message never repeats a huge expression)."""
    return text if len(text) <= 80 else text[:77] + "..."


def _too_deep(text: str, offset: int | None) -> WorkflowExpressionLimitError:
    offset = None if offset is not None and offset < 0 else offset
    error = WorkflowExpressionLimitError(
        f"The expression {_shown(text)!r} nests more than {MAX_DEPTH} levels deep"
        f"{' here' if offset is not None else ''} (brackets, `not`, `-`, `if ... else`, chained operators, "
        "calls); split it over steps (`set` an intermediate field), or flatten it (`a and b and c`)."
    )
    error.offset = offset
    return error


def _within_limits(text: str) -> None:
    """Refuse, before Python parses it, a text over `MAX_LENGTH` or whose brackets nest deeper than `MAX_DEPTH`.

    The bracket scan skips quoted strings and stops at the opener that goes too deep, so the error points
    there; other deep shapes (`not not ...`, `1 + 1 + ...`) are measured on the tree, which a text of at
    most `MAX_LENGTH` characters keeps small (or CPython's parser refuses, also reported here).
    """
    if len(text) > MAX_LENGTH:
        error = WorkflowExpressionLimitError(
            f"The expression {_shown(text)!r} is {len(text):,} characters long, over the limit of {MAX_LENGTH:,}; "
            "split it over steps (`set` an intermediate field)."
        )
        error.offset = None
        raise error
    depth, index, end = 0, 0, len(text)
    while index < end:
        char = text[index]
        if char in "'\"":
            quote = char * 3 if text.startswith(char * 3, index) else char
            index += len(quote)
            while index < end and not text.startswith(quote, index):
                index += 2 if text[index] == "\\" else 1
            index += len(quote)
            continue
        if char in "([{":
            depth += 1
            if depth > MAX_DEPTH:
                raise _too_deep(text, index)
        elif char in ")]}":
            depth -= 1
        index += 1


def _too_deep_at(tree: ast.AST) -> int | None:
    """Where (an offset into the text) the leftmost node nested deeper than `MAX_DEPTH` starts, or the start of
    the nearest node around it that has a place (an operator has none); -1 when that is not on the first line;
    None when the tree is within the limit. Measured without recursion, so any depth can be."""
    pending: list[tuple[ast.AST, int, int]] = [(tree, 1, 0)]
    while pending:
        node, depth, at = pending.pop()
        line = getattr(node, "lineno", None)
        if line is not None:
            at = _offset(node) if line == 1 else -1
        if depth > MAX_DEPTH:
            return at
        children = [c for c in ast.iter_child_nodes(node) if not isinstance(c, _MARKS)]
        pending.extend((child, depth + 1, at) for child in reversed(children))
    return None


# Nodes that only mark what their parent does (`+`, `and`, a read): leaves of no depth of their own.
_MARKS = (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop)


def _offset(node: ast.AST) -> int:
    return max(getattr(node, "col_offset", 1) - 1, 0)


def _error(message: str, offset: int | None) -> WorkflowExpressionError:
    error = WorkflowExpressionError(message)
    error.offset = offset
    return error


def _index(node: ast.expr) -> str | int | None:
    """The key of `[...]` when it is a quoted key or a whole number (`-1` too), else None."""
    match node:
        case ast.Constant(value=str() | int() as key) if not isinstance(key, bool):
            return key
        case ast.UnaryOp(op=ast.USub(), operand=ast.Constant(value=int() as number)) if not isinstance(number, bool):
            return -number
    return None


def path_of(node: ast.expr) -> tuple[str, tuple[str | int, ...]] | None:
    """`(root, parts)` when `node` is a path (`state.a.b`, `item[0]`, `state.tags[-1]`), else None."""
    parts: list[str | int] = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript):
            key = _index(node.slice)
            if key is None:
                return None
            parts.append(key)
            node = node.value
        elif isinstance(node, ast.Name) and node.id not in _CONSTANTS:
            return node.id, tuple(reversed(parts))
        else:
            return None


def _count(n: int) -> str:
    return {0: "no", 1: "one", 2: "two"}.get(n, str(n))


def _arity(signature: Signature) -> str:
    most, least = len(signature.params), signature.required
    if most == least:
        return f"{_count(most)} argument{'' if most == 1 else 's'}"
    if least == 0:
        return f"at most {_count(most)} argument{'' if most == 1 else 's'}"
    return f"{_count(least)} or {_count(most)} arguments"


def _listing() -> str:
    return f"Functions: {', '.join(FUNCTIONS)}; str methods: {', '.join(METHODS)}."


class _Checker(ast.NodeVisitor):
    """Refuses every node outside the grammar and notes the paths read."""

    def __init__(self, text: str, roots: set[str], fields: Collection[str], paths: list[PathRef]) -> None:
        self.text = text
        self.roots = roots
        self.fields = fields
        self.paths = paths
        self.local: set[str] = set()  # the variable of the comprehension being read
        self.in_comprehension = False

    def refuse(self, node: ast.AST, what: str, fix: str = "") -> None:
        raise _error(f"{what} in expression {self.text!r} is not part of the expression language.{fix}", _offset(node))

    def generic_visit(self, node: ast.AST) -> None:
        self.refuse(node, f"`{ast.unparse(node)}`" if isinstance(node, ast.expr) else type(node).__name__)

    def visit_Constant(self, node: ast.Constant) -> None:
        if not isinstance(node.value, str | int | float | bool | type(None)):
            self.refuse(node, f"The literal {node.value!r}")

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in _CONSTANTS or node.id in self.local:
            return
        if node.id not in self.roots:
            hint = (
                f" Did you mean `state.{node.id}`?"
                if node.id in self.fields
                else did_you_mean(node.id, self.roots | self.local)
                or f" Paths start with {' or '.join(sorted(self.roots))}."
            )
            raise _error(f"Unknown name {node.id!r} in expression {self.text!r}.{hint}", _offset(node))
        self.paths.append(PathRef(root=node.id, parts=(), offset=_offset(node)))

    def _path(self, node: ast.Attribute | ast.Subscript) -> None:
        self._private(node)
        found = path_of(node)
        if found is None:
            if isinstance(node, ast.Subscript):
                if _index(node.slice) is None:
                    self.refuse(node, f"The index `{ast.unparse(node)}`", " Index with a number or a quoted key.")
                self.visit(node.value)  # `state.text.split(',')[0]`: an index into a value
                return
            self.refuse(
                node, f"`{ast.unparse(node)}`", " Only fields of `state` (or of a loop's variable) can be read."
            )
            return
        root, parts = found
        self.visit_Name(ast.Name(id=root, col_offset=node.col_offset))
        if root not in self.local:
            self.paths[-1] = PathRef(root=root, parts=parts, offset=_offset(node))

    visit_Attribute = _path
    visit_Subscript = _path

    def _private(self, node: ast.expr) -> None:
        while isinstance(node, ast.Attribute | ast.Subscript):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
                raise _error(
                    f"`{ast.unparse(node)}` in expression {self.text!r} reads {node.attr!r}: names starting "
                    "with `_` cannot be read.",
                    _offset(node),
                )
            node = node.value

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
            if isinstance(op, ast.Is | ast.IsNot) and not _is_null(right):
                self.refuse(node, f"`{ast.unparse(node)}`", " `is` and `is not` compare with `null` only.")
        self.visit(node.left)
        for right in node.comparators:
            self.visit(right)

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Attribute):
            self.visit(node.func.value)  # left to right: `__import__('os').system()` is refused at `__import__`
            name, table, kind, other = node.func.attr, METHODS, "method", FUNCTIONS
            fix = f" `{name}` is a function: write `{name}(x)`."
            offset = max(node.func.end_col_offset or 0, 1) - 1 - len(name)
        elif isinstance(node.func, ast.Name):
            name, table, kind, other = node.func.id, FUNCTIONS, "function", METHODS
            fix = f" `{name}` is a method of str: write `x.{name}()`."
            offset = _offset(node)
        else:
            self.refuse(node, f"The call `{ast.unparse(node)}`", " Call a function by its name or a str method.")
            return
        signature = table.get(name)
        if signature is None:
            hint = fix if name in other else did_you_mean(name, table)
            raise _error(f"Unknown {kind} {name!r} in expression {self.text!r}.{hint} {_listing()}", offset)
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            self.refuse(node, f"`{ast.unparse(node)}`", f" Pass the arguments by position: `{signature.usage}`.")
        if not signature.required <= len(node.args) <= len(signature.params):
            self.refuse(node, f"`{ast.unparse(node)}`", f" `{name}` takes {_arity(signature)}: `{signature.usage}`.")
        for argument in node.args:
            self.visit(argument)

    def visit_List(self, node: ast.List) -> None:
        for element in node.elts:
            self.visit(element)

    def visit_Tuple(self, node: ast.Tuple) -> None:  # `(a, b)` reads as a list
        for element in node.elts:
            self.visit(element)

    def visit_Dict(self, node: ast.Dict) -> None:
        seen: set[str] = set()
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                self.refuse(value, f"`**{ast.unparse(value)}`", " Write each key of an object: `{'a': x, 'b': y}`.")
            elif not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                self.refuse(key, f"The key `{ast.unparse(key)}`", " An object's keys are quoted: `{'name': x}`.")
            elif key.value in seen:
                raise _error(f"The key {key.value!r} appears twice in expression {self.text!r}.", _offset(key))
            else:
                seen.add(key.value)
            self.visit(value)

    def visit_ListComp(self, node: ast.ListComp) -> None:
        shape = "`[x.name for x in state.items if x.ok]`"
        if self.in_comprehension:
            raise _error(
                f"Comprehensions cannot be nested in expression {self.text!r}: `{ast.unparse(node)}` is inside "
                "another. Use one comprehension, with one `for`.",
                _offset(node),
            )
        if len(node.generators) != 1:
            raise _error(
                f"The comprehension `{ast.unparse(node)}` in expression {self.text!r} has {len(node.generators)} "
                f"`for`s; one is allowed: {shape}.",
                _offset(node),
            )
        generator = node.generators[0]
        if generator.is_async:
            self.refuse(node, "`async for`")
        if not isinstance(generator.target, ast.Name):
            target = ast.unparse(generator.target)
            self.refuse(generator.target, f"The loop variable `{target}`", f" Use one name: {shape}.")
            return
        if len(generator.ifs) > 1:
            raise _error(
                f"The comprehension `{ast.unparse(node)}` in expression {self.text!r} has {len(generator.ifs)} "
                "`if`s; join the conditions with `and` (`[x for x in xs if a and b]`).",
                _offset(node),
            )
        name = generator.target.id
        if name in self.roots or name in _CONSTANTS or name.startswith("_"):
            why = "starts with `_`" if name.startswith("_") else "is taken"
            raise _error(
                f"The loop variable {name!r} in expression {self.text!r} {why}; name it otherwise (`x`).",
                _offset(generator.target),
            )
        self.in_comprehension = True
        self.visit(generator.iter)
        self.local.add(name)
        for condition in generator.ifs:
            self.visit(condition)
        self.visit(node.elt)
        self.local.discard(name)
        self.in_comprehension = False

    def _only_lists(self, node: ast.expr) -> None:
        self.refuse(node, f"`{ast.unparse(node)}`", " Only list comprehensions are: `[x.name for x in state.items]`.")

    visit_SetComp = _only_lists
    visit_DictComp = _only_lists
    visit_GeneratorExp = _only_lists

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self.visit(node.test)
        self.visit(node.body)
        self.visit(node.orelse)


def _is_null(node: ast.expr) -> bool:
    return (isinstance(node, ast.Constant) and node.value is None) or (
        isinstance(node, ast.Name) and node.id in ("null", "None")
    )


def evaluate(node: ast.expr, env: Mapping[str, Any], *, text: str | None = None) -> Any:
    """The value of a checked tree on `env`; raises `ExpressionRuntimeError` for a value that does not fit.

    `text` names the expression in messages (its unparsed tree if not given).
    """
    run = _Evaluation(node, text or ast.unparse(node))
    try:
        return run.value(node, env)
    except ExpressionRuntimeError:
        raise
    except (TypeError, ZeroDivisionError, ValueError, OverflowError) as exc:
        raise ExpressionRuntimeError(f"`{run.text}` failed: {exc}") from None


def _size(value: Any) -> int:
    return len(value) if isinstance(value, str | list | tuple | dict) else 0


def _what(value: Any) -> str:
    if value is None:
        return "null"
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _number(value: Any) -> bool:
    return isinstance(value, int | float)


class _Evaluation:
    """One evaluation of a tree: the work done so far, and the whole expression to name in errors."""

    def __init__(self, tree: ast.expr, text: str) -> None:
        self.tree = tree
        self.text = text
        self.work = 0

    def named(self, node: ast.expr) -> str:
        if node is self.tree:
            return f"`{self.text}`"
        return f"`{ast.unparse(node)}` (in `{self.text}`)"

    def charge(self, units: int) -> None:
        self.work += units
        if self.work > MAX_WORK:
            raise ExpressionRuntimeError(
                f"`{self.text}` needs more than {MAX_WORK:,} units of work, the limit of one evaluation; "
                "go through fewer or shorter values"
            )

    def within(self, node: ast.expr, size: int, limit: int, what: str, unit: str) -> None:
        """Refuse to make `what` of `size` `unit` when that is over `limit`; else count the work of making it."""
        if size > limit:
            raise ExpressionRuntimeError(
                f"{self.named(node)} would make {what} of {size:,} {unit}, over the limit of {limit:,}"
            )
        self.charge(size)

    def whole(self, node: ast.expr, bits: int) -> None:
        """Refuse to make a whole number of `bits` bits when that may be over `MAX_INT_DIGITS` digits."""
        if bits > _MAX_INT_BITS:
            digits = math.floor((bits - 1) * math.log10(2)) + 1
            raise ExpressionRuntimeError(
                f"{self.named(node)} would make a whole number of about {digits:,} digits, over the limit of "
                f"{MAX_INT_DIGITS:,}"
            )

    def sized(self, node: ast.expr, value: Any) -> Any:
        """`value`, unless it is a str or list over the limits."""
        if isinstance(value, str):
            self.within(node, len(value), MAX_TEXT, "a str", "characters")
        elif isinstance(value, list):
            self.within(node, len(value), MAX_ITEMS, "a list", "elements")
        return value

    def value(self, node: ast.expr, env: Mapping[str, Any]) -> Any:
        self.charge(1)
        match node:
            case ast.Constant(value=value):
                return value
            case ast.Name(id=name):
                return _CONSTANTS[name] if name in _CONSTANTS else env[name]
            case ast.Attribute() | ast.Subscript() if (found := path_of(node)) is not None:
                return read_path(env[found[0]], found[1], found[0])
            case ast.Subscript(value=owner, slice=index):
                key = _index(index)
                assert key is not None  # the checker refused other indexes
                return read_path(self.value(owner, env), (key,), ast.unparse(owner))
            case ast.BoolOp(op=bool_op, values=values):
                if isinstance(bool_op, ast.And):
                    return all(bool(self.value(v, env)) for v in values)
                return any(bool(self.value(v, env)) for v in values)
            case ast.UnaryOp(op=unary_op, operand=operand):
                value = self.value(operand, env)
                if isinstance(unary_op, ast.Not):
                    return not value
                if not _number(value):
                    raise ExpressionRuntimeError(f"{self.named(node)}: `-` needs a number, not {_what(value)}")
                return -value if isinstance(unary_op, ast.USub) else +value
            case ast.BinOp():
                return self.binary(node, env)
            case ast.Compare(left=left, ops=ops, comparators=comparators):
                current = self.value(left, env)
                for cmp_op, right_node in zip(ops, comparators, strict=True):
                    right_value = self.value(right_node, env)
                    self.charge(_size(right_value) if isinstance(cmp_op, ast.In | ast.NotIn) else 0)
                    if not _COMPARE[type(cmp_op)](current, right_value):
                        return False
                    current = right_value
                return True
            case ast.Call():
                return self.call(node, env)
            case ast.List(elts=elements) | ast.Tuple(elts=elements):
                return [self.value(e, env) for e in elements]
            case ast.Dict(keys=keys, values=values):
                return {
                    typing.cast(ast.Constant, k).value: self.value(v, env) for k, v in zip(keys, values, strict=True)
                }
            case ast.ListComp():
                return self.comprehension(node, env)
            case ast.IfExp(test=test, body=body, orelse=orelse):
                return self.value(body, env) if self.value(test, env) else self.value(orelse, env)
        raise ExpressionRuntimeError(f"`{ast.unparse(node)}` is not part of the expression language")

    def binary(self, node: ast.BinOp, env: Mapping[str, Any]) -> Any:
        left, right = self.value(node.left, env), self.value(node.right, env)
        symbol = SYMBOLS[type(node.op)]
        if _number(left) and _number(right):
            if isinstance(node.op, ast.Mult) and isinstance(left, int) and isinstance(right, int):
                self.whole(node, left.bit_length() + right.bit_length())
            result = _BINARY[type(node.op)](left, right)
            if isinstance(result, int) and result.bit_length() > _MAX_INT_BITS:  # `+`, `-`: one bit more at most
                self.whole(node, result.bit_length())
            return result
        if isinstance(node.op, ast.Add) and isinstance(left, str) and isinstance(right, str):
            self.within(node, len(left) + len(right), MAX_TEXT, "a str", "characters")
            return left + right
        if isinstance(node.op, ast.Add) and isinstance(left, list | tuple) and isinstance(right, list | tuple):
            self.within(node, len(left) + len(right), MAX_ITEMS, "a list", "elements")
            return [*left, *right]
        what = "joins two str or two lists, or adds numbers" if symbol == "+" else "needs numbers"
        raise ExpressionRuntimeError(
            f"{self.named(node)}: `{symbol}` {what}; got {_what(left)} and {_what(right)}",
            missing=left is None or right is None,
        )

    def call(self, node: ast.Call, env: Mapping[str, Any]) -> Any:
        receiver = self.value(node.func.value, env) if isinstance(node.func, ast.Attribute) else None
        arguments = [self.value(a, env) for a in node.args]
        for argument, value in zip(node.args, arguments, strict=True):
            if value is None and not (isinstance(node.func, ast.Name) and node.func.id == "str"):
                raise ExpressionRuntimeError(f"{self.named(node)}: `{ast.unparse(argument)}` is null", missing=True)
        if isinstance(node.func, ast.Attribute):
            name = node.func.attr
            if not isinstance(receiver, str):
                shown = ast.unparse(node.func.value)
                raise ExpressionRuntimeError(
                    f"{self.named(node)}: `{shown}` is {_what(receiver)}, not a str, so `{name}()` cannot be called "
                    "on it"
                )
            self.charge(len(receiver) + sum(_size(a) for a in arguments))
            self.before(node, name, receiver, arguments)
            run = METHODS[name].run
            arguments.insert(0, receiver)
        else:
            name = typing.cast(ast.Name, node.func).id
            self.charge(sum(_size(a) for a in arguments))
            run = FUNCTIONS[name].run
        try:
            result = run(*arguments)
        except (TypeError, ValueError, OverflowError) as exc:
            raise ExpressionRuntimeError(f"{self.named(node)} failed: {exc}") from None
        return self.sized(node, result)

    def before(self, node: ast.Call, name: str, receiver: str, arguments: list[Any]) -> None:
        """Refuse a `replace` or `join` whose result would be over `MAX_TEXT`, before making it."""
        size = 0
        if name == "replace" and all(isinstance(a, str) for a in arguments):
            old, new = arguments
            found = receiver.count(old) if old else len(receiver) + 1
            size = len(receiver) + found * (len(new) - len(old))
        elif name == "join" and arguments and isinstance(arguments[0], list | tuple):
            parts = arguments[0]
            size = sum(_size(p) for p in parts) + len(receiver) * max(len(parts) - 1, 0)
        if size > MAX_TEXT:
            self.within(node, size, MAX_TEXT, "a str", "characters")

    def comprehension(self, node: ast.ListComp, env: Mapping[str, Any]) -> list[Any]:
        generator = node.generators[0]
        name = typing.cast(ast.Name, generator.target).id
        items = self.value(generator.iter, env)
        if not isinstance(items, list | tuple):
            raise ExpressionRuntimeError(
                f"{self.named(node)}: `{ast.unparse(generator.iter)}` is {_what(items)}, not a list"
            )
        found: list[Any] = []
        for item in items:  # once through the list: at most its length
            scope = {**env, name: item}
            if generator.ifs and not self.value(generator.ifs[0], scope):
                continue
            found.append(self.value(node.elt, scope))
            if len(found) > MAX_ITEMS:
                self.within(node, len(found), MAX_ITEMS, "a list", "elements")
        return found


def read_path(value: Any, parts: tuple[str | int, ...], root: str) -> Any:
    """Follow `parts` from `value` (fields of a model, keys of a mapping, list indexes)."""
    walked = root
    for part in parts:
        if value is None:
            raise ExpressionRuntimeError(f"`{walked}` is null, so `{part}` cannot be read from it", missing=True)
        if isinstance(value, BaseModel) and isinstance(part, str):
            if part not in value.__dict__:
                fields = list(type(value).model_fields)
                if part in fields:
                    raise ExpressionRuntimeError(
                        f"`{walked}.{part}` has no value yet: no step has written it", missing=True
                    )
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
NullRead = Callable[[str, int], None]
_ORDERED = ({"number"}, {"str"}, {"date"}, {"datetime"})


def expression_type(expression: Expression, path_type: PathType, *, on_null: NullRead | None = None) -> Any:
    """The type of `expression`, given the type of each path it reads; raises `ExpressionTypeError`.

    `path_type` receives each `PathRef` and returns its annotation (or raises the caller's error). With
    `on_null`, a value that may be null where it cannot be (a str method's receiver, a function's argument,
    a comprehension's list) is told to it (a message and an offset), once the paths' types are known
    to say what is written there; without it, the null is left to the run (as for arithmetic).
    """
    by_offset = {ref.offset: ref for ref in expression.paths}
    return _Typer(expression, by_offset, path_type, on_null).infer(expression.tree)


class _Typer:
    def __init__(
        self, expression: Expression, paths: dict[int, PathRef], path_type: PathType, on_null: NullRead | None
    ) -> None:
        self.expression = expression
        self.paths = paths
        self.path_type = path_type
        self.on_null = on_null
        self.known: frozenset[str] = frozenset()  # the paths known not to be null at the node being typed
        self.scope: dict[str, Any] = {}  # a comprehension's variable and its type

    def fail(self, node: ast.AST, message: str) -> ExpressionTypeError:
        return ExpressionTypeError(
            f"In expression {self.expression.text!r}: {message}", self.expression.offset_of(node)
        )

    def label(self, node: ast.expr, annotation: Any) -> str:
        return f"`{ast.unparse(node)}` ({describe(annotation)})"

    def knowing(self, node: ast.expr, known: frozenset[str]) -> Any:
        """The type of `node` where the paths `known` are also known not to be null."""
        saved = self.known
        self.known = saved | known
        try:
            return self.infer(node)
        finally:
            self.known = saved

    def null(self, node: ast.expr, annotation: Any, consequence: str, *, shown: str | None = None) -> None:
        """Tell `on_null` that `node` (a path `shown`, when given) may be null where that fails the run."""
        if self.on_null is None or not may_be_none(annotation):
            return
        path = shown is not None or path_of(node) is not None
        shown = shown or ast.unparse(node)
        test = f"test it first (`{shown} is not null and ...`)" if path else "test it first"
        self.on_null(
            f"In expression {self.expression.text!r}: `{shown}` ({describe(annotation)}) may be null there, and "
            f"{consequence}. Give it a default, write it on every path before, or {test}.",
            self.expression.offset_of(node),
        )

    def infer(self, node: ast.expr) -> Any:
        match node:
            case ast.Constant(value=value):
                return NONE if value is None else type(value)
            case ast.Name() | ast.Attribute() | ast.Subscript() if (found := path_of(node)) is not None:
                root, parts = found
                if root in self.scope:
                    annotation = self.local_path(node, root, parts)
                else:
                    annotation = self.path_type(self.paths[self.expression.offset_of(node)])
                text = PathRef(root=root, parts=parts, offset=0).text
                return strip_none(annotation) if text in self.known else annotation
            case ast.Name(id=name):  # true/false/null
                return NONE if name in ("null", "None") else bool
            case ast.Subscript(value=owner, slice=index):
                return self.index(node, owner, index)
            case ast.BoolOp(op=bool_op, values=operands):
                known: frozenset[str] = frozenset()
                for operand in operands:
                    self.knowing(operand, known)
                    known |= not_null_when(operand, isinstance(bool_op, ast.And))
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
            case ast.Call(func=ast.Attribute(value=receiver, attr=name), args=arguments):
                return self.method(node, name, receiver, arguments)
            case ast.Call(func=ast.Name(id=name), args=arguments):
                return self.function(node, name, arguments)
            case ast.List(elts=elements) | ast.Tuple(elts=elements):
                types = [self.infer(e) for e in elements]
                return list.__class_getitem__(union(*types) if types else Any)
            case ast.Dict(keys=keys, values=values):
                return object_type(
                    tuple(
                        (typing.cast(ast.Constant, k).value, self.infer(v)) for k, v in zip(keys, values, strict=True)
                    )
                )
            case ast.ListComp():
                return self.comprehension(node)
            case ast.IfExp(test=test, body=body, orelse=orelse):
                self.infer(test)
                return union(
                    self.knowing(body, not_null_when(test, True)), self.knowing(orelse, not_null_when(test, False))
                )
        raise self.fail(node, f"`{ast.unparse(node)}` is not part of the expression language.")

    def local_path(self, node: ast.expr, root: str, parts: tuple[str | int, ...]) -> Any:
        """The type of a path from a comprehension's variable (`f.path` in `[f.path for f in state.files]`)."""
        current, walked = self.scope[root], root
        for part in parts:
            current = strip_none(current) if walked in self.known else current
            self.null(node, current, f"`{part}` cannot be read from null", shown=walked)
            try:
                current = walk(current, part)
            except LookupError as exc:
                hint = did_you_mean(str(part), field_names(current) or [])
                raise self.fail(node, f"`{ast.unparse(node)}` cannot be read: {exc}.{hint}") from None
            walked += f"[{part}]" if isinstance(part, int) else f".{part}"
        return current

    def index(self, node: ast.Subscript, owner: ast.expr, index: ast.expr) -> Any:
        key = _index(index)
        assert key is not None  # the checker refused other indexes
        owner_type = self.infer(owner)
        self.null(owner, owner_type, f"`[{key!r}]` cannot be read from null")
        try:
            return walk(owner_type, key)
        except LookupError as exc:
            raise self.fail(node, f"`{ast.unparse(node)}` cannot be read: {exc}.") from None

    def arguments(self, node: ast.Call, shown: str, signature: Signature, arguments: list[ast.expr]) -> list[Any]:
        """The types of a call's arguments, each checked against its parameter."""
        found: list[Any] = []
        for argument, param in zip(arguments, signature.params, strict=False):
            annotation = self.infer(argument)
            found.append(annotation)
            if "any" in param.kinds:
                continue
            self.null(argument, annotation, f"`{shown}` cannot take null")
            if not kinds(strip_none(annotation)) <= param.kinds | {"any"}:
                raise self.fail(node, f"`{shown}` needs {param.shown}, not {self.label(argument, annotation)}.")
        return found

    def function(self, node: ast.Call, name: str, arguments: list[ast.expr]) -> Any:
        signature = FUNCTIONS[name]
        types = self.arguments(node, name, signature, arguments)
        if name in ("int", "float") and isinstance(arguments[0], ast.Constant) and isinstance(arguments[0].value, str):
            try:
                signature.run(arguments[0].value)
            except ValueError:
                raise self.fail(
                    node, f"`{ast.unparse(node)}` can only fail: {arguments[0].value!r} is not {_NUMBERS[name]}."
                ) from None
        if name == "round" and len(types) == 2 and float in members(strip_none(types[1])):
            raise self.fail(node, f"`round` needs a whole number of digits, not {self.label(arguments[1], types[1])}.")
        return signature.result(types)

    def method(self, node: ast.Call, name: str, receiver: ast.expr, arguments: list[ast.expr]) -> Any:
        signature = METHODS[name]
        owner = self.infer(receiver)
        self.null(receiver, owner, f"`{name}()` cannot be called on null")
        owner_kinds = kinds(strip_none(owner))
        if not owner_kinds <= {"str", "any"}:
            shown = ast.unparse(receiver)
            if name == "join" and owner_kinds == {"list"}:
                separator = ast.unparse(arguments[0]) if arguments else "', '"
                hint = f" The separator comes first: `{separator}.join({shown})`."
            elif owner_kinds <= {"number", "bool"}:
                hint = f" Convert it first: `str({shown}).{name}({'...' if signature.params else ''})`."
            else:
                hint = ""
            raise self.fail(
                node, f"`{name}()` is a method of str, and {self.label(receiver, owner)} is not a str.{hint}"
            )
        types = self.arguments(node, f".{name}()", signature, arguments)
        if name == "join":
            element = item_type(strip_none(types[0]))
            if element is not None and not kinds(element) <= {"str", "any"}:
                shown = ast.unparse(arguments[0])
                raise self.fail(
                    node,
                    f"`.join()` needs a list of str, not {self.label(arguments[0], types[0])}; convert each: "
                    f"`[str(x) for x in {shown}]`.",
                )
        return signature.result(types)

    def comprehension(self, node: ast.ListComp) -> Any:
        generator = node.generators[0]
        name = typing.cast(ast.Name, generator.target).id
        source = self.infer(generator.iter)
        self.null(generator.iter, source, "a comprehension cannot go through null")
        element = item_type(strip_none(source))
        if element is None:
            raise self.fail(node, f"`for {name} in` needs a list, not {self.label(generator.iter, source)}.")
        saved = self.scope
        self.scope = {**saved, name: element}
        try:
            known: frozenset[str] = frozenset()
            if generator.ifs:
                self.infer(generator.ifs[0])
                known = not_null_when(generator.ifs[0], True)
            return list.__class_getitem__(self.knowing(node.elt, known))
        finally:
            self.scope = saved

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
        if isinstance(node.op, ast.Add) and left_kinds == right_kinds == {"str"}:
            return str
        if isinstance(node.op, ast.Add) and left_kinds == right_kinds == {"list"}:
            return list.__class_getitem__(union(item_type(left), item_type(right)))
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


_NUMBERS = {"int": "a whole number", "float": "a number"}


def _pairs(node: ast.Compare) -> list[tuple[ast.expr, ast.cmpop, ast.expr]]:
    operands = [node.left, *node.comparators]
    return [(operands[i], op, operands[i + 1]) for i, op in enumerate(node.ops)]


def not_null_when(node: ast.expr, truth: bool) -> frozenset[str]:
    """The paths (as text, `state.obj`) known not to be null when `node` is `truth`.

    `x is not null` (or `x != null`) true, `x is null` false, `x` itself true (null is false), and their
    combinations with `and`, `or`, `not`.
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
        case ast.Name() | ast.Attribute() | ast.Subscript() if truth and (found := path_of(node)) is not None:
            return frozenset({PathRef(root=found[0], parts=found[1], offset=0).text})
    return frozenset()


def _null_test(path: ast.expr, other: ast.expr) -> str | None:
    found = path_of(path)
    if found is None or not _is_null(other):
        return None
    return PathRef(root=found[0], parts=found[1], offset=0).text


def narrowed(expression: Expression) -> dict[int, frozenset[str]]:
    """For each path the expression reads (by offset), the paths known not to be null where it is read.

    `and`, `or`, `if ... else` and a comprehension's `if` evaluate before what they guard, so in
    `state.obj is not null and state.obj.score > 3` the second operand only runs when `state.obj` holds a value.
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
            case ast.Call(func=function, args=arguments):
                if isinstance(function, ast.Attribute):
                    visit(function.value, known)
                for argument in arguments:
                    visit(argument, known)
            case ast.ListComp(elt=element, generators=[generator]):
                visit(generator.iter, known)
                for condition in generator.ifs:
                    visit(condition, known)
                    known = known | not_null_when(condition, True)
                visit(element, known)
            case ast.Name() | ast.Attribute() | ast.Subscript() if path_of(node) is not None:
                found[expression.offset_of(node)] = known
            case _:
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, ast.expr):
                        visit(child, known)

    visit(expression.tree, frozenset())
    return found
