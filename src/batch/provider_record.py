"""The provider batches of a batch, recorded in the batch's SQLite file before anything is polled.

One row per provider batch submitted: which batch, template fingerprint and model it serves, the
provider's batch id and which item each `custom_id` stands for. It is committed as soon as the
provider has accepted the batch, so a restart while the batch is pending polls it again instead of
submitting (and paying for) the items a second time; once collected, the row is marked so.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import attrs
from atomtask.batch.record import default_record_path

__all__ = ["ProviderBatch", "ProviderBatchRecord"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS provider_batches (
    batch_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    model TEXT NOT NULL,
    provider_batch_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    items TEXT NOT NULL,
    collected INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL,
    PRIMARY KEY (batch_id, provider_batch_id)
);
"""


@attrs.frozen(kw_only=True)
class ProviderBatch:
    """A submitted provider batch: its provider (`openai`, `anthropic`), its id, the item id of each custom id."""

    provider_batch_id: str
    kind: str
    items: dict[str, str]


class ProviderBatchRecord:
    """The `provider_batches` table of a batch record file (default `$ATOMTASK_HOME/batches.sqlite3`)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_record_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        """Close the file."""
        self._db.close()

    def pending(self, batch_id: str, fingerprint: str, model: str) -> list[ProviderBatch]:
        """The provider batches submitted for this batch, template and model and not yet collected, oldest first."""
        rows = self._db.execute(
            "SELECT provider_batch_id, kind, items FROM provider_batches "
            "WHERE batch_id = ? AND fingerprint = ? AND model = ? AND collected = 0 ORDER BY created",
            (batch_id, fingerprint, model),
        )
        return [ProviderBatch(provider_batch_id=pid, kind=kind, items=json.loads(items)) for pid, kind, items in rows]

    def add(self, batch_id: str, fingerprint: str, model: str, submitted: ProviderBatch) -> None:
        """Record a provider batch just accepted (committed when this returns)."""
        self._db.execute(
            "INSERT OR REPLACE INTO provider_batches "
            "(batch_id, fingerprint, model, provider_batch_id, kind, items, collected, created) "
            "VALUES (?, ?, ?, ?, ?, ?, 0, ?)",
            (
                batch_id,
                fingerprint,
                model,
                submitted.provider_batch_id,
                submitted.kind,
                json.dumps(submitted.items),
                time.time(),
            ),
        )

    def collected(self, batch_id: str, provider_batch_id: str) -> None:
        """Mark a provider batch collected: every item of it is in the batch record."""
        self._db.execute(
            "UPDATE provider_batches SET collected = 1 WHERE batch_id = ? AND provider_batch_id = ?",
            (batch_id, provider_batch_id),
        )

    def ids(self, batch_id: str) -> list[str]:
        """Every provider batch id submitted for `batch_id`, oldest first."""
        rows = self._db.execute(
            "SELECT provider_batch_id FROM provider_batches WHERE batch_id = ? ORDER BY created", (batch_id,)
        )
        return [row[0] for row in rows]
