"""Named schemas declared in configuration, and the Pydantic classes built from them.

A schema file declares `SchemaDef`s (`name`, `description`, `fields`); `build_models` checks them all
— types, options, references, defaults — and returns one Pydantic class per schema, whose
`model_json_schema()` (with the descriptions) is what the model receives.

Generated classes forbid unknown keys (`extra="forbid"`). The JSON Schema then says
`additionalProperties: false`, which strict structured-output modes require; and an answer with
invented keys is a wrong answer: the validation error goes back to the model as retry feedback
instead of the keys being dropped without a trace.
"""

from __future__ import annotations

import keyword
import math
import threading
import typing
import weakref
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Annotated, Any, TypeAlias

import attrs
import pydantic_core
from atomtask.schemas.declarations import FieldDef, SchemaDef, canonical
from atomtask.schemas.type_strings import (
    BUILTIN_TYPE_NAMES,
    ListType,
    LiteralType,
    OptionalType,
    ScalarType,
    TypeExpr,
    is_optional,
    parse_type,
    referenced_names,
    to_annotation,
)
from atomtask.system.errors import DuplicateNameError, SchemaError, SourceLocation, did_you_mean, near_names
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    create_model,
)
from pydantic.errors import PydanticUndefinedAnnotation, PydanticUserError

__all__ = ["build_models"]

# ---------------------------------------------------------------------------------------------
# Checking


@attrs.frozen(kw_only=True)
class _Field:
    spec: FieldDef
    expr: TypeExpr  # with `enum` folded in as a literal
    where: SourceLocation | None


@attrs.frozen(kw_only=True)
class _Schema:
    spec: SchemaDef
    fields: tuple[_Field, ...]
    content: str
    refs: frozenset[str]


_NUMERIC = ("ge", "gt", "le", "lt")
_TEXT = ("min_length", "max_length", "pattern")
_ITEMS = ("min_items", "max_items")
_APPLIES: dict[str, tuple[tuple[str, ...], str]] = {
    "number": (_NUMERIC, "`int` and `float` fields"),
    "text": ((*_TEXT, "format"), "`str` fields"),
    "items": (_ITEMS, "`list[...]` fields"),
}
_KINDS = {"int": "number", "float": "number", "str": "text"}
_ENUM_KINDS: dict[str, Callable[[object], bool]] = {
    "str": lambda v: isinstance(v, str),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
}


def _prepare(defs: Sequence[SchemaDef]) -> dict[str, _Schema]:
    schemas: dict[str, _Schema] = {}
    for spec in defs:
        first = schemas.get(spec.name)
        if first is not None:
            if first.spec == spec:
                continue
            raise DuplicateNameError(
                f"Schema {spec.name!r} is defined twice with different content (first at "
                f"{first.spec.location or 'an unknown place'}); rename or remove one.",
                location=spec.location,
            )
        schemas[spec.name] = _check_schema(spec)
    return schemas


def _check_schema(spec: SchemaDef) -> _Schema:
    name = spec.name
    if not name.isidentifier() or keyword.iskeyword(name):
        raise SchemaError(
            f"Schema name {name!r} is not a valid Python identifier; use letters, digits and "
            "underscores, not starting with a digit (e.g. 'ContactInfo').",
            location=spec.location,
        )
    if name in BUILTIN_TYPE_NAMES:
        raise SchemaError(
            f"Schema name {name!r} is a builtin type name; pick another, like {name.title() + 'Info'!r}.",
            location=spec.location,
        )
    if not spec.fields:
        raise SchemaError(
            f"Schema {name!r} has no fields; declare at least one under `fields:`.", location=spec.location
        )
    seen: dict[str, FieldDef] = {}
    fields: list[_Field] = []
    content_fields: list[dict[str, Any]] = []
    for field_def in spec.fields:
        where = field_def.location or spec.location
        first = seen.get(field_def.name)
        if first is not None:
            raise SchemaError(
                f"Field {field_def.name!r} is declared twice in schema {name!r} (at "
                f"{first.location or spec.location or 'an unknown place'} and "
                f"{where or 'an unknown place'}); rename or remove one.",
                location=where,
            )
        seen[field_def.name] = field_def
        fields.append(_check_field(field_def, name, where))
        content_fields.append({**field_def.content(), "type": str(fields[-1].expr)})
    content = canonical({"name": name, "description": spec.description, "fields": content_fields})
    refs = frozenset().union(*(referenced_names(f.expr) for f in fields))
    return _Schema(spec=spec, fields=tuple(fields), content=content, refs=refs)


def _check_field(spec: FieldDef, schema: str, where: SourceLocation | None) -> _Field:
    label = f"field {spec.name!r} of schema {schema!r}"
    name = spec.name
    if not name.isidentifier() or name.startswith("_"):
        why = "starts with '_', which Pydantic treats as private" if name.startswith("_") else "is not an identifier"
        raise SchemaError(
            f"Field name {name!r} in schema {schema!r} {why}; use letters, digits and underscores, "
            "starting with a letter (e.g. 'first_name').",
            location=where,
        )
    if hasattr(BaseModel, name):
        raise SchemaError(
            f"Field name {name!r} in schema {schema!r} clashes with the Pydantic `BaseModel` attribute "
            f"{name!r}; rename the field.",
            location=where,
        )
    try:
        expr = parse_type(spec.type, location=where)
    except SchemaError as exc:
        raise SchemaError(f"In {label}: {exc.message}", location=exc.location, suggestions=exc.suggestions) from None
    expr = _apply_enum(spec, expr, label, where)
    base = expr.inner if isinstance(expr, OptionalType) else expr
    kind = _KINDS.get(base.name) if isinstance(base, ScalarType) else "items" if isinstance(base, ListType) else None
    for group, (options, what) in _APPLIES.items():
        for option in options:
            if getattr(spec, option) is not None and group != kind:
                raise SchemaError(
                    f"`{option}` does not apply to {label}, whose type is {str(expr)!r}: it is for {what}. "
                    "Remove it or change the type.",
                    location=where,
                )
    _check_ranges(spec, label, where)
    if spec.pattern is not None:
        _check_pattern(spec.pattern, label, where)
    if spec.format is not None:
        _check_format(spec.format, label, where)
    return _Field(spec=spec, expr=expr, where=where)


def _check_format(fmt: str, label: str, where: SourceLocation | None) -> None:
    from atomtask.schemas.json_dialects import checked_formats

    known = sorted(checked_formats())
    if fmt not in known:
        raise SchemaError(
            f"`format` {fmt!r} of {label} is not a format that can be checked.{did_you_mean(fmt, known)} "
            f"Checked formats: {', '.join(known)}.",
            location=where,
            suggestions=near_names(fmt, known),
        )


def _apply_enum(spec: FieldDef, expr: TypeExpr, label: str, where: SourceLocation | None) -> TypeExpr:
    if spec.enum is None:
        return expr
    values = tuple(spec.enum)
    if not values:
        raise SchemaError(f"`enum` of {label} is empty; list at least one value.", location=where)
    seen: set[str] = set()
    for value in values:
        key = canonical(value)
        if key in seen:
            raise SchemaError(f"`enum` of {label} lists {value!r} twice; remove one.", location=where)
        seen.add(key)
        if isinstance(value, float) and not math.isfinite(value):
            raise SchemaError(f"`enum` of {label} holds {value!r}, not a finite number.", location=where)
    if "type" not in spec.model_fields_set:
        return LiteralType(values=values)
    base = expr.inner if isinstance(expr, OptionalType) else expr
    if not (isinstance(base, ScalarType) and base.name in _ENUM_KINDS):
        raise SchemaError(
            f"`enum` does not apply to {label}, whose type is {spec.type!r}: it is for `str`, `int`, "
            "`float` and `bool` fields. Remove it, or write the type as `literal[...]`.",
            location=where,
        )
    for value in values:
        if not _ENUM_KINDS[base.name](value):
            raise SchemaError(
                f"`enum` value {value!r} of {label} is not a {base.name!r}; fix the value or the type.",
                location=where,
            )
    literal = LiteralType(values=values)
    return OptionalType(inner=literal) if isinstance(expr, OptionalType) else literal


def _check_ranges(spec: FieldDef, label: str, where: SourceLocation | None) -> None:
    for low, high in (("min_length", "max_length"), ("min_items", "max_items")):
        lo, hi = getattr(spec, low), getattr(spec, high)
        if lo is not None and hi is not None and lo > hi:
            raise SchemaError(f"`{low}` ({lo}) is above `{high}` ({hi}) in {label}.", location=where)
    for low in ("ge", "gt"):
        for high in ("le", "lt"):
            lo, hi = getattr(spec, low), getattr(spec, high)
            if lo is None or hi is None:
                continue
            if lo > hi or (lo == hi and (low == "gt" or high == "lt")):
                raise SchemaError(
                    f"No number satisfies `{low}: {lo}` and `{high}: {hi}` in {label}; fix the bounds.",
                    location=where,
                )


def _check_pattern(pattern: str, label: str, where: SourceLocation | None) -> None:
    """Compile with the engine that will validate (pydantic's Rust `regex`: no look-around or backrefs)."""
    try:
        TypeAdapter(Annotated[str, Field(pattern=pattern)])
    except pydantic_core.SchemaError as exc:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        reason = next((line for line in lines if line.startswith("error:")), lines[-1] if lines else "")
        raise SchemaError(
            f"`pattern` {pattern!r} of {label} does not compile: {reason.removeprefix('error: ')}. "
            "Fix the regular expression (look-around and back-references are not supported).",
            location=where,
        ) from None


def _check_references(schemas: Mapping[str, _Schema], known: Mapping[str, type[BaseModel]]) -> None:
    candidates = sorted({*schemas, *known, *BUILTIN_TYPE_NAMES})
    for schema in schemas.values():
        for field in schema.fields:
            for ref in sorted(referenced_names(field.expr)):
                if ref in schemas or ref in known:
                    continue
                listed = ", ".join(sorted({*schemas, *known})) or "none"
                raise SchemaError(
                    f"Unknown schema {ref!r} in field {field.spec.name!r} of schema {schema.spec.name!r} "
                    f"(type {field.spec.type!r}).{did_you_mean(ref, candidates)} Known schemas: {listed}. "
                    "Declare it in a schema file or register the Python class.",
                    location=field.where,
                    suggestions=near_names(ref, candidates),
                )


# ---------------------------------------------------------------------------------------------
# Building

_CONFIG = ConfigDict(extra="forbid")
_BUILD_ERRORS = (
    PydanticUserError,
    PydanticUndefinedAnnotation,
    pydantic_core.SchemaError,
    NameError,
    TypeError,
)
_CacheKey: TypeAlias = tuple[str, frozenset[str], tuple[tuple[str, type[BaseModel]], ...]]
# Weak values: a class is reused while someone holds it, and forgotten once nobody does.
_CACHE: weakref.WeakValueDictionary[_CacheKey, type[BaseModel]] = weakref.WeakValueDictionary()
_LOCK = threading.RLock()


def _forward(name: str) -> str:
    # A name no namespace holds, so a reference never resolves to a module global or a builtin
    # (a schema may be called `Field` or `object`) before `model_rebuild` supplies the batch.
    return f"_atomtask_schema__{name}"


def build_models(
    defs: Sequence[SchemaDef], *, known: Mapping[str, type[BaseModel]] = MappingProxyType({})
) -> dict[str, type[BaseModel]]:
    """Check `defs` and build one Pydantic class per schema, keyed by schema name.

    A type may reference any schema in `defs` (in any order, recursively) or in `known`; a name in
    `defs` takes precedence. Every mistake raises `SchemaError` pointing at the field's location.
    The same definitions (and referenced classes) give the same class objects on every call.

    Example:
        ```python
        node = SchemaDef(name="Node", fields=[FieldDef(name="children", type="list[Node]")])
        Node = build_models([node])["Node"]
        ```
    """
    schemas = _prepare(defs)
    _check_references(schemas, known)
    with _LOCK:
        keys = {name: _cache_key(name, schemas, known) for name in schemas}
        built: dict[str, type[BaseModel]] = {}
        for name, key in keys.items():
            cached = _CACHE.get(key)
            if cached is not None:
                built[name] = cached

        def resolve(ref: str) -> Any:
            if ref in built:
                return built[ref]
            if ref in schemas:
                return typing.ForwardRef(_forward(ref))
            return known[ref]

        fresh = {name: _create(schema, resolve) for name, schema in schemas.items() if name not in built}
        namespace = {_forward(name): cls for name, cls in (built | fresh).items()}
        for name, cls in fresh.items():
            if not cls.__pydantic_complete__:  # only classes waiting on a forward reference to the batch
                _rebuild(cls, schemas[name], namespace)
        for name, cls in fresh.items():
            _check_defaults(cls, schemas[name])
        for name, cls in fresh.items():
            _CACHE[keys[name]] = cls
        built.update(fresh)
    return {spec.name: built[spec.name] for spec in defs}


def _cache_key(name: str, schemas: Mapping[str, _Schema], known: Mapping[str, type[BaseModel]]) -> _CacheKey:
    """The content of `name` and of everything it reaches: a change anywhere below gives a new class."""
    reached: set[str] = set()
    outside: dict[str, type[BaseModel]] = {}
    todo = [name]
    while todo:
        current = todo.pop()
        if current in reached:
            continue
        reached.add(current)
        for ref in schemas[current].refs:
            if ref in schemas:
                todo.append(ref)
            else:
                outside[ref] = known[ref]
    contents = frozenset(schemas[n].content for n in reached)
    return name, contents, tuple(sorted(outside.items(), key=lambda item: item[0]))


def _create(schema: _Schema, resolve: Callable[[str], Any]) -> type[BaseModel]:
    definitions: dict[str, Any] = {}
    for field in schema.fields:
        annotation = to_annotation(field.expr, resolve)
        if field.spec.format is not None:
            from atomtask.schemas.json_dialects import format_validator

            annotation = Annotated[annotation, AfterValidator(format_validator(field.spec.format))]
        definitions[field.spec.name] = (annotation, Field(**_field_options(field)))
    try:
        return create_model(
            schema.spec.name,
            __config__=_CONFIG,
            __doc__=schema.spec.description,
            __module__=__name__,
            **definitions,
        )
    except _BUILD_ERRORS as exc:
        raise _build_error(schema, exc) from exc


def _field_options(field: _Field) -> dict[str, Any]:
    spec = field.spec
    options: dict[str, Any] = {}
    if spec.description is not None:
        options["description"] = spec.description
    for option in (*_NUMERIC, *_TEXT):
        if getattr(spec, option) is not None:
            options[option] = getattr(spec, option)
    if spec.format is not None:
        options["json_schema_extra"] = {"format": spec.format}
    if spec.min_items is not None:
        options["min_length"] = spec.min_items
    if spec.max_items is not None:
        options["max_length"] = spec.max_items
    if spec.has_default:
        # The raw default shows in the JSON Schema; instances get it validated (a date string
        # becomes a `date`, a mapping becomes the referenced model).
        options["default"] = spec.default
        options["validate_default"] = True
    elif is_optional(field.expr):
        options["default"] = None
    return options


def _rebuild(cls: type[BaseModel], schema: _Schema, namespace: dict[str, Any]) -> None:
    try:
        cls.model_rebuild(force=True, _types_namespace=namespace)
    except _BUILD_ERRORS as exc:
        raise _build_error(schema, exc) from exc


def _build_error(schema: _Schema, exc: Exception) -> SchemaError:
    # Reached only when a check above missed a case: still name the schema and keep the cause.
    return SchemaError(
        f"Schema {schema.spec.name!r} cannot be built: {exc}. Check its field types and options.",
        location=schema.spec.location,
    )


def _check_defaults(cls: type[BaseModel], schema: _Schema) -> None:
    for field in schema.fields:
        spec = field.spec
        if not spec.has_default:
            continue
        try:
            cls.__pydantic_validator__.validate_assignment(cls.model_construct(), spec.name, spec.default)
        except ValidationError as exc:
            error = exc.errors()[0]
            inner = ".".join(str(p) for p in error["loc"][1:])
            at = f" at `{inner}`" if inner else ""
            hint = (
                f" Make the type optional ({str(OptionalType(inner=field.expr))!r}) or remove the default."
                if spec.default is None and not is_optional(field.expr)
                else " Fix the default or the type."
            )
            raise SchemaError(
                f"Default {spec.default!r} of field {spec.name!r} in schema {schema.spec.name!r} does not "
                f"match its type {spec.type!r}{at}: {error['msg']}.{hint}",
                location=field.where,
            ) from None
