"""`ResponseCache`: the SQLite file of validated answers, by exact key (stdlib `sqlite3`, nothing else).

One row per key: the template (for stats and `clear --template`), the model that answered, the raw
content, the validated output as JSON, the tokens and cost the answer took, when it was stored and
how often it was served since. Several processes may share one file: it is opened in WAL mode (readers
never block the writer) with a busy timeout, and every statement is its own short transaction.
Within a process one connection is shared under a lock, so `:memory:` is one cache per instance.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import attrs
from atomtask._paths import atomtask_home
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
    """

    def __init__(self, path: str | Path | None = None, *, clock: Callable[[], float] = time.time) -> None:
        if path is None:
            path = default_cache_path()
            path.parent.mkdir(parents=True, exist_ok=True)
        elif not isinstance(path, str | os.PathLike) or not os.fspath(path):
            raise ConfigurationError(
                f"Invalid cache path {path!r}: pass a file path (str or os.PathLike), `':memory:'`, "
                "an open `ResponseCache`, or None for the default `$ATOMTASK_HOME/cache.sqlite3`."
            )
        self.path = os.fspath(path) if not isinstance(path, str) else path
        self._clock = clock
        self._lock = threading.Lock()
        memory = self.path == ":memory:"
        if not memory and not Path(self.path).parent.is_dir():
            raise ConfigurationError(
                f"Cannot open the response cache {self.path!r}: its folder does not exist; "
                "create it, or pass another path (or `:memory:`)."
            )
        try:
            # Autocommit (isolation_level=None): each statement is one short transaction, so processes interleave.
            self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
            if not memory:
                self._db.execute("PRAGMA journal_mode=WAL")
                # In WAL mode NORMAL loses no committed row on a crash of the process, only on power loss.
                self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise ConfigurationError(
                f"Cannot open the response cache {self.path!r} ({exc}); remove the file or pass another path."
            ) from None

    def get(self, key: str, *, ttl: float | None = None, count: bool = True) -> CacheEntry | None:
        """The answer stored under `key` within `ttl` seconds of now (any age when None).

        It is counted as a hit unless `count=False`: a caller that still has to check the answer
        (the executor re-validates it) counts it with `count_hit` once it is good.
        """
        now = self._clock()
        with self._lock:
            row = self._db.execute(
                "SELECT template, model, content, output, tokens, cost, created FROM responses WHERE key = ?", (key,)
            ).fetchone()
            if row is None or (ttl is not None and row[6] <= now - ttl):
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
        with self._lock:
            rows = self._db.execute(
                f"SELECT template, COUNT(*), SUM(hits), SUM(hits * tokens) FROM responses {where} "
                "GROUP BY template ORDER BY template",
                args,
            ).fetchall()
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
        with self._lock:
            if template is None:
                cursor = self._db.execute("DELETE FROM responses")
            else:
                cursor = self._db.execute("DELETE FROM responses WHERE template = ?", (template,))
        return cursor.rowcount

    def close(self) -> None:
        """Close the connection (a `:memory:` cache is gone after this)."""
        with self._lock:
            self._db.close()

    def _size(self) -> int:
        if self.path == ":memory:":
            return 0
        return sum(p.stat().st_size for p in (Path(self.path), Path(self.path + "-wal")) if p.exists())

    def __repr__(self) -> str:
        return f"ResponseCache({self.path!r})"
