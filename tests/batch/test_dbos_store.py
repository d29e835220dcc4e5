"""`batch._dbos` in bulk: enqueue, ended look-ups and cancelling what no worker took, on a real DBOS SQLite store.

Each test runs a script in its own process (DBOS is launched once per process) that prints what it
found as JSON; the store is a SQLite file no worker listens to, so every item stays where it is put.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

_PRELUDE = """
import json, sqlite3, sys
from atomtask.batch import _dbos as dbos_store
from atomtask.runs import _store as engine
from dbos import DBOS

path = sys.argv[1]
engine.launch(engine.store_url(path))  # a submitter: it takes nothing from the batch queue
DBOS.register_queue("store-test", worker_concurrency=1)


def rows():
    with sqlite3.connect(path) as db:
        query = "SELECT workflow_uuid, status, queue_name, application_version FROM workflow_status"
        query += " ORDER BY workflow_uuid"
        return [list(row) for row in db.execute(query)]
"""


def _run(script: str, tmp_path: Path, *args: str, prelude: str = _PRELUDE) -> Any:
    argv = [sys.executable, "-c", prelude + script, str(tmp_path / "queue.sqlite"), *args]
    env = dict(os.environ, ATOMTASK_HOME=str(tmp_path / "home"))
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert 0 == done.returncode, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_enqueue_puts_every_item_on_the_queue_once_in_chunks(tmp_path: Path) -> None:
    """Seven items in chunks of three are ENQUEUED on the queue under atomtask's version; a second put adds no row."""
    found = _run(
        """
dbos_store.ENQUEUE_CHUNK = 3
entries = [(f"item-{n}", {"item_id": f"item-{n}"}) for n in range(7)]
first = dbos_store.enqueue("store-test", entries, lambda: False)
again = dbos_store.enqueue("store-test", entries[:2], lambda: False)
print(json.dumps({"first": first, "again": again, "rows": rows()}))
""",
        tmp_path,
    )
    assert 7 == found["first"]
    assert 2 == found["again"]
    expected = [[f"item-{n}", "ENQUEUED", "store-test", "atomtask-runs-1"] for n in range(7)]
    assert expected == found["rows"]


def test_enqueue_stops_between_chunks_and_says_how_many_it_put(tmp_path: Path) -> None:
    """Once `stopped()` says so, no further chunk is put; the count returned is the items actually on the queue."""
    found = _run(
        """
dbos_store.ENQUEUE_CHUNK = 2
asked = []
def stopped():
    asked.append(1)
    return len(asked) > 2  # two chunks, then a stop
entries = [(f"item-{n}", {"item_id": f"item-{n}"}) for n in range(7)]
put = dbos_store.enqueue("store-test", entries, stopped)
print(json.dumps({"put": put, "ids": [row[0] for row in rows()]}))
""",
        tmp_path,
    )
    assert 4 == found["put"]
    assert ["item-0", "item-1", "item-2", "item-3"] == found["ids"]


def test_ended_finds_the_ended_workflows_among_many_ids(tmp_path: Path) -> None:
    """`ended` looks ids up a chunk at a time and returns only those whose workflow has ended."""
    found = _run(
        """
dbos_store.LOOKUP_CHUNK = 2
entries = [(f"item-{n}", {"item_id": f"item-{n}"}) for n in range(5)]
dbos_store.enqueue("store-test", entries, lambda: False)
dbos_store.cancel_if_enqueued(["item-1", "item-4"])
ids = ["item-0", "item-1", "item-2", "item-3", "item-4", "never-queued"]
print(json.dumps({"ended": sorted(status.workflow_id for status in dbos_store.ended(ids))}))
""",
        tmp_path,
    )
    assert ["item-1", "item-4"] == found["ended"]


def test_a_stop_cancels_only_the_items_no_worker_has_taken(tmp_path: Path) -> None:
    """`cancel_if_enqueued` cancels an ENQUEUED item and leaves one a worker took (PENDING) to finish and be kept."""
    found = _run(
        """
dbos_store.enqueue("store-test", [("taken", {"item_id": "taken"}), ("waiting", {"item_id": "waiting"})], lambda: False)
with sqlite3.connect(path) as db:  # a worker's dequeue: ENQUEUED -> PENDING, its model request under way
    db.execute("UPDATE workflow_status SET status = 'PENDING' WHERE workflow_uuid = 'taken'")
cancelled = dbos_store.cancel_if_enqueued(["taken", "waiting"])
statuses = {s.workflow_id: s.status for s in DBOS.list_workflows(workflow_ids=["taken", "waiting"])}
print(json.dumps({"cancelled": cancelled, "statuses": statuses}))
""",
        tmp_path,
    )
    assert ["waiting"] == found["cancelled"]
    assert {"taken": "PENDING", "waiting": "CANCELLED"} == found["statuses"]


_COMMITS = """
import json, sys
import sqlalchemy as sa
from atomtask.runs import _store as engine
from dbos._dbos import _get_dbos_instance

engine.launch(engine.store_url(sys.argv[1]), flush_commits=sys.argv[2] == "flush")
with _get_dbos_instance()._sys_db.engine.connect() as connection:
    found = [connection.execute(sa.text(f"PRAGMA {name}")).scalar() for name in ("synchronous", "journal_mode")]
print(json.dumps(found))
"""


def test_a_batch_process_commits_without_a_flush_each_and_a_run_with_one(tmp_path: Path) -> None:
    """DBOS's own connections: WAL either way; `flush_commits=False` (batch) is synchronous=NORMAL, a run FULL."""
    found = {mode: _run(_COMMITS, tmp_path, mode, prelude="") for mode in ("flush", "batch")}
    assert [2, "wal"] == found["flush"]  # FULL: a run's checkpoint is on disk before its next step
    assert [1, "wal"] == found["batch"]  # NORMAL: survives kill -9 (the batch kill tests), not a power cut
