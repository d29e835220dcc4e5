"""`atomtask.lint._rules`: the JSON Schema the rules read is exactly `model_json_schema()`'s."""

from __future__ import annotations

import datetime
import enum
import json
from typing import Any, Literal

import pytest
from atomtask.lint._rules import CheckJsonSchema, output_json_schema
from atomtask.schemas._declarations import FieldDef, JsonSchemaDef, SchemaDef
from atomtask.schemas._fields import build_models
from atomtask.schemas.json_schema._models import build_json_schema_model
from pydantic import BaseModel, Field


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Inner(BaseModel):
    x: int = 1


class Everything(BaseModel):
    """Defaults of every kind, nested and recursive types."""

    text: str = "plain"
    number: int = 3
    big: int = 10**30
    flag: bool = True
    nothing: str | None = None
    ratio: float = 0.5
    infinite: float = float("inf")
    when: datetime.date = datetime.date(2024, 1, 2)
    colour: Colour = Colour.BLUE
    choice: Literal["a", "b"] = "a"
    items: list[str] = Field(default_factory=lambda: ["a"])
    mapping: dict[str, int] = {"k": 1}
    inner: Inner = Inner()
    children: list[Everything] = []
    described: str = Field("x", description="A described field.", min_length=1)


def _yaml_classes() -> list[type[BaseModel]]:
    defs = [
        SchemaDef(
            name="Verdict",
            description="A verdict.",
            fields=[
                FieldDef(name="reasoning", type="str", description="Why."),
                FieldDef(name="label", type='literal["billing", "bug"]'),
                FieldDef(name="confidence", type="float", ge=0, le=1),
                FieldDef(name="note", type="str?"),
                FieldDef(name="tags", type="list[str]", default=["x"]),
                FieldDef(name="count", type="int", default=2),
                FieldDef(name="on", type="bool", default=False),
                FieldDef(name="when", type="date", default="2024-01-02"),
                FieldDef(name="child", type="Node?"),
            ],
        ),
        SchemaDef(name="Node", fields=[FieldDef(name="children", type="list[Node]", default=[])]),
    ]
    return list(build_models(defs).values())


def _json_class() -> type[BaseModel]:
    schema = {
        "type": "object",
        "title": "Contact",
        "properties": {"name": {"type": "string", "default": "n"}, "age": {"type": "integer", "minimum": 0}},
        "required": ["age"],
    }
    return build_json_schema_model(JsonSchemaDef(name="Contact", json_schema=schema))


@pytest.mark.parametrize("cls", [Everything, Inner, *_yaml_classes(), _json_class()], ids=lambda c: c.__name__)
def test_the_check_generator_makes_what_model_json_schema_makes(cls: type[BaseModel]) -> None:
    """Same document, key order included, with `CheckJsonSchema` as with pydantic's own generator."""
    expected = json.dumps(cls.model_json_schema())
    assert expected == json.dumps(cls.model_json_schema(schema_generator=CheckJsonSchema))
    assert expected == json.dumps(output_json_schema(cls))


def test_the_generator_is_usable_again_after_another_instance() -> None:
    """The handler names kept per class serve every later instance (two classes, twice each)."""
    first = [json.dumps(output_json_schema(cls)) for cls in (Everything, Inner)]
    again = [json.dumps(output_json_schema(cls)) for cls in (Everything, Inner)]
    assert first == again


def test_a_json_schema_class_reuses_the_schema_it_was_built_with() -> None:
    """The class built from a JSON Schema kept its `model_json_schema()`: the check does not make it again."""
    cls = _json_class()
    assert cls.json_schema_generated is output_json_schema(cls)  # type: ignore[attr-defined]


def test_a_class_making_its_own_json_schema_is_asked_for_it() -> None:
    """An overridden `model_json_schema` is what the rules read (a generator is not forced on it)."""

    class Custom(BaseModel):
        a: int

        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            return {"title": "Custom", "type": "object", "properties": {"a": {"type": "integer", "x-own": True}}}

    assert {"a": {"type": "integer", "x-own": True}} == output_json_schema(Custom)["properties"]
