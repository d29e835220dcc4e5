"""Declaration forms read, and `defatom` and `defschema` turned into the same `Template` and `SchemaDef` YAML makes.

    (defatom extract_contact
      (params (text str "The text to read")
              (locale str (default "en")))
      (instructions "Extract the contact from ({{locale}}): {{text}}")
      (output_format ((type "json") (schema "Contact") (mode "tool")))
      (model_settings ((temperature 0) (max_tokens 500))))

    (defschema Contact "A person's contact details"
      (name str "Full name")
      (email str?))

A declaration is a head, a name and clauses. The clause readers here (shared with `defworkflow` and
`director-evaluator`) read them without evaluating anything (`datum`: strings, numbers, `true`,
`false`, `nil`, symbols as their names, so `str?` and `"str?"` are the same type, lists as lists),
check them against the clauses a form allows (with "did you mean"), and describe a node in an error
message. Every error is the usage error the caller passes (`TemplateError`, `SchemaError`,
`WorkflowDeclarationError`), located at the offending node; each result remembers the line and column
of its form and of each clause, so the registration checks point into the S-expression source.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs
from atomtask.errors import SchemaError, SourceLocation, TemplateError, did_you_mean, in_source_order
from atomtask.schemas._declarations import FieldDef, SchemaDef
from atomtask.sexp._reader import Literal, Node, SList, Symbol
from atomtask.system._templates import MODEL_SETTING_HINTS, Template, TemplateLimits, TextOrigin
from pydantic import ValidationError

__all__ = [
    "FIELD_OPTIONS",
    "TEMPLATE_CLAUSES",
    "ErrorClass",
    "StringOrigin",
    "TemplateReading",
    "clauses",
    "datum",
    "describe",
    "entries",
    "field_spec",
    "literal_text",
    "pairs",
    "read_template_form",
    "schema_from_form",
    "single",
    "spec",
    "template_from_form",
]

#: The error a helper raises: a usage error class (`TemplateError`, ...), or `SexpEvalError` for a script's form.
ErrorClass = Callable[..., Exception]

#: The options a field may have besides its name, type and description: `(score int (default 0) (ge 0))`.
FIELD_OPTIONS = tuple(f for f in FieldDef.model_fields if f not in ("name", "type", "description"))


def datum(node: Node) -> Any:
    """The literal value of a node: strings, numbers, booleans, nil; symbols as names; lists as lists."""
    if isinstance(node, Literal):
        return node.value
    if isinstance(node, Symbol):
        return node.name
    return [datum(item) for item in node.items]


def describe(node: Node) -> str:
    """A short description of a node for error messages."""
    if isinstance(node, Symbol):
        return f"the symbol `{node.name}`"
    if isinstance(node, SList):
        return f"the list `({node.head or '...'} ...)`" if node.items else "the empty list `()`"
    if isinstance(node, Literal) and isinstance(node.value, str):
        text = node.value if len(node.value) <= 30 else node.value[:30] + "..."
        return f"the string {text!r}"
    return f"`{literal_text(node.value)}`"


def literal_text(value: object) -> str:
    """How a literal is written in source: `true`, `false`, `nil`, numbers as they are."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def clauses(
    items: Sequence[Node],
    valid: Sequence[str],
    label: str,
    error: ErrorClass,
    *,
    what: str,
    problems: list[Exception] | None = None,
) -> dict[str, SList]:
    """The clauses `(key ...)` of a form by key; an unknown, repeated or malformed one raises `error`.

    With `problems`, each such mistake is added to it instead and the clause left out (the first of a
    repeated one is kept), so that one reading reports them all.
    """
    found: dict[str, SList] = {}
    listing = ", ".join(valid)
    for item in items:
        head = item.head if isinstance(item, SList) else None
        mistake: Exception | None = None
        if not isinstance(item, SList) or head is None:
            mistake = error(
                f"Expected a {what} like `({valid[0]} ...)` in {label}, found {describe(item)}. "
                f"Valid {what}s: {listing}.",
                location=item.location,
            )
        elif head not in valid:
            hint = did_you_mean(head, valid)
            if head in MODEL_SETTING_HINTS and "model_settings" in valid:  # `(temperature 0)` beside `instructions`
                hint = f" It is a model setting: write it inside `(model_settings (({head} ...)))`."
            mistake = error(
                f"Unknown {what} {head!r} in {label}.{hint} Valid {what}s: {listing}.", location=item.location
            )
        elif head in found:
            mistake = error(
                f"The {what} {head!r} is repeated in {label} (first at {found[head].location}); give it once. "
                f"Valid {what}s: {listing}.",
                location=item.location,
            )
        if mistake is not None:
            if problems is None:
                raise mistake
            problems.append(mistake)
        elif isinstance(item, SList) and head is not None:
            found[head] = item
    return found


def entries(args: Sequence[Node], valid: Sequence[str], label: str, error: ErrorClass) -> dict[str, SList]:
    """`((k v) (k v))` or `(k v) (k v)`: the entries of an association list, by key."""
    if len(args) == 1 and isinstance(args[0], SList) and args[0].items and isinstance(args[0].items[0], SList):
        args = args[0].items
    return clauses(args, valid, label, error, what="key")


def pairs(
    args: Sequence[Node], key: str, label: str, error: ErrorClass, *, noun: str, example: str
) -> list[tuple[str, Node, SList]]:
    """`(name value) ...` or `((name value) ...)`: each pair's name, value node and form, in order.

    A form that is not a `(name value)` pair, or a name given twice, raises `error` at that form.
    """
    if len(args) == 1 and isinstance(args[0], SList) and args[0].items and isinstance(args[0].items[0], SList):
        args = args[0].items
    found: list[tuple[str, Node, SList]] = []
    for entry in args:
        if not (isinstance(entry, SList) and len(entry.items) == 2 and isinstance(entry.items[0], Symbol)):
            raise error(
                f"`{key}` of {label} is a list of `({noun} value)` pairs, like `{example}`; found {describe(entry)}.",
                location=entry.location,
            )
        name = entry.items[0].name
        if any(name == seen for seen, _, _ in found):
            raise error(f"{name!r} is repeated in `{key}` of {label}; give it once.", location=entry.location)
        found.append((name, entry.items[1], entry))
    return found


def single(args: Sequence[Node], clause: SList, label: str, error: ErrorClass) -> Node:
    """The one value of `(key value)`; any other count raises `error` at the clause."""
    if len(args) != 1:
        raise error(
            f"`({clause.head} ...)` in {label} takes exactly one value, got {len(args)}.", location=clause.location
        )
    return args[0]


def spec(node: Node, options: Sequence[str], label: str, error: ErrorClass) -> tuple[str, dict[str, Any]]:
    """`(name type "description" (option value)...)`: a parameter or a field, as its name and its keys."""
    shape = f'`(name type "description"{" (default value)" if options else ""})`'
    if not isinstance(node, SList) or not node.items or not isinstance(node.items[0], Symbol):
        raise error(f"Expected {label} as {shape}, found {describe(node)}.", location=node.location)
    name = node.items[0].name
    found: dict[str, Any] = {}
    positional = ("type", "description")
    count = 0
    for item in node.items[1:]:
        if isinstance(item, Symbol) and item.name.lower() == "optional":  # `(x optional str)`: a `?` is meant
            kind = next((i.name for i in node.items[1:] if isinstance(i, Symbol) and i is not item), "str")
            raise error(
                f"`optional` is not a type or option of {name!r} in {label}; write `({name} {kind}?)`: "
                "a `?` after the type makes it optional.",
                location=item.location,
            )
        if isinstance(item, SList):
            option = _option(item, options, name, label, error)
            if option in found:
                raise error(f"Option {option!r} of {name!r} is repeated in {label}.", location=item.location)
            values = [datum(v) for v in item.items[1:]]
            if option == "enum":
                found[option] = values[0] if len(values) == 1 and isinstance(values[0], list) else values
            elif len(values) != 1:
                raise error(
                    f"`({option} ...)` of {name!r} takes exactly one value, got {len(values)}.", location=item.location
                )
            else:
                found[option] = values[0]
            continue
        if count >= len(positional):
            raise error(
                f"Too many values for {name!r} in {label}: {shape}, found {describe(item)}.", location=item.location
            )
        key = positional[count]
        count += 1
        value = datum(item)
        if not isinstance(value, str) or (key == "description" and not isinstance(item, Literal)):
            what = "a type (a symbol like `str?` or a string)" if key == "type" else 'a string ("...")'
            raise error(
                f"The {key} of {name!r} in {label} must be {what}, found {describe(item)}.", location=item.location
            )
        found[key] = value
    return name, found


def _option(item: SList, options: Sequence[str], name: str, label: str, error: ErrorClass) -> str:
    head = item.head
    if head is None or head not in options:
        valid = ", ".join(options) or "none"
        hint = did_you_mean(head, options) if head is not None else ""
        raise error(
            f"Unknown option {describe(item)} for {name!r} in {label}.{hint} Valid options: {valid}.",
            location=item.location,
        )
    return head


def field_spec(node: Node, label: str, error: ErrorClass) -> dict[str, Any]:
    """A field of a schema (or of a workflow's state) as the mapping YAML would give: `{name, type, ...}`."""
    name, found = spec(node, FIELD_OPTIONS, label, error)
    return {"name": name, **found}


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
    "tools",
    "tool_calls",
    "expected_output_tokens",
)
_TEXT_CLAUSES = ("description", "system", "instructions", "model")
_OUTPUT_KEYS = ("type", "schema", "mode")
_LIMIT_KEYS = tuple(TemplateLimits.model_fields)
_CACHE_KEYS = ("enabled", "ttl")
_PARAM_OPTIONS = ("default",)


# ---------------------------------------------------------------------------------------------
# defatom


def template_from_form(form: SList) -> Template:
    """Build the `Template` a `(defatom name clause...)` form declares; raises the first `TemplateError` in it."""
    reading = read_template_form(form)
    if reading.template is None:
        raise reading.problems[0]
    return reading.template


@attrs.frozen(kw_only=True)
class TemplateReading:
    """What one `defatom` form gives: its template, or every mistake in it (in source order) and, when what
    is left without the clauses in error is still a template, that one (`partial`, for `atomtask check`)."""

    template: Template | None
    problems: tuple[Exception, ...] = ()
    partial: Template | None = None
    dropped: frozenset[str] = frozenset()


# Clauses the rest of a template depends on: with a mistake in one, nothing else is checked further.
_ESSENTIAL_CLAUSES = frozenset({"instructions", "params"})


def read_template_form(form: SList) -> TemplateReading:
    """Read a `(defatom name clause...)` form, noting every mistake rather than stopping at the first one."""
    name_node = form.items[1] if len(form.items) > 1 else None
    if not isinstance(name_node, Symbol):
        found = f", found {describe(name_node)}" if name_node is not None else ""
        problem = TemplateError(
            f'`defatom` needs a task name first{found}: `(defatom name (instructions "...") ...)`.',
            location=name_node.location if name_node is not None else form.location,
        )
        return TemplateReading(template=None, problems=(problem,))
    name = name_node.name
    label = f"defatom {name!r}"
    problems: list[Exception] = []
    declared = clauses(form.items[2:], TEMPLATE_CLAUSES, label, TemplateError, what="clause", problems=problems)
    if "instructions" not in declared:
        problems.append(
            TemplateError(
                f'{label} has no `instructions` clause; add `(instructions "... {{{{param}}}} ...")`. '
                f"Clauses: {', '.join(TEMPLATE_CLAUSES)}.",
                location=form.location,
            )
        )
    data: dict[str, Any] = {"name": name}
    origins: dict[str, TextOrigin] = {}
    where: dict[str, SourceLocation] = {"name": name_node.location}
    dropped: set[str] = set()
    for key, clause in declared.items():
        where[key] = clause.location
        origins[key] = TextOrigin(location=clause.location)
        try:
            data[key] = _clause_value(key, clause, label, origins)
        except TemplateError as exc:
            problems.append(exc)
            dropped.add(key)
    template: Template | None = None
    # Without `instructions` or with `params` wrong, validating the rest would only repeat that mistake.
    essential_wrong = "instructions" not in declared or not dropped.isdisjoint(_ESSENTIAL_CLAUSES)
    for _ in range(0 if essential_wrong else _PASSES):  # each pass leaves out the clauses in error (see below)
        try:
            template = Template.model_validate(data)
            break
        except ValidationError as exc:
            for err in exc.errors():
                path = [str(p) for p in err["loc"]]
                location = where.get(path[0], form.location) if path else form.location
                if len(path) > 1 and f"{path[0]}.{path[1]}" in origins:
                    location = origins[f"{path[0]}.{path[1]}"].location
                message = err["msg"].removeprefix("Value error, ")
                problem = TemplateError(f"Invalid {label}: `{'.'.join(path)}`: {message}.", location=location)
                if str(problem) not in {str(p) for p in problems}:
                    problems.append(problem)
                dropped.add(path[0] if path else "")
            if not dropped.isdisjoint({"", "name", *_ESSENTIAL_CLAUSES}):
                break
            data = {key: value for key, value in data.items() if key not in dropped}
    located = template.located(form.location, origins) if template is not None else None
    if not problems and located is not None:
        return TemplateReading(template=located)
    partial = located if located is not None and dropped.isdisjoint(_ESSENTIAL_CLAUSES) else None
    return TemplateReading(
        template=None,
        problems=tuple(in_source_order(problems)),
        partial=partial,
        dropped=frozenset(dropped),
    )


# Validations of a template, each without the clauses the one before found in error: a mistake a
# `model_validator(mode="before")` reports (a misplaced setting) stops pydantic before the fields are checked.
_PASSES = 3


def _clause_value(key: str, clause: SList, label: str, origins: dict[str, TextOrigin]) -> Any:
    """The value of one `defatom` clause, as the `Template` field `key` takes it; raises `TemplateError`."""
    args = clause.items[1:]
    if key in _TEXT_CLAUSES:
        node = single(args, clause, label, TemplateError)
        # Placeholders are looked for in `system` and `instructions`: point inside those texts.
        origins[key] = _text_origin(node) if key in ("system", "instructions") else TextOrigin(location=node.location)
        return _text(node, key, label)
    if key == "tools":
        for index, node in enumerate(args):
            origins[f"tools.{index}"] = TextOrigin(location=node.location)
        return [_tool(node, label) for node in args]
    # `(repair lenient)`: a symbol reads as its name
    if key in ("retries", "repair", "tool_calls", "expected_output_tokens"):
        return datum(single(args, clause, label, TemplateError))
    if key == "params":
        return _params(args, label, origins)
    if key == "output_format":
        return _output_format(args, clause, label, origins)
    if key == "model_settings":
        return _model_settings(args, label, origins)
    if key == "cache":  # `(cache true)`, `(cache false)`, `(cache ((ttl "1h")))`
        return _cache(args, clause, label)
    return {  # limits
        k: datum(single(e.items[1:], e, label, TemplateError))
        for k, e in entries(args, _LIMIT_KEYS, label, TemplateError).items()
    }


# The keys of a tool entry whose values are mappings themselves, written as `((key value) ...)`.
_MAPPING_KEYS = ("mcp", "env", "headers")


def _tool(node: Node, label: str) -> Any:
    """A `tools` entry: `"module:function"`, or `((function "m:f") (name "x"))` / `((mcp ((command "python")
    (args ("-m" "fx")))) (prefix "fx"))` as the mapping YAML would give."""
    if isinstance(node, Literal) and isinstance(node.value, str):
        return node.value
    if isinstance(node, Symbol):
        return node.name
    example = '((function "pkg.module:function")) or ((mcp ((command "python") (args ("-m" "server")))) (prefix "fx"))'
    return _mapping(node, "tools", label, example)


def _mapping(node: Node, key: str, label: str, example: str) -> dict[str, Any]:
    if not isinstance(node, SList):
        raise TemplateError(
            f"An entry of `{key}` in {label} is a string or a list of `(key value)` pairs, like `{example}`; "
            f"found {describe(node)}.",
            location=node.location,
        )
    found: dict[str, Any] = {}
    for name, value, _ in pairs(node.items, key, label, TemplateError, noun="key", example=example):
        found[name] = _mapping(value, name, label, example) if name in _MAPPING_KEYS else datum(value)
    return found


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
