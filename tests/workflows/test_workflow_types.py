"""Workflow type checks at load: JSON Schema states, literal values, reads through null, conditions, messages."""

from __future__ import annotations

from typing import Any

import pytest
from atomtask import Workflow
from atomtask.schemas._declarations import JsonSchemaDef
from atomtask.schemas.json_schema._models import build_json_schema_model
from atomtask.workflows import WorkflowRegistry
from pydantic import BaseModel

from tests.workflow_fixtures import make_system, task, triage


class Scored(BaseModel):
    label: str
    score: int


COUNTER = {
    "type": "object",
    "properties": {"n": {"type": "integer", "default": 1}, "tags": {"type": "array", "items": {"type": "string"}}},
}


def _problems(doc: dict[str, Any]) -> list[tuple[str, str]]:
    system = make_system("test")
    system.models.register(Scored)
    system.register(task("score_it", {"text": "str"}, "Scored"))
    system.models.register(build_json_schema_model(JsonSchemaDef(name="Counter", json_schema=COUNTER)))
    required = {**COUNTER, "required": ["n"]}
    system.models.register(build_json_schema_model(JsonSchemaDef(name="Exact", json_schema=required)))
    registry = WorkflowRegistry(system.templates, system.models)
    return [(e.code, e.message) for e in registry.check(Workflow.model_validate(doc)).errors]


def _counter(state: Any, *steps: dict[str, Any]) -> dict[str, Any]:
    return {"name": "counter", "state": state, "steps": list(steps)}


COUNT = {"id": "f", "task": "count", "inputs": {"n": "{{state.n}}"}, "outputs": {"n": "score"}}


@pytest.mark.parametrize("state", [{"schema": "Counter"}, "Counter"], ids=["schema", "short"])
def test_a_json_schema_state_is_typed_through_its_validators(state: Any) -> None:
    """`Annotated[int, validator] | None` reads as `int`: ordering it, storing an int in it, passing it once written."""
    doc = _counter(
        state,
        {"id": "first", "task": "count", "inputs": {"n": 1}, "outputs": {"n": "score"}},
        {**COUNT, "when": "state.n > 0"},
    )
    assert [] == _problems(doc)


def test_a_required_json_schema_property_passes_into_an_int_parameter() -> None:
    """A required property is a plain `int`: `{{state.n}}` binds an int parameter before any write."""
    assert [] == _problems(_counter({"schema": "Exact"}, {"id": "f", "task": "count", "inputs": {"n": "{{state.n}}"}}))


def test_an_unwritten_optional_property_names_the_null_and_the_fix_without_a_repr() -> None:
    """The type reads `int | None` (never `Annotated[...]` or `<function ... at 0x...>`), with how to fix it."""
    [(code, message)] = _problems(_counter({"schema": "Counter"}, COUNT))
    assert "E114" == code
    assert message.startswith("Step 'f' passes {{state.n}} (int | None) to parameter 'n' (int) of task 'count'")
    assert "skip the step unless it is set (`when: state.n is not null`)" in message
    assert "Annotated" not in message and "0x" not in message


def test_a_field_with_a_value_default_is_not_null_for_reading() -> None:
    """`int?` with `default: 1` binds an `int` parameter: it holds a value until something sets it to null."""
    state = [{"name": "n", "type": "int?", "default": 1}, {"name": "m", "type": "int?"}]
    assert [] == _problems(_counter(state, {"id": "f", "task": "count", "inputs": {"n": "{{state.n}}"}}))
    assert ["E114"] == [code for code, _ in _problems(_counter(state, {**COUNT, "inputs": {"n": "{{state.m}}"}}))]


def _triage_when(when: str) -> list[tuple[str, str]]:
    doc = triage()
    doc["steps"][0]["route"][0]["when"] = when
    return _problems(doc)


@pytest.mark.parametrize(
    ("when", "message"),
    [
        (
            "state.label == 'billng'",
            "`state.label` is one of 'billing', 'technical', 'other', never 'billng', so `==` is always false. "
            "Did you mean 'billing'?",
        ),
        ("state.label != 'tecnical'", "never 'tecnical', so `!=` is always true. Did you mean 'technical'?"),
        (
            "state.label in ['billing', 'othr']",
            "never 'othr', so `state.label in ['billing', 'othr']` never matches it. Did you mean 'other'?",
        ),
    ],
)
def test_a_literal_compared_with_a_value_it_never_holds_is_an_error(when: str, message: str) -> None:
    """A misspelt literal value is E114 naming the allowed values and the near one."""
    [(code, found)] = _triage_when(when)
    assert ("E114", True) == (code, message in found), found


def test_literal_values_it_holds_pass() -> None:
    """Allowed values (and null) compare without a problem."""
    assert [] == _triage_when("state.label in ['billing', 'other'] or state.label != null")


def _scored(*steps: dict[str, Any], default: bool = False) -> dict[str, Any]:
    obj: dict[str, Any] = {"name": "obj", "type": "Scored?"}
    if default:
        obj["default"] = {"label": "x", "score": 1}
    state = [{"name": "text", "type": "str"}, obj, {"name": "draft", "type": "str", "default": ""}]
    return {"name": "scoring", "state": state, "steps": list(steps)}


GENERAL = {"id": "g", "task": "general", "inputs": {"text": "Got {{state.obj.label}}"}, "output": "draft"}


@pytest.mark.parametrize(
    ("step", "message"),
    [
        (
            GENERAL,
            "Step 'g' reads `state.obj.label` in input 'text', but `state.obj` (Scored | None) may be null there, "
            "and reading through null fails the run. Give it a default, write it on every path before, or skip the "
            "step unless it is set (`when: state.obj is not null`).",
        ),
        (
            {**GENERAL, "inputs": {"text": "x"}, "when": "state.obj.score > 3"},
            "Step 'g' reads `state.obj.score` in `when`, but `state.obj` (Scored | None) may be null there, and "
            "reading through null fails the run. Give it a default, write it on every path before, or test it "
            "first (`state.obj is not null and ...`).",
        ),
    ],
)
def test_reading_through_a_field_that_may_be_null_is_a_data_flow_error(step: dict[str, Any], message: str) -> None:
    """`state.obj.label` with `obj: Scored?` unwritten fails at run time: it is E116 at load, with the fixes."""
    assert [("E116", message)] == _problems(_scored(step))


@pytest.mark.parametrize(
    ("step", "default"),
    [
        ({**GENERAL, "when": "state.obj is not null"}, False),
        ({**GENERAL, "inputs": {"text": "x"}, "when": "state.obj is not null and state.obj.score > 3"}, False),
        ({**GENERAL, "inputs": {"text": "x"}, "when": "state.obj is null or state.obj.score > 3"}, False),
        ({**GENERAL, "inputs": {"text": "x"}, "when": "state.obj.score > 3 if state.obj != null else false"}, False),
        (GENERAL, True),
    ],
    ids=["when-guard", "and", "or", "if-else", "default"],
)
def test_a_guarded_or_defaulted_read_through_an_optional_is_accepted(step: dict[str, Any], default: bool) -> None:
    """A test against null before the read (or a value default) makes the read safe."""
    assert [] == _problems(_scored(step, default=default))


def test_an_optional_written_on_only_some_paths_is_still_refused() -> None:
    """Written on one branch only, `state.obj` may still be null after the join; written before, it may not."""
    write = {"id": "w", "task": "score_it", "inputs": {"text": "x"}, "output": "obj", "when": "state.text == 'x'"}
    assert ["E116"] == [code for code, _ in _problems(_scored(write, GENERAL))]
    write.pop("when")
    assert [] == _problems(_scored(write, GENERAL))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d: d["steps"][0].update(when="state.score"),
            "Step 'f', `when`: `state.score` (int) is not true or false, as a condition must be; compare it, "
            "e.g. `state.score > 0`.",
        ),
        (
            lambda d: d["steps"][0].update(route=[{"when": "state.tags", "to": "end"}]),
            "Step 'f', route 1: `state.tags` (list[str]) is not true or false, as a condition must be; compare it, "
            "e.g. `len(state.tags) > 0`.",
        ),
    ],
)
def test_a_condition_that_is_not_true_or_false_is_an_error(edit: Any, message: str) -> None:
    """`when: state.score` on an int is E114 with a comparison to write instead."""
    doc = _counter(
        [{"name": "score", "type": "int", "default": 0}, {"name": "tags", "type": "list[str]", "default": []}],
        {"id": "f", "task": "count", "inputs": {"n": 1}, "outputs": {"score": "score"}},
    )
    edit(doc)
    assert [("E114", message)] == _problems(doc)


def test_a_string_literal_input_is_shown_quoted() -> None:
    """`n: "3"` into an int parameter shows `'3'`, so it reads as the text it is."""
    state = [{"name": "n", "type": "int", "default": 0}]
    [(code, message)] = _problems(_counter(state, {"id": "f", "task": "count", "inputs": {"n": "3"}}))
    assert "E114" == code
    assert message.startswith("Step 'f' passes '3' (str) to parameter 'n' (int) of task 'count'")
