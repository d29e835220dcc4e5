"""`atomtask:synthetic`: schema-valid, plausible, deterministic answers offline, and the instances behind them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from atomtask import TaskSystem
from atomtask.handlers._plausible import _COMPANIES
from atomtask.handlers._synthetic import SyntheticModel, synthetic_instance
from atomtask.schemas.json_schema._dialects import FORMAT_CHECKER
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field, field_validator
from pydantic_ai import Agent, NativeOutput, PromptedOutput
from pydantic_ai.messages import TextPart

REPO = Path(__file__).resolve().parents[2]


def valid(schema: dict[str, Any], instance: Any) -> bool:
    return Draft202012Validator(schema, format_checker=FORMAT_CHECKER).is_valid(instance)


def obj(properties: dict[str, Any], **more: Any) -> dict[str, Any]:
    """An object schema requiring every one of `properties`."""
    return {"type": "object", "properties": properties, "required": list(properties), **more}


FORMATS = ["email", "date-time", "date", "time", "uri", "uuid", "ipv4", "ipv6", "hostname", "duration"]

SCHEMAS: dict[str, dict[str, Any]] = {
    "formats": obj({fmt: {"type": "string", "format": fmt} for fmt in FORMATS}),
    "pattern": obj(
        {
            "vat": {"type": "string", "pattern": "^[A-Z]{2}[0-9A-Z]{2,13}$"},
            "zip": {"type": "string", "pattern": r"^\d{5}$"},
        }
    ),
    "numbers and lengths": obj(
        {
            "step": {"type": "integer", "minimum": 17, "maximum": 19, "multipleOf": 3},
            "narrow": {"type": "number", "exclusiveMinimum": 0.5, "exclusiveMaximum": 0.51},
            "code": {"type": "string", "minLength": 40, "maxLength": 41},
            "ids": {"type": "array", "items": {"type": "integer"}, "minItems": 4, "maxItems": 4, "uniqueItems": True},
        }
    ),
    "enum and const": obj({"colour": {"enum": ["red", "green", 3, None]}, "kind": {"const": "fixed"}}),
    "nested": obj({"seller": obj({"name": {"type": "string"}, "address": obj({"city": {"type": "string"}})})}),
    "recursive": {
        "$defs": {
            "Node": obj({"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}})
        },
        "$ref": "#/$defs/Node",
    },
    "oneOf": obj(
        {
            "pet": {
                "oneOf": [
                    obj(
                        {"kind": {"const": "cat"}, "lives": {"type": "integer", "maximum": 9}},
                        additionalProperties=False,
                    ),
                    obj({"kind": {"const": "dog"}, "good": {"type": "boolean"}}, additionalProperties=False),
                ]
            }
        }
    ),
    "anyOf and allOf": {
        "allOf": [
            obj({"a": {"type": "string"}}),
            obj({"b": {"anyOf": [{"type": "integer", "minimum": 100}, {"type": "string", "pattern": "^x+$"}]}}),
        ]
    },
    "if/then/else": {
        **obj({"country": {"enum": ["US", "CA"]}, "postal": {"type": "string"}}),
        "if": {"properties": {"country": {"const": "US"}}},
        "then": {"properties": {"postal": {"pattern": "^[0-9]{5}$"}}},
        "else": {"properties": {"postal": {"pattern": "^[A-Z][0-9][A-Z] [0-9][A-Z][0-9]$"}}},
    },
    "not": obj({"word": {"type": "string", "minLength": 1, "not": {"pattern": "^[a-z ]+$"}}}),
    "tuple (2020-12)": {
        "type": "array",
        "prefixItems": [{"type": "string", "format": "email"}, {"type": "integer"}],
        "items": False,
    },
    "mapping": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}, "minProperties": 2},
}


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_instances_satisfy_the_schema(name: str) -> None:
    """Formats, patterns, bounds, enums, nesting, recursion and combinators all give a valid instance."""
    schema = SCHEMAS[name]
    for seed in range(4):
        instance = synthetic_instance(schema, seed)
        assert valid(schema, instance), (seed, instance)


def test_formats_look_plausible() -> None:
    """Known formats get values a person would write, not the generator's minimal ones."""
    instance = synthetic_instance(SCHEMAS["formats"], 7)
    assert instance["email"].endswith("@example.com") and "." in instance["email"].split("@")[0]
    assert instance["date-time"][:2] == "20" and instance["date"][:2] == "20"
    assert instance["uri"].startswith("https://example.com/")


def test_recursive_schema_nests_and_ends() -> None:
    """A schema that refers to itself gives a tree a few levels deep that ends in empty lists."""
    instance = synthetic_instance(SCHEMAS["recursive"], 1)
    depth, node = 0, instance
    while node["children"]:
        depth, node = depth + 1, node["children"][0]
    assert 1 <= depth <= 3
    assert [] == node["children"]


def test_field_names_guide_the_values() -> None:
    """One object, one person (name and e-mail agree); a confidence stays in 0-1; a seller's `name` is a company."""
    schema = obj(
        {
            "name": {"type": "string"},
            "email": {"type": "string"},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "seller": obj({"name": {"type": "string"}}),
        }
    )
    instance = synthetic_instance(schema, 3)
    first, last = instance["name"].split(" ", 1)
    assert f"{first}.{last}@example.com".lower() == instance["email"]
    assert 0 <= instance["confidence"] <= 1
    assert instance["seller"]["name"] in _COMPANIES


def test_same_inputs_give_the_same_instance_and_seeds_vary_it() -> None:
    """The instance is a function of schema and seed; different seeds give different instances."""
    schema = SCHEMAS["nested"]
    assert synthetic_instance(schema, 11) == synthetic_instance(json.loads(json.dumps(schema)), 11)
    assert len({json.dumps(synthetic_instance(schema, seed)) for seed in range(6)}) > 1


@settings(max_examples=3, deadline=None)
@given(st.integers(0, 10))
def test_works_inside_a_users_own_hypothesis_test(seed: int) -> None:
    """Hypothesis refuses nested searches in one thread; the generator runs its own elsewhere."""
    schema = SCHEMAS["pattern"]
    assert valid(schema, synthetic_instance(schema, seed))


def test_answering_writes_nothing_prints_nothing_and_imports_hypothesis_lazily(tmp_path: Path) -> None:
    """No `.hypothesis/` folder and no output in the working directory; Hypothesis loads only when needed."""
    code = (
        "import sys, json\n"
        "from atomtask.handlers._synthetic import synthetic_instance\n"
        "simple = synthetic_instance({'type': 'object', 'properties': {'a': {'type': 'string'}}}, 1)\n"
        "before = 'hypothesis' in sys.modules\n"
        f"hard = synthetic_instance({SCHEMAS['pattern']!r}, 1)\n"
        "print(json.dumps([before, 'hypothesis' in sys.modules, hard['zip']]), end='')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True, env=_env()
    )
    before, after, zip_code = json.loads(done.stdout)
    assert (False, True) == (before, after)
    assert 5 == len(zip_code) and zip_code.isdigit()
    assert "" == done.stderr
    assert [] == list(tmp_path.iterdir())


def _env() -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("HYPOTHESIS")}
    env["PYTHONPATH"] = str(REPO)
    return env


# --- The model ------------------------------------------------------------------------------------------


class Contact(BaseModel):
    name: str
    email: str = Field(json_schema_extra={"format": "email"})
    age: int = Field(ge=18, le=99)


def test_tool_output_is_a_valid_instance_and_labelled_atomtask_synthetic() -> None:
    """In tool mode the answer calls the output tool with a valid instance; the model is `atomtask:synthetic`."""
    model = SyntheticModel()
    result = Agent(model, output_type=Contact).run_sync("Who wrote this?")
    assert isinstance(result.output, Contact)
    assert ("atomtask", "synthetic") == (model.system, model.model_name)
    assert result.usage.output_tokens > 0


@pytest.mark.parametrize("output", [NativeOutput(Contact), PromptedOutput(Contact)])
def test_native_and_prompted_outputs_are_json_text(output: Any) -> None:
    """In native and prompted modes the answer is the instance as JSON text."""
    result = Agent(SyntheticModel(), output_type=output).run_sync("Who wrote this?")
    assert isinstance(result.output, Contact)
    assert 18 <= result.output.age <= 99


def test_text_output_is_a_short_plausible_text() -> None:
    """A text output gets a couple of plain sentences."""
    text = Agent(SyntheticModel()).run_sync("Say something.").output
    assert isinstance(text, str) and 2 <= text.count(".") and len(text) < 300


def test_same_conversation_same_answer_other_prompt_other_answer() -> None:
    """The answer depends on the prompt's text only: the same prompt repeats it, another changes it."""
    agent = Agent(SyntheticModel(), output_type=Contact)
    first = agent.run_sync("Ada wrote this.").output
    assert first == agent.run_sync("Ada wrote this.").output
    others = {agent.run_sync(f"Message {n}").output.model_dump_json() for n in range(4)}
    assert len(others | {first.model_dump_json()}) > 1


def test_streamed_answer_matches_the_plain_one() -> None:
    """Streaming gives the same answer as a plain run."""

    async def streamed() -> Contact:
        async with Agent(SyntheticModel(), output_type=Contact).run_stream("Ada wrote this.") as run:
            return await run.get_output()

    import asyncio

    assert Agent(SyntheticModel(), output_type=Contact).run_sync("Ada wrote this.").output == asyncio.run(streamed())


class Picky(BaseModel):
    word: str

    @field_validator("word")
    @classmethod
    def refuse_the_first(cls, value: str) -> str:
        _SEEN.append(value)
        if len(_SEEN) == 1:
            raise ValueError("not this one")
        return value


_SEEN: list[str] = []


def test_a_retry_gets_a_different_answer() -> None:
    """Validation feedback changes the conversation, so the retried answer differs from the refused one."""
    _SEEN.clear()
    system = TaskSystem()
    system.models.register(Picky)
    system.defatom('(defatom picky (instructions "One word.") (output_format ((type "json") (schema "Picky"))))')
    result = system.execute("picky")
    assert result.ok, result.error
    assert 2 == len(_SEEN) and _SEEN[0] != _SEEN[1]
    assert "atomtask:synthetic" == result.notes.model


def test_the_default_runs_extract_event_and_the_test_model_still_works(templates_dir: Path) -> None:
    """No model configured: `extract_event` (date-time, e-mail, uri) completes; `test` is still accepted."""
    system = TaskSystem(templates=templates_dir)
    event = system.execute("extract_event", {"message": "Team sync tomorrow"})
    assert event.ok, event.error
    assert ("default", "atomtask:synthetic") == (event.notes.model_source, event.notes.model)
    assert FORMAT_CHECKER.conforms(event.unwrap().starts_at, "date-time")
    assert system.execute("extract_contact", {"text": "Ada"}, model="test").ok


# Usage counted from the request (issue 27, defect 10): limits trip offline on a big input.


def test_request_usage_counts_the_instructions_and_text_without_spaces() -> None:
    """The system text and a long run of text without spaces count: 4 characters a token at least."""
    from atomtask.handlers._synthetic import request_usage
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    plain = request_usage([ModelRequest(parts=[UserPromptPart("hi")])], [])
    blob = request_usage([ModelRequest(parts=[UserPromptPart("x" * 4000)])], [])
    told = request_usage([ModelRequest(parts=[UserPromptPart("hi")], instructions="word " * 100)], [])
    assert 1000 == blob.input_tokens - plain.input_tokens + 1
    assert 100 <= told.input_tokens - plain.input_tokens
    answered = request_usage([ModelRequest(parts=[UserPromptPart("hi")])], [TextPart("a b c d")])
    assert 4 == answered.output_tokens


@pytest.mark.parametrize("model", ["atomtask:synthetic", "test"])
@pytest.mark.parametrize("where", ["system", "instructions"])
def test_a_token_limit_trips_offline_on_a_big_input(model: str, where: str) -> None:
    """A 2 MB input without spaces, in the prompt or the system text, is counted, so `limits` stop it offline."""
    from atomtask import FailureReason, Template

    system = TaskSystem(model=model, large_prompt=0)
    text = "{{text}}" if where == "instructions" else "Summarise it."
    system.register(
        Template(
            name="big", params={"text": "str"}, instructions=text, system="Read {{text}}" if where == "system" else None
        )
    )
    blob = "x" * 2_000_000
    counted = system.execute("big", {"text": blob})
    assert counted.notes.usage.input_tokens >= 500_000
    stopped = system.execute("big", {"text": blob}, limits={"input_tokens": 100_000})
    assert stopped.error is not None
    assert FailureReason.USAGE_LIMIT_EXCEEDED == stopped.error.reason
