"""`atomtask worker`: a process that takes batch items from a DBOS queue and runs them, on any number of machines.

A worker launches DBOS on the store (`runs._store.launch`, listening to the batch queue besides its
own), sets the queue's per-worker concurrency, and runs every `atomtask.batch_item` workflow DBOS
hands it. Workers beat: each bumps a counter in the table `atomtask_batch_workers` every `BEAT`
seconds. Every worker watches the others' counters on its own clock (so no two machines' clocks
need agree): a worker whose counter has not moved for `lease` seconds is dead, and its unfinished
items go back on the queue (DBOS's recovery of an executor's pending workflows, idempotent when two
workers do it at once), for a live worker to run from the start. An item's result is its DBOS
workflow's output, recorded once. Ctrl-C (or SIGTERM) stops taking items and waits for those running.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from atomtask._logs import get_logger
from atomtask.batch import _dbos
from atomtask.runs import _store as engine

if TYPE_CHECKING:
    from atomtask.batch._target import BatchHost

__all__ = ["BEAT", "DEFAULT_LEASE", "Watch", "run_worker"]

log = get_logger(__name__)

BEAT = 1.0
"""Seconds between two heartbeats of a worker."""
DEFAULT_LEASE = 10.0
"""Seconds a worker's heartbeat may stand still before the others take its unfinished items back."""
GRACE = 600
"""Seconds a stopping worker waits for its running items (a second Ctrl-C does not wait)."""

_TABLE = """CREATE TABLE IF NOT EXISTS atomtask_batch_workers (
    executor_id TEXT PRIMARY KEY, queue TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL, beats BIGINT NOT NULL
)"""
_TABLE_LOCK = 0x61746F6D7461736B  # "atomtask" in ASCII: the advisory lock key of the table's creation


def _engine(url: str) -> Any:
    """A SQLAlchemy engine on the store (the driver DBOS uses: psycopg for PostgreSQL)."""
    import sqlalchemy as sa

    made = sa.make_url(url)
    if made.drivername.startswith("postgresql"):
        made = made.set(drivername="postgresql+psycopg")
    return (
        sa.create_engine(made, pool_size=2, pool_pre_ping=True)
        if made.drivername != "sqlite"
        else sa.create_engine(made)
    )


class Watch:
    """This worker's heartbeat, and its watch over the other workers' (`tick` does one round of both)."""

    def __init__(self, url: str, executor_id: str, queue: str, *, lease: float = DEFAULT_LEASE) -> None:
        import sqlalchemy as sa

        self._sa = sa
        self.executor_id, self.queue, self.lease = executor_id, queue, lease
        self._db = _engine(url)
        self._beats = 0
        self._seen: dict[str, tuple[int, float]] = {}  # executor -> (its counter, when it last moved, our clock)
        self.recovered = 0
        with self._db.begin() as c:
            if self._db.dialect.name == "postgresql":
                # PostgreSQL's IF NOT EXISTS does not hold when two sessions create the table at once (the
                # second fails on the catalog's unique index: workers started together on a new store): the
                # lock, held to the commit, lets one create it and the others find it.
                c.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _TABLE_LOCK})
            c.execute(sa.text(_TABLE))

    def tick(self, recover: Callable[[list[str]], int]) -> None:
        """Beat once; recover the items of the workers whose beat stood still for `lease` seconds."""
        sa = self._sa
        self._beats += 1
        now = time.monotonic()
        with self._db.begin() as c:
            c.execute(
                sa.text(
                    "INSERT INTO atomtask_batch_workers (executor_id, queue, host, pid, beats) "
                    "VALUES (:e, :q, :h, :p, :b) ON CONFLICT (executor_id) DO UPDATE SET beats = excluded.beats"
                ),
                {"e": self.executor_id, "q": self.queue, "h": socket.gethostname(), "p": os.getpid(), "b": self._beats},
            )
            rows = c.execute(
                sa.text("SELECT executor_id, beats FROM atomtask_batch_workers WHERE executor_id <> :e"),
                {"e": self.executor_id},
            ).fetchall()
        dead: list[str] = []
        for executor_id, beats in rows:
            last = self._seen.get(executor_id)
            if last is None or last[0] != beats:
                self._seen[executor_id] = (int(beats), now)
            elif now - last[1] >= self.lease:
                dead.append(executor_id)
        if not dead:
            return
        taken = recover(dead)
        self.recovered += taken
        log.warning("batch_workers_dead", workers=dead, items_back_on_queue=taken)
        with self._db.begin() as c:
            for executor_id in dead:
                c.execute(sa.text("DELETE FROM atomtask_batch_workers WHERE executor_id = :e"), {"e": executor_id})
                self._seen.pop(executor_id, None)

    def close(self) -> None:
        """Stop watching (the row stays: the others take back what this worker left unfinished, then remove it)."""
        self._db.dispose()


def _recover(executor_ids: list[str]) -> int:
    """Put the dead workers' unfinished workflows back on their queues; how many."""
    from dbos import DBOS

    return len(DBOS._recover_pending_workflows(executor_ids))


def run_worker(
    make_host: Callable[[str | None], BatchHost],
    url: str,
    *,
    queue: str = _dbos.DEFAULT_QUEUE,
    concurrency: int = 8,
    lease: float = DEFAULT_LEASE,
    err: TextIO,
    quiet: bool = False,
    stop: threading.Event | None = None,
) -> int:
    """Run items from `queue` in the store `url` until Ctrl-C or SIGTERM (or `stop` is set); the exit status (0)."""
    import asyncio

    from dbos import DBOS

    if concurrency < 1 or lease <= BEAT:
        from atomtask.errors import UsageError

        raise UsageError(f"`--concurrency` must be at least 1 and `--lease` over {BEAT:g} seconds (the heartbeat).")
    _dbos.serve(make_host)
    _dbos.warm(None)  # the templates load now, not in the first item (on DBOS's event loop)
    # Items receive no messages; a finished item is committed as the local engine records one.
    engine.launch(url, listen=(queue,), notification_poll=1.0, flush_commits=False)
    asyncio.run(_dbos.configure_queue(queue, worker_concurrency=concurrency))
    stop = stop or threading.Event()
    executor_id = DBOS.executor_id
    watch = Watch(url, executor_id, queue, lease=lease)
    previous = _on_signals(stop)
    if not quiet:
        print(
            f"atomtask: worker {executor_id} on {engine.display_url(url)}, queue {queue!r}, "
            f"{concurrency} items at once; Ctrl-C stops it",
            file=err,
            flush=True,
        )
    try:
        while not stop.is_set():
            try:
                watch.tick(_recover)
            except Exception as exc:  # the store is unreachable for a moment: beat again later
                log.warning("batch_worker_beat_failed", error=str(exc))
            stop.wait(BEAT)
    finally:
        _restore(previous)
        watch.close()
        if not quiet:
            print(f"atomtask: worker {executor_id} stopping; finishing the items it runs", file=err, flush=True)
        DBOS.destroy(workflow_completion_timeout_sec=GRACE)  # takes no more items, waits for those running
    return 0


def _on_signals(stop: threading.Event) -> dict[int, Any]:
    previous: dict[int, Any] = {}
    if threading.current_thread() is not threading.main_thread():
        return previous
    for sig in (signal.SIGINT, signal.SIGTERM):

        def handler(signum: int, frame: Any) -> None:
            if stop.is_set():
                raise KeyboardInterrupt  # a second signal: do not wait for the items running
            stop.set()

        previous[sig] = signal.signal(sig, handler)
    return previous


def _restore(previous: dict[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)
