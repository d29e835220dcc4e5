"""The durable record of a batch: one SQLite row per finished item, written before the item is counted.

Rows are keyed by batch id, item id, the target's fingerprint (the template or workflow, the model
settings, the endpoint: `_target.resolve_target`) and the model, so a re-run of the same batch skips
what is recorded for the same fingerprint and model and pays nothing twice; a changed template,
other settings, another endpoint or another model runs every item again. Each row is its own transaction
in WAL mode: a process killed with `kill -9` keeps every row it committed (only the items in flight
are lost). `batches` keeps each batch's spec, so `atomtask batch --resume BATCH_ID` can run it again.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from atomtask._paths import atomtask_home
from atomtask.errors import BatchNotFoundError, ConfigurationError
from atomtask.system._results import BatchItemResult

__all__ = ["BatchRecord", "default_record_path"]

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
"""


def default_record_path() -> Path:
    """`$ATOMTASK_HOME/batches.sqlite3`."""
    return atomtask_home() / "batches.sqlite3"


class BatchRecord:
    """The SQLite file of finished batch items (default `$ATOMTASK_HOME/batches.sqlite3`).

    Used from one thread (the batch's event loop); each `save` commits before it returns.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_record_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            # WAL with NORMAL: a commit survives the process being killed (not a power cut), cheaper than FULL.
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise ConfigurationError(
                f"Cannot open the batch record {str(self.path)!r} ({exc}); pass a writable file with `--db` "
                "or set `ATOMTASK_HOME`."
            ) from None

    def close(self) -> None:
        """Close the file."""
        self._db.close()

    def start(self, batch_id: str, name: str, spec: dict[str, Any]) -> None:
        """Remember (or refresh) the batch and how to run it again."""
        now = time.time()
        self._db.execute(
            "INSERT INTO batches (batch_id, name, spec, created, updated) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (batch_id) DO UPDATE SET "
            "name = excluded.name, spec = excluded.spec, updated = excluded.updated",
            (batch_id, name, json.dumps(spec, sort_keys=True), now, now),
        )

    def spec(self, batch_id: str) -> dict[str, Any]:
        """The spec `start` saved for `batch_id`; `BatchNotFoundError` when there is none."""
        row = self._db.execute("SELECT spec FROM batches WHERE batch_id = ?", (batch_id,)).fetchone()
        if row is None:
            raise BatchNotFoundError(batch_id, known=self.batch_ids(), db=str(self.path))
        spec: dict[str, Any] = json.loads(row[0])
        return spec

    def batch_ids(self) -> list[str]:
        """Every batch id, the most recently run first."""
        return [row[0] for row in self._db.execute("SELECT batch_id FROM batches ORDER BY updated DESC")]

    def finished(self, batch_id: str, fingerprint: str, model: str) -> dict[str, BatchItemResult]:
        """The items recorded for this batch, template fingerprint and model, by item id."""
        rows = self._db.execute(
            "SELECT item_id, result FROM items WHERE batch_id = ? AND fingerprint = ? AND model = ?",
            (batch_id, fingerprint, model),
        )
        return {item_id: BatchItemResult.model_validate_json(result) for item_id, result in rows}

    def save(self, batch_id: str, fingerprint: str, model: str, result: BatchItemResult) -> None:
        """Record one finished item (committed when this returns); a retried item's row is replaced."""
        self._db.execute(
            "INSERT OR REPLACE INTO items (batch_id, item_id, fingerprint, model, status, result, recorded) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (batch_id, result.id, fingerprint, model, result.status.value, result.json_line(), time.time()),
        )
