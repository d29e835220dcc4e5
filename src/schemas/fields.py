"""Named schemas declared in configuration, and the Pydantic classes built from them.

A schema file declares `SchemaDef`s (`name`, `description`, `fields`); `build_models` checks them all
— types, options, references, defaults — and returns one Pydantic class per schema, whose
`model_json_schema()` (with the descriptions) is what the model receives.

Generated classes forbid unknown keys (`extra="forbid"`). The JSON Schema then says
`additionalProperties: false`, which strict structured-output modes require; and an answer with
invented keys is a wrong answer: the validation error goes back to the model as retry feedback
instead of the keys being dropped without a trace.

The checks live in `atomtask.schemas.field_checks`; this module builds and caches the classes.
"""

from __future__ import annotations

import threading
import typing
import weakref
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Annotated, Any, TypeAlias

import pydantic_core
from atomtask.schemas.declarations import SchemaDef
from atomtask.schemas.field_checks import (
    NUMERIC_OPTIONS,
    TEXT_OPTIONS,
    CheckedField,
    CheckedSchema,
    check_references,
    prepare,
)
from atomtask.schemas.type_strings import OptionalType, is_optional, to_annotation
from atomtask.system.errors import SchemaError
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
)
from pydantic.errors import PydanticUndefinedAnnotation, PydanticUserError

__all__ = ["build_models"]

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


def _field_options(field: CheckedField) -> dict[str, Any]:
    spec = field.spec
    options: dict[str, Any] = {}
    if spec.description is not None:
        options["description"] = spec.description
    for option in (*NUMERIC_OPTIONS, *TEXT_OPTIONS):
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
    elif is_optional(field.expr) and not spec.required:
        options["default"] = None
    return options


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
