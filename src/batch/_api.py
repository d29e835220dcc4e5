"""`TaskSystem.batch` and `batch_sync`: a `BatchRun` over items given in Python (mappings of inputs).

Items are named by their `id_field` value, else `item-<hash of their inputs>` (`-2`, ... for exact
repeats), as `atomtask batch` names the lines of a file. Every item's inputs are checked before
anything runs (`BatchInputError` naming the item's position). With a `batch_id` every finished item is recorded
(`db=`, default `$ATOMTASK_HOME/batches.sqlite3`) and a later run with the same id skips it. A
workflow's `redact: true` values are `[redacted]` in the results unless `include_redacted=True`, and
never recorded.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from atomtask.batch._items import BatchItem, DefaultIds
from atomtask.batch._pacing import Pacer, batch_budget
from atomtask.batch._record import BatchRecord
from atomtask.batch._run import BatchRun
from atomtask.batch._target import BatchHost, check_items, resolve_target
from atomtask.errors import BatchInputError, ConfigurationError
from atomtask.loading._providers import check_options
from atomtask.system._results import BatchItemResult

if TYPE_CHECKING:
    from pydantic_ai.models import Model
    from typing_extensions import Unpack

__all__ = ["BatchOptions", "collect", "start_batch"]


class BatchOptions(TypedDict, total=False):
    """The options of `TaskSystem.batch` and `batch_sync` (every one may be left out)."""

    model: Model | str
    """The model of every item, as `execute(model=)` would have it (over each template's)."""
    model_settings: Mapping[str, Any]
    """On top of each template's and the TaskSystem's, key by key."""
    concurrency: int
    """How many items run at once (default 8)."""
    rpm: float
    """Requests per minute, at most."""
    tpm: float
    """Tokens per minute, at most."""
    max_cost: float
    """Stop taking items once this many USD are spent."""
    max_total_tokens: int
    """Stop taking items once this many tokens are spent, across the batch (per answer: `model_settings`)."""
    retries: int
    """Re-ask each item's model up to this many times on an invalid answer, as `execute(retries=)`."""
    repair: str | bool
    """Each item's local repair (`safe`, `lenient`, `off`), as `execute(repair=)`."""
    id_field: str
    """The input that names an item (default `"id"`; else `item-<hash of its inputs>`)."""
    batch_id: str
    """Record every finished item under this id: a later run with it yields those as they were and runs the rest."""
    db: str | Path
    """The record's SQLite file (default `$ATOMTASK_HOME/batches.sqlite3`)."""
    retry_failed: bool
    """Run the items the record holds as FAILED again."""
    provider_batch: bool
    """Send the items' model requests through the provider's batch API (at its batch price)."""
    poll_interval: float
    """Seconds between checks of the items waiting in provider batches (default 30)."""
    max_wait: float
    """Stop waiting for provider batches after this many seconds (the items stay recorded: the next run collects
    them)."""
    reask: str
    """Where an answer still invalid after local repair is re-asked: `batch` (the next provider batch, the
    default), `live` (a normal call, at once), `none` (the item fails with its raw answers)."""
    batch_size: int
    """The most requests in one provider batch (default 1000)."""
    include_redacted: bool
    """Yield the values of a workflow's `redact: true` fields in clear (default: `[redacted]`; the record never
    holds them, so an item read back from it shows `[redacted]` even so)."""


def start_batch(
    host: BatchHost, name: str, items: Iterable[Mapping[str, Any]], **options: Unpack[BatchOptions]
) -> BatchRun:
    """The `BatchRun` of `name` over `items`; nothing runs until it is iterated. Usage errors raise here.

    Every item's inputs and the options are checked first (`BatchInputError`, `ConfigurationError`).
    """
    if "max_tokens" in options:  # the old name of the batch's total: one name, one meaning
        raise ConfigurationError(
            "`max_tokens=` is not an option of a batch: the batch's total is `max_total_tokens=`, and an answer's "
            "limit is `model_settings={'max_tokens': N}`, as for `execute`."
        )
    asked = check_options(
        model=options.get("model"),
        model_settings=options.get("model_settings"),
        retries=options.get("retries"),
        repair=options.get("repair"),
        where="this batch",
        aliases=host.templates.model_aliases,
    )
    id_field = options.get("id_field", "id")
    batch_id = options.get("batch_id")
    target = resolve_target(host, name, asked)
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
    record = BatchRecord(options.get("db")) if batch_id is not None else None
    if record is not None and batch_id is not None:
        record.start(batch_id, name, {"name": name, "model": target.model, "api": True})
    run_class: Callable[..., BatchRun] = BatchRun
    if options.get("provider_batch", False):
        from atomtask.batch._provider import ProviderBatchRun, options_of

        run_class = functools.partial(ProviderBatchRun, **options_of(options))
    return run_class(
        host,
        target,
        listed,
        options=asked,
        concurrency=options.get("concurrency", 8),
        pacer=Pacer(rpm=options.get("rpm"), tpm=options.get("tpm")),
        budget=batch_budget(max_cost=options.get("max_cost"), max_tokens=options.get("max_total_tokens")),
        record=record,
        batch_id=batch_id,
        retry_failed=options.get("retry_failed", False),
        id_field=id_field,
        owns_record=record is not None,
        include_redacted=options.get("include_redacted", False),
    )


async def collect(run: BatchRun) -> list[BatchItemResult]:
    """Every result of `run`, in completion order (what `batch_sync` returns)."""
    return [result async for result in run]
