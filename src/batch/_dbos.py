"""The DBOS batch engine's queue: one DBOS workflow per item on a durable queue, run by `atomtask worker`s.

`atomtask batch --engine dbos --db URL` puts every item on the DBOS queue `atomtask-batch` (or
`--queue NAME`) in the store `URL` (PostgreSQL for many machines; a SQLite file works on one), as
the DBOS workflow `atomtask.batch_item` under the workflow id `batch:<batch id>:<key>:<item id>`
(`key`: a digest of the target's fingerprint and the model, so an edited template, other model
settings or another endpoint run every item again). The workflow id is the item's once-only key:
enqueuing it again (a re-run, a second submitter) attaches to the same workflow, and its output,
the item's result, is recorded once. `--retry-failed` enqueues a FAILED item again as `...~2`, `~3`.
The queue's limiter is `--rpm` across every worker; `--concurrency` caps the items running at once.

`DbosBatchRun` is a `BatchRun` whose items run elsewhere: it enqueues them, then reads the finished
ones back from the store, so `atomtask batch` writes and sums them up as for the local engine. It
stops (Ctrl-C, the budget) by cancelling the items still waiting on the queue (`cancel_if_enqueued`:
only those no worker has taken, so no paid answer is thrown away); the ones running finish. While it
waits it reads the workers' heartbeat counters (`atomtask_batch_workers`, written by `_worker.Watch`):
when items wait and no worker of the queue has beaten for `NO_WORKER_AFTER` seconds (on its own
clock), it says so once, with the command that starts a worker, and keeps waiting.

What it writes and reads in bulk, beyond DBOS's one-workflow calls: `enqueue` (the items onto the
queue, `ENQUEUE_CHUNK` to a transaction, through DBOS's public `DBOSClient.enqueue_in_transaction`),
`ended` (which of many workflows have ended, `LOOKUP_CHUNK` ids to a query), `cancel_if_enqueued`
and `heartbeats` (the queue's workers' counters).
They use the launched DBOS's own engine (`dbos._dbos._get_dbos_instance()._sys_db`, private: DBOS has
no public handle on it), so they run in a process where `runs._store.launch` was called; each is
blocking: call it from a thread (`asyncio.to_thread`).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import functools
import hashlib
import json
import os
import shlex
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TextIO

from atomtask._logs import get_logger
from atomtask.batch._items import BatchItem
from atomtask.batch._pacing import reached
from atomtask.batch._run import BatchRun
from atomtask.batch._target import BatchHost, BatchTarget, resolve_target
from atomtask.errors import ConfigurationError, DurableRunsUnavailableError, UsageError
from atomtask.runs import _store as engine
from atomtask.system._options import CallOptions
from atomtask.system._results import BatchItemResult, FailureReason, TaskError, TaskStatus
from atomtask.system._templates import RepairMode

ENQUEUE_CHUNK = 200
"""Items put on the queue in one transaction (the store's write lock is held that long)."""
LOOKUP_CHUNK = 500
"""Workflow ids in one look-up (bounded IN lists)."""
ENDED = ["SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"]
"""The DBOS statuses of a workflow that has ended."""
ITEM_FUNCTION = "atomtask.batch_item"
"""The DBOS workflow name of one batch item (registered below)."""


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


def heartbeats(queue: str) -> dict[str, int]:
    """Each worker of `queue` (its executor id) and its heartbeat counter; none before a worker made the table.

    The rows of workers that stopped stay until another worker takes their items back: a counter that
    does not move is a worker that does not live.
    """
    import sqlalchemy as sa

    system = _system()
    query = sa.text("SELECT executor_id, beats FROM atomtask_batch_workers WHERE queue = :queue")
    try:
        with system.engine.connect() as c:
            rows = c.execute(query, {"queue": queue}).fetchall()
    except sa.exc.DBAPIError:
        if sa.inspect(system.engine).has_table("atomtask_batch_workers"):
            raise
        return {}  # no worker ever started on this store
    return {str(executor_id): int(beats) for executor_id, beats in rows}


try:
    from dbos import DBOS
except ImportError:  # the `durable` extra is not installed
    raise DurableRunsUnavailableError() from None

__all__ = [
    "DEFAULT_QUEUE",
    "DEFAULT_WORKER_CONCURRENCY",
    "ENDED",
    "ENQUEUE_CHUNK",
    "ITEM_FUNCTION",
    "LOOKUP_CHUNK",
    "NO_WORKER_AFTER",
    "NO_WORKER_AFTER_ENV",
    "DbosBatchRun",
    "WorkerSightings",
    "cancel_if_enqueued",
    "configure_queue",
    "ended",
    "enqueue",
    "heartbeats",
    "item_options",
    "item_prefix",
    "run_class_for",
    "serve",
    "warm",
    "worker_command_line",
]

log = get_logger(__name__)

DEFAULT_QUEUE = "atomtask-batch"
DEFAULT_WORKER_CONCURRENCY = 8
"""Items a worker runs at once until a worker's `--concurrency` says otherwise."""
POLL = 0.2
"""Seconds between two reads of the finished items (the submitter), and the queue's polling interval."""
MAX_POLL = 1.0
"""The longest pause between two reads of the finished items, while none ends."""
SWEEP = 10.0
"""Seconds between two look-ups of every waiting item by id (between them, only recent completions are read)."""
MARGIN_MS = 500
"""How far before the latest completion seen the next read starts (a completion committed late is still read)."""
NO_WORKER_AFTER = 15.0
"""Seconds items may wait with no worker's heartbeat moving before the submitter says so (1.5 default leases)."""
NO_WORKER_AFTER_ENV = "ATOMTASK_NO_WORKER_AFTER"
"""The environment variable that sets `NO_WORKER_AFTER` for `atomtask batch --engine dbos` (seconds)."""
WORKERS_EVERY = 1.0
"""Seconds between two reads of the workers' heartbeat counters (the submitter)."""

# A worker's way to the templates: `serve` sets it; one host per `base_url`, one target per (name, model, options).
_make_host: Callable[[str | None], BatchHost] | None = None
_hosts: dict[str | None, BatchHost] = {}
_targets: dict[tuple[str | None, str, str | None, str], BatchTarget] = {}
_lock = threading.Lock()


def serve(make_host: Callable[[str | None], BatchHost]) -> None:
    """Make this process able to run items: `make_host(base_url)` builds the `TaskSystem` they run on."""
    global _make_host
    with _lock:
        _make_host = make_host
        _hosts.clear()
        _targets.clear()


def warm(base_url: str | None) -> None:
    """Build the host of `base_url` now (loading the templates), so the first item does not wait for it."""
    _host_and_target({"base_url": base_url, "name": "", "model": None}, target=False)


def _host_and_target(spec: Mapping[str, Any], *, target: bool = True) -> tuple[BatchHost, BatchTarget | None]:
    base_url, name, model = spec.get("base_url"), str(spec["name"]), spec.get("model")
    with _lock:
        if _make_host is None:
            raise RuntimeError("this process runs no batch items (it is not an `atomtask worker`)")
        host = _hosts.get(base_url)
        if host is None:
            host = _hosts[base_url] = _make_host(base_url)
        if not target:
            return host, None
        options = item_options(spec)
        asked = [options.model_settings, options.repair, options.retries]
        key = (base_url, name, model, json.dumps(asked, sort_keys=True, default=str))
        found = _targets.get(key)
        if found is None:
            found = _targets[key] = resolve_target(host, name, options)
    return host, found


def item_options(spec: Mapping[str, Any]) -> CallOptions:
    """An item's `CallOptions` as the submitter asked them (`DbosBatchRun._spec`): model, settings, retries, repair.

    A spec queued by an older submitter has no `retries` or `repair`: the templates decide, as they did then.
    """
    repair = spec.get("repair")
    return CallOptions(
        model=spec.get("model"),
        model_settings=spec.get("model_settings"),
        retries=spec.get("retries"),
        repair=RepairMode(repair) if repair is not None else None,
    )


@DBOS.workflow(name=ITEM_FUNCTION)
async def _batch_item(spec: dict[str, Any]) -> dict[str, Any]:
    """One item, in the worker that took it from the queue; its result (the workflow's output) is recorded once."""
    item_id = str(spec["item_id"])
    try:
        host, target = _host_and_target(spec)
        assert target is not None
    except Exception as exc:  # the worker's templates do not have it: the item fails, the worker goes on
        error = TaskError(reason=FailureReason.CONFIGURATION_ERROR, message=f"on worker {DBOS.executor_id}: {exc}")
        return BatchItemResult(id=item_id, status=TaskStatus.FAILED, error=error).model_dump(mode="json")
    if target.fingerprint != spec["fingerprint"]:
        message = (
            f"worker {DBOS.executor_id} has another version of {target.name!r} than the submitter "
            f"(fingerprint {target.fingerprint}, not {spec['fingerprint']}); run the workers with the same "
            "`--templates`, then `--retry-failed`"
        )
        error = TaskError(reason=FailureReason.CONFIGURATION_ERROR, message=message)
        return BatchItemResult(id=item_id, status=TaskStatus.FAILED, error=error).model_dump(mode="json")
    options = item_options(spec)
    result = await target.run(host, item_id, spec["inputs"], options, id_field=str(spec.get("id_field") or "id"))
    return result.model_dump(mode="json")


def run_class_for(args: argparse.Namespace, err: TextIO | None = None) -> Callable[..., DbosBatchRun]:
    """`DbosBatchRun` with the store, queue and limits of `atomtask batch --engine dbos` arguments (checked).

    Its notices (no live worker) go to `err`, unless `--quiet`; `$ATOMTASK_NO_WORKER_AFTER` sets how
    many seconds of silence that takes.
    """
    url = engine.store_url(args.db)
    queue = args.queue or DEFAULT_QUEUE
    return functools.partial(
        DbosBatchRun,
        url=url,
        queue=queue,
        rpm=args.rpm,
        base_url=args.base_url,
        global_concurrency=args.concurrency,
        no_worker_after=_no_worker_after(os.environ.get(NO_WORKER_AFTER_ENV)),
        worker_command=worker_command_line(url, queue, getattr(args, "templates", None)),
        notices=None if getattr(args, "quiet", False) else err,
    )


def _no_worker_after(text: str | None) -> float:
    if text is None or not text.strip():
        return NO_WORKER_AFTER
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < float("inf"):
        raise UsageError(
            f"${NO_WORKER_AFTER_ENV} must be a number of seconds over 0, not {text!r}; fix it or unset it "
            f"(default {NO_WORKER_AFTER:g})."
        )
    return seconds


def worker_command_line(url: str, queue: str, templates: Sequence[str] | None = None) -> str:
    """The `atomtask worker` command line that runs the items of `queue` in the store `url` (a password shown `***`)."""
    argv = ["atomtask", "worker", "--db", engine.display_url(url)]
    if queue != DEFAULT_QUEUE:
        argv += ["--queue", queue]
    for path in templates or ():
        argv += ["--templates", str(Path(path).resolve())]
    return shlex.join(argv)


class WorkerSightings:
    """Whether a worker of the queue lives, as the submitter sees it: one whose heartbeat counter moved lately.

    Each read's counters are compared with the previous read's on the submitter's own clock (as
    `_worker.Watch` does), so no two machines' clocks need agree; a worker first seen counts as a
    move, and so does the start of the waiting (a worker has `after` seconds to show up). `read` tells
    each change once: "silent" when no counter has moved for `after` seconds, "back" at the first move
    after that; nothing in between, however long the silence lasts.
    """

    def __init__(self, after: float, now: float) -> None:
        self.after = after
        self.moved = now  # when a counter last moved (or the waiting started), on this process's clock
        self.silent = False
        self._counters: dict[str, int] = {}

    def read(self, counters: Mapping[str, int], now: float) -> Literal["silent", "back"] | None:
        """Note the counters read at `now`; "silent" or "back" when that changed, else None."""
        moved = any(self._counters.get(executor) != beats for executor, beats in counters.items())
        self._counters = dict(counters)
        if moved:
            self.moved = now
            if self.silent:
                self.silent = False
                return "back"
        elif not self.silent and now - self.moved >= self.after:
            self.silent = True
            return "silent"
        return None


def item_prefix(batch_id: str, target: BatchTarget) -> str:
    """`batch:<batch id>:<key>:`, the start of the workflow id of each of the batch's items."""
    key = hashlib.sha256(f"{target.fingerprint}\x00{target.model}".encode()).hexdigest()[:8]
    return f"batch:{batch_id}:{key}:"


def _item_of(workflow_id: str, prefix: str) -> tuple[str, int]:
    """The item id and the attempt (1, 2 for `~2`, ...) of one of the batch's workflow ids."""
    rest = workflow_id.removeprefix(prefix)
    item_id, sep, tries = rest.rpartition("~")
    if sep and tries.isdigit():
        return item_id, int(tries)
    return rest, 1


def _result_of(status: Any, item_id: str) -> BatchItemResult:
    """The item's result from its ended DBOS workflow (an ERROR or CANCELLED one is a FAILED item)."""
    if status.status == "SUCCESS" and isinstance(status.output, dict):
        return BatchItemResult.model_validate(status.output)
    reason = FailureReason.CANCELLED if status.status == "CANCELLED" else FailureReason.UNEXPECTED_ERROR
    message = str(status.error) if status.error is not None else f"the item's DBOS workflow ended {status.status}"
    return BatchItemResult(id=item_id, status=TaskStatus.FAILED, error=TaskError(reason=reason, message=message))


async def configure_queue(
    name: str, *, concurrency: int | None = None, worker_concurrency: int | None = None, rpm: float | None = None
) -> Any:
    """Register queue `name`, or change the limits given (a worker: its concurrency; a submitter: the rest)."""
    queue = await DBOS.retrieve_queue_async(name)
    limiter: Any = _limiter(rpm) if rpm else None
    if queue is None:  # never without a per-worker limit: a worker would take every item at once
        first = worker_concurrency or min(DEFAULT_WORKER_CONCURRENCY, concurrency or DEFAULT_WORKER_CONCURRENCY)
        return await DBOS.register_queue_async(
            name,
            worker_concurrency=first,
            global_concurrency=concurrency,
            limiter=limiter,
            polling_interval_sec=POLL,
            on_conflict="never_update",
        )
    if worker_concurrency is not None:
        top = await queue.get_global_concurrency_async()
        await queue.set_worker_concurrency_async(min(worker_concurrency, top) if top else worker_concurrency)
        return queue
    ours = await queue.get_worker_concurrency_async()
    if concurrency is not None and ours is not None and ours > concurrency:
        await queue.set_worker_concurrency_async(concurrency)
    await queue.set_global_concurrency_async(concurrency)
    await queue.set_limiter_async(limiter)
    return queue


def _limiter(rpm: float) -> dict[str, Any]:
    """The queue's DBOS `QueueRateLimit` for `rpm`: a second's share at a time (as `_pacing.bucket`), never a minute's
    worth at once (providers enforce per-minute limits over seconds)."""
    limit = max(1, round(rpm / 60))
    return {"limit": limit, "period": limit * 60 / rpm}


class DbosBatchRun(BatchRun):
    """A `BatchRun` whose items are put on a DBOS queue and run by `atomtask worker`s; it waits for their results."""

    def __init__(
        self,
        host: BatchHost,
        target: BatchTarget,
        items: Sequence[BatchItem],
        *,
        url: str,
        queue: str = DEFAULT_QUEUE,
        rpm: float | None = None,
        base_url: str | None = None,
        global_concurrency: int | None = None,
        no_worker_after: float = NO_WORKER_AFTER,
        worker_command: str | None = None,
        notices: TextIO | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(host, target, items, **kwargs)
        self.url, self.queue_name, self.rpm, self.base_url = url, queue, rpm, base_url
        self.global_concurrency = global_concurrency
        self.no_worker_after, self.notices = no_worker_after, notices
        self.worker_command = worker_command or worker_command_line(url, queue)
        self.cancelled = 0
        self._cancelled_ids: set[str] = set()  # the workflows this run cancelled before any worker took them
        secret = sorted({name for item in self.items for name in item.inputs if name in target.redacted})
        if secret and not self.include_redacted:  # the workers read an item's inputs from the queue's store
            raise ConfigurationError(
                f"Workflow {target.name!r} takes `redact: true` inputs ({', '.join(secret)}), and the dbos engine "
                f"keeps each item's inputs in its queue store ({engine.display_url(url)}) for the workers to read: "
                "run the batch on the local engine (leave out `--engine dbos`), or pass `--include-redacted` "
                "(Python: `include_redacted=True`) to store them there (the results stay `[redacted]`)."
            )

    def _spec(self, item: BatchItem) -> dict[str, Any]:
        model = self.options.model
        return {
            "batch_id": self.batch_id,
            "item_id": item.id,
            "name": self.target.name,
            "fingerprint": self.target.fingerprint,
            "model": model if isinstance(model, str) else None,
            "model_settings": self.options.model_settings,
            "retries": self.options.retries,
            "repair": self.options.repair.value if self.options.repair is not None else None,
            "base_url": self.base_url,
            "inputs": dict(item.inputs),
            "id_field": self.id_field,
        }

    async def _results(self) -> AsyncIterator[BatchItemResult]:
        assert self.batch_id is not None, "a DBOS batch has a batch id"
        self.started = time.monotonic()
        engine.using_loop(asyncio.get_running_loop())
        await asyncio.to_thread(functools.partial(engine.launch, self.url, notification_poll=1.0, flush_commits=False))
        await configure_queue(self.queue_name, concurrency=self.global_concurrency, rpm=self.rpm)
        prefix = item_prefix(self.batch_id, self.target)
        by_id = {item.id: item for item in self.items}
        latest = await self._latest(prefix)
        waiting: dict[str, str] = {}  # workflow id -> item id, for the items this run waits for
        to_enqueue: list[tuple[str, BatchItem]] = []
        for item in self.items:
            found = latest.get(item.id)
            if found is None:
                to_enqueue.append((f"{prefix}{item.id}", item))
                continue
            workflow_id, tries, status = found
            if status.status not in ENDED:  # still on the queue or running (an earlier submitter's)
                waiting[workflow_id] = item.id
                continue
            result = _result_of(status, item.id)
            if not result.ok and (self.retry_failed or status.status == "CANCELLED"):
                to_enqueue.append((f"{prefix}{item.id}~{tries + 1}", item))
                continue
            result = result.model_copy(update={"index": item.index, "resumed": True})
            self.resumed += 1
            self._count(result)
            yield result
        put = await self._enqueue(to_enqueue)  # fewer when stopped meanwhile: the rest are never run here
        waiting.update((workflow_id, item.id) for workflow_id, item in to_enqueue[:put])
        log.info("batch_enqueued", batch=self.batch_id, queue=self.queue_name, items=put)
        try:
            async for result in self._finished(waiting, by_id, prefix):
                yield result
        finally:
            self.finished_at = time.monotonic()

    async def _latest(self, prefix: str) -> dict[str, tuple[str, int, Any]]:
        """Each item's latest workflow in the store (`~N` retries included): its id, its attempt, its status."""
        latest: dict[str, tuple[str, int, Any]] = {}
        for status in await DBOS.list_workflows_async(workflow_id_prefix=prefix, load_input=False):
            item_id, tries = _item_of(status.workflow_id, prefix)
            if item_id not in latest or latest[item_id][1] < tries:
                latest[item_id] = (status.workflow_id, tries, status)
        return latest

    async def _enqueue(self, pending: list[tuple[str, BatchItem]]) -> int:
        """Put the items on the queue in order, a chunk to a transaction; how many (the first ones) were put."""
        if not pending:
            return 0
        entries = [(workflow_id, self._spec(item)) for workflow_id, item in pending]
        stopped = lambda: self.stopped is not None  # noqa: E731 - read from the enqueuing thread
        return await asyncio.to_thread(enqueue, self.queue_name, entries, stopped)

    async def _finished(
        self, waiting: dict[str, str], by_id: Mapping[str, BatchItem], prefix: str
    ) -> AsyncIterator[BatchItemResult]:
        """Each item as its workflow ends; once stopped, the queued ones are cancelled.

        Each poll reads only the batch's workflows completed since a moment a little before the last
        one seen (the store's clock; the margin covers a transaction that commits late), and every
        `SWEEP` seconds every waiting item is looked up by id, so none is missed whatever its clock.
        The interval grows from `POLL` to `MAX_POLL` while nothing ends. Every `WORKERS_EVERY` seconds
        the workers' heartbeats are read (`_watch_workers`).
        """
        cancelling = False
        since: int | None = None  # epoch ms of the latest completion seen, in the store's clock
        swept = time.monotonic()
        pause = POLL
        sightings = WorkerSightings(self.no_worker_after, time.monotonic())
        watched = time.monotonic()
        while waiting:
            if self.stopped is not None and not cancelling:
                cancelling = True
                await self._cancel_queued(list(waiting))
            if time.monotonic() - watched >= WORKERS_EVERY:
                watched = time.monotonic()
                await self._watch_workers(sightings, len(waiting))
            if since is None or time.monotonic() - swept >= SWEEP:
                finished = await asyncio.to_thread(ended, list(waiting))
                swept = time.monotonic()
            else:
                after = datetime.datetime.fromtimestamp((since - MARGIN_MS) / 1000, tz=datetime.UTC)
                finished = await DBOS.list_workflows_async(
                    workflow_id_prefix=prefix,
                    status=ENDED,
                    completed_after=after.isoformat(),
                    load_input=False,
                    load_output=False,
                )
            for status in finished:
                if status.completed_at is not None and (since is None or status.completed_at > since):
                    since = status.completed_at
            fresh = [status.workflow_id for status in finished if status.workflow_id in waiting]
            if not fresh:
                await asyncio.sleep(pause)
                pause = min(pause * 1.5, MAX_POLL)
                continue
            pause = POLL
            for status in await DBOS.list_workflows_async(workflow_ids=fresh, load_input=False):
                item_id = waiting.pop(status.workflow_id)
                if status.status == "CANCELLED" and status.workflow_id in self._cancelled_ids:
                    self.cancelled += 1
                    continue  # not run: the next run of the batch enqueues it again
                result = _result_of(status, item_id)
                result = result.model_copy(update={"index": by_id[item_id].index})
                self._count(result)
                self.budget.spend(result.usage)
                stop = reached(self.budget)
                if stop is not None:
                    self.stop(f"budget: {stop}")
                yield result

    async def _watch_workers(self, sightings: WorkerSightings, waiting: int) -> None:
        """Read the queue's heartbeats; say once when no worker has lived for a while, and once when one is back.

        The batch keeps waiting either way: a worker may be on its way. A read that fails says nothing
        (the next poll of the results meets the same store and reports it).
        """
        try:
            counters = await asyncio.to_thread(heartbeats, self.queue_name)
        except Exception as exc:
            log.debug("batch_heartbeats_unread", queue=self.queue_name, error=f"{type(exc).__name__}: {exc}")
            return
        change = sightings.read(counters, time.monotonic())
        queue, store = self.queue_name, engine.display_url(self.url)
        if change == "silent":
            silence = int(time.monotonic() - sightings.moved)
            log.warning(
                "batch_no_live_worker", batch=self.batch_id, queue=queue, store=store, seconds=silence, waiting=waiting
            )
            self._notice(
                f"no live worker on queue {queue!r} for {silence} s: {waiting} items wait. "
                f"Start one: `{self.worker_command}` (this batch keeps waiting; Ctrl-C stops it)"
            )
        elif change == "back":
            log.info("batch_worker_back", batch=self.batch_id, queue=queue, store=store, waiting=waiting)
            self._notice(f"a worker runs queue {queue!r} again: {waiting} items wait")

    def _notice(self, text: str) -> None:
        if self.notices is not None:
            print(f"atomtask: {text}", file=self.notices, flush=True)

    async def _cancel_queued(self, workflow_ids: list[str]) -> None:
        """Cancel the items still waiting on the queue; the ones running finish and are counted."""
        cancelled = await asyncio.to_thread(cancel_if_enqueued, workflow_ids)
        self._cancelled_ids.update(cancelled)
        log.info("batch_cancelled_queued", batch=self.batch_id, items=len(cancelled))
