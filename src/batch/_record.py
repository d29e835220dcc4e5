"""The durable record of a batch: one SQLite row per finished item, written before the item is counted.

Rows are keyed by batch id, item id, the target's fingerprint (the template or workflow, the model
settings, the endpoint: `_target.resolve_target`) and the model, so a re-run of the same batch skips
what is recorded for the same fingerprint and model and pays nothing twice; a changed template,
other settings, another endpoint or another model runs every item again. Each row is its own transaction
in WAL mode: a process killed with `kill -9` keeps every row it committed (only the items in flight
are lost). `batches` keeps each batch's spec, so `atomtask batch --resume BATCH_ID` can run it again.
`waiting` keeps, for a provider batch (`_provider`), each item whose request waits in a provider batch:
the run's messages, ending in the suspended response that names the provider batch (pydantic-ai's
`ModelMessagesTypeAdapter` JSON), written as soon as the run ends and deleted in the transaction that
records the item finished, so a resumed run waits for that batch and never submits the item again.

The file is created readable by its owner only (`_paths.private_file`): it holds every item's answer.
A file that is damaged or is no SQLite database is refused when it is opened (`PRAGMA quick_check`,
a fraction of a second even for a large record) and when a row cannot be read back, with a
`ConfigurationError` naming the file and the fix (move it aside, or give another `--db`). `save`
raises `sqlite3.Error` as it is: the run catches it, because by then the item is paid for, and keeps
its answer (`BatchRun.unrecorded`).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from atomtask._paths import atomtask_home, private_file, store_damage
from atomtask.errors import BatchNotFoundError, ConfigurationError
from atomtask.system._results import BatchItemResult

__all__ = ["BatchRecord", "default_record_path", "private_record"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS batches (
    batch_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    spec TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS items (
    batch_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    model TEXT NOT NULL,
    status TEXT NOT NULL,
    result TEXT NOT NULL,
    recorded REAL NOT NULL,
    PRIMARY KEY (batch_id, item_id, fingerprint, model)
);
CREATE TABLE IF NOT EXISTS waiting (
    batch_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    model TEXT NOT NULL,
    messages BLOB NOT NULL,
    provider_batch TEXT NOT NULL,
    recorded REAL NOT NULL,
    PRIMARY KEY (batch_id, item_id, fingerprint, model)
);
"""


def default_record_path() -> Path:
    """`$ATOMTASK_HOME/batches.sqlite3`."""
    return atomtask_home() / "batches.sqlite3"


def private_record(path: Path) -> None:
    """Create the record file `path` owner-only (0600, a new folder 0700) before its first connection.

    It holds every item's answer. `:memory:` (a provider batch without a record) is no file.
    """
    if str(path) != ":memory:":
        private_file(path)


class BatchRecord:
    """The SQLite file of finished batch items (default `$ATOMTASK_HOME/batches.sqlite3`).

    Used from one thread (the batch's event loop); each `save` commits before it returns.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_record_path()
        try:
            private_record(self.path)
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except (OSError, sqlite3.Error, ValueError) as exc:
            raise ConfigurationError(
                f"Cannot open the batch record {str(self.path)!r} ({exc}); pass a writable file with `--db` "
                "or set `ATOMTASK_HOME`."
            ) from None
        try:
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.execute("PRAGMA journal_mode=WAL")
            # WAL with NORMAL: a commit survives the process being killed (not a power cut), cheaper than FULL.
            self._db.execute("PRAGMA synchronous=NORMAL")
            damage = store_damage(self._db, self.path)
            if damage:
                raise sqlite3.DatabaseError("; ".join(damage))
            self._db.executescript(_SCHEMA)
        except (sqlite3.Error, ValueError) as exc:  # a damaged file's message may not even be UTF-8 (ValueError)
            self._db.close()
            raise self._refused(exc) from None

    def _refused(self, exc: Exception) -> ConfigurationError:
        """The error for a record that cannot be used (damaged, no SQLite file, another program's, read-only)."""
        where = str(self.path)
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return ConfigurationError(
            f"Cannot use the batch record {where!r} ({text}): it is damaged, not a batch record, or not writable. "
            f"Move it aside (`mv {where} {where}.damaged`, with its `-wal` and `-shm` files if any; the next run "
            "starts a new record and runs every item again), or pass another file with `--db` (or set "
            "`ATOMTASK_HOME`)."
        )

    def close(self) -> None:
        """Close the file."""
        self._db.close()

    def start(self, batch_id: str, name: str, spec: dict[str, Any]) -> None:
        """Remember (or refresh) the batch and how to run it again."""
        now = time.time()
        with self._guarded():
            self._db.execute(
                "INSERT INTO batches (batch_id, name, spec, created, updated) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (batch_id) DO UPDATE SET "
                "name = excluded.name, spec = excluded.spec, updated = excluded.updated",
                (batch_id, name, json.dumps(spec, sort_keys=True), now, now),
            )

    def spec(self, batch_id: str) -> dict[str, Any]:
        """The spec `start` saved for `batch_id`; `BatchNotFoundError` when there is none."""
        with self._guarded():
            row = self._db.execute("SELECT spec FROM batches WHERE batch_id = ?", (batch_id,)).fetchone()
            if row is None:
                raise BatchNotFoundError(batch_id, known=self.batch_ids(), db=str(self.path))
            loaded = json.loads(row[0])
            if not isinstance(loaded, dict):
                raise ValueError(f"the spec of batch {batch_id!r} is not a JSON object")
        spec: dict[str, Any] = loaded
        return spec

    def batch_ids(self) -> list[str]:
        """Every batch id, the most recently run first."""
        with self._guarded():
            return [str(row[0]) for row in self._db.execute("SELECT batch_id FROM batches ORDER BY updated DESC")]

    def finished(self, batch_id: str, fingerprint: str, model: str) -> dict[str, BatchItemResult]:
        """The items recorded for this batch, template fingerprint and model, by item id."""
        with self._guarded():
            rows = self._db.execute(
                "SELECT item_id, result FROM items WHERE batch_id = ? AND fingerprint = ? AND model = ?",
                (batch_id, fingerprint, model),
            )
            return {str(item_id): BatchItemResult.model_validate_json(result) for item_id, result in rows}

    @contextlib.contextmanager
    def _guarded(self) -> Iterator[None]:
        """Turn what a damaged file raises (a bad page, a row that is not a result) into `_refused`'s error."""
        try:
            yield
        except (sqlite3.Error, ValueError, TypeError) as exc:  # a pydantic ValidationError is a ValueError
            raise self._refused(exc) from None

    def save(self, batch_id: str, fingerprint: str, model: str, result: BatchItemResult) -> None:
        """Record one finished item (committed when this returns); a retried item's row is replaced.

        Raises `sqlite3.Error` when the file cannot be written (damaged, full, locked for too long): the
        caller has the item's answer in hand and decides (`BatchRun` keeps it and says so).
        """
        key = (batch_id, result.id, fingerprint, model)
        with self._db:  # one transaction: the item finished and no longer waiting, or neither
            self._db.execute("BEGIN")
            self._db.execute(
                "INSERT OR REPLACE INTO items (batch_id, item_id, fingerprint, model, status, result, recorded) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (*key, result.status.value, result.json_line(), time.time()),
            )
            self._db.execute(
                "DELETE FROM waiting WHERE batch_id = ? AND item_id = ? AND fingerprint = ? AND model = ?", key
            )

    def wait(
        self, batch_id: str, fingerprint: str, model: str, item_id: str, messages: bytes, provider_batch: str
    ) -> None:
        """Record that an item's request waits in `provider_batch`, with the run's `messages` (committed on return).

        Raises `sqlite3.Error` as `save` does.
        """
        self._db.execute(
            "INSERT OR REPLACE INTO waiting (batch_id, item_id, fingerprint, model, messages, provider_batch, "
            "recorded) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (batch_id, item_id, fingerprint, model, messages, provider_batch, time.time()),
        )

    def waiting(self, batch_id: str, fingerprint: str, model: str) -> dict[str, tuple[bytes, str]]:
        """The items waiting in a provider batch: their run's messages and the provider batch, by item id."""
        with self._guarded():
            rows = self._db.execute(
                "SELECT item_id, messages, provider_batch FROM waiting "
                "WHERE batch_id = ? AND fingerprint = ? AND model = ?",
                (batch_id, fingerprint, model),
            )
            return {str(item_id): (bytes(messages), str(batch)) for item_id, messages, batch in rows}
