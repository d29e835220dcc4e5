"""What the DBOS batch engine writes and reads in the DBOS store in bulk, beyond DBOS's one-workflow calls.

- `enqueue`: the batch's items onto the queue, `ENQUEUE_CHUNK` to a transaction, through DBOS's
  public `DBOSClient.enqueue_in_transaction` (one commit per chunk, where `enqueue` commits once per
  item; on SQLite each commit is a write of the file's log).
- `ended`: which of many workflows have ended, `LOOKUP_CHUNK` ids to a query.
- `cancel_if_enqueued`: cancel the items no worker has taken, in the statement that checks it.

They use the launched DBOS's own engine (`dbos._dbos._get_dbos_instance()._sys_db`, private: DBOS has
no public handle on it), so they run in a process where `runs.engine.launch` was called. Each is
blocking: call it from a thread (`asyncio.to_thread`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from atomtask.runs import engine

__all__ = ["ENDED", "ENQUEUE_CHUNK", "ITEM_FUNCTION", "LOOKUP_CHUNK", "cancel_if_enqueued", "ended", "enqueue"]

ENQUEUE_CHUNK = 200
"""Items put on the queue in one transaction (the store's write lock is held that long)."""
LOOKUP_CHUNK = 500
"""Workflow ids in one look-up (bounded IN lists)."""
ENDED = ["SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"]
"""The DBOS statuses of a workflow that has ended."""
ITEM_FUNCTION = "atomtask.batch_item"
"""The DBOS workflow name of one batch item (`dbos_queue` registers it)."""


def _system() -> Any:
    from dbos._dbos import _get_dbos_instance

    return _get_dbos_instance()._sys_db


def enqueue(queue: str, entries: Sequence[tuple[str, Mapping[str, Any]]], stopped: Callable[[], bool]) -> int:
    """Put each `(workflow id, spec)` on `queue` as the item workflow; the number put (fewer once `stopped()`).

    An id already in the store is attached to, not run twice (DBOS's "return-existing" reuse policy).
    """
    from dbos import DBOSClient, EnqueueOptions

    system = _system()
    client: Any = DBOSClient(
        system_database_engine=system.engine,
        application_name=engine.APP_NAME,
        serializer=engine.serializer(),
        lazy=True,
    )
    done = 0
    for start in range(0, len(entries), ENQUEUE_CHUNK):
        if stopped():
            break
        chunk = entries[start : start + ENQUEUE_CHUNK]
        with system.engine.begin() as connection:
            for workflow_id, spec in chunk:
                options = EnqueueOptions(
                    workflow_name=ITEM_FUNCTION,
                    queue_name=queue,
                    workflow_id=workflow_id,
                    app_version=engine.APP_VERSION,
                )
                client.enqueue_in_transaction(connection, options, dict(spec))
        done += len(chunk)
    return done


def ended(workflow_ids: Sequence[str]) -> list[Any]:
    """The DBOS statuses (without inputs or outputs) of those of `workflow_ids` that have ended."""
    from dbos import DBOS

    found: list[Any] = []
    for start in range(0, len(workflow_ids), LOOKUP_CHUNK):
        chunk = list(workflow_ids[start : start + LOOKUP_CHUNK])
        found += DBOS.list_workflows(workflow_ids=chunk, status=ENDED, load_input=False, load_output=False)
    return found


def cancel_if_enqueued(workflow_ids: list[str]) -> list[str]:
    """Cancel those of `workflow_ids` still ENQUEUED, in one statement; the ids cancelled.

    DBOS's own `cancel_workflows` also cancels a workflow a worker has just taken (PENDING), whose
    model request may already be paid; its answer would be lost. Here the status is checked in the
    same UPDATE that changes it, and a worker's dequeue flips ENQUEUED to PENDING under the same
    condition, so exactly one of the two wins: an item is either never run, or runs to its result.
    """
    import sqlalchemy as sa

    if not workflow_ids:
        return []
    system = _system()
    table = system.tables.workflow_status
    now = system._now_ms_sql()
    cancelled: list[str] = []
    for start in range(0, len(workflow_ids), 500):  # bounded IN lists
        chunk = workflow_ids[start : start + 500]
        with system.engine.begin() as c:
            rows = c.execute(
                sa.update(table)
                .where(table.c.workflow_uuid.in_(chunk), table.c.status == "ENQUEUED")
                .values(
                    status="CANCELLED",
                    owner_xid=None,
                    queue_name=None,
                    deduplication_id=None,
                    started_at_epoch_ms=None,
                    updated_at=now,
                    completed_at=now,
                )
                .returning(table.c.workflow_uuid)
            ).fetchall()
        cancelled.extend(row[0] for row in rows)
    return cancelled
