"""A damaged run store: one run's unreadable rows make that run CORRUPT (listed beside every other run; `show` and
`resume` of it a `CorruptCheckpointError`), a damaged file or another database a `RunStoreError` at open."""

from __future__ import annotations

import contextlib
import io
import sqlite3
import threading
from pathlib import Path

import pytest
from atomtask import CorruptCheckpointError, RunExistsError, RunStoreError, TaskSystem
from atomtask.cli._workflow import list_runs
from atomtask.handlers._blocking import run_blocking
from atomtask.runs import _durable as durable
from atomtask.runs import _store

from tests.pg_fixture import postgres_url
from tests.runs.run_helpers import Killed, crashing_model

__all__ = ["postgres_url"]  # the session fixture, for pytest

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
    return TaskSystem(templates=tmp_path / "flows.yaml")


@pytest.fixture
def db(system: TaskSystem, tmp_path: Path) -> str:
    """A store with two COMPLETE runs (`good`, `bad`) and one killed in its second step (`crashed`), DBOS closed."""
    path = str(tmp_path / "runs.sqlite")
    for run_id in ("good", "bad"):
        model, _ = crashing_model("one", "two")
        system.run_workflow("flow", {"word": "w"}, run_id=run_id, db=path, model=model)
    model, _ = crashing_model("one", crash_at=2)
    with contextlib.suppress(Killed):
        system.run_workflow("flow", {"word": "w"}, run_id="crashed", db=path, model=model)
    _store.shutdown()
    # As a killed process leaves it: DBOS recovers, at launch, the PENDING workflows of its own executor id only.
    _execute(path, "UPDATE workflow_status SET executor_id = 'a-process-that-died'")
    return path


def _execute(db: str, sql: str, *parameters: object) -> None:
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as connection:
        connection.execute(sql, parameters)


def _listed(system: TaskSystem, db: str) -> dict[str, str]:
    return {info.run_id: info.status for info in system.workflow_runs(db=db)}


def test_a_status_row_dbos_cannot_decode_lists_that_run_corrupt_and_every_other_run(
    system: TaskSystem, db: str
) -> None:
    """Bad JSON in one run's `authenticated_roles` (DBOS decodes a listing at once): only that run is CORRUPT."""
    _execute(db, "UPDATE workflow_status SET authenticated_roles = '{' WHERE workflow_uuid = 'bad'")
    assert {"good": "COMPLETE", "bad": "CORRUPT", "crashed": "PENDING"} == _listed(system, db)
    [bad] = [info for info in system.workflow_runs(db=db) if info.run_id == "bad"]
    assert "JSONDecodeError" in str(bad.error)
    with pytest.raises(CorruptCheckpointError, match="'bad'") as shown:
        run_blocking(durable.show("bad", db=db))
    assert "bad" == shown.value.run_id
    with pytest.raises(CorruptCheckpointError, match="'bad'"):
        system.resume_workflow("bad", db=db)
    with pytest.raises(RunExistsError, match=r"'bad' already exists \(CORRUPT\)"):
        system.run_workflow("flow", {"word": "w"}, run_id="bad", db=db, model=crashing_model("one", "two")[0])
    assert "good" == run_blocking(durable.show("good", db=db)).run_id


def test_an_approval_event_that_is_not_json_makes_its_run_corrupt(system: TaskSystem, db: str) -> None:
    """A PENDING run whose `atomtask.waiting` event does not decode: CORRUPT in the list, typed on show and resume."""
    _execute(
        db,
        "INSERT INTO workflow_events (workflow_uuid, key, value, serialization) VALUES ('crashed', ?, ?, ?)",
        "atomtask.waiting",
        "{not json",
        "portable_json",
    )
    assert {"good": "COMPLETE", "bad": "COMPLETE", "crashed": "CORRUPT"} == _listed(system, db)
    with pytest.raises(CorruptCheckpointError, match="its approval wait: JSONDecodeError"):
        run_blocking(durable.show("crashed", db=db))
    with pytest.raises(CorruptCheckpointError, match="its approval wait: JSONDecodeError"):
        system.resume_workflow("crashed", db=db)


def test_a_time_column_holding_text_lists_the_run_without_a_time(system: TaskSystem, db: str) -> None:
    """`updated_at` that is not a number: the run is listed (no time), not a TypeError in `workflow runs`."""
    _execute(db, "UPDATE workflow_status SET updated_at = 'yesterday', created_at = 'x' WHERE workflow_uuid = 'bad'")
    [bad] = [info for info in system.workflow_runs(db=db) if info.run_id == "bad"]
    assert ("COMPLETE", None, None) == (bad.status, bad.updated_ms, bad.created_ms)
    out = io.StringIO()
    list_runs(system, out, db=db)
    assert any(line.split()[0] == "bad" and line.rstrip().endswith("-") for line in out.getvalue().splitlines())


def test_a_damaged_page_is_a_run_store_error_at_open_naming_the_recovery(system: TaskSystem, db: str) -> None:
    """A page overwritten with garbage fails `PRAGMA quick_check`: `RunStoreError` saying how to recover."""
    data = bytearray(Path(db).read_bytes())
    page = int.from_bytes(data[16:18], "big")
    assert len(data) >= 4 * page
    for number in range(1, len(data) // page):
        data[number * page : number * page + 64] = b"\xa5" * 64
    Path(db).write_bytes(bytes(data))
    with pytest.raises(RunStoreError) as refused:
        system.workflow_runs(db=db)
    assert db == refused.value.store
    assert "damaged" in refused.value.problem or "malformed" in refused.value.problem
    assert ".recover" in refused.value.fix


def test_a_truncated_store_is_a_run_store_error(system: TaskSystem, db: str) -> None:
    """The file cut short: `RunStoreError` naming it, from `runs`, `show` and `resume` alike."""
    data = Path(db).read_bytes()
    Path(db).write_bytes(data[: len(data) // 3])
    for call in (
        lambda: system.workflow_runs(db=db),
        lambda: run_blocking(durable.show("good", db=db)),
        lambda: system.resume_workflow("crashed", db=db),
    ):
        with pytest.raises(RunStoreError, match=f"run store {db} cannot be opened"):
            call()


def test_another_sqlite_database_is_refused_and_left_as_it_was(system: TaskSystem, tmp_path: Path) -> None:
    """`--db` given some other SQLite database: `RunStoreError` saying so, and DBOS adds no table to it."""
    other = tmp_path / "notes.sqlite"
    _execute(str(other), "CREATE TABLE notes (body TEXT)")
    with pytest.raises(RunStoreError, match=r"a SQLite database of something else \(tables notes\)"):
        system.workflow_runs(db=str(other))
    with contextlib.closing(sqlite3.connect(other)) as connection:
        assert [("notes",)] == connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()


@pytest.mark.slow
def test_a_fuzzed_store_only_ever_ends_in_typed_errors_or_corrupt_runs(tmp_path: Path) -> None:
    """A deterministic slice of `scripts/fuzz_runs.py`: 25 broken stores, read every way, no other exception."""
    from scripts.fuzz_runs import fuzz

    tally = fuzz(25, seed=11, kinds=["column", "column", "flip", "page", "truncate"], folder=tmp_path)
    assert (25, {}, 0, 0) == (tally.cases, dict(tally.escaped), tally.outcomes["wrong:listing"], tally.outcomes["hang"])
    assert tally.outcomes["corrupt-listed"] + sum(n for o, n in tally.outcomes.items() if o.startswith("typed:")) > 0


def test_a_run_dbos_would_leave_queued_for_ever_is_refused_not_waited_for(system: TaskSystem, db: str) -> None:
    """A PENDING run whose DBOS record is of another application version: `resume` raises, it does not hang."""
    _execute(db, "UPDATE workflow_status SET application_version = 'someone-else-1' WHERE workflow_uuid = 'crashed'")
    ended: list[BaseException | None] = []

    def resume() -> None:
        try:
            system.resume_workflow("crashed", db=db, model=crashing_model("two")[0])
            ended.append(None)
        except BaseException as exc:
            ended.append(exc)

    thread = threading.Thread(target=resume, daemon=True)
    thread.start()
    thread.join(timeout=60)
    assert 1 == len(ended), "resume still waits for a run DBOS will never start"
    assert isinstance(ended[0], CorruptCheckpointError)
    assert "application version 'someone-else-1', not 'atomtask-runs-1'" in str(ended[0])


@pytest.mark.postgres
def test_on_postgresql_a_status_row_dbos_cannot_decode_lists_that_run_corrupt(
    system: TaskSystem, postgres_url: str
) -> None:
    """The same on PostgreSQL (DBOS's schema `dbos`): only the run with a bad `authenticated_roles` is CORRUPT."""
    import psycopg

    for run_id in ("pg-good", "pg-bad"):
        model, _ = crashing_model("one", "two")
        system.run_workflow("flow", {"word": "w"}, run_id=run_id, db=postgres_url, model=model)
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("UPDATE dbos.workflow_status SET authenticated_roles = '{' WHERE workflow_uuid = 'pg-bad'")
    listed = {info.run_id: info.status for info in system.workflow_runs(db=postgres_url)}
    assert ("COMPLETE", "CORRUPT") == (listed["pg-good"], listed["pg-bad"])
    with pytest.raises(CorruptCheckpointError, match="'pg-bad'"):
        run_blocking(durable.show("pg-bad", db=postgres_url))
