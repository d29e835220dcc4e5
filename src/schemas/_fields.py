"""Named schemas declared as YAML fields, checked at load and built into Pydantic classes.

The checks cover names, field types and options, enums, patterns and references between schemas
(`check_references`, `schema_problems`); a field `type: object` with its own `fields:` is flattened
into a named schema of its own (`flatten`); `build_models` turns the checked declarations into classes.
"""

from __future__ import annotations

import keyword
import math
import re
import threading
import typing
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Annotated, Any, TypeAlias

import attrs
import pydantic_core
from atomtask.errors import DuplicateNameError, SchemaError, SourceLocation, did_you_mean, near_names
from atomtask.schemas._declarations import FieldDef, SchemaDef, canonical
from atomtask.schemas._type_strings import (
    BUILTIN_TYPE_NAMES,
    DictType,
    ListType,
    LiteralType,
    OptionalType,
    ScalarType,
    SchemaRef,
    TypeExpr,
    UnionType,
    is_optional,
    near_type_names,
    parse_type,
    referenced_names,
    to_annotation,
)
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model
from pydantic.errors import PydanticUndefinedAnnotation, PydanticUserError

__all__ = [
    "NUMERIC_OPTIONS",
    "TEXT_OPTIONS",
    "CheckedField",
    "CheckedSchema",
    "build_models",
    "check_references",
    "flatten",
    "prepare",
    "schema_problems",
]


@attrs.frozen(kw_only=True)
class CheckedField:
    """One checked field: its declaration, its parsed type and where it is declared."""

    spec: FieldDef
    expr: TypeExpr  # with `enum` folded in as a literal
    where: SourceLocation | None


@attrs.frozen(kw_only=True)
class CheckedSchema:
    """One checked schema: its fields, the canonical text of its content, and the schemas it references."""

    spec: SchemaDef
    fields: tuple[CheckedField, ...]
    content: str
    refs: frozenset[str]


NUMERIC_OPTIONS = ("ge", "gt", "le", "lt")
TEXT_OPTIONS = ("min_length", "max_length", "pattern")
_ITEMS = ("min_items", "max_items")
_APPLIES: dict[str, tuple[tuple[str, ...], str]] = {
    "number": (NUMERIC_OPTIONS, "`int` and `float` fields"),
    "text": ((*TEXT_OPTIONS, "format"), "`str` fields"),
    "items": (_ITEMS, "`list[...]` fields"),
}
_KINDS = {"int": "number", "float": "number", "str": "text"}
_ENUM_KINDS: dict[str, Callable[[object], bool]] = {
    "str": lambda v: isinstance(v, str),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
}


def prepare(defs: Sequence[SchemaDef], known: Iterable[str] = ()) -> dict[str, CheckedSchema]:
    """Check every declaration (duplicates, types, options); one `CheckedSchema` per name.

    Nested objects become schemas of their own (see `flatten`), named apart from `known` ones.
    """
    schemas: dict[str, CheckedSchema] = {}
    for spec in flatten(defs, known):
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


def _check_schema(spec: SchemaDef, problems: list[SchemaError] | None = None) -> CheckedSchema:
    """Check one schema; raise its first mistake, or, given `problems`, note every one and go on."""

    def report(error: SchemaError) -> None:
        if problems is None:
            raise error
        problems.append(error)

    name = spec.name
    if not name.isidentifier() or keyword.iskeyword(name):
        report(
            SchemaError(
                f"Schema name {name!r} is not a valid Python identifier; use letters, digits and "
                "underscores, not starting with a digit (e.g. 'ContactInfo').",
                location=spec.location,
            )
        )
    elif name in BUILTIN_TYPE_NAMES:
        report(
            SchemaError(
                f"Schema name {name!r} is a builtin type name; pick another, like {name.title() + 'Info'!r}.",
                location=spec.location,
            )
        )
    if not spec.fields:
        report(
            SchemaError(f"Schema {name!r} has no fields; declare at least one under `fields:`.", location=spec.location)
        )
    seen: dict[str, FieldDef] = {}
    fields: list[CheckedField] = []
    content_fields: list[dict[str, Any]] = []
    for field_def in spec.fields:
        where = field_def.location or spec.location
        first = seen.get(field_def.name)
        if first is not None:
            report(
                SchemaError(
                    f"Field {field_def.name!r} is declared twice in schema {name!r} (at "
                    f"{first.location or spec.location or 'an unknown place'} and "
                    f"{where or 'an unknown place'}); rename or remove one.",
                    location=where,
                )
            )
            continue
        seen[field_def.name] = field_def
        try:
            fields.append(_check_field(field_def, name, where))
        except SchemaError as exc:
            report(exc)
            continue
        content_fields.append({**field_def.content(), "type": str(fields[-1].expr)})
    content = canonical({"name": name, "description": spec.description, "fields": content_fields})
    refs = frozenset().union(*(referenced_names(f.expr) for f in fields))
    return CheckedSchema(spec=spec, fields=tuple(fields), content=content, refs=refs)


def schema_problems(spec: SchemaDef, known: Iterable[str] = ()) -> list[SchemaError]:
    """Every mistake in `spec` that `prepare` and `check_references` find, not only the first (for `check`).

    Each field is checked on its own, nested objects included; a referenced name is known when it is in
    `known` (the other schemas declared and the classes registered).
    """
    problems: list[SchemaError] = []
    names = set(known)
    flat = flatten([spec], names)
    checked = {schema.name: _check_schema(schema, problems) for schema in flat}
    problems.extend(_unknown_references(checked, dict.fromkeys(names)))
    return problems


def _check_required(spec: FieldDef, expr: TypeExpr, label: str, where: SourceLocation | None) -> None:
    if spec.required and spec.has_default:
        raise SchemaError(
            f"{label[0].upper()}{label[1:]} is `required: true` and has a default; a required field has none. "
            "Remove `default` or `required`.",
            location=where,
        )
    if spec.required is False and not spec.has_default and not isinstance(expr, OptionalType):
        raise SchemaError(
            f"{label[0].upper()}{label[1:]} is `required: false` but has neither an optional type nor a default; "
            f"write the type as {str(OptionalType(inner=expr))!r} (null when not given) or give it a `default`.",
            location=where,
        )


def _check_field(spec: FieldDef, schema: str, where: SourceLocation | None) -> CheckedField:
    label = f"field {spec.name!r} of schema {schema!r}"
    name = spec.name
    if not name.isidentifier() or name.startswith("_"):
        why = "starts with '_', which Pydantic treats as private" if name.startswith("_") else "is not an identifier"
        fixed = re.sub(r"\W", "_", name).lstrip("_")
        example = fixed if fixed.isidentifier() and fixed != name else "first_name"
        raise SchemaError(
            f"Field name {name!r} in schema {schema!r} {why}; use letters, digits and underscores, "
            f"starting with a letter (e.g. {example!r}).",
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
    if spec.fields is not None:
        raise SchemaError(
            f"`fields` under {label} declares a nested object, but its type is {spec.type!r}; write "
            "`type: object` (or `list[object]`, `object?`) for a nested object, or remove `fields`.",
            location=where,
        )
    _check_required(spec, expr, label, where)
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
    return CheckedField(spec=spec, expr=expr, where=where)


def _check_format(fmt: str, label: str, where: SourceLocation | None) -> None:
    from atomtask.schemas.json_schema._dialects import checked_formats

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


def check_references(schemas: Mapping[str, CheckedSchema], known: Mapping[str, Any]) -> None:
    """Raise `SchemaError` for a referenced schema that is neither declared nor registered ("did you mean")."""
    for problem in _unknown_references(schemas, known):
        raise problem


def _unknown_references(schemas: Mapping[str, CheckedSchema], known: Mapping[str, Any]) -> Iterator[SchemaError]:
    candidates = sorted({*schemas, *known})
    for schema in schemas.values():
        for field in schema.fields:
            for ref in sorted(referenced_names(field.expr)):
                if ref in schemas or ref in known:
                    continue
                listed = ", ".join(candidates) or "none"
                near = list(dict.fromkeys([*near_type_names(ref), *near_names(ref, candidates)]))[:3]
                suggest = f" Did you mean {' or '.join(map(repr, near))}?" if near else ""
                yield SchemaError(
                    f"Unknown schema {ref!r} in field {field.spec.name!r} of schema {schema.spec.name!r} "
                    f"(type {field.spec.type!r}).{suggest} Known schemas: {listed}. "
                    "Declare it in a schema file or register the Python class.",
                    location=field.where,
                    suggestions=near,
                )


def flatten(defs: Iterable[SchemaDef], known: Iterable[str] = ()) -> list[SchemaDef]:
    """`defs`, each nested object (a field `type: object` with `fields:` under it) made a schema of its own.

    The nested schema is named after its owner and field (`Contact.address` -> 'ContactAddress', with a
    number added if that name is taken by `defs` or `known`) and follows its owner in the list; the
    field's `object` becomes that name (`list[object]` -> `list[ContactAddress]`).
    """
    specs = list(defs)
    taken = {*known, *(spec.name for spec in specs)}
    out: list[SchemaDef] = []
    todo = list(reversed(specs))
    while todo:
        spec = todo.pop()
        if all(f.fields is None for f in spec.fields):
            out.append(spec)
            continue
        fields: list[FieldDef] = []
        nested: list[SchemaDef] = []
        for field_def in spec.fields:
            expr = _object_type(field_def)
            if field_def.fields is None or expr is None:
                fields.append(field_def)  # a `fields:` under any other type is reported by `_check_field`
                continue
            name = _free_name(spec.name + "".join(p.capitalize() for p in field_def.name.split("_")), taken)
            child = SchemaDef(name=name, fields=field_def.fields)
            child.location = field_def.location or spec.location
            nested.append(child)
            flat = field_def.model_copy(update={"type": str(_rename(expr, "object", name)), "fields": None})
            flat.location = field_def.location
            fields.append(flat)
        flat_spec = spec.model_copy(update={"fields": fields})
        flat_spec.location = spec.location
        out.append(flat_spec)
        todo.extend(reversed(nested))
    return out


def _object_type(field_def: FieldDef) -> TypeExpr | None:
    """The parsed type of a field declared with nested `fields:` when it has an `object` to replace, else None."""
    if field_def.fields is None:
        return None
    if "type" not in field_def.model_fields_set:
        return SchemaRef(name="object")  # `fields:` alone declares a nested object
    try:
        expr = parse_type(field_def.type, nested_objects=True)
    except SchemaError:
        return None
    return expr if "object" in referenced_names(expr) else None


def _rename(expr: TypeExpr, old: str, new: str) -> TypeExpr:
    match expr:
        case SchemaRef(name=name) if name == old:
            return SchemaRef(name=new)
        case ListType(item=item):
            return ListType(item=_rename(item, old, new))
        case DictType(key=key, value=value):
            return DictType(key=key, value=_rename(value, old, new))
        case OptionalType(inner=inner):
            return OptionalType(inner=_rename(inner, old, new))
        case UnionType(options=options):
            return UnionType(options=tuple(_rename(o, old, new) for o in options))
        case _:
            return expr


def _free_name(name: str, taken: set[str]) -> str:
    candidate, number = name, 2
    while candidate in taken:
        candidate, number = f"{name}{number}", number + 1
    taken.add(candidate)
    return candidate


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
    schemas = prepare(defs, known)
    check_references(schemas, known)
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


def _cache_key(name: str, schemas: Mapping[str, CheckedSchema], known: Mapping[str, type[BaseModel]]) -> _CacheKey:
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


def _create(schema: CheckedSchema, resolve: Callable[[str], Any]) -> type[BaseModel]:
    definitions: dict[str, Any] = {}
    for field in schema.fields:
        annotation = to_annotation(field.expr, resolve)
        if field.spec.format is not None:
            from atomtask.schemas.json_schema._dialects import format_validator

            annotation = Annotated[annotation, AfterValidator(format_validator(field.spec.format))]
        definitions[field.spec.name] = (annotation, Field(**_field_arguments(field)))
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


def _field_arguments(field: CheckedField) -> dict[str, Any]:
    """The keyword arguments of the field's pydantic `Field(...)`."""
    spec = field.spec
    arguments: dict[str, Any] = {}
    if spec.description is not None:
        arguments["description"] = spec.description
    for option in (*NUMERIC_OPTIONS, *TEXT_OPTIONS):
        if getattr(spec, option) is not None:
            arguments[option] = getattr(spec, option)
    if spec.format is not None:
        arguments["json_schema_extra"] = {"format": spec.format}
    if spec.min_items is not None:
        arguments["min_length"] = spec.min_items
    if spec.max_items is not None:
        arguments["max_length"] = spec.max_items
    if spec.has_default:
        # The raw default shows in the JSON Schema; instances get it validated (a date string
        # becomes a `date`, a mapping becomes the referenced model).
        arguments["default"] = spec.default
        arguments["validate_default"] = True
    elif is_optional(field.expr) and not spec.required:
        arguments["default"] = None
    return arguments


def _rebuild(cls: type[BaseModel], schema: CheckedSchema, namespace: dict[str, Any]) -> None:
    try:
        cls.model_rebuild(force=True, _types_namespace=namespace)
    except _BUILD_ERRORS as exc:
        raise _build_error(schema, exc) from exc


def _build_error(schema: CheckedSchema, exc: Exception) -> SchemaError:
    # Reached only when a check above missed a case: still name the schema and keep the cause.
    return SchemaError(
        f"Schema {schema.spec.name!r} cannot be built: {exc}. Check its field types and options.",
        location=schema.spec.location,
    )


def _check_defaults(cls: type[BaseModel], schema: CheckedSchema) -> None:
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
