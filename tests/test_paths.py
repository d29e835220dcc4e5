"""`atomtask_home()`: where atomtask keeps its state; `private_file()`: how a store file is created."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest
from atomtask._paths import atomtask_home, private_file, store_damage


def test_atomtask_home_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`$ATOMTASK_HOME` is used as given (with `~` expanded)."""
    monkeypatch.setenv("ATOMTASK_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert tmp_path / "state" == atomtask_home()


def test_xdg_data_home_then_the_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without it: `$XDG_DATA_HOME/atomtask`, else `~/.local/share/atomtask`; nothing is created."""
    monkeypatch.delenv("ATOMTASK_HOME", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert tmp_path / "xdg" / "atomtask" == atomtask_home()
    assert not (tmp_path / "xdg").exists()
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert tmp_path / ".local" / "share" / "atomtask" == atomtask_home()


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_store_file_and_its_folder_are_owner_only(tmp_path: Path) -> None:
    """A store created in a new folder: the file 0600, the folder 0700, and SQLite's WAL files follow the file."""
    old = os.umask(0o022)  # the usual umask, which would make a plain `open` 0644
    try:
        path = private_file(tmp_path / "home" / "atomtask" / "runs.sqlite")
    finally:
        os.umask(old)
    assert path.exists() and path.stat().st_size == 0
    assert _mode(path) == 0o600
    assert _mode(path.parent) == 0o700 and _mode(path.parent.parent) == 0o700
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("CREATE TABLE t (x)")
    connection.commit()
    sidecars = [p for p in path.parent.iterdir() if p != path]
    assert {p.name for p in sidecars} >= {"runs.sqlite-wal", "runs.sqlite-shm"}
    assert all(_mode(p) == 0o600 for p in sidecars)
    connection.close()


def test_existing_files_and_folders_keep_their_modes_and_contents(tmp_path: Path) -> None:
    """An operator who widened a store on purpose (a shared group) keeps it; nothing is truncated."""
    tmp_path.chmod(0o750)
    store = tmp_path / "cache.sqlite3"
    store.write_bytes(b"kept")
    store.chmod(0o640)
    assert private_file(store) == store
    assert store.read_bytes() == b"kept"
    assert _mode(store) == 0o640 and _mode(tmp_path) == 0o750


def test_store_damage_names_what_quick_check_finds_and_passes_a_sound_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`PRAGMA quick_check` over a store: [] when sound (or in memory), its problems when a row breaks a constraint,
    [] for a file over `QUICK_CHECK_UP_TO` (left to the statement that meets the damage), and SQLite's own error
    for an overwritten page."""
    path = tmp_path / "store.sqlite3"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE t (x TEXT)")
    db.executemany("INSERT INTO t VALUES (?)", [(None,), *[(f"row {n} " * 40,) for n in range(200)]])
    db.commit()
    assert [] == store_damage(db, path)
    assert [] == store_damage(sqlite3.connect(":memory:"), ":memory:")
    db.execute("PRAGMA writable_schema=ON")  # the schema now says NOT NULL; the NULL row stays: damage
    db.execute("UPDATE sqlite_master SET sql = 'CREATE TABLE t (x TEXT NOT NULL)' WHERE name = 't'")
    db.commit()
    db.close()
    damaged = sqlite3.connect(path)
    assert ["NULL value in t.x"] == store_damage(damaged, path)
    monkeypatch.setattr("atomtask._paths.QUICK_CHECK_OFTEN_UP_TO", 0)
    assert [] == store_damage(damaged, path, often=True)
    assert ["NULL value in t.x"] == store_damage(damaged, path)
    monkeypatch.setattr("atomtask._paths.QUICK_CHECK_UP_TO", 0)
    assert [] == store_damage(damaged, path)
    damaged.close()
    monkeypatch.undo()
    data = bytearray(path.read_bytes())
    data[4096 * 2 : 4096 * 3] = bytes(4096)  # a page of the table's b-tree
    path.write_bytes(bytes(data))
    with pytest.raises(sqlite3.DatabaseError, match="malformed"):
        store_damage(sqlite3.connect(path), path)
