"""Reading declaration forms (`defatom`, `defschema`, `defworkflow`): clauses, entries, literal values, fields.

A declaration is a head, a name and clauses: `(defatom name (params ...) (instructions "..."))`. The
helpers here read those clauses without evaluating anything (`datum`: strings, numbers, `true`,
`false`, `nil`, symbols as their names, lists as lists), check them against the clauses a form
allows (with "did you mean"), and describe a node in an error message. Every error they raise is
the usage error the caller passes (`TemplateError`, `SchemaError`, `WorkflowDeclarationError`),
located at the offending node.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from atomtask.schemas.declarations import FieldDef
from atomtask.sexp.reader import Literal, Node, SList, Symbol
from atomtask.system.errors import did_you_mean
from atomtask.system.templates import MODEL_SETTING_HINTS

__all__ = [
    "FIELD_OPTIONS",
    "ErrorClass",
    "clauses",
    "datum",
    "describe",
    "entries",
    "field_spec",
    "literal_text",
    "pairs",
    "single",
    "spec",
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
    items: Sequence[Node], valid: Sequence[str], label: str, error: ErrorClass, *, what: str
) -> dict[str, SList]:
    """The clauses `(key ...)` of a form by key; an unknown, repeated or malformed one raises `error`."""
    found: dict[str, SList] = {}
    listing = ", ".join(valid)
    for item in items:
        head = item.head if isinstance(item, SList) else None
        if not isinstance(item, SList) or head is None:
            raise error(
                f"Expected a {what} like `({valid[0]} ...)` in {label}, found {describe(item)}. "
                f"Valid {what}s: {listing}.",
                location=item.location,
            )
        if head not in valid:
            hint = did_you_mean(head, valid)
            if head in MODEL_SETTING_HINTS and "model_settings" in valid:  # `(temperature 0)` beside `instructions`
                hint = f" It is a model setting: write it inside `(model_settings (({head} ...)))`."
            raise error(f"Unknown {what} {head!r} in {label}.{hint} Valid {what}s: {listing}.", location=item.location)
        if head in found:
            raise error(
                f"The {what} {head!r} is repeated in {label} (first at {found[head].location}); give it once. "
                f"Valid {what}s: {listing}.",
                location=item.location,
            )
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
