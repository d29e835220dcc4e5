"""The workflow declaration vocabulary: `Workflow`, `Step`, `OnFailure`, `WorkflowState`, locations, error codes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from atomtask import SourceLocation, Step, UsageError, Workflow, WorkflowNotFoundError, WorkflowPathError
from atomtask.errors import WORKFLOW_ERROR_CODES
from atomtask.system._workflows import OnFailure, WorkflowState, collect_origins
from pydantic import ValidationError

from tests.workflow_fixtures import article_writer


def _step(**fields: Any) -> Step:
    return Step.model_validate({"id": "s", **fields})


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({}, "a step has exactly one of `task`, `workflow`, `call` or `parallel` (found none of them)"),
        ({"task": "a", "workflow": "b"}, "(found `task`, `workflow`)"),
        ({"task": "a", "output": "x", "outputs": {"y": "z"}}, "`output` (the whole answer) or `outputs`"),
        ({"task": "a", "collect": "x"}, "`collect` only applies with `for_each`"),
        ({"task": "a", "as": "it"}, "`as` only applies with `for_each`"),
        ({"task": "a", "for_each": "state.xs", "output": "x"}, "stores its answers with `collect: FIELD`"),
        ({"task": "a", "for_each": "state.xs", "as": "state"}, "`as: state` must be an identifier other than"),
        ({"id": "end", "task": "a"}, "`end` is the route target that ends the run"),
        ({"id": "1st", "task": "a"}, "step id '1st' must start with a letter"),
        ({"task": "a", "on_failure": "retry"}, "`on_failure` is `stop`, `continue`, `{to: STEP}`"),
        ({"task": "a", "on_failure": {"to": "x", "then": "continue"}}, "has both `to` and `then`"),
        ({"task": "a", "colect": "x"}, "Extra inputs are not permitted"),
        ({"parallel": []}, "`parallel` needs at least one step"),
        ({"parallel": [{"id": "m", "task": "a"}], "inputs": {"x": 1}}, "`inputs` belongs on the steps inside"),
        ({"parallel": [{"id": "m", "task": "a", "route": [{"to": "end"}]}]}, "put `route`/`max_visits` on the group"),
        ({"parallel": [{"id": "m", "parallel": [{"id": "n", "task": "a"}]}]}, "`parallel` groups do not nest"),
        ({"parallel": [{"id": "m", "task": "a"}], "on_failure": {"retry_with": "test"}}, "cannot `retry_with`"),
    ],
)
def test_a_malformed_step_is_refused_with_the_fix(fields: dict[str, Any], message: str) -> None:
    """Shape mistakes are caught when the declaration is read, each saying what to write instead."""
    with pytest.raises(ValidationError) as caught:
        _step(**fields)
    assert message in str(caught.value)


def test_on_failure_shorthands() -> None:
    """`stop`/`continue` strings, a single `retry_with` model, and the action that follows."""
    assert "stop" == _step(task="a").on_failure.action
    assert "continue" == OnFailure.model_validate("continue").action
    escalation = OnFailure.model_validate({"retry_with": "openai:gpt-4o", "to": "fallback"})
    assert (["openai:gpt-4o"], "to") == (escalation.retry_with, escalation.action)


def test_yaml_keys_that_are_python_words_have_aliases() -> None:
    """`set` and `as` are read from YAML; Python callers may use `set_`/`as_`."""
    step = _step(task="a", **{"set": {"n": "state.n + 1"}, "for_each": "state.xs", "as": "x", "collect": "ys"})
    assert ({"n": "state.n + 1"}, "x") == (step.set_, step.as_)
    assert "task" == step.kind
    assert "x" == Step(id="s", task="a", for_each="state.xs", as_="x").as_


def test_state_shorthands() -> None:
    """`state: Name` names a schema; a bare list is the fields; one of the two is required."""
    assert "Article" == WorkflowState.model_validate("Article").schema_
    assert [{"name": "x"}] == WorkflowState.model_validate([{"name": "x"}]).fields
    with pytest.raises(ValidationError, match="either `fields"):
        WorkflowState.model_validate({})


def test_a_workflow_needs_a_name_and_steps_and_keeps_its_version_as_text() -> None:
    """`version: 1.0` (a YAML float) is kept as "1.0"; no steps or a bad name are refused."""
    assert "1.0" == Workflow.model_validate({**article_writer(), "version": 1.0}).version
    with pytest.raises(ValidationError, match="at least 1 item"):
        Workflow.model_validate({**article_writer(), "steps": []})
    with pytest.raises(ValidationError, match="workflow name 'a b' must start"):
        Workflow.model_validate({**article_writer(), "name": "a b"})


def test_all_steps_lists_group_members_after_their_group() -> None:
    """Paths follow the document, so locations can be found for members too."""
    doc = article_writer()
    doc["steps"][1] = {"id": "g", "parallel": [{"id": "m", "task": "t"}]}
    paths = [(path, step.id) for path, step in Workflow.model_validate(doc).all_steps()]
    assert [("steps.0", "research"), ("steps.1", "g"), ("steps.1.parallel.0", "m")] == paths[:3]


def test_collect_origins_and_location_of_find_the_nearest_known_part() -> None:
    """A reader's node positions become dotted paths; an unknown part falls back to its parent."""
    doc = {"name": "w", "steps": [{"id": "a", "route": [{"when": "x", "to": "end"}]}]}
    step, route = doc["steps"][0], doc["steps"][0]["route"][0]

    def loc(line: int, column: int = 1) -> SourceLocation:
        return SourceLocation(file="w.yaml", line=line, column=column)

    nodes: dict[int, tuple[SourceLocation, Mapping[str, SourceLocation]]] = {
        id(doc): (loc(1), {"name": loc(1, 7), "steps": loc(3)}),
        id(step): (loc(3, 5), {"id": loc(3, 9), "route": loc(4, 12)}),
        id(route): (loc(4, 14), {"when": loc(4, 20), "to": loc(4, 27)}),
    }
    origins = collect_origins(doc, lambda mapping: nodes.get(id(mapping)))
    assert loc(4, 20) == origins["steps.0.route.0.when"]
    assert loc(3, 5) == origins["steps.0"]
    workflow = Workflow.model_validate({"name": "w", "state": "S", "steps": [{"id": "a", "task": "t"}]}).located(
        loc(1), origins
    )
    assert (loc(4, 20), loc(3, 5), loc(1)) == (
        workflow.location_of("steps.0.route.0.when"),
        workflow.location_of("steps.0.inputs.x"),
        workflow.location_of("limits"),
    )


def test_every_workflow_error_is_a_usage_error_with_a_stable_code() -> None:
    """Codes E110-E125, one class each; errors carry workflow and step, and keep them when relocated."""
    assert [f"E1{n}" for n in range(10, 26)] == sorted(WORKFLOW_ERROR_CODES)
    error = WorkflowPathError("bad path", workflow="w", step="s")
    moved = error.with_location(SourceLocation(file="w.yaml", line=3))
    assert isinstance(moved, UsageError)
    assert ("E113", "w", "s", "w.yaml:3: bad path") == (moved.code, moved.workflow, moved.step, str(moved))
    assert issubclass(WorkflowNotFoundError, LookupError) and "E111" == WorkflowNotFoundError.code


def test_origins_of_a_bare_state_list_use_the_long_form_paths() -> None:
    """`state: [...]` locations are found under `state.fields.N`, as the checks ask for them."""
    field = {"name": "x", "type": "int"}
    doc = {"name": "w", "state": [field], "steps": []}
    where = SourceLocation(file="w.yaml", line=2, column=12)
    nodes = {id(field): (where, {"type": where})}
    assert {"state.fields.0": where, "state.fields.0.type": where} == collect_origins(
        doc, lambda mapping: nodes.get(id(mapping))
    )


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"type": "approval", "task": "a", "output": "ok"}, "an approval step waits for a person; it has no `task`"),
        ({"type": "approval"}, "an approval step needs `output: FIELD`"),
        ({"type": "approval", "output": "ok", "inputs": {"x": 1}}, "`inputs` does not apply to an approval step"),
        ({"type": "approval", "output": "ok", "on_failure": "continue"}, "`on_failure` does not apply to an approval"),
        ({"type": "approval", "output": "ok", "timeout": "soon"}, "a duration is a number of seconds or text like"),
        ({"type": "approval", "output": "ok", "timeout": 0}, "a duration must be more than zero"),
        ({"type": "approval", "output": "ok", "on_timeout": "ignore"}, "Input should be 'reject' or 'approve'"),
        ({"type": "review", "output": "ok"}, "Input should be 'approval'"),
        ({"task": "a", "message": "hi"}, "`message` only applies to an approval step (`type: approval`)"),
        (
            {"parallel": [{"id": "m", "type": "approval", "output": "ok"}]},
            "an approval step cannot be inside `parallel`",
        ),
    ],
)
def test_a_malformed_approval_step_is_refused_with_the_fix(fields: dict[str, Any], message: str) -> None:
    """An approval step waits for a decision: it runs nothing, needs `output`, and its keys apply only to it."""
    with pytest.raises(ValidationError) as caught:
        _step(**fields)
    assert message in str(caught.value)


def test_an_approval_step_reads_its_timeout_as_a_duration() -> None:
    """`24h`, `30m`, `1h30m`, `45s`, `2d` and plain seconds; `on_timeout` defaults to `reject`."""
    seconds = [_step(type="approval", output="ok", timeout=t).timeout for t in ("24h", "30m", "1h30m", "45s", "2d", 90)]
    assert [86400.0, 1800.0, 5400.0, 45.0, 172800.0, 90.0] == seconds
    step = _step(type="approval", output="ok", message="Go?")
    assert ("approval", None, "reject") == (step.kind, step.timeout, step.on_timeout)


def test_a_migration_is_edits_or_a_call_between_two_versions() -> None:
    """`from`/`to` are version labels (a YAML float is kept as written); `call` excludes the edits."""
    from atomtask import Migration

    migration = Migration.model_validate({"from": 1.0, "to": "1.1", "rename": {"a": "b"}, "set": {"n": 0}})
    assert ("1.0", "1.0 -> 1.1", {"n": 0}) == (migration.from_, migration.label, migration.set_)
    with pytest.raises(ValidationError, match="a migration has `call` or edits \\(`drop`\\), not both"):
        Migration.model_validate({"from": "1", "to": "2", "call": "m:f", "drop": ["x"]})
    with pytest.raises(ValidationError, match="not from '1' to itself"):
        Migration.model_validate({"from": "1", "to": "1"})
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        Migration.model_validate({"from": "1", "to": "2", "renam": {}})


def test_a_workflow_declares_its_migrations() -> None:
    """`migrations:` is a list of migrations on the workflow (empty by default)."""
    doc = {**article_writer(), "version": "1.1", "migrations": [{"from": "1.0", "to": "1.1", "drop": ["x"]}]}
    assert [["x"]] == [m.drop for m in Workflow.model_validate(doc).migrations]
    assert [] == Workflow.model_validate(article_writer()).migrations
