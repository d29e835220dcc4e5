"""`--provider-batch`: a template's items answered through the provider's batch API, then checked like normal calls.

`ProviderBatchRun` is a `BatchRun` whose pending items go (1) through a capturing run each, which
yields the exact request a normal call would send (`provider_models`); (2) up as one provider batch
(`provider_api.submit`), whose id is committed to the record (`provider_record`) before polling;
(3) through polling every `poll_interval` seconds until the batch ends (or `max_wait` passes: the run
stops, the batch stays recorded, and the next run polls it again instead of submitting); (4) through
`TaskSystem.execute_async` again with a model answering the batch's body first, so pydantic-ai's
parsing and atomtask's validation, repair, re-asking (as normal calls) and ledger are those of a normal
call. An item the batch has no answer for (errored, expired, canceled) runs as a normal call. Each item
is recorded before it is counted, as in the local engine; recorded items are never submitted again.

A capturing run that asks no model (invalid inputs, a cache hit) is that item's result as it stands.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from atomtask.batch.engine import BatchRun
from atomtask.batch.items import BatchItem
from atomtask.batch.provider_api import Outcome, check, results, submit
from atomtask.batch.provider_models import Captured, Endpoint, capturing_model, endpoint_of, replaying_model
from atomtask.batch.provider_record import ProviderBatch, ProviderBatchRecord
from atomtask.system.batch_results import BatchItemResult
from atomtask.system.errors import UsageError
from atomtask.system.logs import get_logger

__all__ = ["DEFAULT_POLL_INTERVAL", "ProviderBatchRun", "run_class_for"]

log = get_logger(__name__)

DEFAULT_POLL_INTERVAL = 30.0
"""Seconds between two checks of a pending provider batch (results come within 24 hours)."""
_RENDERING = 32  # capturing runs at once (local work only)


class ProviderBatchRun(BatchRun):
    """A `BatchRun` over a provider's batch API; `provider_batches` lists the provider batch ids it used.

    Extra keywords: `poll_interval` (seconds between checks), `max_wait` (seconds to wait for a pending
    batch before stopping; None waits until it ends), `db` (the record file for the provider batch ids
    when the run has no `record`: an unrecorded batch cannot be resumed).
    """

    def __init__(
        self,
        *args: Any,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        max_wait: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        if self.target.kind != "template":
            raise UsageError(
                f"`--provider-batch` runs templates only; {self.target.name!r} is a workflow. "
                "Drop `--provider-batch` to run the workflow's items as normal calls."
            )
        self.poll_interval, self.max_wait = poll_interval, max_wait
        self.provider_batches: list[str] = []
        self.polls = 0

    def _endpoint(self) -> Endpoint:
        handler = self.host.handler
        template = self.host.templates.compiled(self.target.name).template
        choice = handler.choose_model(call=self.options.get("model"), template=template.model)
        return endpoint_of(handler.build(choice))

    async def _launch(self, pending: list[BatchItem], finished: asyncio.Queue[BatchItemResult | None]) -> None:
        path = self.record.path if self.record is not None else Path(":memory:")
        store = ProviderBatchRecord(path)
        try:
            endpoint = self._endpoint()
            remaining = {item.id: item for item in pending}
            key = (self.batch_id or "-", self.target.fingerprint, self.target.model)
            while remaining and self.stopped is None:
                open_batches = [b for b in store.pending(*key) if set(b.items.values()) & set(remaining)]
                if open_batches:
                    batch = open_batches[0]
                    log.info("provider_batch_resumed", batch=self.batch_id, provider_batch=batch.provider_batch_id)
                else:
                    requests = await self._render(endpoint, list(remaining.values()), remaining, finished)
                    if not requests:
                        continue
                    submitted = await submit(endpoint, [(cid, body) for cid, (_, body) in requests.items()])
                    batch = ProviderBatch(
                        provider_batch_id=submitted.provider_batch_id,
                        kind=endpoint.kind,
                        items={cid: item_id for cid, (item_id, _) in requests.items()},
                    )
                    store.add(*key, batch)  # committed before the first poll: a restart polls, never resubmits
                    log.info("provider_batch_submitted", batch=self.batch_id, provider_batch=batch.provider_batch_id)
                self.provider_batches.append(batch.provider_batch_id)
                if not await self._wait(endpoint, batch.provider_batch_id):
                    self.stop(f"provider batch {batch.provider_batch_id} still pending; run again to collect")
                    break
                outcomes = await results(endpoint, batch.provider_batch_id)
                items = [
                    (remaining.pop(item_id), outcomes.get(cid))
                    for cid, item_id in batch.items.items()
                    if item_id in remaining
                ]
                await self._collect(endpoint, items, finished)
                store.collected(key[0], batch.provider_batch_id)
        finally:
            store.close()
            finished.put_nowait(None)

    async def _render(
        self,
        endpoint: Endpoint,
        items: Sequence[BatchItem],
        remaining: dict[str, BatchItem],
        finished: asyncio.Queue[BatchItemResult | None],
    ) -> dict[str, tuple[str, Mapping[str, Any]]]:
        """The request body of each item by custom id; an item that asks no model is finished here."""
        slots = asyncio.Semaphore(_RENDERING)
        requests: dict[str, tuple[str, Mapping[str, Any]]] = {}

        async def one(item: BatchItem) -> None:
            async with slots:
                options = {**self.options, "model": capturing_model(endpoint)}
                try:
                    result = await self.target.run(self.host, item.id, item.inputs, options, id_field=self.id_field)
                except Captured as captured:
                    requests[f"item-{item.index}"] = (item.id, captured.body)
                    return
            remaining.pop(item.id, None)  # no request: the inputs are refused, or the answer was cached
            self._finish(item, result, finished)

        await asyncio.gather(*(one(item) for item in items))
        return dict(sorted(requests.items(), key=lambda pair: remaining[pair[1][0]].index))

    async def _wait(self, endpoint: Endpoint, provider_batch_id: str) -> bool:
        """Poll until the provider batch ends (True) or `max_wait` seconds pass (False)."""
        started = time.monotonic()
        while True:
            status = await check(endpoint, provider_batch_id)
            self.polls += 1
            if status.ended:
                log.info("provider_batch_ended", provider_batch=provider_batch_id, status=status.status)
                return True
            if self.stopped is not None:
                return False
            if self.max_wait is not None and time.monotonic() - started + self.poll_interval > self.max_wait:
                return False
            slept = 0.0
            while slept < self.poll_interval and self.stopped is None:  # Ctrl-C is heard within a second
                step = min(1.0, self.poll_interval - slept)
                await asyncio.sleep(step)
                slept += step

    async def _collect(
        self,
        endpoint: Endpoint,
        items: Sequence[tuple[BatchItem, Outcome | None]],
        finished: asyncio.Queue[BatchItemResult | None],
    ) -> None:
        """Run each item with its batch answer (or, without one, as a normal call), record and yield it."""
        slots = asyncio.Semaphore(self.concurrency)

        async def one(item: BatchItem, outcome: Outcome | None) -> None:
            async with slots:
                if outcome is not None and outcome.status == "succeeded" and outcome.body is not None:
                    options = {**self.options, "model": replaying_model(endpoint, outcome.body)}
                    result = await self.target.run(self.host, item.id, item.inputs, options, id_field=self.id_field)
                else:  # a normal call, paced like the local engine's
                    why = "no result" if outcome is None else f"{outcome.status}: {outcome.message}"
                    log.info("provider_batch_item_asked_again", item=item.id, why=why)
                    taken = await self.pacer.before_item()
                    result = await self.target.run(
                        self.host, item.id, item.inputs, self.options, id_field=self.id_field
                    )
                    await self.pacer.after_item(result.usage.total_tokens, taken)
            self._finish(item, result, finished)

        await asyncio.gather(*(one(item, outcome) for item, outcome in items))

    def _finish(self, item: BatchItem, result: BatchItemResult, finished: asyncio.Queue[Any]) -> None:
        result.index = item.index
        if self.record is not None and self.batch_id is not None:
            self.record.save(self.batch_id, self.target.fingerprint, self.target.model, result)
        self._count(result)
        self.budget.add(result.usage)
        finished.put_nowait(result)


def run_class_for(args: argparse.Namespace) -> Any:
    """`ProviderBatchRun` with the polling of `--poll-interval` and `--max-wait`; refused with `--engine dbos`."""
    if getattr(args, "engine", "local") == "dbos":
        raise UsageError(
            "`--provider-batch` and `--engine dbos` do not go together: the provider runs the batch. Drop one."
        )
    interval = getattr(args, "poll_interval", None) or DEFAULT_POLL_INTERVAL
    return functools.partial(ProviderBatchRun, poll_interval=interval, max_wait=getattr(args, "max_wait", None))
