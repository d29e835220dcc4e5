"""Type expressions: the immutable AST of a parsed type string, and its canonical text.

One frozen class per construct of the type-string language (described in
`atomtask.schemas.type_strings`), each rendering back to the canonical string with `str()`, and the
words the language reserves (`BUILTIN_TYPE_NAMES`). The private vocabulary tables (`_SCALAR_*`,
`GENERICS`) and the value rendering (`render_value`, `quote`) are shared, inside this package,
with the parser (`type_parser`) and `to_annotation` (`type_strings`).
"""

from __future__ import annotations

import datetime
from typing import Any, TypeAlias

import attrs

__all__ = [
    "BUILTIN_TYPE_NAMES",
    "GENERICS",
    "SCALAR_ALIASES",
    "SCALAR_ANNOTATIONS",
    "DictType",
    "ListType",
    "LiteralType",
    "LiteralValue",
    "OptionalType",
    "ScalarType",
    "SchemaRef",
    "TypeExpr",
    "UnionType",
    "quote",
    "render_value",
]

LiteralValue: TypeAlias = str | int | float | bool

SCALAR_ANNOTATIONS: dict[str, Any] = {"str": str, "int": int, "float": float, "bool": bool, "any": Any}
SCALAR_ANNOTATIONS |= {"date": datetime.date, "datetime": datetime.datetime}
SCALAR_ALIASES = {name: name for name in SCALAR_ANNOTATIONS} | {
    "string": "str", "integer": "int", "number": "float", "boolean": "bool"
}  # fmt: skip
GENERICS = ("list", "dict", "literal")

#: Names a schema may not take: every word the type language gives a meaning of its own.
BUILTIN_TYPE_NAMES: frozenset[str] = frozenset(SCALAR_ALIASES) | frozenset(GENERICS)


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
