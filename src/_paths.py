"""What atomtask reads from the environment about the machine: where its state lives (`atomtask_home()`, one
folder: the response cache, durable runs, batch records, the memory store), which packages declarations may
import code from (`env_importable()`), and how a store file is created and checked: readable by its owner only
(`private_file()`), its damage found when it is opened (`store_damage()`)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

__all__ = [
    "HOME_ENV",
    "IMPORTABLE_ENV",
    "QUICK_CHECK_OFTEN_UP_TO",
    "QUICK_CHECK_UP_TO",
    "atomtask_home",
    "env_importable",
    "private_file",
    "store_damage",
]

HOME_ENV = "ATOMTASK_HOME"
IMPORTABLE_ENV = "ATOMTASK_IMPORTABLE"


def env_importable() -> tuple[str, ...]:
    """The packages `$ATOMTASK_IMPORTABLE` allows declarations to import from (comma-separated; `atomtask
    --allow-import` adds to it while a command runs)."""
    return tuple(p.strip() for p in os.environ.get(IMPORTABLE_ENV, "").split(",") if p.strip())


def atomtask_home() -> Path:
    """`$ATOMTASK_HOME`, else `$XDG_DATA_HOME/atomtask`, else `~/.local/share/atomtask`; not created here.

    Read at each call, so a test or a process that sets the variable later is obeyed.
    """
    explicit = os.environ.get(HOME_ENV)
    if explicit:
        return Path(explicit).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "atomtask"


def private_file(path: str | os.PathLike[str]) -> Path:
    """Make sure the store file `path` exists, created readable and writable by its owner only (mode 0600).

    Its folder (and any missing folder above it) is created owner-only too (0700); folders and files that
    already exist keep their modes (an operator may have widened them on purpose). SQLite gives the `-wal`,
    `-shm` and `-journal` files beside a database the database file's mode, so they stay private as well.
    Call it before a store's first connection; it returns `path` as a `Path`.
    """
    target = Path(path)
    missing = [folder for folder in (target.parent, *target.parent.parents) if not folder.exists()]
    for folder in reversed(missing):  # `mkdir(parents=True)` would give the outer ones the default mode
        folder.mkdir(mode=stat.S_IRWXU, exist_ok=True)
    try:
        fd = os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, stat.S_IRUSR | stat.S_IWUSR)
    except FileExistsError:
        return target
    os.close(fd)
    return target


QUICK_CHECK_UP_TO = 256 * 1024 * 1024
"""The largest store file checked when opened (`PRAGMA quick_check`, measured: 6 ms for 4 MB, 25-40 ms for 16 MB,
0.16 s for 190 MB); damage in a larger one is found by the statement that meets it."""
QUICK_CHECK_OFTEN_UP_TO = 16 * 1024 * 1024
"""The same for a store opened by every call of a command (the response cache, the memory store): its check stays
within tens of milliseconds."""


def store_damage(connection: sqlite3.Connection, path: str | os.PathLike[str], *, often: bool = False) -> list[str]:
    """What `PRAGMA quick_check` finds wrong in the SQLite store file `path`, opened as `connection` (at most three
    problems: every page and record is read, not the indexes' contents); [] when it is sound, in memory, or larger
    than `QUICK_CHECK_UP_TO` (`QUICK_CHECK_OFTEN_UP_TO` for a store opened `often`). Raises what SQLite raises for
    a file that is no database at all."""
    limit = QUICK_CHECK_OFTEN_UP_TO if often else QUICK_CHECK_UP_TO
    if str(path) == ":memory:" or os.path.getsize(path) > limit:
        return []
    verdict = [str(row[0]) for row in connection.execute("PRAGMA quick_check(3)")]
    return [] if verdict == ["ok"] else verdict
