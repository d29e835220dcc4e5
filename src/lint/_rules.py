"""Template and prompt-quality warnings (W2xx), on checked templates and their output JSON Schemas.

These run only on what registration accepted, so they never repeat an error; each yields
`(code, message, owner, field)` tuples that the session turns into located findings.

The JSON Schema the rules read is what `cls.model_json_schema()` returns, made with less overhead
(`output_json_schema`). A check makes one per output class, and pydantic's `GenerateJsonSchema` spends
a good part of each on work that does not depend on the schema: every instance builds its table of
~65 handler methods and holds it as bound methods, a cycle that only the collector frees; every
default value is serialised through a new `TypeAdapter`. `CheckJsonSchema` is the same generator (the
same output, pinned by the tests) without that work: the handler table is looked up by name (kept per
class) and holds no reference to the instance, and a default that JSON already represents as itself
(`None`, a string, a boolean, an integer) is used as it is.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar, TypeAlias

from atomtask.errors import SourceLocation
from atomtask.loading._template_registry import CompiledTemplate, SingleBrace
from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue

__all__ = [
    "ANSWER_NAMES",
    "REASONING_NAMES",
    "CheckJsonSchema",
    "SchemaIssue",
    "described_schema",
    "output_json_schema",
    "schema_issues",
    "single_brace_issues",
    "template_issues",
]

_AS_IS = (str, bool, int)  # exact types: JSON mode serialises these values unchanged
_PYDANTICS = getattr(BaseModel.model_json_schema, "__func__", None)  # the classmethod's function


class CheckJsonSchema(GenerateJsonSchema):
    """`GenerateJsonSchema` with its per-instance set-up cut (see the module's docstring); same output."""

    _handler_names: ClassVar[dict[str, str] | None] = None

    def build_schema_type_to_method(self) -> dict[Any, Callable[[Any], JsonSchemaValue]]:
        names = type(self)._handler_names
        if names is None:
            table = super().build_schema_type_to_method()  # the first instance: pydantic's own table
            names = {key: f"{key.replace('-', '_')}_schema" for key in table}  # the names it looked up
            type(self)._handler_names = names
        return _BoundOnLookup(self, names)

    def encode_default(self, dft: Any) -> Any:
        if dft is None or type(dft) in _AS_IS:
            return dft
        return super().encode_default(dft)


class _BoundOnLookup(dict[Any, Callable[[Any], JsonSchemaValue]]):
    """A handler table that binds the handler when it is looked up: no reference from the table to the generator."""

    __slots__ = ("_names", "_owner")

    def __init__(self, owner: GenerateJsonSchema, names: dict[str, str]) -> None:
        super().__init__()
        self._owner = weakref.ref(owner)
        self._names = names

    def __missing__(self, key: Any) -> Callable[[Any], JsonSchemaValue]:
        owner = self._owner()
        if owner is None or key not in self._names:
            raise KeyError(key)
        method: Callable[[Any], JsonSchemaValue] = getattr(owner, self._names[key])
        return method


def output_json_schema(cls: type[BaseModel]) -> dict[str, Any]:
    """`cls.model_json_schema()`: the one a JSON Schema class was built with, else through `CheckJsonSchema`.

    A class that makes its own (`model_json_schema` overridden) is asked for it as it is.
    """
    made = cls.__dict__.get("json_schema_generated")
    if isinstance(made, dict):
        return made
    if getattr(cls.model_json_schema, "__func__", None) is not _PYDANTICS:
        return cls.model_json_schema()
    return cls.model_json_schema(schema_generator=CheckJsonSchema)


SchemaIssue: TypeAlias = tuple[str, str, str | None, str | None]
"""(code, message, owner schema title, field name)."""

#: Words of a text field's name that make it the model's reasoning, which should be written before the answer.
REASONING_NAMES = frozenset(
    {
        "reasoning", "rationale", "reason", "reasons", "explanation", "explain", "thinking", "thoughts",
        "thought", "justification", "cot",
    }
)  # fmt: skip
#: Words of a field's name that make it the answer (besides its type: a choice, a flag or a number).
ANSWER_NAMES = frozenset(
    {
        "answer", "verdict", "decision", "label", "category", "classification", "score", "rating", "grade",
        "choice", "conclusion", "result", "sentiment",
    }
)  # fmt: skip
_WORDS = re.compile(r"[a-z]+")
_REASONING_DESCRIPTION = re.compile(
    r"\b(reasoning|rationale|justification|justify|step[- ]by[- ]step|chain[- ]of[- ]thought)\b", re.IGNORECASE
)


def template_issues(compiled: CompiledTemplate) -> Iterator[tuple[str, str, str]]:
    """(code, message, field of the template to point at) for unused and unmentioned parameters."""
    template = compiled.template
    in_instructions = {ph.param for ph in compiled.instruction_placeholders}
    in_system = {ph.param for ph in compiled.system_placeholders}
    for name, spec in template.params.items():
        if name in compiled.media_params:  # an image, document or audio goes beside the text, never into it
            continue
        if name not in in_instructions and name not in in_system:
            yield (
                "W201",
                f"Parameter {name!r} of template {template.name!r} is never used: neither `instructions` nor "
                f"`system` has `{{{{{name}}}}}`. Use it, or remove it from `params`.",
                f"params.{name}",
            )
        elif spec.required and name not in in_instructions:
            yield (
                "W202",
                f"Required parameter {name!r} of template {template.name!r} appears only in `system`; the "
                f"`instructions` never mention it. Put `{{{{{name}}}}}` where the task needs it.",
                f"params.{name}",
            )


def single_brace_issues(
    template: str, braces: Iterable[SingleBrace]
) -> Iterator[tuple[str, str, SourceLocation | None]]:
    """(code, message, where) for each `{param}` written with single braces: sent to the model as written (W206)."""
    for brace in braces:
        yield (
            "W206",
            f"{brace.text!r} in the {brace.field} of template {template!r} is sent to the model as written: "
            f"single braces do not insert parameter {brace.param!r}. Write `{{{{{brace.param}}}}}` to insert it.",
            brace.location,
        )


def schema_issues(schema: dict[str, Any]) -> Iterator[SchemaIssue]:
    """Field descriptions and confusable enum values for every object in `schema`; reasoning order for its root.

    W204 is judged on the roles of the root object's fields (nested objects are parts of the answer, not
    the order the model answers in): a *reasoning* field is a text field named like `reasoning`,
    `rationale`, `explanation` (name words in `REASONING_NAMES`) or described as the reasoning; an
    *answer* field is a choice (`enum`, `const`, a literal), a flag or a number, or is named like
    `answer`, `verdict`, `score` (`ANSWER_NAMES`); identifiers (`id`, `doc_id`) are neither. A reasoning
    field after the first answer field is reported; a text field such as `analysis` or `summary` is
    neither, so its place is never questioned.
    """
    for title, node in _objects(schema):
        properties: dict[str, Any] = node.get("properties") or {}
        first_answer: str | None = None
        is_root = node is schema
        for name, prop in properties.items():
            if isinstance(prop, dict) and not _described(prop, schema):
                yield (
                    "W203",
                    f"Field {name!r} of {title!r} has no description; the model reads descriptions to know what "
                    "to put in each field. Add a `description`.",
                    title,
                    name,
                )
            role = _role(name, prop, schema) if is_root and isinstance(prop, dict) else None
            if role == "reasoning" and first_answer is not None:
                yield (
                    "W204",
                    f"Field {name!r} of {title!r} comes after {first_answer!r}: the model writes fields in "
                    f"order, so the reasoning cannot inform the answer. Move {name!r} before {first_answer!r}.",
                    title,
                    name,
                )
            elif role == "answer" and first_answer is None:
                first_answer = name
            if isinstance(prop, dict):
                for pair in _confusable(prop):
                    yield (
                        "W205",
                        f"Values {pair[0]!r} and {pair[1]!r} of field {name!r} of {title!r} differ only by case or "
                        "whitespace; the model cannot tell which spelling is wanted. Keep one.",
                        title,
                        name,
                    )


def _objects(schema: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    yield str(schema.get("title", "output")), schema
    for defs in ("$defs", "definitions"):
        for name, node in (schema.get(defs) or {}).items():
            if isinstance(node, dict) and "properties" in node:
                yield str(node.get("title", name)), node


def _described(prop: dict[str, Any], root: dict[str, Any]) -> bool:
    if prop.get("description"):
        return True
    # A field typed by a described schema (`{"$ref": ...}`) is described by it.
    for option in [prop, *prop.get("anyOf", [])]:
        ref = option.get("$ref") if isinstance(option, dict) else None
        if isinstance(ref, str):
            target = (root.get("$defs") or {}).get(ref.rsplit("/", 1)[-1])
            if isinstance(target, dict) and target.get("description"):
                return True
    return False


def _is_key(name: str) -> bool:
    """An identifier field (`id`, `doc_id`, `userId`) names what is judged; it is not an answer."""
    return name.lower() == "id" or name.lower().endswith("_id") or name.endswith("Id")


def _role(name: str, prop: dict[str, Any], root: dict[str, Any]) -> str | None:
    """ "reasoning", "answer" or None (an identifier, free text, a nested object or list)."""
    if _is_key(name):
        return None
    if _is_reasoning(name, prop, root):
        return "reasoning"
    return "answer" if _is_answer(name, prop, root) else None


def _is_reasoning(name: str, prop: dict[str, Any], root: dict[str, Any]) -> bool:
    """A text field holding the model's reasoning, by its name or its description."""
    options = _options(prop, root)
    if not options or not all(option.get("type") in ("string", "null") for option in options):
        return False
    named = any(word in REASONING_NAMES for word in _WORDS.findall(name.lower()))
    return named or bool(_REASONING_DESCRIPTION.search(str(prop.get("description") or "")))


def _is_answer(name: str, prop: dict[str, Any], root: dict[str, Any]) -> bool:
    """A field holding the answer: a choice, a flag or a number, or one named like an answer."""
    if any(word in ANSWER_NAMES for word in _WORDS.findall(name.lower())):
        return True
    decisions = ("boolean", "integer", "number")
    options = [o for o in _options(prop, root) if o.get("type") != "null"]
    return bool(options) and all("enum" in o or "const" in o or o.get("type") in decisions for o in options)


def _options(prop: dict[str, Any], root: dict[str, Any]) -> list[dict[str, Any]]:
    """The alternatives of a field's schema (`anyOf`/`oneOf` members), local `$ref`s followed one step."""
    members = prop.get("anyOf") or prop.get("oneOf") or [prop]
    out: list[dict[str, Any]] = []
    for member in members:
        if not isinstance(member, dict):
            continue
        ref = member.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            parts = ref[2:].split("/")
            target: Any = root
            for part in parts:
                target = target.get(part) if isinstance(target, dict) else None
            member = target if isinstance(target, dict) else member
        out.append(member)
    return out


def _confusable(prop: dict[str, Any]) -> Iterator[tuple[str, str]]:
    values: list[Any] = []
    stack = [prop]
    while stack:
        node = stack.pop()
        values.extend(node.get("enum") or [])
        if "const" in node:
            values.append(node["const"])
        stack.extend(n for key in ("anyOf", "oneOf") for n in node.get(key, []) if isinstance(n, dict))
        items = node.get("items")
        if isinstance(items, dict):
            stack.append(items)
    seen: dict[str, str] = {}
    for value in values:
        if not isinstance(value, str):
            continue
        key = " ".join(value.split()).casefold()
        first = seen.setdefault(key, value)
        if first != value:
            yield first, value


def described_schema(cls: type[BaseModel], schema: dict[str, Any]) -> dict[str, Any]:
    """`schema`, its synthetic `response` field described by the schema's own description.

    A JSON Schema whose root is not an object is sent wrapped as `{"response": <value>}`; the description
    given to the schema is on the wrapper, and is what describes the answer (no W203 for `response`).
    """
    response = (schema.get("properties") or {}).get("response")
    if not getattr(cls, "json_schema_envelope", False) or not isinstance(response, dict):
        return schema
    if response.get("description") or not schema.get("description"):
        return schema
    described = {**response, "description": schema["description"]}
    return {**schema, "properties": {**schema["properties"], "response": described}}
