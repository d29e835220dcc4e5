"""Declaration sources: a file's text under the limits every reader applies, JSON Schema files, Python classes.

`read_source` reads a declaration file as UTF-8 and refuses nesting deeper than `MAX_NESTING` before
any parser sees it; `json_places` locates each part of a JSON document (line:col by JSON Pointer);
JSON Schema declarations and Python classes named by import path become registered output classes.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import re
from pathlib import Path
from typing import Any, TypeAlias

from atomtask._logs import get_logger
from atomtask.errors import SchemaError, SourceLocation, TemplateError, UsageError, did_you_mean, near_names
from atomtask.schemas._declarations import JsonSchemaDef, PythonSchemaDef
from atomtask.schemas._model_registry import ModelRegistry
from atomtask.system._templates import Template
from pydantic import BaseModel, ValidationError

__all__ = [
    "MAX_NESTING",
    "SCHEMA_KEYWORDS",
    "import_callable",
    "import_schema_class",
    "inline_output_class",
    "json_places",
    "json_schema_file_definition",
    "json_schema_warnings",
    "json_too_deep",
    "output_schema_warnings",
    "read_source",
    "register_schema_sources",
    "too_deep",
]

MAX_NESTING = 100
"""The deepest nesting of lists and mappings (objects, arrays) a declaration file may have."""

_BOMS = {b"\xff\xfe": "UTF-16", b"\xfe\xff": "UTF-16"}
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.DOTALL)


def read_source(path: Path, *, error: type[UsageError] = TemplateError) -> str:
    """The UTF-8 text of the file at `path`; raises `error` (a `UsageError`) when it is not UTF-8."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = exc.start
        line = data.count(b"\n", 0, start) + 1
        column = start - (data.rfind(b"\n", 0, start) + 1) + 1
        encoding = next((name for bom, name in _BOMS.items() if data.startswith(bom)), None)
        seems = f" (it starts with a {encoding} byte-order mark)" if encoding else ""
        raise error(
            f"File {str(path)!r} is not valid UTF-8{seems}: byte 0x{data[start]:02x} at offset {start} "
            f"(line {line}, column {column}) cannot be decoded. Save the file as UTF-8.",
            location=SourceLocation(file=str(path), line=line, column=column),
        ) from None


def too_deep(location: SourceLocation, what: str, error: type[UsageError] = TemplateError) -> UsageError:
    """The error for input nested deeper than `MAX_NESTING` (`what`: "YAML", "JSON", ...), at `location`."""
    return error(
        f"{what} nested more than {MAX_NESTING} levels deep here; declarations may nest at most {MAX_NESTING} "
        "levels of lists and mappings. Flatten the structure (e.g. declare a nested schema by name and refer to it).",
        location=location,
    )


def json_too_deep(text: str, file: str, error: type[UsageError] = TemplateError) -> UsageError | None:
    """The error for JSON `text` nested deeper than `MAX_NESTING`, else None (scans brackets outside strings)."""
    depth = 0
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_NESTING:
                offset = match.start()
                line = text.count("\n", 0, offset) + 1
                column = offset - (text.rfind("\n", 0, offset) + 1) + 1
                return too_deep(SourceLocation(file=file, line=line, column=column), "JSON", error)
        elif token in "]}":
            depth -= 1
    return None


# `\ud83d` and the like: same length, so every position after them is unchanged.
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def json_places(text: str, file: str) -> dict[str, SourceLocation]:
    """Each member and item of the JSON `text` by unescaped JSON Pointer (`/properties/age`; `""` is the root).

    A member is located at its key (what a message about it points at), an item at its start.
    """
    import yaml

    try:
        from yaml import CSafeLoader as Loader
    except ImportError:  # pragma: no cover - PyYAML built without libyaml
        from yaml import SafeLoader as Loader  # type: ignore[assignment]  # same interface, pure Python

    places: dict[str, SourceLocation] = {}
    # Per open collection: [pointer, is_mapping, next index or key, expecting a key]
    stack: list[list[Any]] = []

    def loc(mark: Any) -> SourceLocation:
        return SourceLocation(file=file, line=mark.line + 1, column=mark.column + 1)

    try:
        for event in yaml.parse(_SURROGATE.sub(r"\\u0020", text), Loader=Loader):
            if isinstance(event, yaml.CollectionEndEvent):
                stack.pop()
                continue
            if not isinstance(event, yaml.NodeEvent):
                continue
            if not stack:
                pointer = ""
                places.setdefault(pointer, loc(event.start_mark))
            else:
                top = stack[-1]
                if top[1] and top[3]:  # a key
                    top[2], top[3] = str(getattr(event, "value", "")), False
                    places[f"{top[0]}/{top[2]}"] = loc(event.start_mark)
                    continue
                if top[1]:
                    pointer = f"{top[0]}/{top[2]}"
                    top[3] = True
                else:
                    pointer = f"{top[0]}/{top[2]}"
                    places[pointer] = loc(event.start_mark)
                    top[2] += 1
            if isinstance(event, yaml.MappingStartEvent):
                stack.append([pointer, True, None, True])
            elif isinstance(event, yaml.SequenceStartEvent):
                stack.append([pointer, False, 0, False])
    except yaml.YAMLError:
        return {}
    return places


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
        names += [n for n in getattr(module, "__all__", ()) if n not in names]  # a package's lazy exports
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
            f"it, allow its package in Python: `TaskSystem(importable=[{module_name.split('.')[0]!r}])`; on the "
            f"command line: `--allow-import {module_name.split('.')[0]}` or "
            f"`ATOMTASK_IMPORTABLE={module_name.split('.')[0]}` (comma-separated packages).",
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
    from atomtask.schemas.json_schema._models import build_json_schema_model

    cls = build_json_schema_model(definition, resources=models.json_resources)
    _log_warnings(cls, definition)
    return cls


def register_schema_sources(
    json_schemas: list[JsonSchemaDef], python_schemas: list[PythonSchemaDef], models: ModelRegistry
) -> None:
    """Build and register JSON Schema and Python-class declarations (before YAML field schemas, which may use them)."""
    if not json_schemas and not python_schemas:
        return  # without importing the JSON Schema machinery (and `jsonschema`): YAML-only projects never need it
    from atomtask.schemas.json_schema._models import build_json_schema_model

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
