"""A SQLite run store is created readable by its owner only: the file, its `-wal` and `-shm`, and a new home folder."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from atomtask import TaskSystem

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
steps:
  - {id: first, task: say, inputs: {word: "{{state.word}}"}, output: one}
"""


@pytest.fixture
def system(tmp_path: Path) -> TaskSystem:
    (tmp_path / "flows.yaml").write_text(FLOW, encoding="utf-8")
    return TaskSystem(templates=tmp_path)


@pytest.fixture(autouse=True)
def _permissive_umask() -> Iterator[None]:
    """The usual umask (022), under which a file created without a mode is readable by every local user."""
    before = os.umask(0o022)
    yield
    os.umask(before)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_store_file_and_its_wal_and_shm_are_owner_only(system: TaskSystem, tmp_path: Path) -> None:
    """`db=` a new file: it, and the `-wal`/`-shm` files SQLite puts beside it, are created 0600."""
    db = tmp_path / "runs.sqlite"
    model, _ = crashing_model("one")
    assert system.run_workflow("flow", {"word": "w"}, run_id="private-1", db=str(db), model=model).ok
    files = [db, Path(f"{db}-wal"), Path(f"{db}-shm")]
    assert {str(f): 0o600 for f in files} == {str(f): _mode(f) for f in files}


def test_the_default_store_and_its_new_home_folder_are_owner_only(
    system: TaskSystem, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No `db=`: a new `$ATOMTASK_HOME` is created 0700 and its `runs.sqlite` 0600."""
    home = tmp_path / "home"
    monkeypatch.setenv("ATOMTASK_HOME", str(home))
    system.workflow_runs()
    assert (0o700, 0o600) == (_mode(home), _mode(home / "runs.sqlite"))


def test_an_existing_store_keeps_the_mode_its_owner_gave_it(system: TaskSystem, tmp_path: Path) -> None:
    """A store file an operator widened on purpose (0640) is opened as it is, not narrowed."""
    db = tmp_path / "shared.sqlite"
    db.touch()
    db.chmod(0o640)
    system.workflow_runs(db=str(db))
    assert 0o640 == _mode(db)
