"""A migration's `convert` is type-checked against the older version's state, as far as it can be known (E120)."""

from __future__ import annotations

from typing import Any

import pytest
from atomtask import Workflow

from tests.workflow_fixtures import make_system

STATE = [
    {"name": "title", "type": "str"},
    {"name": "words", "type": "int", "default": 0},
    {"name": "tags", "type": "list[str]", "default": []},
    {"name": "reply", "type": "str", "default": ""},
    {"name": "when", "type": "date?", "default": None},
]


def _errors(*migrations: dict[str, Any]) -> list[tuple[str, str]]:
    doc = {
        "name": "notes",
        "version": "1.2",
        "state": STATE,
        "steps": [{"id": "write", "task": "shout", "inputs": {"word": "{{state.title}}"}, "output": "reply"}],
        "migrations": list(migrations),
    }
    checked = make_system(importable=("tests",)).workflows.check(Workflow.model_validate(doc))
    return [(e.code, e.message) for e in checked.errors]


def _last(convert: dict[str, str], **edits: Any) -> dict[str, Any]:
    return {"from": "1.1", "to": "1.2", "convert": convert, **edits}


FIRST = {"from": "1.0", "to": "1.1", "rename": {"name": "title"}}


@pytest.mark.parametrize(
    ("expression", "shown"),
    [
        ("state.title * 10000000000", "`*` needs numbers; got `state.title` (str)"),
        ("'%0999999999d' % state.words", "`%` needs numbers; got `'%0999999999d'` (str)"),
        ("state.tags * 10000000000", "`*` needs numbers; got `state.tags` (list[str])"),
    ],
)
def test_a_convert_that_only_grows_text_is_refused_when_the_source_type_is_known(expression: str, shown: str) -> None:
    """The fields the migrations carry to the current version keep their type: E120 before any resume."""
    errors = _errors(FIRST, _last({"reply": expression}))
    assert [("E120", True)] == [(code, shown in message) for code, message in errors]
    assert "Migration 1.1 -> 1.2, `convert: reply`" in errors[0][1]


def test_the_source_type_follows_renames_back_through_the_chain() -> None:
    """`name` of 1.0 becomes `title` (a str) later: reading `state.name * 3` in 1.0 -> 1.1 is refused."""
    errors = _errors({**FIRST, "convert": {"words": "state.name * 3"}}, _last({}, set={"tags": []}))
    assert [("E120", True)] == [(code, "`state.name` (str)" in message) for code, message in errors]
    assert "In version '1.0': `state.name` (str)." in errors[0][1]


CALL = {"from": "1.1", "to": "1.2", "call": "tests.workflows.test_migration_source_types:same"}


@pytest.mark.parametrize(
    "migrations",
    [
        # A field the chain never mentions again, or one it drops: its type in 1.0 is not known.
        [FIRST | {"convert": {"words": "state.old * 3"}}, _last({}, set={"tags": []})],
        [FIRST | {"drop": ["old"], "convert": {"words": "state.old * 3"}}, _last({}, set={"tags": []})],
        # A `call` later in the chain may change anything: nothing before it is known.
        [FIRST | {"convert": {"words": "state.name * 3"}}, CALL],
    ],
)
def test_fields_of_unknown_type_are_left_to_the_resume(migrations: list[dict[str, Any]]) -> None:
    """A field dropped or never carried, or any field before a `call`, reads as `Any`: no refusal here."""
    assert [] == _errors(*migrations)


def test_a_recorded_date_is_not_typed_as_a_date() -> None:
    """A `date` field is a str once recorded: comparing it with a str is not refused (its type is left open)."""
    assert [] == _errors(FIRST, _last({"reply": "'late' if state.when > '2024-01-01' else 'early'"}))


def test_a_convert_fitting_the_source_types_is_accepted() -> None:
    """`len(state.title) * 2` over a str title is an int, which fits `words`."""
    assert [] == _errors(FIRST, _last({"words": "len(state.title) * 2"}))


def same(state: dict[str, Any]) -> dict[str, Any]:
    """A `call:` migration: the state unchanged."""
    return state


def test_a_field_dropped_on_the_way_is_unknown_before_the_drop() -> None:
    """`words` dropped by 1.0 -> 1.1 (and back with its default in 1.2) says nothing of `words` in 1.0."""
    first = {"from": "1.0", "to": "1.1", "drop": ["words"], "convert": {"reply": "state.words * 10"}}
    assert [] == _errors(first, _last({}, set={"tags": []}))
