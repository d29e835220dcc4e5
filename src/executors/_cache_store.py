"""`ResponseCache`: the SQLite file of validated answers, by exact key (stdlib `sqlite3`, nothing else).

One row per key: the template (for stats and `clear --template`), the model that answered, the raw
content, the validated output as JSON, the tokens and cost the answer took, when it was stored and
how often it was served since. Several processes may share one file: it is opened in WAL mode (readers
never block the writer) with a busy timeout, and every statement is its own short transaction.
Within a process one connection is shared under a lock, so `:memory:` is one cache per instance.

The file is created owner-only (`private_file`: it holds model answers). A damaged file is a
`ConfigurationError` that names it and the fix (it holds only cached answers: delete it, which `atomtask
cache clear` does for a damaged SQLite file, or pass another path), found when it is opened (`PRAGMA
quick_check`, `_paths.store_damage`) or by the statement that meets the damage. A row
whose columns cannot be read (not UTF-8, the wrong type) is a `sqlite3.DatabaseError` from `get`, which
the executor takes as a miss; the next answer replaces it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
from atomtask._paths import atomtask_home, private_file, store_damage
from atomtask.errors import ConfigurationError

__all__ = ["CACHE_FILE", "CacheEntry", "CacheStats", "ResponseCache", "TemplateStats", "default_cache_path"]

CACHE_FILE = "cache.sqlite3"
BUSY_TIMEOUT_S = 10.0
_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    template TEXT NOT NULL,
    model TEXT,
    content TEXT,
    output TEXT NOT NULL,
    tokens INTEGER NOT NULL DEFAULT 0,
    cost REAL,
    created REAL NOT NULL,
    hits INTEGER NOT NULL DEFAULT 0,
    last_hit REAL
);
CREATE INDEX IF NOT EXISTS responses_template ON responses (template);
"""


def default_cache_path() -> Path:
    """`cache.sqlite3` in `atomtask_home()` (`$ATOMTASK_HOME`, default `~/.local/share/atomtask`)."""
    return atomtask_home() / CACHE_FILE


@attrs.frozen(kw_only=True)
class CacheEntry:
    """One stored answer."""

    key: str
    template: str
    model: str | None
    content: str | None
    output: str
    tokens: int
    cost: float | None
    created: float


@attrs.frozen(kw_only=True)
class TemplateStats:
    """One template's share of the cache."""

    template: str
    entries: int
    hits: int
    saved_tokens: int


@attrs.frozen(kw_only=True)
class CacheStats:
    """What `atomtask cache stats` prints: entries, hits served, tokens they saved, per template too."""

    path: str
    entries: int
    hits: int
    saved_tokens: int
    size_bytes: int
    templates: tuple[TemplateStats, ...]


class ResponseCache:
    """Validated answers by exact key, in a SQLite file (default `$ATOMTASK_HOME/cache.sqlite3`) or `:memory:`.

    Args:
        path: the file (its folder must exist, except for the default, which is created), or `":memory:"`.
        clock: seconds since the epoch (`time.time`); tests pass their own to expire entries without sleeping.
        reset_damaged: a damaged file (see the module docstring) is deleted and started afresh instead of
            raising (`atomtask cache clear`).
    """

    def __init__(
        self, path: str | Path | None = None, *, clock: Callable[[], float] = time.time, reset_damaged: bool = False
    ) -> None:
        default = path is None
        if path is None:
            path = default_cache_path()  # its folder is created (owner-only) with the file
        elif not isinstance(path, str | os.PathLike) or not os.fspath(path):
            raise ConfigurationError(
                f"Invalid cache path {path!r}: pass a file path (str or os.PathLike), `':memory:'`, "
                "an open `ResponseCache`, or None for the default `$ATOMTASK_HOME/cache.sqlite3`."
            )
        self.path = os.fspath(path) if not isinstance(path, str) else path
        self._clock = clock
        self._lock = threading.Lock()
        self._is_damaged = False  # set by `_unusable`: the file is damaged, not locked or unreadable
        if self.path != ":memory:" and not default and not Path(self.path).parent.is_dir():
            raise ConfigurationError(
                f"Cannot open the response cache {self.path!r}: its folder does not exist; "
                "create it, or pass another path (or `:memory:`)."
            )
        try:
            self._db = self._open()
        except ConfigurationError:
            if not reset_damaged or not self._is_damaged or not _is_sqlite(self.path):
                raise  # a file that is not SQLite's may be anything: never deleted
            # `atomtask cache clear`: a damaged cache holds nothing worth keeping; it starts afresh.
            for stale in (self.path, self.path + "-wal", self.path + "-shm"):
                Path(stale).unlink(missing_ok=True)
            self._db = self._open()

    def _open(self) -> sqlite3.Connection:
        """The connection, the file created owner-only and checked (a `ConfigurationError` when it cannot be used)."""
        memory = self.path == ":memory:"
        db: sqlite3.Connection | None = None
        try:
            if not memory:
                private_file(self.path)  # owner-only from its first byte: it holds the answers of cached calls
            # Autocommit (isolation_level=None): each statement is one short transaction, so processes interleave.
            db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
            if not memory:
                damage = store_damage(db, self.path, often=True)
                if damage:
                    raise sqlite3.DatabaseError("; ".join(damage))
                db.execute("PRAGMA journal_mode=WAL")
                # In WAL mode NORMAL loses no committed row on a crash of the process, only on power loss.
                db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
        except (sqlite3.Error, UnicodeDecodeError, OSError) as exc:  # SQLite's message may quote undecodable bytes
            if db is not None:
                db.close()
            raise self._unusable(exc) from None
        return db

    def _unusable(self, exc: BaseException) -> ConfigurationError:
        """The error for a cache file that cannot be used (`exc`: what SQLite said), naming the file and the fix."""
        said = str(exc).encode("utf-8", "backslashreplace").decode()[:200]
        if isinstance(exc, sqlite3.OperationalError) and "locked" in said:
            return ConfigurationError(
                f"Cannot use the response cache {self.path!r}: another process kept it locked for {BUSY_TIMEOUT_S:g} s "
                f"({said}); try again, or pass another path (`cache_path=`, `--db`)."
            )
        self._is_damaged = isinstance(exc, UnicodeDecodeError) or (
            isinstance(exc, sqlite3.DatabaseError)
            and (not isinstance(exc, sqlite3.OperationalError) or "decode" in said or "malformed" in said)
        )
        if not self._is_damaged:
            return ConfigurationError(
                f"Cannot open the response cache {self.path!r} ({type(exc).__name__}: {said}); check the file and "
                "its folder's permissions, or pass another path (`cache_path=`, `--db`)."
            )
        afresh = f"; `atomtask cache clear --db {self.path}` starts it afresh" if _is_sqlite(self.path) else ""
        return ConfigurationError(
            f"Cannot open the response cache {self.path!r}: it is damaged ({type(exc).__name__}: {said}). It holds "
            f"only cached answers: remove the file or pass another path (`cache_path=`, `--db`){afresh}."
        )

    def get(self, key: str, *, ttl: float | None = None, count: bool = True) -> CacheEntry | None:
        """The answer stored under `key` within `ttl` seconds of now (any age when None).

        It is counted as a hit unless `count=False`: a caller that still has to check the answer
        (the executor re-validates it) counts it with `count_hit` once it is good. A row that cannot be read
        raises `sqlite3.DatabaseError` (as SQLite does for a damaged page): the caller's miss.
        """
        now = self._clock()
        with self._lock:
            row = self._db.execute(
                "SELECT template, model, content, output, tokens, cost, created FROM responses WHERE key = ?", (key,)
            ).fetchone()
            if row is None:
                return None
            _check_row(key, row)
            if ttl is not None and row[6] <= now - ttl:
                return None
            if count:
                self._db.execute("UPDATE responses SET hits = hits + 1, last_hit = ? WHERE key = ?", (now, key))
        template, model, content, output, tokens, cost, created = row
        return CacheEntry(
            key=key,
            template=template,
            model=model,
            content=content,
            output=output,
            tokens=tokens,
            cost=cost,
            created=created,
        )

    def count_hit(self, key: str) -> None:
        """Count one hit served from `key` (for `atomtask cache stats`)."""
        with self._lock:
            self._db.execute("UPDATE responses SET hits = hits + 1, last_hit = ? WHERE key = ?", (self._clock(), key))

    def put(
        self,
        key: str,
        *,
        template: str,
        model: str | None,
        content: str | None,
        output: str,
        tokens: int = 0,
        cost: float | None = None,
    ) -> None:
        """Store (or replace) the answer under `key`."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses (key, template, model, content, output, tokens, cost, created) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (key, template, model, content, output, tokens, cost, self._clock()),
            )

    def stats(self, template: str | None = None) -> CacheStats:
        """Entries, hits and the tokens those hits saved, in all and per template (or for one template)."""
        where, args = ("WHERE template = ?", (template,)) if template is not None else ("", ())
        with self._lock, self._typed_errors():
            rows = self._db.execute(
                f"SELECT template, COUNT(*), SUM(hits), SUM(hits * tokens) FROM responses {where} "
                "GROUP BY template ORDER BY template",
                args,
            ).fetchall()
            if not all(isinstance(t, str) and all(isinstance(n, int | None) for n in ns) for t, *ns in rows):
                raise sqlite3.DatabaseError("a row's template or counts are not of their type")
        per = tuple(TemplateStats(template=t, entries=n, hits=h or 0, saved_tokens=s or 0) for t, n, h, s in rows)
        return CacheStats(
            path=self.path,
            entries=sum(t.entries for t in per),
            hits=sum(t.hits for t in per),
            saved_tokens=sum(t.saved_tokens for t in per),
            size_bytes=self._size(),
            templates=per,
        )

    def clear(self, template: str | None = None) -> int:
        """Remove every entry (or those of one template); returns how many were removed."""
        with self._lock, self._typed_errors():
            if template is None:
                cursor = self._db.execute("DELETE FROM responses")
            else:
                cursor = self._db.execute("DELETE FROM responses WHERE template = ?", (template,))
        return cursor.rowcount

    def close(self) -> None:
        """Close the connection (a `:memory:` cache is gone after this)."""
        with self._lock:
            self._db.close()

    @contextlib.contextmanager
    def _typed_errors(self) -> Iterator[None]:
        """Turns what SQLite says of a damaged file into the `ConfigurationError` that names it and the fix."""
        try:
            yield
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise self._unusable(exc) from None

    def _size(self) -> int:
        if self.path == ":memory:":
            return 0
        return sum(p.stat().st_size for p in (Path(self.path), Path(self.path + "-wal")) if p.exists())

    def __repr__(self) -> str:
        return f"ResponseCache({self.path!r})"


#: The type of each column `get` reads, in its order (a damaged page can leave another type in a row).
_COLUMNS: tuple[tuple[str, type | tuple[type, ...]], ...] = (
    ("template", str),
    ("model", (str, type(None))),
    ("content", (str, type(None))),
    ("output", str),
    ("tokens", int),
    ("cost", (int, float, type(None))),
    ("created", (int, float)),
)


def _check_row(key: str, row: tuple[Any, ...]) -> None:
    for (name, kind), value in zip(_COLUMNS, row, strict=True):
        if not isinstance(value, kind):
            raise sqlite3.DatabaseError(f"the entry {key[:16]!r} is damaged: its {name} is a {type(value).__name__}")


def _is_sqlite(path: str) -> bool:
    """Whether `path` starts as every SQLite database file does."""
    try:
        with open(path, "rb") as file:
            return file.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False
