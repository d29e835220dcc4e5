"""`atomtask:synthetic` on recursive schemas: every answer validates against the declared schema, seed after seed.

A JSON Schema template's model view describes a recursive `$ref` in words (it inlines every `$ref`),
while the template's validator follows the `$ref`; Pydantic models send `$defs` and `$ref`s as they are.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from atomtask import OutputFormat, TaskSystem, Template
from atomtask.handlers._synthetic import synthetic_instance
from atomtask.schemas._declarations import JsonSchemaDef
from atomtask.schemas.json_schema._dialects import FORMAT_CHECKER
from atomtask.schemas.json_schema._models import build_json_schema_model
from atomtask.testing import FakeProviderServer
from atomtask.testing._served import ServedAnswers
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

SEEDS = range(40)


def obj(properties: dict[str, Any], **more: Any) -> dict[str, Any]:
    """An object schema requiring every one of `properties`."""
    return {"type": "object", "properties": properties, "required": list(properties), **more}


PART = obj({"title": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Part"}}})

# JSON Schema templates: the declared schema (what validates the answer); the model gets its model view.
DECLARED: dict[str, dict[str, Any]] = {
    "oneOf of a part or a number": {
        **obj({"parts": {"$ref": "#/$defs/Part"}}),
        "$defs": {
            "Part": obj(
                {
                    "title": {"type": "string"},
                    "children": {"type": "array", "items": {"oneOf": [{"$ref": "#/$defs/Part"}, {"type": "integer"}]}},
                }
            )
        },
    },
    "anyOf of a part or null": {
        **obj({"parts": {"type": "array", "items": {"$ref": "#/$defs/Part"}}}),
        "$defs": {
            "Part": obj(
                {
                    "title": {"type": "string"},
                    "children": {"type": "array", "items": {"anyOf": [{"$ref": "#/$defs/Part"}, {"type": "null"}]}},
                }
            )
        },
    },
    "a bare recursive list": {**obj({"parts": {"$ref": "#/$defs/Part"}}), "$defs": {"Part": PART}},
    "the root itself": obj({"name": {"type": "string"}, "kids": {"type": "array", "items": {"$ref": "#"}}}),
    "a tagged union": {
        **obj({"body": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}),
        "$defs": {
            "Node": {
                "oneOf": [
                    obj(
                        {
                            "kind": {"const": "section"},
                            "heading": {"type": "string"},
                            "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                        },
                        additionalProperties=False,
                    ),
                    obj({"kind": {"const": "text"}, "text": {"type": "string"}}, additionalProperties=False),
                ]
            }
        },
    },
    "nested lists": {
        **obj({"rows": {"type": "array", "items": {"type": "array", "items": {"$ref": "#/$defs/Part"}}}}),
        "$defs": {"Part": PART},
    },
    "an optional child": {
        **obj({"head": {"$ref": "#/$defs/Link"}}),
        "$defs": {
            "Link": {
                "type": "object",
                "properties": {"label": {"type": "string"}, "next": {"$ref": "#/$defs/Link"}},
                "required": ["label"],
            }
        },
    },
    "a non-object root (sent in an envelope)": {
        "type": "array",
        "minItems": 1,
        "items": {"oneOf": [{"type": "string", "maxLength": 3}, {"$ref": "#"}]},
    },
}


@pytest.mark.parametrize("name", list(DECLARED))
def test_answers_to_a_recursive_template_schema_validate_against_the_declared_schema(name: str) -> None:
    """Whatever the seed, the instance made from a template's model view passes the template's own validation."""
    cls = build_json_schema_model(JsonSchemaDef(name="Doc", json_schema=DECLARED[name]))
    sent = cls.model_json_schema()  # what pydantic-ai gives the model for the output tool
    declared = Draft202012Validator(DECLARED[name], format_checker=FORMAT_CHECKER)
    for seed in SEEDS:
        instance = synthetic_instance(sent, seed)
        answer = instance["response"] if cls.json_schema_envelope else instance
        assert declared.is_valid(answer), (seed, instance, [e.message for e in declared.iter_errors(answer)])
        cls.model_validate(instance)


class Part(BaseModel):
    title: str
    children: list[Part | str]


class Section(BaseModel):
    kind: Literal["section"]
    heading: str
    children: list[Annotated[Section | Text, Field(discriminator="kind")]]


class Text(BaseModel):
    kind: Literal["text"]
    text: str


class Document(BaseModel):
    body: list[Annotated[Section | Text, Field(discriminator="kind")]]


class Grid(BaseModel):
    rows: list[list[Part]]
    note: Grid | None = None


class Either(BaseModel):
    value: Annotated[int | Part, Field(union_mode="left_to_right")]
    more: list[Either] = []


@pytest.mark.parametrize("model", [Part, Document, Grid, Either], ids=lambda m: m.__name__)
def test_answers_to_a_recursive_pydantic_model_validate_against_schema_and_model(model: type[BaseModel]) -> None:
    """Recursive unions (`anyOf`, discriminated `oneOf`), nested lists: the schema and the model accept every answer."""
    schema = model.model_json_schema()
    validator = Draft202012Validator(schema, format_checker=FORMAT_CHECKER)
    adapter = TypeAdapter(model)
    for seed in SEEDS:
        instance = synthetic_instance(schema, seed)
        assert validator.is_valid(instance), (seed, instance)
        try:
            adapter.validate_python(instance)
        except ValidationError as exc:  # pragma: no cover - the message is the point
            pytest.fail(f"seed {seed}: {instance!r}: {exc}")


def test_a_recursive_template_schema_completes_first_time_with_the_synthetic_model() -> None:
    """End to end: a template whose JSON Schema recurses through `oneOf` is answered validly, without re-asks."""
    system = TaskSystem(model="atomtask:synthetic")
    system.models.register(
        build_json_schema_model(JsonSchemaDef(name="Doc", json_schema=DECLARED["oneOf of a part or a number"]))
    )
    system.register(
        Template(name="outline", instructions="Outline: {{text}}", params={"text": "str"}, retries=0,
                 output_format=OutputFormat(type="json", schema="Doc"))
    )  # fmt: skip
    for n in range(8):
        result = system.execute("outline", {"text": f"contract {n}"})
        assert result.ok, result.error


@pytest.mark.usefixtures("allow_model_requests")
@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_the_fake_provider_answers_a_recursive_template_schema_validly(wire: str) -> None:
    """The served fake provider's synthetic answers (from the tool schema sent) pass the template's validation."""
    system = TaskSystem()
    system.models.register(build_json_schema_model(JsonSchemaDef(name="Doc", json_schema=DECLARED["a tagged union"])))
    system.register(
        Template(name="outline", instructions="Outline: {{text}}", params={"text": "str"}, retries=0,
                 output_format=OutputFormat(type="json", schema="Doc"))
    )  # fmt: skip
    with FakeProviderServer() as server:
        server.respond_with(ServedAnswers())
        model = server.openai_chat_model() if wire == "openai" else server.anthropic_model()
        for n in range(4):
            result = system.execute("outline", {"text": f"contract {n}"}, model=model)
            assert result.ok, result.error
