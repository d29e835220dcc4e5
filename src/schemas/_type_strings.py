"""Type strings: the small language configuration files use to declare field and parameter types.

`str`, `int`, `float`, `bool`, `list[T]`, `dict[K, V]`, `T?`, literals (`"a" | "b"`), references to
named schemas and unions are parsed by a tokenizer and a recursive-descent `Parser` into immutable
type expressions, which render back to canonical text and become Python annotations.

JSON Schema's type names are aliases, accepted wherever a type string is: `string`, `integer`,
`number`, `boolean` (`str`, `int`, `float`, `bool`), `array` (any list, as bare `list`) and `object`
(any JSON object, as bare `dict`; with `fields:` under a schema field, a nested object). A name that is
neither a type nor a known schema but looks like a type (`integr`) is refused with the type it is near
(`near_type_names`).
"""

from __future__ import annotations

import contextlib
import datetime
import math
import re
import typing
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NoReturn, TypeAlias

import attrs
from atomtask.errors import SchemaError, SourceLocation, near_names

__all__ = [
    "BUILTIN_TYPE_NAMES",
    "GENERICS",
    "SCALAR_ALIASES",
    "SCALAR_ANNOTATIONS",
    "TYPE_WORDS",
    "DictType",
    "ListType",
    "LiteralType",
    "LiteralValue",
    "OptionalType",
    "Parser",
    "ScalarType",
    "SchemaRef",
    "TypeExpr",
    "UnionType",
    "is_optional",
    "near_type_names",
    "parse_type",
    "quote",
    "referenced_names",
    "render_value",
    "strip_optional",
    "to_annotation",
]

LiteralValue: TypeAlias = str | int | float | bool

SCALAR_ANNOTATIONS: dict[str, Any] = {"str": str, "int": int, "float": float, "bool": bool, "any": Any}
SCALAR_ANNOTATIONS |= {"date": datetime.date, "datetime": datetime.datetime}
SCALAR_ALIASES = {name: name for name in SCALAR_ANNOTATIONS} | {
    "string": "str", "integer": "int", "number": "float", "boolean": "bool"
}  # fmt: skip
GENERICS = ("list", "dict", "literal")
#: JSON Schema's names of the containers, each the bare container it stands for (any item, any value).
_CONTAINER_ALIASES = {"array": "list", "object": "dict"}

#: Every word that names a builtin type by itself, and the canonical type it names.
TYPE_WORDS: dict[str, str] = SCALAR_ALIASES | {"list": "list", "dict": "dict"} | _CONTAINER_ALIASES

#: Names a schema may not take: every word the type language gives a meaning of its own.
BUILTIN_TYPE_NAMES: frozenset[str] = frozenset(TYPE_WORDS) | frozenset(GENERICS)


def near_type_names(name: str) -> list[str]:
    """The builtin types `name` looks like a misspelling of, best first (`integr` -> `['int']`).

    The canonical name when it is near too (`integr` is near `integer` and `int`: `int`), else the
    alias that is (`nubmer` -> `number`); `literal` alone (it needs values) is never suggested.
    """
    close = near_names(name, TYPE_WORDS)
    return list(dict.fromkeys(TYPE_WORDS[word] if TYPE_WORDS[word] in close else word for word in close))


def _literal_key(values: tuple[LiteralValue, ...]) -> tuple[tuple[str, LiteralValue], ...]:
    # `1 == True == 1.0` in Python; literal values of different types are different values.
    return tuple((type(v).__name__, v) for v in values)


@attrs.frozen(kw_only=True)
class ScalarType:
    """A builtin scalar: `str`, `int`, `float`, `bool`, `any`, `date` or `datetime` (canonical names)."""

    name: str

    def __str__(self) -> str:
        return self.name


@attrs.frozen(kw_only=True)
class ListType:
    """`list[item]`."""

    item: TypeExpr

    def __str__(self) -> str:
        return f"list[{self.item}]"


@attrs.frozen(kw_only=True)
class DictType:
    """`dict[key, value]`; the key is `str`, `int` or a literal of them."""

    key: TypeExpr
    value: TypeExpr

    def __str__(self) -> str:
        return f"dict[{self.key}, {self.value}]"


@attrs.frozen(kw_only=True)
class OptionalType:
    """`inner?`: the inner type or None."""

    inner: TypeExpr

    def __str__(self) -> str:
        inner = str(self.inner)
        return f"({inner})?" if isinstance(self.inner, UnionType) else f"{inner}?"


@attrs.frozen(kw_only=True)
class LiteralType:
    """`literal[...]`: exactly one of the given values."""

    values: tuple[LiteralValue, ...] = attrs.field(eq=_literal_key)

    def __str__(self) -> str:
        return "literal[" + ", ".join(render_value(v) for v in self.values) + "]"


@attrs.frozen(kw_only=True)
class UnionType:
    """`A | B | ...`: two or more alternatives (never itself a direct member of a union)."""

    options: tuple[TypeExpr, ...]

    def __str__(self) -> str:
        return " | ".join(str(o) for o in self.options)


@attrs.frozen(kw_only=True)
class SchemaRef:
    """A reference to a named schema; `span` is its (start, end) offset in the parsed text."""

    name: str
    span: tuple[int, int] | None = attrs.field(default=None, eq=False)

    def __str__(self) -> str:
        return self.name


TypeExpr: TypeAlias = ScalarType | ListType | DictType | OptionalType | LiteralType | UnionType | SchemaRef


def render_value(value: LiteralValue) -> str:
    """A literal value as a type string writes it (`true`, `"text"`, `2.5`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return quote(value)
    return repr(value)


def quote(text: str) -> str:
    """`text` as a double-quoted type-string literal, escaped."""
    escaped = "".join(_ESCAPE_OUT.get(c, c if c >= " " else f"\\u{ord(c):04x}") for c in text)
    return f'"{escaped}"'


_ESCAPE_OUT = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


_NONE_WORDS = frozenset({"None", "none", "null", "NoneType"})
_BOOL_WORDS = {"true": True, "false": False, "True": True, "False": False}

_MAX_DEPTH = 32


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


_ESCAPE_IN = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/", "\\": "\\", '"': '"', "'": "'"}


# ---------------------------------------------------------------------------------------------
# Tokens


@attrs.frozen(kw_only=True)
class _Token:
    kind: str  # "name" | "string" | "number" | "punct" | "end"
    text: str
    start: int
    end: int


_TOKEN_RE = re.compile(
    r"""(?P<ws>\s+)
      |(?P<name>[^\W\d]\w*)
      |(?P<number>[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][-+]?[0-9]+)?)
      |(?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
      |(?P<punct>[\[\](),|?])""",
    re.VERBOSE | re.DOTALL,
)


def _describe(token: _Token) -> str:
    return "the end" if token.kind == "end" else repr(_clip(token.text, 40))


class Parser:
    """Recursive descent over the token list; every failure raises `SchemaError` via `fail`.

    `nested_objects`: the word `object` is a `SchemaRef` to be replaced by a nested schema (a schema
    field with `fields:` under it) instead of any JSON object.
    """

    def __init__(self, text: str, location: SourceLocation | None, *, nested_objects: bool = False) -> None:
        self.text = text
        self.location = location
        self.nested_objects = nested_objects
        self.tokens = self._tokenize()
        self.pos = 0
        self.depth = 0

    def fail(self, message: str, at: int, *, fixes: Iterable[str] = ()) -> NoReturn:
        fixes = list(dict.fromkeys(fixes))
        suffix = ""
        if fixes:
            suffix = " Did you mean " + " or ".join(repr(_clip(f)) for f in fixes) + "?"
        raise SchemaError(
            f"Invalid type {_clip(self.text)!r} at column {at + 1}: {message}.{suffix}",
            location=self.location,
            suggestions=fixes,
        )

    def _tokenize(self) -> list[_Token]:
        tokens: list[_Token] = []
        pos = 0
        while pos < len(self.text):
            match = _TOKEN_RE.match(self.text, pos)
            if match is None:
                char = self.text[pos]
                if char in "\"'":
                    self.fail(f"unterminated string: add the closing {char}", pos)
                self.fail(f"unexpected character {char!r}", pos)
            kind = match.lastgroup or "ws"
            if kind != "ws":
                tokens.append(_Token(kind=kind, text=match.group(), start=pos, end=match.end()))
            pos = match.end()
        tokens.append(_Token(kind="end", text="", start=len(self.text), end=len(self.text)))
        return tokens

    def peek(self) -> _Token:
        return self.tokens[self.pos]

    def advance(self) -> _Token:
        token = self.tokens[self.pos]
        if token.kind != "end":
            self.pos += 1
        return token

    def at_punct(self, char: str) -> bool:
        token = self.peek()
        return token.kind == "punct" and token.text == char

    def close(self, opener: _Token) -> _Token:
        """Consume the bracket that closes `opener`, or explain why it is not there."""
        want = "]" if opener.text == "[" else ")"
        token = self.peek()
        if token.kind == "punct" and token.text == want:
            return self.advance()
        where = f"the {opener.text!r} at column {opener.start + 1}"
        if token.kind == "end":
            self.fail(f"missing {want!r} to close {where}", token.start, fixes=[self.text + want])
        if token.kind == "punct" and token.text in ")]":
            self.fail(f"{token.text!r} does not close {where}; expected {want!r}", token.start)
        self.fail(f"expected {want!r} to close {where}, got {_describe(token)}", token.start)

    def parse(self) -> TypeExpr:
        if self.peek().kind == "end":
            self.fail("the type is empty; write e.g. `str`, `list[int]` or a schema name", 0)
        expr = self.union()
        token = self.peek()
        if token.kind != "end":
            if token.kind == "punct" and token.text in ")]":
                self.fail(f"unmatched {token.text!r}", token.start)
            self.fail(
                f"unexpected {_describe(token)} after a complete type; combine alternatives with `|`",
                token.start,
            )
        return expr

    def union(self) -> TypeExpr:
        start = self.peek().start
        none_word: _Token | None = None
        options: list[TypeExpr] = []
        while True:
            token = self.peek()
            after = self.tokens[min(self.pos + 1, len(self.tokens) - 1)]
            beside_bar = bool(options) or (after.kind == "punct" and after.text == "|")
            if token.kind == "name" and token.text in _NONE_WORDS and none_word is None and beside_bar:
                none_word = self.advance()  # `T | None`: reported below with the `T?` rewrite
            else:
                options.append(self.postfix())
            if not self.at_punct("|"):
                break
            self.advance()
        flat: list[TypeExpr] = []
        for option in options:
            flat.extend(option.options if isinstance(option, UnionType) else [option])
        expr = flat[0] if len(flat) == 1 else UnionType(options=tuple(flat))
        if none_word is not None:
            fix = self.text[:start] + str(OptionalType(inner=expr)) + self.text[self.tokens[self.pos - 1].end :]
            self.fail(f"write `T?` rather than `T | {none_word.text}`", none_word.start, fixes=[fix])
        return expr

    def postfix(self) -> TypeExpr:
        expr = self.atom()
        while self.at_punct("?"):
            self.advance()
            if not isinstance(expr, OptionalType):
                expr = OptionalType(inner=expr)
        return expr

    def atom(self) -> TypeExpr:
        token = self.advance()
        if token.kind == "punct" and token.text == "(":
            with self.nested(token):
                if self.at_punct(")"):
                    self.fail("empty parentheses", token.start)
                inner = self.union()
                self.close(token)
            return inner
        if token.kind == "name":
            if self.at_punct("["):
                return self.generic(token)
            return self.word(token)
        if token.kind == "string":
            fix = f"literal[{token.text}]"
            self.fail(
                "a quoted value is not a type; put values in `literal[...]`",
                token.start,
                fixes=[self.text[: token.start] + fix + self.text[token.end :]],
            )
        if token.kind == "number":
            self.fail("a number is not a type; put values in `literal[...]`", token.start)
        self.fail(f"expected a type, got {_describe(token)}", token.start)

    @contextlib.contextmanager
    def nested(self, token: _Token) -> Iterator[None]:
        """Bound bracket nesting, so hostile input cannot exhaust the stack."""
        self.depth += 1
        try:
            if self.depth > _MAX_DEPTH:
                self.fail(f"brackets are nested more than {_MAX_DEPTH} deep", token.start)
            yield
        finally:
            self.depth -= 1

    def word(self, token: _Token) -> TypeExpr:
        name = token.text
        if name in SCALAR_ALIASES:
            return ScalarType(name=SCALAR_ALIASES[name])
        if name == "object" and self.nested_objects:
            return SchemaRef(name=name, span=(token.start, token.end))
        name = _CONTAINER_ALIASES.get(name, name)
        if name == "list":  # a list of anything, as configuration-first users write it
            return ListType(item=ScalarType(name="any"))
        if name == "dict":
            return DictType(key=ScalarType(name="str"), value=ScalarType(name="any"))
        if name == "optional":
            self.fail("`optional` is not a type; write `T?` for an optional `T` (e.g. `str?`)", token.start)
        if name == "literal":
            self.fail('`literal` needs values, e.g. `literal["a", "b"]`', token.start)
        if name in _NONE_WORDS:
            self.fail(f"{name!r} is not a type here; write `T?` for an optional `T` (e.g. `str?`)", token.start)
        if name in _BOOL_WORDS:
            self.fail(f"{name!r} is a value, not a type; write `literal[{name.lower()}]`", token.start)
        return SchemaRef(name=name, span=(token.start, token.end))

    def generic(self, head: _Token) -> TypeExpr:
        opener = self.advance()
        with self.nested(opener):
            if head.text == "literal":
                values = self.literal_values(opener)
                return LiteralType(values=values)
            if head.text not in ("list", "dict"):
                self.bad_generic(head, opener)
            if self.at_punct("]"):
                example = "list[str]" if head.text == "list" else "dict[str, int]"
                self.fail(f"`{head.text}[]` is empty; give the type arguments, e.g. `{example}`", opener.start)
            key_start = self.peek().start
            args = [self.union()]
            while self.at_punct(","):
                self.advance()
                args.append(self.union())
            self.close(opener)
        if head.text == "list":
            if len(args) != 1:
                joined = " | ".join(str(a) for a in args)
                self.fail(
                    f"`list` takes one item type, got {len(args)}; for mixed items write `list[{joined}]`",
                    head.start,
                    fixes=[self.text[: head.start] + f"list[{joined}]" + self.text[self.tokens[self.pos - 1].end :]],
                )
            return ListType(item=args[0])
        if len(args) != 2:
            self.fail(
                f"`dict` takes two type arguments, key and value (e.g. `dict[str, int]`), got {len(args)}",
                head.start,
            )
        self.check_key(args[0], key_start)
        return DictType(key=args[0], value=args[1])

    def bad_generic(self, head: _Token, opener: _Token) -> NoReturn:
        """A name followed by `[` that is not `list`, `dict` or `literal`: say what was meant."""
        name = head.text
        near = [_CONTAINER_ALIASES[name]] if name in _CONTAINER_ALIASES else near_names(name, GENERICS)
        fixes = [self.text[: head.start] + g + self.text[head.end :] for g in near]
        args, end = self.try_args()
        rest = self.text[end:] if end is not None else ""
        if args is not None and name.lower() == "optional" and len(args) == 1:
            inner = str(OptionalType(inner=args[0]))
            fixes.insert(0, self.text[: head.start] + inner + rest)
            self.fail("`Optional[T]` is written `T?` here", head.start, fixes=fixes)
        if args is not None and name.lower() == "union" and len(args) > 1:
            fixes.insert(0, self.text[: head.start] + " | ".join(str(a) for a in args) + rest)
            self.fail("`Union[A, B]` is written `A | B` here", head.start, fixes=fixes)
        if name in SCALAR_ALIASES:
            self.fail(f"{_clip(name, 40)!r} takes no type arguments", opener.start)
        if fixes:
            self.fail(
                f"unknown type {_clip(name, 40)!r}; only `list`, `dict` and `literal` take `[...]`",
                head.start,
                fixes=fixes,
            )
        self.fail(
            f"{_clip(name, 40)!r} takes no type arguments; only `list`, `dict` and `literal` take `[...]`",
            opener.start,
        )

    def try_args(self) -> tuple[list[TypeExpr] | None, int | None]:
        """Parse `A, B]` when possible (to suggest a rewrite); `(None, None)` when they do not parse."""
        saved = self.pos
        try:
            args = [self.union()]
            while self.at_punct(","):
                self.advance()
                args.append(self.union())
            if not self.at_punct("]"):
                return None, None
            return args, self.advance().end
        except SchemaError:
            return None, None
        finally:
            self.pos = saved

    def literal_values(self, opener: _Token) -> tuple[LiteralValue, ...]:
        if self.at_punct("]"):
            self.fail('`literal[]` is empty; give at least one value, e.g. `literal["a"]`', opener.start)
        values: list[LiteralValue] = []
        seen: set[tuple[str, LiteralValue]] = set()
        while True:
            token = self.advance()
            value = self.literal_value(token)
            key = (type(value).__name__, value)
            if key in seen:
                self.fail(f"literal value {render_value(value)} is repeated", token.start)
            seen.add(key)
            values.append(value)
            if self.at_punct(","):
                self.advance()
                continue
            self.close(opener)
            return tuple(values)

    def literal_value(self, token: _Token) -> LiteralValue:
        if token.kind == "string":
            return self.unquote(token)
        if token.kind == "number":
            return self.number(token)
        if token.kind == "name" and token.text in _BOOL_WORDS:
            return _BOOL_WORDS[token.text]
        if token.kind == "name":
            quoted = self.text[: token.start] + quote(token.text) + self.text[token.end :]
            self.fail(
                f"literal values are quoted strings, numbers, true or false; got {_clip(token.text, 40)!r}",
                token.start,
                fixes=[quoted],
            )
        self.fail(f"expected a literal value, got {_describe(token)}", token.start)

    def number(self, token: _Token) -> int | float:
        text = token.text
        try:
            value: int | float = float(text) if any(c in text for c in ".eE") else int(text)
        except ValueError:  # e.g. more digits than int() accepts
            self.fail(f"number {text[:20]!r} is too long", token.start)
        if isinstance(value, float) and not math.isfinite(value):
            self.fail(f"number {text[:20]!r} is out of range", token.start)
        return value

    def unquote(self, token: _Token) -> str:
        def escape(match: re.Match[str]) -> str:
            code = match.group(1)
            if len(code) == 5:
                return chr(int(code[1:], 16))
            if code not in _ESCAPE_IN:
                self.fail(f"unknown escape '\\{code}' in a string", token.start + 1 + match.start())
            return _ESCAPE_IN[code]

        return re.sub(r"\\(u[0-9a-fA-F]{4}|.)", escape, token.text[1:-1], flags=re.DOTALL)

    def check_key(self, key: TypeExpr, at: int) -> None:
        ok = (isinstance(key, ScalarType) and key.name in ("str", "int")) or (
            isinstance(key, LiteralType)
            and all(isinstance(v, str | int) and not isinstance(v, bool) for v in key.values)
        )
        if not ok:
            self.fail(
                f"dict keys must be `str`, `int` or a `literal` of strings or ints (JSON object keys are "
                f"strings); got {_clip(str(key), 40)!r}",
                at,
            )


# ---------------------------------------------------------------------------------------------
# Public functions


def parse_type(text: str, *, location: SourceLocation | None = None, nested_objects: bool = False) -> TypeExpr:
    """Parse a type string; raises `SchemaError` naming the column and, when one is near, the fix.

    Example:
        ```python
        parse_type("dict[str, list[Contact?]]")
        # DictType(key=ScalarType(name='str'), value=ListType(item=OptionalType(inner=SchemaRef(...))))
        ```

    Identifiers that are not builtin types parse as `SchemaRef`; whether they name a known schema is
    decided when the annotation is built (see `to_annotation`), where the known names are.
    `nested_objects=True` reads `object` as a reference to a nested schema (see `Parser`).
    """
    key = (text, nested_objects)
    cached = _PARSED.get(key)
    if cached is not None:
        return cached
    expr = Parser(text, location, nested_objects=nested_objects).parse()
    if len(_PARSED) < _PARSED_MAX:
        _PARSED[key] = expr
    return expr


# Parsed types are immutable and the same few strings recur in every schema: parse each once.
_PARSED: dict[tuple[str, bool], TypeExpr] = {}
_PARSED_MAX = 4096


def referenced_names(expr: TypeExpr) -> set[str]:
    """The schema names `expr` refers to."""
    match expr:
        case SchemaRef(name=name):
            return {name}
        case ListType(item=item):
            return referenced_names(item)
        case DictType(key=key, value=value):
            return referenced_names(key) | referenced_names(value)
        case OptionalType(inner=inner):
            return referenced_names(inner)
        case UnionType(options=options):
            return set().union(*(referenced_names(o) for o in options))
        case _:
            return set()


def _near_type(name: str, exc: SchemaError) -> SchemaError:
    """`exc` for an unknown schema `name`, saying which builtin type it looks like, when one is near."""
    near = [n for n in near_type_names(name) if n not in exc.suggestions]
    if not near:
        return exc
    types = " or ".join(repr(n) for n in near)
    return SchemaError(
        f"Unknown type {name!r}. Did you mean {types}? {exc.message}",
        location=exc.location,
        suggestions=[*near, *exc.suggestions],
    )


def strip_optional(annotation: Any) -> Any:
    """`X` for an annotation `X | None` (with a single `X`); any other annotation unchanged."""
    args = typing.get_args(annotation)
    if args and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return annotation


def is_optional(expr: TypeExpr) -> bool:
    """Whether the type admits None by a `?` (at the top, or on a member of a top-level union)."""
    if isinstance(expr, UnionType):
        return any(isinstance(o, OptionalType) for o in expr.options)
    return isinstance(expr, OptionalType)


def to_annotation(expr: TypeExpr, resolve: Callable[[str], Any]) -> Any:
    """The Python annotation for `expr`; `resolve` maps a schema name to a class or a forward reference.

    `resolve` should raise `SchemaError` (with near names) for a name it does not know; a `KeyError`
    or `LookupError` is turned into a `SchemaError` here. Either way, a name that looks like a builtin
    type (`integr`) is told which one (`did you mean 'int'?`).
    """
    match expr:
        case ScalarType(name=name):
            return SCALAR_ANNOTATIONS[name]
        case SchemaRef(name=name):
            try:
                return resolve(name)
            except SchemaError as exc:
                raise _near_type(name, exc) from None
            except LookupError:
                unknown = SchemaError(f"Unknown schema {name!r}; declare it in a schema file or register the class.")
                raise _near_type(name, unknown) from None
        case ListType(item=item):
            return list.__class_getitem__(to_annotation(item, resolve))
        case DictType(key=key, value=value):
            return dict.__class_getitem__((to_annotation(key, resolve), to_annotation(value, resolve)))
        case OptionalType(inner=inner):
            return typing.Optional.__getitem__(to_annotation(inner, resolve))
        case LiteralType(values=values):
            return typing.Literal.__getitem__(values)
        case UnionType(options=options):
            return typing.Union.__getitem__(tuple(to_annotation(o, resolve) for o in options))
