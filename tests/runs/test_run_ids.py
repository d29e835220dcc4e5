"""Run ids given by users: `~N` names a later segment of a run, so a user's id cannot contain `~`, nor anything else
that would not come back the same from the store (empty, spaces, control characters, an absurd length)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from atomtask import TaskStatus, TaskSystem
from atomtask.errors import RunIdError
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.runs.run_helpers import crashing_model

FLOW = """\
name: say
params: {word: str}
instructions: "Repeat {{word}}"
---
name: flow
state:
  - {name: word, type: str}
  - {name: one, type: str}
  - {name: two, type: str}
steps:
  - {id: first, task: say, inputs: {word: "{{state.word}}"}, output: one}
  - {id: second, task: say, inputs: {word: "{{state.one}}"}, output: two}
"""


@pytest.fixture
def system(tmp_path: Path) -> TaskSystem:
    (tmp_path / "flows.yaml").write_text(FLOW, encoding="utf-8")
    return TaskSystem(templates=tmp_path)


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "runs.sqlite")


def _outage_at_second_call() -> FunctionModel:
    """A model that answers once, then its provider is down (HTTP 503)."""
    calls: list[str] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls.append("asked")
        if len(calls) >= 2:
            raise ModelHTTPError(503, "fake", body="service unavailable")
        return ModelResponse(parts=[TextPart("one")])

    return FunctionModel(answer)


def _workflow_ids(db: str) -> list[str]:
    with sqlite3.connect(db) as connection:
        return sorted(row[0] for row in connection.execute("SELECT workflow_uuid FROM workflow_status"))


def test_a_run_id_naming_a_segment_of_a_failed_run_is_refused_and_the_run_left_resumable(
    system: TaskSystem, db: str
) -> None:
    """`run_id='q~2'` after FAILED run `q`: refused naming the rule, nothing stored; `q` stays FAILED and resumes."""
    failed = system.run_workflow("flow", {"word": "w"}, run_id="q", db=db, model=_outage_at_second_call())
    assert TaskStatus.FAILED == failed.status
    model, _ = crashing_model("one", "two")
    with pytest.raises(RunIdError) as refused:
        system.run_workflow("flow", {"word": "w"}, run_id="q~2", db=db, model=model)
    assert "q~2" == refused.value.run_id
    assert "'q~2'" in str(refused.value) and "`~`" in str(refused.value)
    assert ["q"] == _workflow_ids(db)
    assert {"q": "FAILED"} == {info.run_id: info.status for info in system.workflow_runs(db=db)}
    model, asked = crashing_model("two")
    resumed = system.resume_workflow("q", db=db, model=model)
    assert (TaskStatus.COMPLETE, ["Repeat one"]) == (resumed.status, asked)


@pytest.mark.parametrize(
    ("run_id", "rule"),
    [
        ("", "empty"),
        ("a b", "whitespace"),
        (" a", "whitespace"),
        ("a\n", "whitespace"),
        ("a\x00b", "control"),
        ("a\x1bb", "control"),
        ("x" * 201, "200 characters"),
        ("a~b", "`~`"),
        ("q@review#1", "approvals"),
    ],
)
def test_a_run_id_that_cannot_round_trip_is_refused_before_anything_is_stored(
    system: TaskSystem, db: str, run_id: str, rule: str
) -> None:
    """Empty, whitespace, control characters, more than 200 characters or `~`: a typed error naming the rule."""
    model, asked = crashing_model("one", "two")
    with pytest.raises(RunIdError) as refused:
        system.run_workflow("flow", {"word": "w"}, run_id=run_id, db=db, model=model)
    assert run_id == refused.value.run_id
    assert rule in str(refused.value)
    assert refused.value.fix is not None and "--run-id" in refused.value.fix
    assert [] == asked
    assert not Path(db).exists() or [] == _workflow_ids(db)


def test_show_and_resume_of_an_id_with_a_tilde_say_it_names_a_segment(system: TaskSystem, db: str) -> None:
    """`show`/`resume` of `q~2` say that `~2` names segment 2 of run `q`, and to use `q`: not a bare "not found"."""
    from atomtask.handlers._blocking import run_blocking
    from atomtask.runs import _durable as durable

    system.run_workflow("flow", {"word": "w"}, run_id="q", db=db, model=_outage_at_second_call())
    with pytest.raises(RunIdError, match=r"segment 2 of run 'q'") as shown:
        run_blocking(durable.show("q~2", db=db))
    assert "atomtask workflow show q" in str(shown.value)
    with pytest.raises(RunIdError, match=r"segment 2 of run 'q'") as resumed:
        system.resume_workflow("q~2", db=db)
    assert "atomtask workflow resume q" in str(resumed.value)
