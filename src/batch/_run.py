"""The local batch engine: `BatchRun`, an async iterator of `BatchItemResult`s over asyncio tasks.

At most `concurrency` items run at once (a semaphore bounds the tasks started). Each item waits on
the `Pacer` (the shared pause after a 429, `rpm`, `tpm`), runs through `TaskSystem.execute_async` or
`run_workflow_async`, is saved to the `BatchRecord` (when there is one) and only then counted and
yielded, in completion order. Items already in the record for the same fingerprint and model are
yielded first, as they were (`resumed=True`), and not run again; failed ones run again with
`retry_failed=True`. `stop()` (Ctrl-C, the budget) stops taking items; the items in flight finish.

With a cost limit (`--max-cost`), an item is taken only while what was spent plus the worst case of the
items in flight (`estimate.estimate_items`: every retry, the longest answer) stays under the limit, so a
batch never spends more than the limit plus one item's worst case. An item whose price is unknown
counts as nothing (the budget says once that a cost limit cannot hold: `Budget.cost_unknown`).

An item whose row cannot be written (the record file damaged or full after it was opened) is paid for
already: it is still counted and yielded, listed in `unrecorded` (a warning, and the CLI's summary,
say so) and the batch goes on; a re-run runs it again. A workflow's `redact: true` values never reach
the record (`BatchTarget.run_in_clear`); the results yielded hold them only with `include_redacted`.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from typing import Any

from atomtask._logs import get_logger
from atomtask.batch._items import BatchItem
from atomtask.batch._pacing import Pacer, reached
from atomtask.batch._record import BatchRecord
from atomtask.batch._target import BatchHost, BatchTarget
from atomtask.handlers._budget import Budget
from atomtask.handlers._ledger import rate_limit_listener
from atomtask.system._options import NO_OPTIONS, CallOptions
from atomtask.system._results import BatchItemResult, UsageNotes

__all__ = ["BatchRun"]

log = get_logger(__name__)

_WORST_CHUNK = 64
"""How many items one worst-case estimate covers (`BatchRun._worst_cost`)."""


class BatchRun:
    """One batch: iterate it (`async for result in run`) to run it; read the counts as it goes and after.

    Attributes:
        batch_id: the record's key (None: nothing is recorded).
        total: how many items the input holds.
        done / failed: items finished COMPLETE / FAILED (resumed ones included); `failed_by` counts reasons.
        resumed: items read from the record instead of run.
        spent: the tokens and cost spent by this run (resumed items cost nothing).
        stopped: why the batch stopped taking items early (the budget, an interrupt), else None.
        unrecorded: the ids of the items finished (and yielded) whose row the record could not write;
            `record_error` says why, the first time.
        include_redacted: the results yielded keep the values of a workflow's `redact: true` fields (the
            record never does).
    """

    def __init__(
        self,
        host: BatchHost,
        target: BatchTarget,
        items: Sequence[BatchItem],
        *,
        options: CallOptions = NO_OPTIONS,
        concurrency: int = 8,
        pacer: Pacer | None = None,
        budget: Budget | None = None,
        record: BatchRecord | None = None,
        batch_id: str | None = None,
        retry_failed: bool = False,
        id_field: str = "id",
        owns_record: bool = False,
        include_redacted: bool = False,
    ) -> None:
        if concurrency < 1:
            from atomtask.errors import ConfigurationError

            raise ConfigurationError(f"`concurrency` must be at least 1, not {concurrency}.")
        self.host, self.target, self.items = host, target, list(items)
        self.options = options
        self.concurrency = concurrency
        self.pacer = pacer or Pacer()
        self.budget = budget or Budget()
        self.record, self.batch_id, self.retry_failed = record, batch_id, retry_failed
        self.id_field = id_field
        self.include_redacted = include_redacted
        self.unrecorded: list[str] = []
        self.record_error: str | None = None
        self._owns_record = owns_record  # closed when the iteration ends (`TaskSystem.batch` opened it)
        self.total = len(self.items)
        self.done = self.failed = self.resumed = 0
        self.failed_by: Counter[str] = Counter()
        self.stopped: str | None = None
        self._in_flight: dict[str, float] = {}  # the worst case of each item taken and not finished (`_admit`)
        self._worst: dict[str, float] = {}  # each item's worst-case cost, once estimated (`_worst_cost`)
        self._landing = asyncio.Event()  # an item in flight landed, or the batch stopped (`_admit` waits on it)
        self.started = time.monotonic()
        self.finished_at: float | None = None

    @property
    def spent(self) -> UsageNotes:
        """The `UsageNotes` spent by this run."""
        return self.budget.used

    @property
    def elapsed(self) -> float:
        """Seconds since the run started (until it ended, once it has)."""
        return (self.finished_at or time.monotonic()) - self.started

    @property
    def not_run(self) -> int:
        """Items neither finished nor recorded (the batch stopped early, or is still running)."""
        return self.total - self.done - self.failed

    def stop(self, reason: str) -> None:
        """Take no further items; the ones in flight finish and are recorded."""
        if self.stopped is None:
            self.stopped = reason
            self._landing.set()
            log.info("batch_stopping", batch=self.batch_id, reason=reason)

    def _admission(self, item: BatchItem, *, provider_batch: bool = False) -> str:
        """Whether `item` may be taken now under `--max-cost`: `take` (it is then in flight), `later`, or `stop`.

        `later` while what was spent plus the worst case of the items in flight reached the limit and some
        are in flight (they may cost less); `stop` (the batch stopped, saying why) once it is reached with
        none in flight.
        """
        limit = self.budget.limit("cost")
        if limit is None:
            return "take"
        spent, flying = self.budget.spent("cost"), sum(self._in_flight.values())
        if spent + flying < limit:
            self._in_flight[item.id] = self._worst_cost(item, provider_batch=provider_batch)
            return "take"
        if self._in_flight:
            return "later"
        self.stop(f"budget: the batch's `--max-cost` of ${limit:g} (${spent:.4f} spent)")
        return "stop"

    async def _admit(self, item: BatchItem) -> bool:
        """Wait until `item` may be taken under `--max-cost` (`_admission`); False once the batch stopped."""
        while self.stopped is None:
            decided = self._admission(item)
            if decided != "later":
                return decided == "take"
            self._landing.clear()
            await self._landing.wait()
        return False

    def _landed(self, item: BatchItem) -> None:
        """`item` finished (or was not run): its worst case is no longer in flight."""
        if self._in_flight.pop(item.id, None) is not None:
            self._landing.set()

    def _worst_cost(self, item: BatchItem, *, provider_batch: bool) -> float:
        """The most `item` may cost (every retry, the longest answer); 0 where a price is unknown.

        Estimated with the items after it, `_WORST_CHUNK` at a time: one estimate measures a template's
        request once for all of them (several times cheaper than an item at a time).
        """
        if item.id not in self._worst:
            at = item.index
            following = self.items[at : at + _WORST_CHUNK] if self.items[at : at + 1] == [item] else [item]
            chunk = [found for found in following if found.id not in self._worst] or [item]
            try:
                self._estimate_worst(chunk, provider_batch=provider_batch)
            except Exception:  # one of them would fail when run: estimate each alone, that one at 0
                for one in chunk:
                    try:
                        self._estimate_worst([one], provider_batch=provider_batch)
                    except Exception as exc:  # it fails on its own when run; its cost is then what it paid
                        log.debug("batch_item_not_estimated", item=one.id, error=str(exc))
                        self._worst[one.id] = 0.0
        return self._worst.get(item.id, 0.0)

    def _estimate_worst(self, items: Sequence[BatchItem], *, provider_batch: bool) -> None:
        from atomtask.estimate._estimate import estimate_items

        found = estimate_items(
            self.host,
            self.target.name,
            [item.inputs for item in items],
            self.options,
            provider_batch=provider_batch,
            id_field=self.id_field,
        )
        for item, estimated in zip(items, found.items, strict=True):
            self._worst[item.id] = estimated.worst_cost or 0.0

    def __aiter__(self) -> AsyncIterator[BatchItemResult]:
        return self._results()

    def _count(self, result: BatchItemResult) -> None:
        if result.ok:
            self.done += 1
        else:
            self.failed += 1
            self.failed_by[result.error.reason if result.error else "unknown"] += 1

    async def _results(self) -> AsyncIterator[BatchItemResult]:
        self.started = time.monotonic()
        recorded: dict[str, BatchItemResult] = {}
        if self.record is not None and self.batch_id is not None:
            recorded = self.record.finished(self.batch_id, self.target.fingerprint, self.target.model)
        pending: list[BatchItem] = []
        for item in self.items:
            found = recorded.get(item.id)
            if found is None or (self.retry_failed and not found.ok):
                pending.append(item)
                continue
            result = found.model_copy(update={"index": item.index, "resumed": True})
            self.resumed += 1
            self._count(result)
            yield result
        finished: asyncio.Queue[BatchItemResult | None] = asyncio.Queue()
        token = rate_limit_listener.set(self.pacer.on_rate_limited)
        try:
            launcher = asyncio.create_task(self._launch(pending, finished))
        finally:
            rate_limit_listener.reset(token)
        try:
            while (finished_item := await finished.get()) is not None:
                yield finished_item
            await launcher  # re-raises what went wrong in it
        finally:
            if not launcher.done():
                launcher.cancel()
                await asyncio.gather(launcher, return_exceptions=True)
            self.finished_at = time.monotonic()
            if self._owns_record and self.record is not None:
                self.record.close()

    async def _launch(self, pending: list[BatchItem], finished: asyncio.Queue[BatchItemResult | None]) -> None:
        slots = asyncio.Semaphore(self.concurrency)
        running: set[asyncio.Task[None]] = set()
        try:
            for item in pending:
                if self.stopped is not None:
                    break
                await slots.acquire()
                if self.stopped is not None or not await self._admit(item):
                    slots.release()
                    break
                task = asyncio.create_task(self._one(item, slots, finished))
                running.add(task)
                task.add_done_callback(running.discard)
            if running:
                await asyncio.gather(*running)
        finally:
            for task in list(running):
                task.cancel()
            if running:
                await asyncio.gather(*running, return_exceptions=True)
            finished.put_nowait(None)

    async def _one(self, item: BatchItem, slots: asyncio.Semaphore, finished: asyncio.Queue[Any]) -> None:
        try:
            taken = await self.pacer.before_item()
            if self.stopped is not None:
                return
            clear, kept = await self.target.run_in_clear(
                self.host, item.id, item.inputs, self.options, id_field=self.id_field
            )
            result = self._finish(item, clear, kept, finished)
            await self.pacer.after_item(result.usage.total_tokens, taken)
        finally:
            self._landed(item)
            slots.release()

    def _finish(
        self, item: BatchItem, clear: BatchItemResult, kept: BatchItemResult, finished: asyncio.Queue[Any]
    ) -> BatchItemResult:
        """A finished item (as it ran: `clear`; as it may be kept: `kept`): recorded, counted, spent, yielded."""
        result = self._keep(item, kept, clear if self.include_redacted else kept)
        self._count(result)
        self.budget.spend(result.usage)
        stop = reached(self.budget)
        if stop is not None:
            self.stop(f"budget: {stop}")
        finished.put_nowait(result)
        return result

    def _keep(self, item: BatchItem, kept: BatchItemResult, shown: BatchItemResult | None = None) -> BatchItemResult:
        """Record a finished item (`kept`, its redacted values cut out); the result to count and yield (`shown`).

        Durable before it is counted or written out: a crash after this never pays for it again. A
        write that fails keeps the answer: the item is yielded all the same and listed in `unrecorded`.
        """
        shown = kept if shown is None else shown
        kept.index = shown.index = item.index
        if self.record is None or self.batch_id is None:
            return shown
        try:
            self.record.save(self.batch_id, self.target.fingerprint, self.target.model, kept)
        except sqlite3.Error as exc:
            self.unrecorded.append(item.id)
            self.record_error = self.record_error or f"{type(exc).__name__}: {exc}"
            log.warning(
                "batch_record_write_failed", batch=self.batch_id, item=item.id, db=str(self.record.path), error=str(exc)
            )
        return shown
