"""Turning `defatom` and `defschema` forms into the same `Template` and `SchemaDef` YAML produces.

    (defatom extract_contact
      (params (text str "The text to read")
              (locale str (default "en")))
      (instructions "Extract the contact from ({{locale}}): {{text}}")
      (output_format ((type "json") (schema "Contact") (mode "tool")))
      (model_settings ((temperature 0) (max_tokens 500))))

    (defschema Contact "A person's contact details"
      (name str "Full name")
      (email str?))

Clause values are literals, never evaluated: strings, numbers, `true`/`false`/`nil`, symbols (read
as their names, so `str?` and `"str?"` are the same type) and lists of these. Each result remembers
the line and column of its form and of each clause, so the registration checks (unknown schema,
undeclared placeholder, ...) point into the S-expression source.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
from atomtask.schemas.declarations import SchemaDef
from atomtask.sexp.forms import clauses, datum, describe, entries, field_spec, pairs, single, spec
from atomtask.sexp.reader import Literal, Node, SList, Symbol
from atomtask.system.errors import SchemaError, SourceLocation, TemplateError
from atomtask.system.templates import Template, TemplateLimits, TextOrigin
from pydantic import ValidationError

__all__ = ["TEMPLATE_CLAUSES", "StringOrigin", "schema_from_form", "template_from_form"]

#: The clauses a `defatom` form may have (`instructions` is required).
TEMPLATE_CLAUSES = (
    "params",
    "description",
    "system",
    "instructions",
    "output_format",
    "model",
    "model_settings",
    "retries",
    "limits",
    "cache",
    "repair",
)
_TEXT_CLAUSES = ("description", "system", "instructions", "model")
_OUTPUT_KEYS = ("type", "schema", "mode")
_LIMIT_KEYS = tuple(TemplateLimits.model_fields)
_CACHE_KEYS = ("enabled", "ttl")
_PARAM_OPTIONS = ("default",)


# ---------------------------------------------------------------------------------------------
# defatom


def template_from_form(form: SList) -> Template:
    """Build the `Template` a `(defatom name clause...)` form declares; raises `TemplateError`."""
    name_node = form.items[1] if len(form.items) > 1 else None
    if not isinstance(name_node, Symbol):
        found = f", found {describe(name_node)}" if name_node is not None else ""
        raise TemplateError(
            f'`defatom` needs a task name first{found}: `(defatom name (instructions "...") ...)`.',
            location=name_node.location if name_node is not None else form.location,
        )
    name = name_node.name
    label = f"defatom {name!r}"
    declared = clauses(form.items[2:], TEMPLATE_CLAUSES, label, TemplateError, what="clause")
    if "instructions" not in declared:
        raise TemplateError(
            f'{label} has no `instructions` clause; add `(instructions "... {{{{param}}}} ...")`. '
            f"Clauses: {', '.join(TEMPLATE_CLAUSES)}.",
            location=form.location,
        )
    data: dict[str, Any] = {"name": name}
    origins: dict[str, TextOrigin] = {}
    where: dict[str, SourceLocation] = {"name": name_node.location}
    for key, clause in declared.items():
        where[key] = clause.location
        origins[key] = TextOrigin(location=clause.location)
        args = clause.items[1:]
        if key in _TEXT_CLAUSES:
            node = single(args, clause, label, TemplateError)
            data[key] = _text(node, key, label)
            # Placeholders are looked for in `system` and `instructions`: point inside those texts.
            origins[key] = (
                _text_origin(node) if key in ("system", "instructions") else TextOrigin(location=node.location)
            )
        elif key in ("retries", "repair"):  # `(repair lenient)`: a symbol reads as its name
            data[key] = datum(single(args, clause, label, TemplateError))
        elif key == "params":
            data[key] = _params(args, label, origins)
        elif key == "output_format":
            data[key] = _output_format(args, clause, label, origins)
        elif key == "model_settings":
            data[key] = _model_settings(args, label, origins)
        elif key == "cache":  # `(cache true)`, `(cache false)`, `(cache ((ttl "1h")))`
            data[key] = _cache(args, clause, label)
        else:  # limits
            data[key] = {
                k: datum(single(e.items[1:], e, label, TemplateError))
                for k, e in entries(args, _LIMIT_KEYS, label, TemplateError).items()
            }
    try:
        template = Template.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        path = [str(p) for p in err["loc"]]
        location = where.get(path[0], form.location) if path else form.location
        if len(path) > 1 and f"{path[0]}.{path[1]}" in origins:
            location = origins[f"{path[0]}.{path[1]}"].location
        message = err["msg"].removeprefix("Value error, ")
        raise TemplateError(f"Invalid {label}: `{'.'.join(path)}`: {message}.", location=location) from None
    return template.located(form.location, origins)


def _cache(args: Sequence[Node], clause: SList, label: str) -> Any:
    if len(args) == 1 and not isinstance(args[0], SList):
        return datum(args[0])
    return {
        k: datum(single(e.items[1:], e, label, TemplateError))
        for k, e in entries(args, _CACHE_KEYS, f"`cache` of {label}", TemplateError).items()
    } or datum(single(args, clause, label, TemplateError))


def _model_settings(args: Sequence[Node], label: str, origins: dict[str, TextOrigin]) -> dict[str, Any]:
    """`((temperature 0) (max_tokens 500))` or `(temperature 0) (max_tokens 500)`; keys are checked at registration."""
    settings: dict[str, Any] = {}
    example = "(model_settings ((temperature 0) (max_tokens 500)))"
    for key, value, entry in pairs(args, "model_settings", label, TemplateError, noun="key", example=example):
        settings[key] = datum(value)
        origins[f"model_settings.{key}"] = TextOrigin(location=entry.location)
    return settings


def _text(node: Node, key: str, label: str) -> str:
    if isinstance(node, Literal) and isinstance(node.value, str):
        return node.value
    if key == "model" and isinstance(node, Symbol):
        return node.name
    raise TemplateError(
        f'`({key} ...)` in {label} takes a string, like `({key} "...")`, found {describe(node)}.',
        location=node.location,
    )


def _text_origin(node: Node) -> TextOrigin:
    if isinstance(node, Literal) and node.raw is not None and node.text_start is not None:
        return StringOrigin(location=node.text_start, raw=node.raw)
    return TextOrigin(location=node.location)


@attrs.frozen(kw_only=True)
class StringOrigin(TextOrigin):
    """Where a string literal's text starts; maps offsets in the decoded text back through escapes."""

    raw: str

    def locate(self, offset: int, text: str) -> SourceLocation:
        """The line and column in the source of character `offset` of the decoded text."""
        raw_offset = 0
        for _ in range(offset):
            if raw_offset >= len(self.raw):
                break
            raw_offset += 2 if self.raw[raw_offset] == "\\" else 1
        before = self.raw[:raw_offset]
        base = self.location
        newlines = before.count("\n")
        if base.line is None or base.column is None:
            return base
        if newlines == 0:
            return SourceLocation(file=base.file, line=base.line, column=base.column + raw_offset)
        return SourceLocation(file=base.file, line=base.line + newlines, column=raw_offset - before.rfind("\n"))


def _params(args: Sequence[Node], label: str, origins: dict[str, TextOrigin]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for node in args:
        if isinstance(node, Symbol):
            name, param = node.name, {"type": "any"}
        else:
            name, param = spec(node, _PARAM_OPTIONS, f"a parameter of {label}", TemplateError)
            param.setdefault("type", "any")
        if name in params:
            raise TemplateError(f"Parameter {name!r} is declared twice in {label}.", location=node.location)
        params[name] = param
        origins[f"params.{name}"] = TextOrigin(location=node.location)
    return params


def _output_format(args: Sequence[Node], clause: SList, label: str, origins: dict[str, TextOrigin]) -> dict[str, Any]:
    fmt: dict[str, Any] = {}
    for key, entry in entries(args, _OUTPUT_KEYS, f"`output_format` of {label}", TemplateError).items():
        values = entry.items[1:]
        origins[f"output_format.{key}"] = TextOrigin(location=entry.location)
        fmt[key] = (
            _schema_value(values, entry, label)
            if key == "schema"
            else datum(single(values, entry, label, TemplateError))
        )
    if "schema" in fmt:
        fmt.setdefault("type", "json")  # a schema means JSON output; YAML spells both out
    return fmt


def _schema_value(values: Sequence[Node], entry: SList, label: str) -> Any:
    """A schema name, or inline field specs: `(schema "Contact")`, `(schema ((name str) (email str?)))`."""
    if len(values) == 1 and not isinstance(values[0], SList):
        name = datum(values[0])
        if not isinstance(name, str):
            raise TemplateError(
                f"`(schema ...)` in {label} takes a schema name or field specs, found {describe(values[0])}.",
                location=values[0].location,
            )
        return name
    specs = values
    if len(values) == 1 and isinstance(values[0], SList) and values[0].items and isinstance(values[0].items[0], SList):
        specs = values[0].items
    if not specs:
        raise TemplateError(
            f"`(schema)` in {label} is empty; name a schema or list fields: `(schema ((name str) (email str?)))`.",
            location=entry.location,
        )
    return {"fields": [field_spec(node, f"the inline schema of {label}", TemplateError) for node in specs]}


# ---------------------------------------------------------------------------------------------
# defschema


def schema_from_form(form: SList) -> SchemaDef:
    """Build the `SchemaDef` a `(defschema Name ["description"] (field type ...)...)` form declares."""
    items = form.items[1:]
    name_node = items[0] if items else None
    if not isinstance(name_node, Symbol):
        found = f", found {describe(name_node)}" if name_node is not None else ""
        raise SchemaError(
            f"`defschema` needs a schema name first{found}: `(defschema Contact (name str) (email str?))`.",
            location=name_node.location if name_node is not None else form.location,
        )
    rest = list(items[1:])
    data: dict[str, Any] = {"name": name_node.name}
    first = rest[0] if rest else None
    if isinstance(first, Literal) and isinstance(first.value, str):
        data["description"] = first.value
        rest.pop(0)
    label = f"schema {name_node.name!r}"
    data["fields"] = [field_spec(node, label, SchemaError) for node in rest]
    try:
        schema = SchemaDef.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        path = list(err["loc"])
        location = form.location
        if len(path) > 1 and path[0] == "fields" and isinstance(path[1], int) and path[1] < len(rest):
            location = rest[path[1]].location
        dotted = ".".join(str(p) for p in path)
        raise SchemaError(f"Invalid {label}: `{dotted}`: {err['msg']}.", location=location) from None
    schema.location = form.location
    for field_def, node in zip(schema.fields, rest, strict=True):
        field_def.location = node.location
    return schema
