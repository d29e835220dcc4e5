"""Tests for reading the output JSON Schema a model receives from pydantic-ai itself."""

from __future__ import annotations

from atomtask import OutputMode
from atomtask.handlers import ModelChoice
from atomtask.handlers._llm import model_output_schema
from pydantic import BaseModel, Field
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.profiles import ModelProfile
from pydantic_ai.profiles.openai import OpenAIJsonSchemaTransformer


class Rating(BaseModel):
    """How good it is."""

    stars: int = Field(ge=1, le=5, description="One to five.")


def choice(spec: object) -> ModelChoice:
    return ModelChoice(spec=spec, label="x", source="call")  # type: ignore[arg-type]  # tests pass instances


def test_tool_mode_gives_the_output_tool() -> None:
    """In tool mode the schema is the output tool's parameters, with its name and description."""
    sent = model_output_schema(Rating, OutputMode.TOOL, choice("test"))
    assert ("tool", "final_result", "How good it is.") == (sent["mode"], sent["tool_name"], sent["tool_description"])
    assert {"type": "integer", "minimum": 1, "maximum": 5, "description": "One to five."} == sent["json_schema"][
        "properties"
    ]["stars"]


def test_prompted_mode_gives_the_output_object() -> None:
    """In prompted mode the schema is the output object's, named after the class."""
    sent = model_output_schema(Rating, OutputMode.PROMPTED, choice("test"))
    assert ("prompted", "Rating") == (sent["mode"], sent["name"])
    assert ["stars"] == sent["json_schema"]["required"]


def test_a_model_instance_brings_its_profile() -> None:
    """A `Model` instance's profile transformer is applied (here OpenAI's, which drops `title`)."""
    model = FunctionModel(lambda m, i: None, profile=ModelProfile(json_schema_transformer=OpenAIJsonSchemaTransformer))  # type: ignore[arg-type, return-value]  # never called
    sent = model_output_schema(Rating, OutputMode.TOOL, choice(model))
    assert "title" not in sent["json_schema"]
    assert sent["strict"] is True
