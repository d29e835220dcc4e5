"""Type strings: the small language configuration files use to declare field and parameter types.

    str | string     int | integer     float | number     bool | boolean     any     date     datetime
    list[T]          dict[K, V]        T?  (T | None)     literal["a", 'b', 1, 2.5, true]
    A | B            (A | B)?          Contact            list[Contact?]
    list  (list[any])                  dict  (dict[str, any])

`?` binds tighter than `|` (`int | str?` is `int | (str | None)`), parentheses group, whitespace is
ignored, and any other identifier names a schema. `parse_type` turns a string into an immutable AST
(`TypeExpr`), `to_annotation` turns the AST into a Python annotation Pydantic validates.

`atomtask.schemas.type_exprs` holds the AST classes and `atomtask.schemas.type_parser` the parser;
this module is the entry point: `parse_type` (cached) and the functions over a parsed type, and it
re-exports the AST classes.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any

from atomtask.schemas.type_exprs import (
    BUILTIN_TYPE_NAMES,
    SCALAR_ANNOTATIONS,
    DictType,
    ListType,
    LiteralType,
    LiteralValue,
    OptionalType,
    ScalarType,
    SchemaRef,
    TypeExpr,
    UnionType,
)
from atomtask.schemas.type_parser import Parser
from atomtask.system.errors import SchemaError, SourceLocation

__all__ = [
    "BUILTIN_TYPE_NAMES",
    "DictType",
    "ListType",
    "LiteralType",
    "LiteralValue",
    "OptionalType",
    "ScalarType",
    "SchemaRef",
    "TypeExpr",
    "UnionType",
    "is_optional",
    "parse_type",
    "referenced_names",
    "strip_optional",
    "to_annotation",
]

# ---------------------------------------------------------------------------------------------
# Public functions


def parse_type(text: str, *, location: SourceLocation | None = None) -> TypeExpr:
    """Parse a type string; raises `SchemaError` naming the column and, when one is near, the fix.

    Example:
        ```python
        parse_type("dict[str, list[Contact?]]")
        # DictType(key=ScalarType(name='str'), value=ListType(item=OptionalType(inner=SchemaRef(...))))
        ```

    Identifiers that are not builtin types parse as `SchemaRef`; whether they name a known schema is
    decided when the annotation is built (see `to_annotation`), where the known names are.
    """
    cached = _PARSED.get(text)
    if cached is not None:
        return cached
    expr = Parser(text, location).parse()
    if len(_PARSED) < _PARSED_MAX:
        _PARSED[text] = expr
    return expr


# Parsed types are immutable and the same few strings recur in every schema: parse each once.
_PARSED: dict[str, TypeExpr] = {}
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
    or `LookupError` is turned into a `SchemaError` here.
    """
    match expr:
        case ScalarType(name=name):
            return SCALAR_ANNOTATIONS[name]
        case SchemaRef(name=name):
            try:
                return resolve(name)
            except SchemaError:
                raise
            except LookupError:
                raise SchemaError(
                    f"Unknown schema {name!r}; declare it in a schema file or register the class."
                ) from None
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
