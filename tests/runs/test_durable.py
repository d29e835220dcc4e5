"""Durable runs through the Python API: resume after a crash, limits across resumes, versions and migrations, errors."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from atomtask import (
    CorruptCheckpointError,
    MigrationError,
    ResumeStepMissingError,
    RunExistsError,
    RunNotFoundError,
    RunStateError,
    RunStoreError,
    TaskStatus,
    TaskSystem,
)
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.runs.run_helpers import Killed, crashing_model

SAY = """\
name: say
params: {word: str}
instructions: "Repeat {{word}}"
"""

V1 = """\
name: flow
version: "1.0"
state:
  - {name: word, type: str}
  - {name: one, type: str}
  - {name: two, type: str}
steps:
  - {id: first, task: say, inputs: {word: "{{state.word}}"}, output: one}
  - {id: second, task: say, inputs: {word: "{{state.one}}"}, output: two}
"""

V11 = """\
name: flow
version: "1.1"
state:
  - {name: word, type: str}
  - {name: heard, type: str}
  - {name: two, type: str}
migrations:
  - {from: "1.0", to: "1.1", rename: {one: heard}}
steps:
  - {id: first, task: say, inputs: {word: "{{state.word}}"}, output: heard}
  - {id: second, task: say, inputs: {word: "{{state.heard}}"}, output: two}
"""

V12 = """\
name: flow
version: "1.2"
state:
  - {name: word, type: str}
  - {name: heard, type: str}
  - {name: loud, type: bool}
  - {name: two, type: str}
migrations:
  - {from: "1.0", to: "1.1", rename: {one: heard}}
  - {from: "1.1", to: "1.2", set: {loud: true}}
steps:
  - {id: first, task: say, inputs: {word: "{{state.word}}"}, output: heard}
  - {id: second, task: say, inputs: {word: "{{state.heard}}"}, output: two}
"""


def _system(tmp_path: Path, flow: str) -> TaskSystem:
    folder = tmp_path / f"flows-{abs(hash(flow))}"
    folder.mkdir(exist_ok=True)
    (folder / "flows.yaml").write_text(SAY + "---\n" + flow, encoding="utf-8")
    return TaskSystem(templates=folder)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("runs") / "runs.sqlite")


def _crash_in_second_step(tmp_path: Path, db: str, run_id: str, **options: Any) -> list[str]:
    model, asked = crashing_model("one", crash_at=2)
    with pytest.raises(Killed):
        _system(tmp_path, V1).run_workflow("flow", {"word": "w"}, run_id=run_id, db=db, model=model, **options)
    return asked


def test_a_run_resumes_after_its_last_completed_step(tmp_path: Path, db: str) -> None:
    """The completed step is not asked again; the step in flight is; the result names the run."""
    assert ["Repeat w", "Repeat one"] == _crash_in_second_step(tmp_path, db, "resume-1")
    model, asked = crashing_model("two")
    result = _system(tmp_path, V1).resume_workflow("resume-1", db=db, model=model)
    assert (TaskStatus.COMPLETE, "resume-1") == (result.status, result.run_id)
    assert {"word": "w", "one": "one", "two": "two"} == result.state.model_dump()
    assert ["Repeat one"] == asked
    assert ["first", "second"] == [visit.step for visit in result.steps]


def test_limits_hold_across_a_resume(tmp_path: Path, db: str) -> None:
    """`limits: {total_tokens: 60}`: the ~53 tokens of step 1, paid before the crash, count after the resume."""
    _crash_in_second_step(tmp_path, db, "limits-1", limits={"total_tokens": 60})
    model, _ = crashing_model("two")
    result = _system(tmp_path, V1).resume_workflow("limits-1", db=db, model=model)
    assert result.error is not None
    assert ("second", "usage_limit_exceeded") == (result.error.step, result.error.details.get("task_reason"))


def test_runs_lists_each_run_with_its_status_and_current_step(tmp_path: Path, db: str) -> None:
    """An interrupted run is PENDING at its last completed step; a finished one is COMPLETE."""
    _crash_in_second_step(tmp_path, db, "listed-1")
    model, _ = crashing_model("one", "two")
    _system(tmp_path, V1).run_workflow("flow", {"word": "w"}, run_id="listed-2", db=db, model=model)
    runs = {info.run_id: info for info in _system(tmp_path, V1).workflow_runs(db=db)}
    assert ("PENDING", "first", "1.0") == (
        runs["listed-1"].status,
        runs["listed-1"].current_step,
        runs["listed-1"].version,
    )
    assert ("COMPLETE", "second", 2) == (
        runs["listed-2"].status,
        runs["listed-2"].current_step,
        runs["listed-2"].usage.requests,
    )


def test_an_unknown_run_id_is_a_typed_error_naming_the_fix(tmp_path: Path, db: str) -> None:
    """Resuming a run id that does not exist raises `RunNotFoundError` naming `atomtask workflow runs`."""
    with pytest.raises(RunNotFoundError, match="atomtask workflow runs"):
        _system(tmp_path, V1).resume_workflow("no-such-run", db=db)


def test_a_run_id_in_use_is_refused(tmp_path: Path, db: str) -> None:
    """`run_workflow(run_id=)` with an id already stored raises `RunExistsError`, and runs nothing."""
    model, asked = crashing_model("one", "two")
    _system(tmp_path, V1).run_workflow("flow", {"word": "w"}, run_id="used-1", db=db, model=model)
    with pytest.raises(RunExistsError, match="already exists"):
        _system(tmp_path, V1).run_workflow("flow", {"word": "w"}, run_id="used-1", db=db, model=model)
    assert 2 == len(asked)


def test_a_finished_run_cannot_be_resumed(tmp_path: Path, db: str) -> None:
    """Resuming a COMPLETE run raises `RunStateError`."""
    model, _ = crashing_model("one", "two")
    _system(tmp_path, V1).run_workflow("flow", {"word": "w"}, run_id="done-1", db=db, model=model)
    with pytest.raises(RunStateError, match="has ended"):
        _system(tmp_path, V1).resume_workflow("done-1", db=db)


def test_a_corrupted_checkpoint_refuses_the_resume_and_leaves_the_store(tmp_path: Path, db: str) -> None:
    """A checkpoint that is no longer one raises `CorruptCheckpointError` naming the step; nothing is rewritten."""
    _crash_in_second_step(tmp_path, db, "corrupt-1")
    with sqlite3.connect(db) as connection:
        connection.execute(
            "UPDATE operation_outputs SET output = ? WHERE workflow_uuid = 'corrupt-1'", ['{"step": "first"}']
        )
    before = _rows(db, "corrupt-1")
    with pytest.raises(CorruptCheckpointError, match="step 'first'"):
        _system(tmp_path, V1).resume_workflow("corrupt-1", db=db)
    assert before == _rows(db, "corrupt-1")


def _rows(db: str, run_id: str) -> list[Any]:
    with sqlite3.connect(db) as connection:
        status = connection.execute("SELECT * FROM workflow_status WHERE workflow_uuid LIKE ?", [run_id + "%"])
        steps = connection.execute("SELECT * FROM operation_outputs WHERE workflow_uuid LIKE ?", [run_id + "%"])
        return [*status.fetchall(), *steps.fetchall()]


def test_a_version_bump_resumes_through_its_migration(tmp_path: Path, db: str) -> None:
    """Recorded under 1.0, resumed under 1.1 (`rename: {one: heard}`): the state is migrated, step 1 not re-asked."""
    _crash_in_second_step(tmp_path, db, "bump-1")
    model, asked = crashing_model("two")
    result = _system(tmp_path, V11).resume_workflow("bump-1", db=db, model=model)
    assert {"word": "w", "heard": "one", "two": "two"} == result.state.model_dump()
    assert ["Repeat one"] == asked
    info = next(i for i in _system(tmp_path, V11).workflow_runs(db=db) if i.run_id == "bump-1")
    assert ("COMPLETE", "1.1", ["1.0", "1.1"]) == (info.status, info.version, [c.version for c in info.checkpoints])


def test_a_chain_of_two_migrations_applies_both(tmp_path: Path, db: str) -> None:
    """Recorded under 1.0, resumed under 1.2: 1.0 -> 1.1 renames, 1.1 -> 1.2 sets `loud`."""
    _crash_in_second_step(tmp_path, db, "chain-1")
    model, _ = crashing_model("two")
    result = _system(tmp_path, V12).resume_workflow("chain-1", db=db, model=model)
    assert {"word": "w", "heard": "one", "loud": True, "two": "two"} == result.state.model_dump()


def test_without_a_migration_the_resume_is_refused_and_the_run_left_as_it_was(tmp_path: Path, db: str) -> None:
    """Version 1.1 declaring no migration from 1.0: `MigrationError` naming both versions; the run resumes under 1.0."""
    _crash_in_second_step(tmp_path, db, "nomig-1")
    before = _rows(db, "nomig-1")
    bare = V11.replace('migrations:\n  - {from: "1.0", to: "1.1", rename: {one: heard}}\n', "")
    with pytest.raises(MigrationError, match=r"1\.0") as caught:
        _system(tmp_path, bare).resume_workflow("nomig-1", db=db)
    assert ("1.0", "1.1") == (caught.value.from_version, caught.value.to_version)
    assert before == _rows(db, "nomig-1")
    model, _ = crashing_model("two")
    assert "two" == _system(tmp_path, V1).resume_workflow("nomig-1", db=db, model=model).state.two


def test_a_migration_giving_invalid_state_is_refused(tmp_path: Path, db: str) -> None:
    """A migration that sets a `str` field to a number: `MigrationError` naming the field; the store unchanged."""
    _crash_in_second_step(tmp_path, db, "invalid-1")
    before = _rows(db, "invalid-1")
    broken = V11.replace("rename: {one: heard}", "rename: {one: heard}, drop: [word]")
    with pytest.raises(MigrationError, match="word"):
        _system(tmp_path, broken).resume_workflow("invalid-1", db=db)
    assert before == _rows(db, "invalid-1")


def test_a_step_gone_in_the_new_version_is_a_clear_error(tmp_path: Path, db: str) -> None:
    """The step the run stopped after no longer exists: `ResumeStepMissingError` listing the steps now."""
    _crash_in_second_step(tmp_path, db, "gone-1")
    renamed = V11.replace("{id: first,", "{id: hear,")
    with pytest.raises(ResumeStepMissingError, match="resume_at"):
        _system(tmp_path, renamed).resume_workflow("gone-1", db=db)


def test_a_migration_naming_resume_at_continues_there(tmp_path: Path, db: str) -> None:
    """The step the run stopped after is gone, but the migration says `resume_at: second`: the run goes on there."""
    _crash_in_second_step(tmp_path, db, "resume-at-1")
    moved = V11.replace("{id: first,", "{id: hear,").replace(
        "rename: {one: heard}", "rename: {one: heard}, resume_at: second"
    )
    model, asked = crashing_model("two")
    result = _system(tmp_path, moved).resume_workflow("resume-at-1", db=db, model=model)
    assert (["Repeat one"], "two") == (asked, result.state.two)


def _outage_at(call: int, *answers: str) -> tuple[FunctionModel, list[str]]:
    """A model answering `answers` in turn, its provider down (HTTP 503) from call `call` on."""
    asked: list[str] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        asked.append(str(messages[-1].parts[-1].content))  # type: ignore[union-attr]
        if len(asked) >= call:
            raise ModelHTTPError(503, "fake", body="service unavailable")
        return ModelResponse(parts=[TextPart(answers[len(asked) - 1])])

    return FunctionModel(answer), asked


def test_a_run_failed_by_a_provider_outage_resumes_from_its_failed_step(tmp_path: Path, db: str) -> None:
    """Step 2's provider is down: the run is FAILED; resumed with a working model, step 1 is not asked again."""
    model, asked = _outage_at(2, "one")
    failed = _system(tmp_path, V1).run_workflow("flow", {"word": "w"}, run_id="outage-1", db=db, model=model)
    assert (TaskStatus.FAILED, "Repeat w") == (failed.status, asked[0])
    listed = {info.run_id: info.status for info in _system(tmp_path, V1).workflow_runs(db=db)}
    assert "FAILED" == listed["outage-1"]
    model, asked = crashing_model("two")
    result = _system(tmp_path, V1).resume_workflow("outage-1", db=db, model=model)
    assert (TaskStatus.COMPLETE, "outage-1") == (result.status, result.run_id)
    assert {"word": "w", "one": "one", "two": "two"} == result.state.model_dump()
    assert ["Repeat one"] == asked
    listed = {info.run_id: info.status for info in _system(tmp_path, V1).workflow_runs(db=db)}
    assert "COMPLETE" == listed["outage-1"]
    with pytest.raises(RunStateError, match=r"has ended \(COMPLETE\)"):
        _system(tmp_path, V1).resume_workflow("outage-1", db=db)


def test_a_completed_run_id_in_use_names_its_status_and_suggests_no_resume(tmp_path: Path, db: str) -> None:
    """The refusal says COMPLETE (not DBOS's SUCCESS) and does not suggest resuming a run that is done."""
    model, _ = crashing_model("one", "two", "one", "two")
    _system(tmp_path, V1).run_workflow("flow", {"word": "w"}, run_id="used-2", db=db, model=model)
    with pytest.raises(RunExistsError) as refused:
        _system(tmp_path, V1).run_workflow("flow", {"word": "w"}, run_id="used-2", db=db, model=model)
    assert "COMPLETE" == refused.value.status
    assert "SUCCESS" not in str(refused.value) and "resume" not in str(refused.value)


def test_a_store_in_a_missing_folder_is_a_typed_error_naming_it(tmp_path: Path) -> None:
    """`db=` in a folder that does not exist raises `RunStoreError` naming the folder; nothing is created."""
    missing = tmp_path / "no" / "such"
    with pytest.raises(RunStoreError, match=f"its folder {missing} does not exist"):
        _system(tmp_path, V1).workflow_runs(db=str(missing / "runs.sqlite"))
    assert not missing.parent.exists()


def test_a_store_that_is_not_a_database_is_a_typed_error(tmp_path: Path) -> None:
    """A file that is not SQLite raises `RunStoreError` naming the file, not the driver's bare error."""
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_text("not a database, only text that is long enough to have a header\n" * 4, encoding="utf-8")
    with pytest.raises(RunStoreError, match=f"run store {garbage} cannot be opened: DatabaseError"):
        _system(tmp_path, V1).workflow_runs(db=str(garbage))


def test_the_loop_that_drove_durable_runs_works_after_dbos_moves_store_and_stops(tmp_path: Path) -> None:
    """DBOS makes the loop's default executor its own; another store, then a shutdown, leave the loop a live one."""
    import asyncio

    from atomtask.handlers._blocking import run_blocking
    from atomtask.runs import _store

    system = _system(tmp_path, V1)
    for store in ("a.sqlite", "b.sqlite"):  # the second relaunches DBOS on another store
        model, _ = crashing_model("one", "two")
        assert system.run_workflow("flow", {"word": "w"}, db=str(tmp_path / store), model=model).ok
    assert 1 == run_blocking(asyncio.to_thread(lambda: 1))
    _store.shutdown()
    assert 2 == run_blocking(asyncio.to_thread(lambda: 2))


def test_a_recorded_spec_that_does_not_read_is_a_corrupt_checkpoint_naming_the_run() -> None:
    """A stored run input that is no `RunSpec` (a workflow name, but limits that are not limits) is refused, located."""
    from types import SimpleNamespace

    from atomtask.runs._records import spec_of

    status = SimpleNamespace(input={"args": [{"workflow": "flow", "limits": {"requests": "many"}}]})
    with pytest.raises(CorruptCheckpointError) as raised:
        spec_of("r-1", status)
    assert "r-1" == raised.value.run_id
    assert "its recorded inputs do not read as a run's spec" in raised.value.problem
    with pytest.raises(CorruptCheckpointError, match="its recorded inputs are not an atomtask run's"):
        spec_of("r-2", SimpleNamespace(input=None))
