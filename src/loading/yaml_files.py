"""Reading template and schema files (YAML) into declarations that remember where they came from.

A file holds one template, one named schema, a list of either, several YAML documents, or a
mapping with `templates:` and `schemas:` lists. A mapping with `instructions` is a template; one
with `fields` is a schema, one with `json_schema` a JSON Schema, one with `python` a Python class by
import path. A `.json` file in a folder is a JSON Schema named after the file.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs
import yaml
from atomtask.loading.declarations import Declarations
from atomtask.schemas.declarations import JsonSchemaDef, PythonSchemaDef, SchemaDef
from atomtask.system.errors import SchemaError, SourceLocation, TemplateError, UsageError
from atomtask.system.templates import Template, TextOrigin
from pydantic import ValidationError

__all__ = ["YAML_SUFFIXES", "load_yaml_text"]

YAML_SUFFIXES = (".yaml", ".yml")


@attrs.frozen(kw_only=True)
class _Node:
    """Where one mapping and each of its keys' values start."""

    start: SourceLocation
    keys: dict[str, SourceLocation]
    block_keys: frozenset[str]


try:  # libyaml's parser (as PyYAML's wheels ship it) reads ~10x faster; the constructor stays Python.
    from yaml import CSafeLoader as _SafeLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _SafeLoader  # type: ignore[assignment]  # same interface, pure Python


class _LocatingLoader(_SafeLoader):
    """A SafeLoader that notes the position of every mapping and of each of its values."""

    def __init__(self, stream: str, file: str) -> None:
        super().__init__(stream)
        self.file = file
        self.nodes: dict[int, _Node] = {}

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        mapping = super().construct_mapping(node, deep=True)
        keys: dict[str, SourceLocation] = {}
        block: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            keys[key] = self._loc(value_node.start_mark)
            if isinstance(value_node, yaml.ScalarNode) and value_node.style in ("|", ">"):
                block.add(key)
        self.nodes[id(mapping)] = _Node(start=self._loc(node.start_mark), keys=keys, block_keys=frozenset(block))
        return mapping

    def _loc(self, mark: Any) -> SourceLocation:
        return SourceLocation(file=self.file, line=mark.line + 1, column=mark.column + 1)


_LocatingLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _LocatingLoader.construct_mapping,
)


def load_yaml_text(text: str, file: str = "<string>", *, errors: list[UsageError] | None = None) -> Declarations:
    """Parse YAML source into templates and schemas, each carrying its location.

    With `errors`, an invalid template or schema is appended there and reading goes on with the next
    one (so `atomtask check` reports every mistake); without it, the first one raises.
    """
    loader = _LocatingLoader(text, file)
    out = Declarations()
    try:
        # `compose_document` + `construct_document` is what `get_data` does; typeshed types these.
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                break
            doc = loader.construct_document(node)
            out.extend(_declarations(doc, loader, file, errors))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        location = SourceLocation(file=file, line=mark.line + 1, column=mark.column + 1) if mark else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise TemplateError(f"Invalid YAML: {problem}.", location=location) from None
    finally:
        loader.dispose()
    return out


def _declarations(doc: Any, loader: _LocatingLoader, file: str, errors: list[UsageError] | None = None) -> Declarations:
    out = Declarations()
    if doc is None:
        return out
    if isinstance(doc, list):
        for item in doc:
            out.extend(_declarations(item, loader, file, errors))
        return out
    node = loader.nodes.get(id(doc)) if isinstance(doc, dict) else None
    location = node.start if node is not None else SourceLocation(file=file)
    if not isinstance(doc, dict):
        error = TemplateError(f"Expected a template or schema mapping, got {type(doc).__name__}.", location=location)
        return _failed(error, errors)
    if set(doc) <= {"templates", "schemas"} and doc:
        for key in ("schemas", "templates"):
            items = doc.get(key) or []
            if not isinstance(items, list):
                raise TemplateError(f"`{key}` must be a list.", location=_key_loc(node, key, location))
            for item in items:
                out.extend(_declarations(item, loader, file, errors))
        return out
    try:
        if "instructions" in doc:
            out.templates.append(_template(doc, loader, location))
        elif "fields" in doc:
            out.schemas.append(_schema(doc, loader, location))
        elif "json_schema" in doc:
            out.json_schemas.append(_located(JsonSchemaDef, doc, loader, location))
        elif "python" in doc:
            out.python_schemas.append(_located(PythonSchemaDef, doc, loader, location))
        else:
            raise TemplateError(
                "This mapping is neither a template (it has no `instructions`) nor a schema (it has no "
                f"`fields`, `json_schema` or `python`); keys found: {', '.join(map(str, doc)) or 'none'}.",
                location=location,
            )
    except UsageError as exc:
        return _failed(exc, errors)
    return out


def _failed(error: UsageError, errors: list[UsageError] | None) -> Declarations:
    """Raise `error`, or note it and go on when the caller collects errors."""
    if errors is None:
        raise error
    errors.append(error)
    return Declarations()


def _key_loc(node: _Node | None, key: str, default: SourceLocation | None) -> SourceLocation | None:
    return node.keys.get(key, default) if node is not None else default


def _template(doc: dict[str, Any], loader: _LocatingLoader, location: SourceLocation) -> Template:
    try:
        template = Template.model_validate(doc)
    except ValidationError as exc:
        raise _validation_error(TemplateError, "template", doc, exc, loader, location) from None
    node = loader.nodes.get(id(doc))
    origins: dict[str, TextOrigin] = {}
    if node is not None:
        for key, loc in node.keys.items():
            origins[key] = TextOrigin(location=loc, block=key in node.block_keys)
        params = doc.get("params")
        pnode = loader.nodes.get(id(params)) if isinstance(params, dict) else None
        if pnode is not None:
            for key, loc in pnode.keys.items():
                origins[f"params.{key}"] = TextOrigin(location=loc)
        fmt = doc.get("output_format")
        fnode = loader.nodes.get(id(fmt)) if isinstance(fmt, dict) else None
        if fnode is not None:
            for key, loc in fnode.keys.items():
                origins[f"output_format.{key}"] = TextOrigin(location=loc)
    return template.located(location, origins)


def _schema(doc: dict[str, Any], loader: _LocatingLoader, location: SourceLocation) -> SchemaDef:
    try:
        schema = SchemaDef.model_validate(doc)
    except ValidationError as exc:
        raise _validation_error(SchemaError, "schema", doc, exc, loader, location) from None
    schema.location = location
    fields = doc.get("fields")
    if isinstance(fields, list):
        for field_def, raw in zip(schema.fields, fields, strict=False):
            fnode = loader.nodes.get(id(raw)) if isinstance(raw, dict) else None
            if fnode is not None:
                field_def.location = fnode.keys.get("type", fnode.start)
    return schema


def _located(
    kind: type[JsonSchemaDef] | type[PythonSchemaDef],
    doc: dict[str, Any],
    loader: _LocatingLoader,
    location: SourceLocation,
) -> Any:
    if "base_uri" in doc:
        raise SchemaError("`base_uri` is not a schema key; relative `$ref`s resolve from the file.", location=location)
    try:
        declaration = kind.model_validate(doc)
    except ValidationError as exc:
        raise _validation_error(SchemaError, "schema", doc, exc, loader, location, keys=kind.model_fields) from None
    node = loader.nodes.get(id(doc))
    key = "json_schema" if kind is JsonSchemaDef else "python"
    declaration.location = node.keys.get(key, location) if node is not None else location
    return declaration


def _validation_error(
    kind: type[UsageError],
    what: str,
    doc: dict[str, Any],
    exc: ValidationError,
    loader: _LocatingLoader,
    location: SourceLocation,
    keys: Iterable[str] | None = None,
) -> UsageError:
    """Turn pydantic's error into one message pointing at the offending key's line."""
    err = exc.errors()[0]
    loc_path = [p for p in err["loc"] if not isinstance(p, str) or not p.startswith("function-")]
    where: SourceLocation | None = location
    container: Any = doc
    for part in loc_path:
        node = loader.nodes.get(id(container)) if isinstance(container, dict) else None
        if node is not None and isinstance(part, str) and part in node.keys:
            where = node.keys[part]
        try:
            container = container[part]
        except (KeyError, IndexError, TypeError):
            break
    name = doc.get("name")
    label = f"{what} {name!r}" if isinstance(name, str) else what
    dotted = ".".join(str(p) for p in loc_path)
    message = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden" and len(loc_path) == 1:
        valid = ", ".join(k for k in keys or (Template.model_fields if what == "template" else SchemaDef.model_fields))
        valid = valid.replace(", base_uri", "")
        message = f"unknown key; valid keys: {valid}"
    elif err["type"] == "missing":
        message = "required key is missing"
    return kind(f"Invalid {label}: `{dotted}`: {message}.", location=where)
