"""`DocumentStore`: documents in SQLite with an FTS5 index, for pre-selecting candidates.

The schema is created idempotently (`IF NOT EXISTS`) and versioned with `PRAGMA user_version`, so
a store opened again after a restart finds its documents. The full-text index is an external
content FTS5 table kept in step by triggers; queries are built from arbitrary text by quoting
each word, so quotes and FTS operators in the text are searched for, never interpreted.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from atomtask.memory.results import Document
from atomtask.system.errors import ConfigurationError, UsageError

__all__ = ["DocumentStore", "default_memory_path", "fts_query"]

SCHEMA_VERSION = 1
MAX_QUERY_TERMS = 32
"""Words of a query sent to FTS5 (the rest are ignored), so a pasted page does not make a huge query."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    id TEXT PRIMARY KEY NOT NULL,
    text TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}'
);
CREATE VIRTUAL TABLE IF NOT EXISTS documents_fts USING fts5(
    text, content='documents', content_rowid='rowid', tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS documents_ai AFTER INSERT ON documents BEGIN
    INSERT INTO documents_fts(rowid, text) VALUES (new.rowid, new.text);
END;
CREATE TRIGGER IF NOT EXISTS documents_ad AFTER DELETE ON documents BEGIN
    INSERT INTO documents_fts(documents_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
END;
CREATE TRIGGER IF NOT EXISTS documents_au AFTER UPDATE ON documents BEGIN
    INSERT INTO documents_fts(documents_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
    INSERT INTO documents_fts(rowid, text) VALUES (new.rowid, new.text);
END;
"""

_UPSERT = (
    "INSERT INTO documents (id, text, metadata) VALUES (?, ?, ?) "
    "ON CONFLICT(id) DO UPDATE SET text = excluded.text, metadata = excluded.metadata"
)

_WORD = re.compile(r"\w+")

DocumentLike = Document | tuple[str, str] | tuple[str, str, Mapping[str, Any]]
"""What `add_many` takes: a `Document`, or `(id, text)` / `(id, text, metadata)`."""


def default_memory_path() -> Path:
    """`$ATOMTASK_MEMORY_DB`, else `$XDG_DATA_HOME/atomtask/memory.sqlite3` (default `~/.local/share`)."""
    explicit = os.environ.get("ATOMTASK_MEMORY_DB")
    if explicit:
        return Path(explicit)
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "atomtask" / "memory.sqlite3"


def fts_query(text: str, *, max_terms: int = MAX_QUERY_TERMS) -> str | None:
    """An FTS5 query matching any word of `text` (each quoted, so no operator is ever interpreted).

    Returns None when `text` has no word at all. Example: `fts_query('refund "NOT" x*')` is
    `'"refund" OR "not" OR "x"'`.
    """
    words = dict.fromkeys(w.lower() for w in _WORD.findall(text))
    terms = ['"' + w.replace('"', '""') + '"' for w in list(words)[:max_terms]]
    return " OR ".join(terms) or None


class DocumentStore:
    """Documents (id, text, metadata) in one SQLite database, searchable with FTS5.

    `path` is a file path, `":memory:"` (gone when closed), or None for `default_memory_path()`.
    Safe to share between threads (one connection behind a lock).
    """

    def __init__(self, path: str | Path | None = None) -> None:
        if path is None:
            path = default_memory_path()
            path.parent.mkdir(parents=True, exist_ok=True)
        self.path = str(path)
        self._lock = threading.Lock()
        self._conn = _connect(self.path)

    def close(self) -> None:
        """Close the database (a `:memory:` store is gone after this)."""
        with self._lock:
            self._conn.close()

    def add(self, id: str, text: str, metadata: Mapping[str, Any] | None = None) -> None:
        """Store a document, replacing the one with the same id."""
        self.add_many([Document(id=id, text=text, metadata=dict(metadata or {}))])

    def add_many(self, documents: Iterable[DocumentLike]) -> int:
        """Store many documents in one transaction (one `executemany`); returns how many."""
        rows = [_row(d) for d in documents]
        with self._lock, self._conn:
            self._conn.executemany(_UPSERT, rows)
        return len(rows)

    def get(self, id: str) -> Document | None:
        """The document stored under `id`, or None."""
        with self._lock:
            row = self._conn.execute("SELECT id, text, metadata FROM documents WHERE id = ?", (id,)).fetchone()
        return _document(row) if row is not None else None

    def remove(self, id: str) -> bool:
        """Delete the document `id`; returns whether there was one."""
        with self._lock, self._conn:
            cursor = self._conn.execute("DELETE FROM documents WHERE id = ?", (id,))
        return cursor.rowcount > 0

    def search(self, query: str, *, limit: int = 50) -> list[Document]:
        """Up to `limit` documents sharing a word with `query`, best BM25 rank first (any text is safe)."""
        match = fts_query(query)
        if match is None or limit <= 0:
            return []
        with self._lock:
            rows = self._conn.execute(
                "SELECT d.id, d.text, d.metadata FROM documents_fts f JOIN documents d ON d.rowid = f.rowid "
                "WHERE documents_fts MATCH ? ORDER BY f.rank LIMIT ?",
                (match, limit),
            ).fetchall()
        return [_document(row) for row in rows]

    def ids(self) -> list[str]:
        """Every stored id, sorted."""
        with self._lock:
            return [row[0] for row in self._conn.execute("SELECT id FROM documents ORDER BY id")]

    def tables(self) -> list[str]:
        """The names of the tables in the database (to check what the store writes)."""
        with self._lock:
            rows = self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            return [row[0] for row in rows]

    def __len__(self) -> int:
        with self._lock:
            (count,) = self._conn.execute("SELECT count(*) FROM documents").fetchone()
        return int(count)

    def __contains__(self, id: object) -> bool:
        return isinstance(id, str) and self.get(id) is not None

    def __iter__(self) -> Iterator[Document]:
        with self._lock:
            rows = self._conn.execute("SELECT id, text, metadata FROM documents ORDER BY id").fetchall()
        return (_document(row) for row in rows)


def _connect(path: str) -> sqlite3.Connection:
    where = "the in-memory store" if path == ":memory:" else f"memory store {path!r}"
    if path != ":memory:" and not Path(path).parent.is_dir():
        raise ConfigurationError(
            f"Cannot open {where}: the folder {str(Path(path).parent)!r} does not exist. "
            "Create it, or pass another `path` / `--db`."
        )
    conn: sqlite3.Connection | None = None
    try:
        conn = sqlite3.connect(path, check_same_thread=False)
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise ConfigurationError(
                f"The {where} has schema version {version}, newer than this atomtask's {SCHEMA_VERSION}; "
                "upgrade atomtask to open it."
            )
        with conn:
            conn.executescript(_SCHEMA)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException as exc:
        if conn is not None:
            conn.close()
        if not isinstance(exc, sqlite3.DatabaseError):
            raise
        if "no such module: fts5" in str(exc):
            raise ConfigurationError(
                f"This Python's SQLite ({sqlite3.sqlite_version}) has no FTS5 full-text search, which the "
                "memory system needs; use a Python built with a standard SQLite (FTS5 is on by default)."
            ) from exc
        if isinstance(exc, sqlite3.OperationalError):
            raise ConfigurationError(f"Cannot open {where}: {exc}. Check the path and its permissions.") from exc
        raise ConfigurationError(
            f"Cannot open {where}: {exc}. It is not an atomtask memory database; pass another path."
        ) from exc
    return conn


def _row(document: DocumentLike) -> tuple[str, str, str]:
    if not isinstance(document, Document):
        id_, text, *rest = document
        document = Document(id=id_, text=text, metadata=dict(rest[0]) if rest else {})
    try:
        metadata = json.dumps(document.metadata)
    except (TypeError, ValueError) as exc:
        raise UsageError(
            f"Metadata of document {document.id!r} is not JSON-serialisable ({exc}); "
            "store strings, numbers, booleans, lists and dicts only."
        ) from None
    return (document.id, document.text, metadata)


def _document(row: tuple[str, str, str]) -> Document:
    return Document(id=row[0], text=row[1], metadata=json.loads(row[2]))
