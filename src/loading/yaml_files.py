"""Reading template, schema and workflow files (YAML) into declarations that remember where they came from.

A file holds one template, schema or workflow, a list of them, several YAML documents, or a mapping
with `templates:`, `schemas:` and `workflows:` lists. A mapping with `instructions` is a template;
one with `steps` a workflow (`yaml_workflows`); one with `fields` is a schema, one with `json_schema`
a JSON Schema, one with `python` a Python class by import path. A `.json` file in a folder is a JSON
Schema named after the file (`schemas.sources`).

Nesting deeper than `MAX_NESTING` levels (aliases included) is refused before anything recurses
that deep (`yaml_loaders`, which also keeps where every mapping and value is). With an errors list, every mistake of a
declaration is noted (each wrong key at its line), and the names of schemas that could not be read
are kept in `Declarations.invalid_schemas`.
"""

from __future__ import annotations

from typing import Any

import yaml
from atomtask.loading.declarations import Declarations
from atomtask.loading.yaml_loaders import YamlLoader, yaml_documents
from atomtask.loading.yaml_nodes import DeclarationProblems, YamlNode, validation_errors
from atomtask.loading.yaml_workflows import read_workflow
from atomtask.schemas.declarations import FieldDef, JsonSchemaDef, PythonSchemaDef, SchemaDef
from atomtask.schemas.source_text import too_deep
from atomtask.system.errors import SchemaError, SourceLocation, TemplateError, UsageError
from atomtask.system.templates import Template, TextOrigin
from pydantic import BaseModel, ValidationError

__all__ = ["load_yaml_text"]


def load_yaml_text(text: str, file: str = "<string>", *, errors: list[UsageError] | None = None) -> Declarations:
    """Parse YAML source into templates, schemas and workflows, each carrying its location.

    With `errors`, an invalid template, schema or workflow is appended there and reading goes on with the next
    one (so `atomtask check` reports every mistake); without it, the first one raises.
    """
    out = Declarations()
    try:
        for doc, loader in yaml_documents(text, file):
            out.extend(_declarations(doc, loader, file, errors))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        location = SourceLocation(file=file, line=mark.line + 1, column=mark.column + 1) if mark else None
        problem = getattr(exc, "problem", None) or str(exc)
        if "nesting depth" in problem and location is not None:  # libyaml's own limit, met before ours
            raise too_deep(location, "YAML") from None
        raise TemplateError(f"Invalid YAML: {problem}.", location=location) from None
    return out


def _declarations(doc: Any, loader: YamlLoader, file: str, errors: list[UsageError] | None = None) -> Declarations:
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
        error = TemplateError(
            f"Expected a template, schema or workflow mapping, got {type(doc).__name__}.", location=location
        )
        return _failed([error], errors)
    if set(doc) <= {"templates", "schemas", "workflows"} and doc:
        for key in ("schemas", "templates", "workflows"):
            items = doc.get(key) or []
            if not isinstance(items, list):
                raise TemplateError(f"`{key}` must be a list.", location=_key_loc(node, key, location))
            for item in items:
                out.extend(_declarations(item, loader, file, errors))
        return out
    try:
        if "instructions" in doc:
            out.templates.append(_template(doc, loader, location))
        elif "steps" in doc:
            out.workflows.append(read_workflow(doc, loader.nodes, location))
        elif "fields" in doc:
            out.schemas.append(_schema(doc, loader, location))
        elif "json_schema" in doc:
            out.json_schemas.append(_located(JsonSchemaDef, doc, loader, location))
        elif "python" in doc:
            out.python_schemas.append(_located(PythonSchemaDef, doc, loader, location))
        else:
            raise TemplateError(
                "This mapping is neither a template (it has no `instructions`), a workflow (no `steps`) nor a "
                f"schema (no `fields`, `json_schema` or `python`); keys found: {', '.join(map(str, doc)) or 'none'}.",
                location=location,
            )
    except (UsageError, DeclarationProblems) as exc:
        failed = _failed(exc.problems if isinstance(exc, DeclarationProblems) else [exc], errors)
        name = doc.get("name")
        if (
            not {"instructions", "steps"} & set(doc)
            and isinstance(name, str)
            and {"fields", "json_schema", "python"} & set(doc)
        ):
            failed.invalid_schemas[name] = location  # so a template using it is told it is invalid, not unknown
        return failed
    return out


def _failed(problems: list[UsageError], errors: list[UsageError] | None) -> Declarations:
    """Raise the first problem, or note them all and go on when the caller collects errors."""
    if errors is None:
        raise problems[0]
    errors.extend(problems)
    return Declarations()


def _key_loc(node: YamlNode | None, key: str, default: SourceLocation | None) -> SourceLocation | None:
    return node.keys.get(key, default) if node is not None else default


def _template(doc: dict[str, Any], loader: YamlLoader, location: SourceLocation) -> Template:
    try:
        template = Template.model_validate(doc)
    except ValidationError as exc:
        raise DeclarationProblems(
            validation_errors(TemplateError, "template", doc, exc, loader.nodes, location, keys=_keys(Template))
        ) from None
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


def _schema(doc: dict[str, Any], loader: YamlLoader, location: SourceLocation) -> SchemaDef:
    try:
        schema = SchemaDef.model_validate(doc)
    except ValidationError as exc:
        raise DeclarationProblems(
            validation_errors(SchemaError, "schema", doc, exc, loader.nodes, location, keys=_keys(SchemaDef))
        ) from None
    schema.location = location
    _locate_fields(schema.fields, doc.get("fields"), loader)
    return schema


def _locate_fields(fields: list[FieldDef], raw_fields: Any, loader: YamlLoader) -> None:
    """Each field (nested `fields:` included) points at its `type`, else at its start."""
    if not isinstance(raw_fields, list):
        return
    for field_def, raw in zip(fields, raw_fields, strict=False):
        fnode = loader.nodes.get(id(raw)) if isinstance(raw, dict) else None
        if fnode is not None:
            field_def.location = fnode.keys.get("type", fnode.start)
        if field_def.fields is not None and isinstance(raw, dict):
            _locate_fields(field_def.fields, raw.get("fields"), loader)


def _located(
    kind: type[JsonSchemaDef] | type[PythonSchemaDef],
    doc: dict[str, Any],
    loader: YamlLoader,
    location: SourceLocation,
) -> Any:
    if "base_uri" in doc:
        raise SchemaError("`base_uri` is not a schema key; relative `$ref`s resolve from the file.", location=location)
    try:
        declaration = kind.model_validate(doc)
    except ValidationError as exc:
        problems = validation_errors(SchemaError, "schema", doc, exc, loader.nodes, location, keys=_keys(kind))
        raise DeclarationProblems(problems) from None
    node = loader.nodes.get(id(doc))
    key = "json_schema" if kind is JsonSchemaDef else "python"
    declaration.location = node.keys.get(key, location) if node is not None else location
    if isinstance(declaration, JsonSchemaDef):
        places: dict[str, SourceLocation] = {}
        _places(doc.get("json_schema"), "", loader, places)
        declaration.set_places(places)
    return declaration


def _places(value: Any, pointer: str, loader: YamlLoader, out: dict[str, SourceLocation]) -> None:
    """Where each part of a JSON Schema written in YAML is, by (unescaped) JSON Pointer."""
    if isinstance(value, dict):
        node = loader.nodes.get(id(value))
        if node is not None:
            out.setdefault(pointer, node.start)
        for key, item in value.items():
            if node is not None and str(key) in node.keys:
                out[f"{pointer}/{key}"] = node.keys[str(key)]
            _places(item, f"{pointer}/{key}", loader, out)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _places(item, f"{pointer}/{index}", loader, out)


def _keys(model: type[BaseModel]) -> list[str]:
    """The keys a declaration accepts (listed for an unknown one); `base_uri` is set by the reader, never written."""
    return [name for name in model.model_fields if name != "base_uri"]
