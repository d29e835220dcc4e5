"""Static type rules for workflows: what a value of one annotation may be passed as, and what a path reaches.

Types are the Python annotations the schemas layer builds (`str`, `list[Contact]`, `Contact | None`,
`Literal['a', 'b']`, a Pydantic class, `Any`); `Annotated[T, ...]` (the validators of classes built from
JSON Schema) is seen as `T`. The rule is the one a developer expects, stricter than
Pydantic's lax mode: a `str` never goes into an `int` (although "5" would validate), an `int` goes
into a `float`, a class goes into another class whose fields it has, and `Any` goes anywhere.

An object literal of an expression (`{"title": state.topic, "score": 3}`) has a type of its own,
`object_type(...)`: a `dict` whose keys and the type of each value are known. It goes into a `dict` whose
values it fits, and into a class that has exactly its keys as fields (every required one among them), each
value fitting its field.
"""

from __future__ import annotations

import datetime
import functools
import types
import typing
from typing import Any, ClassVar, cast

from atomtask.errors import near_names
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

__all__ = [
    "NONE",
    "ObjectLiteral",
    "a_describe",
    "compatible",
    "describe",
    "field_names",
    "item_type",
    "kinds",
    "literal_values",
    "may_be_none",
    "members",
    "mismatch",
    "object_mismatch",
    "object_type",
    "strip_none",
    "union",
    "walk",
]

NONE: Any = type(None)
_Seen = set[tuple[int, int]]


class ObjectLiteral(dict[str, Any]):
    """The base of the types `object_type` makes: `fields` holds each key and the type of its value."""

    fields: ClassVar[tuple[tuple[str, Any], ...]] = ()


@functools.cache
def object_type(fields: tuple[tuple[str, Any], ...]) -> type[ObjectLiteral]:
    """The type of an object literal with these keys and value types (one class per shape).

    Example:
        ```python
        describe(object_type((("title", str), ("score", int))))  # 'object {"title": str, "score": int}'
        ```
    """
    return cast(type[ObjectLiteral], type("object", (ObjectLiteral,), {"fields": fields, "__module__": __name__}))


def _object(annotation: Any) -> type[ObjectLiteral] | None:
    return annotation if isinstance(annotation, type) and issubclass(annotation, ObjectLiteral) else None


def union(*annotations: Any) -> Any:
    """One annotation admitting a value of any of `annotations` (`union(str, None)` gives `str | None`)."""
    found: list[Any] = []
    for annotation in annotations:
        found.extend(m for m in members(annotation) if m not in found)
    return found[0] if len(found) == 1 else typing.Union.__getitem__(tuple(found))


def _bare(annotation: Any) -> Any:
    """`annotation` without `Annotated[...]` metadata (`Annotated[int, validator]` gives `int`)."""
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def members(annotation: Any) -> list[Any]:
    """The alternatives of a union (`A | B | None` gives `[A, B, NoneType]`); any other annotation alone."""
    annotation = _bare(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        found: list[Any] = []
        for arg in typing.get_args(annotation):
            found.extend(members(arg))
        return found
    if annotation is None:
        return [NONE]
    return [annotation]


def strip_none(annotation: Any) -> Any:
    """The annotation without its `None` alternative (`A | None` gives `A`)."""
    rest = [m for m in members(annotation) if m is not NONE]
    if not rest:
        return annotation
    if len(rest) == 1:
        return rest[0]
    return typing.Union.__getitem__(tuple(rest))


def may_be_none(annotation: Any) -> bool:
    """Whether a value of `annotation` may be null (`A | None`, `None`; not `Any`, which only the run knows)."""
    return NONE in members(annotation)


def literal_values(annotation: Any) -> tuple[Any, ...] | None:
    """The values a literal annotation allows (`None` stripped), or None when it admits other values too."""
    found: list[Any] = []
    for member in members(strip_none(annotation)):
        if typing.get_origin(member) is not typing.Literal:
            return None
        found.extend(v for v in typing.get_args(member) if v not in found)
    return tuple(found) or None


def kinds(annotation: Any) -> set[str]:
    """The kinds of value an annotation admits: `str`, `number`, `bool`, `none`, `list`, `dict`, `model`, `date`..."""
    found: set[str] = set()
    for member in members(annotation):
        found.add(_kind(member))
    return found


def _kind(member: Any) -> str:
    member = _bare(member)
    if member is Any or member is object:
        return "any"
    if _object(member) is not None:
        return "dict"
    if member is NONE:
        return "none"
    if typing.get_origin(member) is typing.Literal:
        literal_kinds = {_kind(type(v)) for v in typing.get_args(member)}
        return literal_kinds.pop() if len(literal_kinds) == 1 else "any"
    origin = typing.get_origin(member) or member
    if origin is bool:
        return "bool"
    if origin in (int, float):
        return "number"
    if origin is str:
        return "str"
    if origin is datetime.datetime:
        return "datetime"
    if origin is datetime.date:
        return "date"
    if origin in (list, tuple, set, frozenset):
        return "list"
    if origin is dict:
        return "dict"
    if isinstance(origin, type) and issubclass(origin, BaseModel):
        return "model"
    return "other"


def a_describe(annotation: Any) -> str:
    """`describe` with its article: "an int", "a str", "a list[str]"."""
    text = describe(annotation)
    return f"{'an' if text[:1].lower() in 'aeiou' else 'a'} {text}"


def describe(annotation: Any) -> str:
    """A short readable name: `str`, `list[Contact]`, `Contact | None`, `any`."""
    parts = members(annotation)
    if len(parts) > 1:
        return " | ".join(describe(p) for p in parts)
    member = parts[0]
    if member is Any:
        return "any"
    if member is NONE:
        return "None"
    shape = _object(member)
    if shape is not None:
        return "object {" + ", ".join(f'"{key}": {describe(value)}' for key, value in shape.fields) + "}"
    origin = typing.get_origin(member)
    if origin is typing.Literal:
        return "literal[" + ", ".join(repr(v) for v in typing.get_args(member)) + "]"
    if origin is not None:
        args = ", ".join(describe(a) for a in typing.get_args(member))
        name = getattr(origin, "__name__", None) or str(origin).removeprefix("typing.")
        return f"{name}[{args}]" if args else name
    return getattr(member, "__name__", None) or str(member).removeprefix("typing.")


def compatible(source: Any, target: Any) -> bool:
    """Whether every value of type `source` may be given where `target` is declared.

    Example:
        ```python
        compatible(int, float)  # True
        compatible(str, int)    # False
        ```
    """
    return _compatible(source, target, set())


def _compatible(source: Any, target: Any, seen: _Seen) -> bool:
    targets = members(target)
    if Any in targets or object in targets:
        return True
    return all(any(_fits(s, t, seen) for t in targets) for s in members(source))


def _fits(source: Any, target: Any, seen: _Seen) -> bool:
    source, target = _bare(source), _bare(target)
    if source is Any or source is target:
        return True
    shape = _object(source)
    if shape is not None:
        return object_mismatch(shape, target, seen) is None
    if _object(target) is not None:
        return _kind(source) in ("dict", "model")  # only the run can tell which keys it has
    source_origin, target_origin = typing.get_origin(source), typing.get_origin(target)
    if source_origin is typing.Literal:
        values = typing.get_args(source)
        if target_origin is typing.Literal:
            return set(values) <= set(typing.get_args(target))
        return all(_fits(type(v), target, seen) for v in values)
    if target_origin is typing.Literal:
        # A `str` may hold one of the literal's values: only the run can tell.
        return _kind(source) == _kind(target)
    source_kind, target_kind = _kind(source), _kind(target)
    if source_kind == "number" and target_kind == "number":
        return (source_origin or source) is int or (target_origin or target) is float
    if source_kind in ("list", "dict") and source_kind == target_kind:
        return _containers_fit(source, target, seen)
    if source_kind == "model" and target_kind == "model":
        return _models_fit(source, target, seen)
    if source_kind == "model" and target_kind == "dict":
        return True  # passed as its fields
    if source_kind == "dict" and target_kind == "model":
        return True  # validated against the class when the step runs
    if source_kind == "datetime" and target_kind == "date":
        return False
    if source_kind == target_kind and source_kind not in ("other", "model"):
        return True
    if source_kind == "other" and target_kind == "other":
        return isinstance(source, type) and isinstance(target, type) and issubclass(source, target)
    return False


def mismatch(source: Any, target: Any) -> str:
    """`: why` a value of `source` does not fit `target`, when it is an object literal (else an empty string).

    Example:
        ```python
        mismatch(object_type((("titel", str),)), Article)  # ": Article has no field 'titel' (did you mean 'title'?)"
        ```
    """
    shapes = [s for m in members(source) if (s := _object(_bare(m))) is not None]
    for shape in shapes:
        why = object_mismatch(shape, target)
        if why is not None:
            return f": {why}"
    return ""


def object_mismatch(shape: type[ObjectLiteral], target: Any, seen: _Seen | None = None) -> str | None:
    """Why an object literal of type `shape` does not fit `target` (None when it fits).

    Example:
        ```python
        object_mismatch(object_type((("titel", str),)), Article)  # "Article has no field 'titel' (did you..."
        ```
    """
    seen = set() if seen is None else seen
    target = strip_none(_bare(target)) if _object(target) is None else target
    given = dict(shape.fields)
    if len(members(target)) > 1:
        fits = any(object_mismatch(shape, member, seen) is None for member in members(target))
        return None if fits else f"it fits none of {describe(target)}"
    if target is Any or target is object:
        return None
    other = _object(target)
    if other is not None:
        expected = {key: (value, True) for key, value in other.fields}
        closed = True
    elif _kind(target) == "dict":
        args = typing.get_args(target)
        if len(args) != 2:
            return None
        if not _compatible(str, args[0], seen):
            return f"its keys are str, not {describe(args[0])}"
        for key, value in given.items():
            if not _compatible(value, args[1], seen):
                return f"the value of {key!r} is {a_describe(value)}, not {a_describe(args[1])}"
        return None
    elif isinstance(target, type) and issubclass(target, BaseModel):
        expected = {name: (field.annotation, field.is_required()) for name, field in target.model_fields.items()}
        closed = target.model_config.get("extra") != "allow"
    else:
        return f"an object is not {a_describe(target)}"
    for key, value in given.items():
        if key not in expected:
            if closed:
                close = near_names(key, [k for k in expected if k not in given])
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                return f"{describe(target)} has no field {key!r}{hint}"
            continue
        if not _compatible(value, expected[key][0], seen):
            return f"the value of {key!r} is {a_describe(value)}, not {a_describe(expected[key][0])}"
    missing = [key for key, (_, required) in expected.items() if required and key not in given]
    if missing:
        return f"it lacks the key(s) {', '.join(repr(k) for k in missing)} of {describe(target)}"
    return None


def _containers_fit(source: Any, target: Any, seen: _Seen) -> bool:
    source_args, target_args = typing.get_args(source), typing.get_args(target)
    if not source_args or not target_args:
        return True
    return all(_compatible(s, t, seen) for s, t in zip(source_args, target_args, strict=False))


def _models_fit(source: type[BaseModel], target: type[BaseModel], seen: _Seen) -> bool:
    if issubclass(source, target):
        return True
    key = (id(source), id(target))
    if key in seen:  # recursive classes: assume the pair fits while checking it
        return True
    seen.add(key)
    source_fields, target_fields = source.model_fields, target.model_fields
    for name, field in target_fields.items():
        if name not in source_fields:
            if field.is_required():
                return False
            continue
        if not _compatible(source_fields[name].annotation, field.annotation, seen):
            return False
    extra = target.model_config.get("extra")
    return extra != "forbid" or set(source_fields) <= set(target_fields)


def field_names(annotation: Any) -> list[str] | None:
    """The field names of a class annotation (None of `None` stripped), or None for a type without fields."""
    inner = strip_none(annotation)
    if isinstance(inner, type) and issubclass(inner, BaseModel):
        return list(inner.model_fields)
    shape = _object(inner)
    return [key for key, _ in shape.fields] if shape is not None else None


def walk(annotation: Any, part: str | int) -> Any:
    """The annotation of `value.part` (or `value[part]`); raises `LookupError` naming the fields there are.

    Open types (`Any`, a `dict`, a union of several classes) give `Any`: only the run can tell.
    """
    inner = strip_none(annotation)
    if inner is Any:
        return Any
    origin = typing.get_origin(inner)
    if isinstance(part, int):
        if origin in (list, tuple):
            args = typing.get_args(inner)
            return args[0] if args else Any
        raise LookupError(f"a {describe(inner)} cannot be indexed with [{part}]")
    if isinstance(inner, type) and issubclass(inner, BaseModel):
        fields = inner.model_fields
        if part not in fields:
            raise LookupError(f"{inner.__name__} has no field {part!r}")
        return _read_type(fields[part])
    shape = _object(inner)
    if shape is not None:
        given = dict(shape.fields)
        if part not in given:
            raise LookupError(f"the {describe(inner)} has no key {part!r}")
        return given[part]
    if origin is dict:
        args = typing.get_args(inner)
        return args[1] if len(args) == 2 else Any
    if inner is dict or len(members(inner)) > 1:
        return Any
    raise LookupError(f"a {describe(inner)} has no fields")


def _read_type(field: FieldInfo) -> Any:
    """The type a read of `field` gives: a field with a non-null default holds a value until set to null."""
    annotation = field.annotation
    if field.default_factory is not None or (field.default is not PydanticUndefined and field.default is not None):
        return strip_none(annotation)
    return annotation


def item_type(annotation: Any) -> Any | None:
    """The element type of a list annotation (`Any` for an open type); None for a type that is not a list."""
    inner = strip_none(annotation)
    if inner is Any:
        return Any
    if _kind(inner) == "list":
        args = typing.get_args(inner)
        return args[0] if args else Any
    return None
