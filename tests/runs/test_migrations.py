"""Migrating a recorded run's state to the workflow's current version: fingerprints, chains, validation, refusals."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from atomtask import MigrationError, ResumeStepMissingError, TaskSystem, Workflow
from atomtask.runs._migrations import MigratedState, migrate, resume_point, state_fingerprint
from atomtask.workflows import WorkflowRegistry
from atomtask.workflows._compiled import CompiledWorkflow
from pydantic import BaseModel, Field

from tests.workflow_fixtures import make_system


def to_1_1(state: dict[str, Any]) -> dict[str, Any]:
    """A migration function (named by `call:`): the title in capitals, the old notes gone."""
    state["title"] = state.pop("name").upper()
    state.pop("notes", None)
    return state


def broken(state: dict[str, Any]) -> dict[str, Any]:
    raise KeyError("name")


def not_a_state(state: dict[str, Any]) -> list[str]:
    return ["title"]


def _compiled(
    migrations: list[dict[str, Any]], *, version: str = "1.2", system: TaskSystem | None = None
) -> CompiledWorkflow:
    system = system or make_system("test")
    registry = WorkflowRegistry(system.templates, system.models)
    doc = {
        "name": "notes",
        "version": version,
        "state": [
            {"name": "title", "type": "str"},
            {"name": "words", "type": "int", "default": 0, "ge": 0},
            {"name": "tags", "type": "list[str]", "default": []},
            {"name": "reply", "type": "str", "default": ""},
        ],
        "steps": [
            {"id": "write", "task": "shout", "inputs": {"word": "{{state.title}}"}, "output": "reply"},
            {"id": "again", "task": "shout", "inputs": {"word": "{{state.reply}}"}, "output": "reply"},
        ],
        "migrations": migrations,
    }
    registry.register(Workflow.model_validate(doc))
    return registry.compiled("notes")


CHAIN = [
    {"from": "1.0", "to": "1.1", "rename": {"name": "title"}, "drop": ["draft"], "resume_at": "write"},
    {"from": "1.1", "to": "1.2", "set": {"tags": ["migrated"]}, "convert": {"words": "len(state.notes)"},
     "drop": ["notes"]},
]  # fmt: skip


def test_the_fingerprint_follows_what_validates_not_the_wording() -> None:
    """Same schema, same fingerprint; a type or default change shows; a description change does not."""

    class A(BaseModel):
        title: str
        words: int = 0

    class B(BaseModel):
        title: str = Field(description="The title, reworded.")
        words: int = 0

    class C(BaseModel):
        title: str
        words: float = 0

    class D(BaseModel):
        title: str
        words: int = 1

    assert state_fingerprint(A) == state_fingerprint(A)
    assert state_fingerprint(A) == state_fingerprint(B)
    assert state_fingerprint(A) != state_fingerprint(C)
    assert state_fingerprint(A) != state_fingerprint(D)


def test_a_field_called_description_is_part_of_the_fingerprint() -> None:
    """Only the `description` keyword is left out, not a property of that name."""

    class WithField(BaseModel):
        title: str
        description: str

    class WithoutField(BaseModel):
        title: str

    assert state_fingerprint(WithField) != state_fingerprint(WithoutField)


def test_same_version_and_schema_gives_the_state_back_unchanged() -> None:
    """Nothing to migrate: the same values, as a copy the caller may change freely."""
    compiled = _compiled(CHAIN)
    state = {"title": "t", "tags": ["a"]}
    migrated = migrate(compiled, state, "1.2", state_fingerprint(compiled.state_cls), run_id="r1")
    assert MigratedState(state={"title": "t", "tags": ["a"]}) == migrated
    migrated.state["tags"].append("b")
    assert {"title": "t", "tags": ["a"]} == state


def test_a_chain_of_two_migrations_applies_in_order() -> None:
    """1.0 -> 1.1 -> 1.2: rename, drop, then set and convert (over the old state), validated; resume_at kept."""
    compiled = _compiled(CHAIN)
    old = {"name": "Cats", "draft": "x", "notes": ["a", "b", "c"], "reply": "hi"}
    before = copy.deepcopy(old)
    migrated = migrate(compiled, old, "1.0", "old-fingerprint", run_id="r1")
    assert {"title": "Cats", "reply": "hi", "tags": ["migrated"], "words": 3} == migrated.state
    assert ("write", ("1.0 -> 1.1", "1.1 -> 1.2")) == (migrated.resume_at, migrated.applied)
    assert before == old


def test_a_run_from_the_middle_of_the_chain_applies_the_rest() -> None:
    """A run recorded under 1.1 gets only 1.1 -> 1.2 (and no `resume_at` from 1.0 -> 1.1)."""
    compiled = _compiled(CHAIN)
    migrated = migrate(compiled, {"title": "t", "notes": []}, "1.1", "f", run_id="r1")
    assert MigratedState(state={"title": "t", "tags": ["migrated"], "words": 0}, applied=("1.1 -> 1.2",)) == migrated


def test_a_migrated_state_that_does_not_validate_is_refused_with_the_fields() -> None:
    """Pydantic's message per field, the versions, the migrations applied, and the edits to add."""
    compiled = _compiled(CHAIN)
    with pytest.raises(MigrationError) as caught:
        migrate(compiled, {"name": "t", "notes": "abc", "reply": 5, "extra": 1}, "1.0", "f", run_id="r1")
    error = caught.value
    assert ("r1", "1.0", "1.2") == (error.run_id, error.from_version, error.to_version)
    assert ["1.0 -> 1.1", "1.1 -> 1.2"] == error.applied
    assert [
        ("reply", "Input should be a valid string"),
        ("extra", "not a field of version '1.2'; drop or rename it"),
    ] == (error.fields)
    assert "e.g. drop: [extra], convert: {reply: EXPR}; the stored run is unchanged." in str(error)


def test_a_constraint_of_the_current_field_applies_to_migrated_values() -> None:
    """`words` is `ge: 0`: a converted negative count is refused with pydantic's message."""
    compiled = _compiled([{"from": "1.1", "to": "1.2", "convert": {"words": "0 - len(state.title)"}}])
    with pytest.raises(MigrationError) as caught:
        migrate(compiled, {"title": "abc"}, "1.1", "f", run_id="r1")
    assert [("words", "Input should be greater than or equal to 0")] == caught.value.fields


def test_no_migration_path_is_refused_with_the_yaml_to_add() -> None:
    """From a version no migration starts at: both versions, the missing step of the chain, the fix."""
    compiled = _compiled(CHAIN)
    with pytest.raises(MigrationError) as caught:
        migrate(compiled, {"title": "t", "junk": 1}, "0.9", "f", run_id="r7")
    error = caught.value
    assert (("0.9", "1.0"), [("junk", "not a field of version '1.2'; drop or rename it")]) == (
        error.missing,
        error.fields,
    )
    assert "Run 'r7' of workflow 'notes' was recorded under version '0.9', and no migration leads" in str(error)
    assert 'add `migrations: [{from: "0.9", to: "1.0", drop: [junk]}]`' in str(error)


def test_a_changed_schema_under_the_same_version_is_refused() -> None:
    """Same version, other fingerprint: the fix is a new version and a migration to it."""
    compiled = _compiled([], version="1.0")
    with pytest.raises(MigrationError) as caught:
        migrate(compiled, {"title": "t"}, "1.0", "another-schema", run_id="r1")
    error = caught.value
    assert (("1.0", "1.1"), []) == (error.missing, error.fields)
    assert 'raise `version` to "1.1" and add `migrations: [{from: "1.0", to: "1.1",' in str(error)


def test_a_run_without_a_version_cannot_be_migrated() -> None:
    """A run recorded before the workflow had a version: refused, saying so."""
    compiled = _compiled(CHAIN)
    with pytest.raises(MigrationError, match="recorded before the workflow had a `version`"):
        migrate(compiled, {"title": "t"}, None, "f", run_id="r1")


def test_a_convert_that_fails_on_the_old_state_is_refused() -> None:
    """`len` of a number: the migration and the field are named, nothing is returned."""
    compiled = _compiled(CHAIN)
    with pytest.raises(MigrationError) as caught:
        migrate(compiled, {"title": "t", "notes": 3}, "1.1", "f", run_id="r1")
    assert "migration 1.1 -> 1.2 failed on its state: `convert: words`" in str(caught.value)
    assert ["words"] == [field for field, _ in caught.value.fields]


def _with_calls(function: str) -> CompiledWorkflow:
    system = make_system("test")
    system.models.importable = ("tests",)
    return _compiled([{"from": "1.0", "to": "1.2", "call": f"tests.runs.test_migrations:{function}"}], system=system)


def test_a_call_migration_gets_a_copy_of_the_old_state() -> None:
    """`call:` runs the imported function on a copy; its result is validated like any migration's."""
    compiled = _with_calls("to_1_1")
    old = {"name": "cats", "notes": ["n"]}
    migrated = migrate(compiled, old, "1.0", "f", run_id="r1")
    assert ({"title": "CATS"}, ("1.0 -> 1.2",)) == (migrated.state, migrated.applied)
    assert {"name": "cats", "notes": ["n"]} == old


@pytest.mark.parametrize(
    ("function", "message"),
    [
        ("broken", "`tests.runs.test_migrations:broken` raised KeyError: 'name'"),
        ("not_a_state", "`tests.runs.test_migrations:not_a_state` returned list, not the new state (a dict)"),
    ],
)
def test_a_call_migration_that_fails_is_refused(function: str, message: str) -> None:
    """An exception or a result that is not a dict refuses the resume, naming the function."""
    with pytest.raises(MigrationError) as caught:
        migrate(_with_calls(function), {"name": "x"}, "1.0", "f", run_id="r1")
    assert message in str(caught.value)


def test_the_resume_point_is_the_recorded_step_while_it_exists() -> None:
    """No `resume_at` applied: the run continues at its own step."""
    compiled = _compiled(CHAIN)
    assert "again" == resume_point(compiled, "again", MigratedState(state={}), run_id="r1", from_version="1.2")


def test_a_migration_s_resume_at_says_where_to_continue() -> None:
    """`resume_at` of an applied migration wins, even over a step that still exists."""
    compiled = _compiled(CHAIN)
    migrated = migrate(compiled, {"name": "t", "notes": []}, "1.0", "f", run_id="r1")
    assert "write" == resume_point(compiled, "revise", migrated, run_id="r1", from_version="1.0")
    assert "write" == resume_point(compiled, "again", migrated, run_id="r1", from_version="1.0")


def test_a_step_gone_in_the_new_version_without_resume_at_is_refused() -> None:
    """The error names the step, the steps now, and the `resume_at:` to add."""
    compiled = _compiled(CHAIN)
    migrated = migrate(compiled, {"title": "t", "notes": []}, "1.1", "f", run_id="r1")
    with pytest.raises(ResumeStepMissingError) as caught:
        resume_point(compiled, "agian_old", migrated, run_id="r1", from_version="1.1")
    assert (["write", "again"], "1.2") == (caught.value.steps, caught.value.to_version)
    assert '`migrations: [{from: "1.1", to: "1.2", resume_at: ' in str(caught.value)
