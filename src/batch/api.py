"""`TaskSystem.batch` and `batch_sync`: a `BatchRun` over items given in Python (mappings of inputs).

Items are named by their `id_field` value, else `item-<hash of their inputs>` (`-2`, ... for exact
repeats), as `atomtask batch` names the lines of a file. Every item's inputs are checked before
anything runs (`BatchInputError` naming the item's position). With a `batch_id` every finished item is recorded
(`db=`, default `$ATOMTASK_HOME/batches.sqlite3`) and a later run with the same id skips it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from atomtask.batch.engine import BatchRun
from atomtask.batch.items import BatchItem, DefaultIds
from atomtask.batch.pacing import Budget, Pacer
from atomtask.batch.record import BatchRecord
from atomtask.batch.target import BatchHost, check_items, resolve_target
from atomtask.system.batch_results import BatchInputError, BatchItemResult

if TYPE_CHECKING:
    from pydantic_ai.models import Model

__all__ = ["collect", "start_batch"]


def start_batch(
    host: BatchHost,
    name: str,
    items: Iterable[Mapping[str, Any]],
    *,
    model: Model | str | None = None,
    model_settings: Mapping[str, Any] | None = None,
    concurrency: int = 8,
    rpm: float | None = None,
    tpm: float | None = None,
    max_cost: float | None = None,
    max_tokens: int | None = None,
    id_field: str = "id",
    batch_id: str | None = None,
    db: str | Path | None = None,
    retry_failed: bool = False,
    provider_batch: bool = False,
    poll_interval: float | None = None,
    max_wait: float | None = None,
) -> BatchRun:
    """The `BatchRun` of `name` over `items`; nothing runs until it is iterated. Usage errors raise here.

    `provider_batch=True` sends a template's items through the provider's batch API (`provider_run`),
    checking it every `poll_interval` seconds, for at most `max_wait` seconds (None: until it ends).
    """
    target = resolve_target(host, name, model, model_settings=model_settings)
    listed: list[BatchItem] = []
    seen: set[str] = set()
    content_id = DefaultIds()
    for position, inputs in enumerate(items, start=1):
        if not isinstance(inputs, Mapping):
            raise BatchInputError(
                f"Item {position} is a {type(inputs).__name__}, not a mapping of inputs.",
                file="<items>",
                line=position,
                fix="Pass each item as a dict of the task's inputs, e.g. `{'text': '...'}`.",
            )
        given = inputs.get(id_field)
        item_id = str(given) if given not in (None, "") else content_id(inputs)
        if item_id in seen:
            raise BatchInputError(
                f"Item {position} repeats the id {item_id!r}.",
                file="<items>",
                line=position,
                fix="Give every item its own id: the record of finished items is kept by id.",
            )
        seen.add(item_id)
        listed.append(BatchItem(index=position - 1, line=position, id=item_id, inputs=dict(inputs)))
    given_items = ((item.line, item.inputs) for item in listed)
    check_items(host, target, given_items, file="<items>", id_field=id_field, what="Item")
    record = BatchRecord(db) if batch_id is not None else None
    if record is not None and batch_id is not None:
        record.start(batch_id, name, {"name": name, "model": target.model, "api": True})
    run_class: type[BatchRun] = BatchRun
    extra: dict[str, Any] = {}
    if provider_batch:
        from atomtask.batch.provider_run import DEFAULT_POLL_INTERVAL, ProviderBatchRun

        run_class = ProviderBatchRun
        extra = {"poll_interval": poll_interval or DEFAULT_POLL_INTERVAL, "max_wait": max_wait}
    return run_class(
        host,
        target,
        listed,
        options={"model": model, "model_settings": model_settings},
        concurrency=concurrency,
        pacer=Pacer(rpm=rpm, tpm=tpm),
        budget=Budget(max_cost=max_cost, max_tokens=max_tokens),
        record=record,
        batch_id=batch_id,
        retry_failed=retry_failed,
        id_field=id_field,
        owns_record=record is not None,
        **extra,
    )


async def collect(run: BatchRun) -> list[BatchItemResult]:
    """Every result of `run`, in completion order (what `batch_sync` returns)."""
    return [result async for result in run]
