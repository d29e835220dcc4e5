"""Reading template, schema and workflow files (YAML) into declarations that remember where they came from.

A file holds one template, schema or workflow, a list of them, several YAML documents, or a mapping
with `templates:`, `schemas:` and `workflows:` lists. A mapping with `instructions` is a template;
one with `steps` a workflow (`yaml_workflows`); one with `fields` is a schema, one with `json_schema`
a JSON Schema, one with `python` a Python class by import path. A `.json` file in a folder is a JSON
Schema named after the file (`schemas.sources`).

Nesting deeper than `MAX_NESTING` levels (aliases included) is refused as the document is composed,
so no deeper input reaches anything that recurses. With an errors list, every mistake of a
declaration is noted (each wrong key at its line), and the names of schemas that could not be read
are kept in `Declarations.invalid_schemas`.
"""

from __future__ import annotations

from typing import Any

import yaml
from atomtask.loading.declarations import Declarations
from atomtask.loading.yaml_nodes import DeclarationProblems, YamlNode, validation_errors
from atomtask.loading.yaml_workflows import read_workflow
from atomtask.schemas.declarations import FieldDef, JsonSchemaDef, PythonSchemaDef, SchemaDef
from atomtask.schemas.source_text import MAX_NESTING, too_deep
from atomtask.system.errors import SchemaError, SourceLocation, TemplateError, UsageError
from atomtask.system.templates import Template, TextOrigin
from pydantic import BaseModel, ValidationError
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

__all__ = ["YAML_SUFFIXES", "load_yaml_text"]

YAML_SUFFIXES = (".yaml", ".yml")


try:  # libyaml's parser (as PyYAML's wheels ship it) reads ~10x faster; composing and constructing stay Python.
    from yaml._yaml import CParser as _EventSource
except ImportError:  # pragma: no cover - PyYAML built without libyaml

    class _EventSource(Reader, Scanner, Parser):  # type: ignore[no-redef]  # the same events, pure Python
        def __init__(self, stream: str) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)


class _LocatingLoader(Composer, _EventSource, SafeConstructor, Resolver):
    """A safe loader that notes the position of every mapping and of each of its values.

    The nodes are composed here, in Python, rather than by libyaml's composer, which recurses in C
    (deep enough input has crashed the process; its own depth limit depends on the libyaml build):
    nesting (aliases included) deeper than `MAX_NESTING` is refused as it is met, before anything
    recurses further.
    """

    def __init__(self, stream: str, file: str) -> None:
        _EventSource.__init__(self, stream)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        Composer.__init__(self)
        self.file = file
        self.nodes: dict[int, YamlNode] = {}
        self._depth = 0
        self._heights: dict[int, int] = {}  # id(collection node) -> how many levels it nests

    def compose_document(self) -> yaml.Node | None:
        node = super().compose_document()
        self._heights.clear()  # keyed by id(): the next document's nodes may reuse these ids
        return node

    # Aliases add no nesting while composing, but what they point at nests inside them once constructed:
    # each collection's height counts the collections it holds, aliased ones included.
    def compose_sequence_node(self, anchor: Any) -> yaml.SequenceNode:
        self._enter()
        node = super().compose_sequence_node(anchor)
        self._leave(node, node.value)
        return node

    def compose_mapping_node(self, anchor: Any) -> yaml.MappingNode:
        self._enter()
        node = super().compose_mapping_node(anchor)
        self._leave(node, [child for pair in node.value for child in pair])
        return node

    def _enter(self) -> None:
        self._depth += 1
        if self._depth > MAX_NESTING:
            event = self.peek_event()
            raise too_deep(self._loc(event.start_mark) if event is not None else SourceLocation(file=self.file), "YAML")

    def _leave(self, node: yaml.Node, children: list[Any]) -> None:
        heights = self._heights
        height = 1 + max([heights.get(id(child), 0) for child in children], default=0)
        heights[id(node)] = height
        self._depth -= 1
        if self._depth + height > MAX_NESTING:
            raise too_deep(self._loc(node.start_mark), "YAML")

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        mapping = super().construct_mapping(node, deep=True)
        keys: dict[str, SourceLocation] = {}
        block: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            # Inside the quotes of a quoted scalar, so offsets into its text land on their column.
            quoted = isinstance(value_node, yaml.ScalarNode) and value_node.style in ('"', "'")
            keys[key] = self._loc(value_node.start_mark, shift=1 if quoted else 0)
            if isinstance(value_node, yaml.ScalarNode) and value_node.style in ("|", ">"):
                block.add(key)
        self.nodes[id(mapping)] = YamlNode(start=self._loc(node.start_mark), keys=keys, block_keys=frozenset(block))
        return mapping

    def _loc(self, mark: Any, *, shift: int = 0) -> SourceLocation:
        return SourceLocation(file=self.file, line=mark.line + 1, column=mark.column + 1 + shift)


_LocatingLoader.add_constructor(  # type: ignore[type-var]  # typeshed bounds this to PyYAML's own loaders
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _LocatingLoader.construct_mapping,
)


def load_yaml_text(text: str, file: str = "<string>", *, errors: list[UsageError] | None = None) -> Declarations:
    """Parse YAML source into templates, schemas and workflows, each carrying its location.

    With `errors`, an invalid template, schema or workflow is appended there and reading goes on with the next
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
        if "nesting depth" in problem and location is not None:  # libyaml's own limit, met before ours
            raise too_deep(location, "YAML") from None
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


def _template(doc: dict[str, Any], loader: _LocatingLoader, location: SourceLocation) -> Template:
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


def _schema(doc: dict[str, Any], loader: _LocatingLoader, location: SourceLocation) -> SchemaDef:
    try:
        schema = SchemaDef.model_validate(doc)
    except ValidationError as exc:
        raise DeclarationProblems(
            validation_errors(SchemaError, "schema", doc, exc, loader.nodes, location, keys=_keys(SchemaDef))
        ) from None
    schema.location = location
    _locate_fields(schema.fields, doc.get("fields"), loader)
    return schema


def _locate_fields(fields: list[FieldDef], raw_fields: Any, loader: _LocatingLoader) -> None:
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
    loader: _LocatingLoader,
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


def _places(value: Any, pointer: str, loader: _LocatingLoader, out: dict[str, SourceLocation]) -> None:
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
