"""Schemas that are not YAML fields: JSON Schema declarations and Python classes named by import path.

`schema: {python: "myapp.schemas:Contact"}` (in an `output_format`, or as a named schema
`{name: Contact, python: "myapp.schemas:Contact"}`) imports the class only when its module lies in
one of the packages the `TaskSystem` was told are importable (`TaskSystem(importable=["myapp"])`); a
workflow migration's `call: "myapp.migrations:to_1_1"` function likewise (`import_callable`).
Anything else is refused before any import happens, so a template file can never make the process
import (and so run) an arbitrary module.

A JSON Schema that loads with warnings (`atomtask.schemas.json_warnings`) has them logged at INFO
(`json_schema_warning`) and listed, located, by `json_schema_warnings` and `output_schema_warnings`
for `atomtask check`.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import re
from pathlib import Path
from typing import Any, TypeAlias

from atomtask.schemas.declarations import JsonSchemaDef, PythonSchemaDef
from atomtask.schemas.json_places import json_places
from atomtask.schemas.model_registry import ModelRegistry
from atomtask.schemas.source_text import json_too_deep, read_source
from atomtask.system.errors import SchemaError, SourceLocation, did_you_mean, near_names
from atomtask.system.logs import get_logger
from atomtask.system.templates import Template
from pydantic import BaseModel, ValidationError

__all__ = [
    "SCHEMA_KEYWORDS",
    "import_callable",
    "import_schema_class",
    "inline_output_class",
    "json_schema_file_definition",
    "json_schema_warnings",
    "output_schema_warnings",
    "register_schema_sources",
]

log = get_logger(__name__)

_MODULE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def import_schema_class(
    path: str, *, importable: tuple[str, ...], location: SourceLocation | None = None, where: str = "a schema"
) -> type[BaseModel]:
    """Import the Pydantic class `path` ("package.module:Class") if its package is importable.

    Raises `SchemaError` — before importing anything — when the module is not inside one of the
    `importable` packages, and after importing when the class is missing or not a Pydantic model.
    """
    module, attribute = _import_module(path, importable=importable, location=location, where=where, what="class")
    module_name = module.__name__
    found = getattr(module, attribute, None)
    if found is None:
        models = [
            n
            for n, v in vars(module).items()
            if inspect.isclass(v) and issubclass(v, BaseModel) and v.__module__ == module.__name__
        ]
        raise SchemaError(
            f"Module {module_name!r} has no class {attribute!r} (named in {where}).{did_you_mean(attribute, models)} "
            f"Pydantic models there: {', '.join(sorted(models)) or 'none'}.",
            location=location,
            suggestions=near_names(attribute, models),
        )
    if not (inspect.isclass(found) and issubclass(found, BaseModel)):
        raise SchemaError(
            f"{path!r} (named in {where}) is not a Pydantic model class; schemas must subclass `pydantic.BaseModel`.",
            location=location,
        )
    return found


def import_callable(
    path: str, *, importable: tuple[str, ...], location: SourceLocation | None = None, where: str
) -> Any:
    """Import the function `path` ("package.module:function") under the same rule as `import_schema_class`.

    Raises `SchemaError` before importing anything when the module is not inside one of the
    `importable` packages, and after importing when the name is missing or not callable.
    """
    module, attribute = _import_module(path, importable=importable, location=location, where=where, what="function")
    found = getattr(module, attribute, None)
    if found is None or not callable(found):
        names = [n for n, v in vars(module).items() if inspect.isfunction(v) and v.__module__ == module.__name__]
        what = "has no function" if found is None else "has a name that is not callable:"
        raise SchemaError(
            f"Module {module.__name__!r} {what} {attribute!r} (named in {where}).{did_you_mean(attribute, names)} "
            f"Functions there: {', '.join(sorted(names)) or 'none'}.",
            location=location,
            suggestions=near_names(attribute, names),
        )
    return found


def _import_module(
    path: str, *, importable: tuple[str, ...], location: SourceLocation | None, where: str, what: str
) -> tuple[Any, str]:
    """The module of `path` ("package.module:name") and the name, once its package is known importable."""
    module_name, sep, attribute = path.partition(":")
    if not sep or not _MODULE_RE.match(module_name) or not attribute.isidentifier():
        shape = "ClassName" if what == "class" else what
        raise SchemaError(
            f"Python {what} reference {path!r} in {where} is malformed; write it as `package.module:{shape}`.",
            location=location,
        )
    allowed = any(module_name == package or module_name.startswith(package + ".") for package in importable)
    if not allowed:
        listed = ", ".join(repr(p) for p in importable) or "none"
        raise SchemaError(
            f"{where[0].upper() + where[1:]} names the Python {what} {path!r}, but module {module_name!r} is not in "
            f"the importable packages ({listed}). A declaration file may not import arbitrary modules; if you trust "
            f"it, allow its package in Python: `TaskSystem(importable=[{module_name.split('.')[0]!r}])`.",
            location=location,
        )
    try:
        return importlib.import_module(module_name), attribute
    except ImportError as exc:
        raise SchemaError(
            f"Cannot import module {module_name!r} named by {path!r} in {where}: {exc}. Check the module path.",
            location=location,
        ) from None


def inline_output_class(
    template: str, schema: dict[str, Any], models: ModelRegistry, location: SourceLocation | None
) -> type[BaseModel]:
    """The class of `output_format: {schema: {json_schema: ...}}` or `{schema: {python: ...}}`."""
    where = f"the output schema of template {template!r}"
    kinds = [k for k in ("json_schema", "python") if k in schema]
    allowed = {"python"} if kinds == ["python"] else {"json_schema", "name", "description", "strict_schema"}
    extra = sorted(set(schema) - allowed)
    if len(kinds) != 1 or extra:
        raise SchemaError(
            f"Inline schema of template {template!r} mixes keys ({', '.join(map(str, schema))}); write "
            "`{json_schema: {...}}` (with optional `name`, `description` and `strict_schema`), "
            "`{python: 'pkg.module:Class'}`, or `{fields: [...]}`.",
            location=location,
        )
    if kinds == ["python"]:
        return import_schema_class(str(schema["python"]), importable=models.importable, location=location, where=where)
    definition_data = {"name": _class_name(template) + "Output", **schema}
    try:
        definition = JsonSchemaDef.model_validate(definition_data)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = ".".join(str(p) for p in error["loc"])
        raise SchemaError(
            f"Inline JSON Schema of template {template!r} is invalid: `{loc}`: {error['msg']}.", location=location
        ) from None
    definition.location = location
    definition.base_uri = _file_uri(location)
    from atomtask.schemas.json_models import build_json_schema_model

    cls = build_json_schema_model(definition, resources=models.json_resources)
    _log_warnings(cls, definition)
    return cls


def register_schema_sources(
    json_schemas: list[JsonSchemaDef], python_schemas: list[PythonSchemaDef], models: ModelRegistry
) -> None:
    """Build and register JSON Schema and Python-class declarations (before YAML field schemas, which may use them)."""
    if not json_schemas and not python_schemas:
        return  # without importing the JSON Schema machinery (and `jsonschema`): YAML-only projects never need it
    from atomtask.schemas.json_models import build_json_schema_model

    for definition in json_schemas:
        if definition.base_uri is None:
            definition.base_uri = _file_uri(definition.location)
        if definition.base_uri is not None and definition.location is not None and definition.location.line is None:
            models.add_json_document(definition.base_uri, definition.json_schema)  # a whole `.json` file
        schema_id = definition.json_schema.get("$id") if isinstance(definition.json_schema, dict) else None
        if isinstance(schema_id, str):
            models.add_json_document(schema_id, definition.json_schema)
    for definition in json_schemas:
        cls = build_json_schema_model(definition, resources=models.json_resources)
        models.register(cls, definition.name, location=definition.location)
        _log_warnings(cls, definition)
    for reference in python_schemas:
        python_cls = import_schema_class(
            reference.python,
            importable=models.importable,
            location=reference.location,
            where=f"schema {reference.name!r}",
        )
        models.register(python_cls, reference.name, location=reference.location)


Located: TypeAlias = tuple[str, str, SourceLocation | None]
"""(code, message, where) of a load-time warning."""


def json_schema_warnings(definitions: list[JsonSchemaDef], models: ModelRegistry) -> list[Located]:
    """The load-time warnings (W102, W103) of the registered JSON Schema declarations, each where it is written."""
    out: list[Located] = []
    for definition in definitions:
        if definition.name in models:
            out.extend(_located(models.get(definition.name), definition, None))
    return out


def output_schema_warnings(template: Template, cls: type[BaseModel] | None) -> list[Located]:
    """The load-time warnings of a template's inline `output_format: {schema: {json_schema: ...}}`, at it."""
    schema = template.output_format.schema_
    if cls is None or not (isinstance(schema, dict) and "json_schema" in schema):
        return []
    where = template.location_of("output_format.schema") or template.location_of("output_format") or template.location
    return _located(cls, None, where)


def _located(cls: type[BaseModel], definition: JsonSchemaDef | None, where: SourceLocation | None) -> list[Located]:
    name = definition.name if definition is not None else cls.__name__
    return [
        (
            warning.code,
            f"JSON Schema {name!r}: {warning.message}",
            definition.location_at(warning.pointer) if definition is not None else where,
        )
        for warning in getattr(cls, "json_schema_warnings", ())
    ]


def _log_warnings(cls: type[BaseModel], definition: JsonSchemaDef) -> None:
    for code, message, where in _located(cls, definition, None):
        log.info("json_schema_warning", code=code, location=str(where) if where else None, detail=message)


def _file_uri(location: SourceLocation | None) -> str | None:
    if location is None or location.file is None or location.file.startswith("<"):
        return None
    return Path(location.file).resolve().as_uri()


def _class_name(template_name: str) -> str:
    return "".join(part.capitalize() for part in template_name.replace("-", "_").split("_") if part)


#: Keywords that make a JSON object a schema (annotations such as `title` alone do not): a `.json` file
#: with none of them (a data or configuration file in the folder) is skipped, not taken as a schema.
SCHEMA_KEYWORDS = frozenset(
    {
        "$schema", "$id", "$ref", "$dynamicRef", "$recursiveRef", "$defs", "definitions", "$anchor",
        "type", "enum", "const", "properties", "patternProperties", "additionalProperties", "propertyNames",
        "required", "items", "prefixItems", "additionalItems", "contains", "allOf", "anyOf", "oneOf", "not",
        "if", "then", "else", "dependentSchemas", "dependentRequired", "dependencies", "unevaluatedItems",
        "unevaluatedProperties", "format", "pattern", "minimum", "maximum", "exclusiveMinimum",
        "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "minItems", "maxItems", "uniqueItems",
        "minProperties", "maxProperties", "minContains", "maxContains",
    }
)  # fmt: skip


def json_schema_file_definition(path: Path) -> JsonSchemaDef | None:
    """A `.json` file in a templates folder: a JSON Schema named after the file (`Invoice.json` → 'Invoice').

    Returns None for a JSON object with no schema keyword at all (`SCHEMA_KEYWORDS`): such a file is not
    a schema, and the caller skips it with a warning. Raises `SchemaError` for a file that is not UTF-8,
    not JSON, nested deeper than `MAX_NESTING`, or neither an object nor a boolean.
    """
    file = str(path)
    location = SourceLocation(file=file)
    text = read_source(path, error=SchemaError)
    too_deep = json_too_deep(text, file, SchemaError)
    if too_deep is not None:
        raise too_deep
    try:
        contents = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SchemaError(
            f"Invalid JSON in schema file: {exc.msg}.",
            location=SourceLocation(file=file, line=exc.lineno, column=exc.colno),
        ) from None
    name = path.name.removesuffix(".json").removesuffix(".schema")
    if not isinstance(contents, dict | bool):
        raise SchemaError(
            f"Schema file holds a {type(contents).__name__}, not a JSON Schema (an object or a boolean).",
            location=SourceLocation(file=file, line=1, column=1),
        )
    if isinstance(contents, dict) and not SCHEMA_KEYWORDS & set(contents):
        return None
    description = contents.get("description") if isinstance(contents, dict) else None
    definition = JsonSchemaDef(
        name=name,
        description=description if isinstance(description, str) else None,
        json_schema=contents,
        base_uri=path.resolve().as_uri(),
    )
    definition.location = location
    definition.set_places(functools.partial(json_places, text, file))
    return definition
