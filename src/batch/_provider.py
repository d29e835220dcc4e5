"""`--provider-batch`: every item through the normal task path, its model requests through the provider's batch API.

pydantic-ai's `BatchModelRequests` capability does the transport (OpenAI's Batch API over the Responses
API, Anthropic's Message Batches, Google's batch mode): one instance is shared by every item of the
batch (`Batching.capability`), so their requests share provider batches, at the provider's batch price.
Everything else is the normal path: the executor renders each item, atomtask's repair reads its answer
(`repair: safe|lenient` accepts what it can mend without a re-ask), the ledger keeps every raw answer,
limits and tools hold.

A template's item runs in rounds. Its run ends as soon as its request waits in a provider batch
(pydantic-ai's `PendingModelResponse`; the handler raises `Suspended` with the run's messages), and
the messages are recorded (`BatchRecord.wait`) before anything else happens. The engine then checks
every `poll_interval` seconds: each waiting item's run resumes from its messages and either collects
its answer (which is validated, repaired, and recorded as the item finished), waits on, or, when the
answer is still invalid, re-asks by the policy `reask`:

- `batch` (the default): the re-ask joins the next provider batch (the run ends waiting again);
- `live`: the re-ask is a normal call, at the live price, answered at once;
- `none`: no re-ask; the item FAILS with its raw answers kept.

A run killed at any point (kill -9, Ctrl-C) resumes with `--resume`: an item recorded waiting waits for
the same provider batch; nothing is submitted twice, except the items of a provider batch created
just before the kill and not yet recorded waiting (between the provider accepting the batch and each
item's `BatchRecord.wait`: the HTTP answer, then a few milliseconds per item), which are submitted
again: neither OpenAI nor Anthropic can create a batch idempotently.

A workflow's item waits in process instead: each step's requests join the shared provider batches,
and the workflow goes on when they are answered; a killed run runs its unfinished workflow items again
(a step the response cache holds is not paid again).

Submission: a provider batch is submitted once every item running is waiting for one (`_Queue`), or
when it holds `batch_size` requests; atomtask never cancels a provider batch (`_Counted.batch_cancel`):
the record may still need it. An `openai-chat:` model is batched as the same model on OpenAI's
Responses API (same client: endpoint and key), since that is the API OpenAI's batches serve in
pydantic-ai; a model without a batch API (a local server, the synthetic model) is refused before any
item runs.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import attrs
from atomtask._logs import get_logger
from atomtask.batch._items import BatchItem
from atomtask.batch._run import BatchRun
from atomtask.errors import ConfigurationError, Suspended, UsageError
from atomtask.handlers._ledger import is_reask, reask_requests
from atomtask.system._options import Batching
from atomtask.system._results import Attempt, BatchItemResult

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ModelResponse
    from pydantic_ai.models import Model, ModelRequestParameters
    from pydantic_ai.models.batch import Batch, BatchRequest, EncodedBatchRequest
    from pydantic_ai.settings import ModelSettings

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_POLL_INTERVAL",
    "REASK_POLICIES",
    "ProviderBatchRun",
    "provider_batching",
    "run_class_for",
]

log = get_logger(__name__)

DEFAULT_POLL_INTERVAL = 30.0
"""Seconds between two checks of the items waiting in provider batches (results come within 24 hours)."""
DEFAULT_BATCH_SIZE = 1000
"""The most requests in one provider batch (and items running at once), as pydantic-ai's default."""
REASK_POLICIES = ("batch", "live", "none")
"""Where an answer that is still invalid after local repair is re-asked: the next provider batch, live, nowhere."""


@attrs.define
class _Queue:
    """What the engine needs to know of pydantic-ai's queue: how many requests wait for a submission."""

    waiting: int = 0
    provider_batches: list[str] = attrs.field(factory=list)


def _counted_class() -> type[Any]:
    from pydantic_ai.models.wrapper import WrapperModel

    class Counted(WrapperModel):
        """The provider's model as the batch pool uses it: counts the requests queued; never cancels a batch."""

        def __init__(self, wrapped: Model, queue: _Queue) -> None:
            super().__init__(wrapped)
            self.queue = queue

        async def batch_encode(self, request: BatchRequest) -> EncodedBatchRequest:
            encoded = await self.wrapped.batch_encode(request)
            self.queue.waiting += 1  # queued right after, in the same step of the event loop
            return encoded

        async def batch_create(self, requests: Sequence[EncodedBatchRequest]) -> Batch:
            self.queue.waiting -= len(requests)
            batch = await self.wrapped.batch_create(requests)
            self.queue.provider_batches.append(batch.id)
            log.info("provider_batch_submitted", provider_batch=batch.id, requests=len(requests))
            return batch

        async def batch_cancel(self, batch: Batch) -> Batch:
            # The record may still name the batch (a Ctrl-C, a stop): it stays, and `--resume` collects it.
            log.info("provider_batch_kept", provider_batch=batch.id)
            return batch

    return Counted


def _live_reasks_class() -> type[Any]:
    from pydantic_ai.models.wrapper import WrapperModel

    class LiveReasks(WrapperModel):
        """The batched model, but a re-ask (a request carrying validation feedback) goes live (`--reask live`)."""

        def __init__(self, batched: Model, live: Model) -> None:
            super().__init__(batched)
            self.live = live

        async def request(
            self,
            messages: list[ModelMessage],
            model_settings: ModelSettings | None,
            model_request_parameters: ModelRequestParameters,
        ) -> ModelResponse:
            if messages and is_reask(messages[-1]):
                return await self.live.request(messages, model_settings, model_request_parameters)
            return await self.wrapped.request(messages, model_settings, model_request_parameters)

    return LiveReasks


def _as_batchable(model: Model) -> Model:
    """`model`, or for an OpenAI chat-completions model the same model on the Responses API (same client).

    Only where its profile says the endpoint serves OpenAI's Batch API (OpenAI's own; not a local server or
    another OpenAI-compatible provider, which stay refused).
    """
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    if (
        isinstance(model, OpenAIChatModel)
        and model.batch_max_requests is None
        and model.profile.get("openai_supports_batch_api", False)
    ):
        provider = OpenAIProvider(openai_client=model.client)
        return OpenAIResponsesModel(model.model_name, provider=provider, settings=model.settings)
    return model


@functools.cache
def _capability_class() -> type[Any]:
    from pydantic_ai.capabilities import BatchModelRequests

    counted, live_reasks = _counted_class(), _live_reasks_class()

    @dataclasses.dataclass
    class ProviderBatching(BatchModelRequests):
        """`BatchModelRequests` as atomtask uses it: counted (`_Queue`), re-asks by policy, chat models on Responses."""

        queue: _Queue = dataclasses.field(default_factory=_Queue)
        reask: str = "batch"

        def get_wrapper_model(self, model: Model) -> Model | None:
            if isinstance(model, counted | live_reasks) or getattr(model, "pool", None) is not None:
                return None  # batched already
            batched = super().get_wrapper_model(counted(_as_batchable(model), self.queue))
            if batched is None or self.reask != "live":
                return batched
            wrapped: Model = live_reasks(batched, model)
            return wrapped

    return ProviderBatching


def provider_batching(
    *, batch_size: int = DEFAULT_BATCH_SIZE, poll_interval: float = DEFAULT_POLL_INTERVAL, reask: str = "batch"
) -> Any:
    """The `BatchModelRequests` capability every item of one batch shares (submitted by the engine, not by time)."""
    if reask not in REASK_POLICIES:
        raise UsageError(f"`reask` must be one of {', '.join(REASK_POLICIES)}, not {reask!r}.")
    interval = timedelta(seconds=poll_interval)
    return _capability_class()(
        max_requests=batch_size,
        max_wait=None,  # the engine submits (`_Queue`): when every running item waits, or the batch is full
        poll_interval=interval,
        max_poll_interval=max(interval, min(timedelta(minutes=10), interval * 20)),
        reask=reask,
    )


@attrs.frozen(kw_only=True)
class _Waiting:
    """What an item waiting in a provider batch needs to go on: its run's messages, its model, the earlier ledger."""

    messages: list[ModelMessage]
    model: str | None = None
    attempts: list[Attempt] = attrs.field(factory=list)

    def dump(self) -> bytes:
        """As the batch record keeps it (JSON; the messages as pydantic-ai's `ModelMessagesTypeAdapter` writes them)."""
        import pydantic_core
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        messages = ModelMessagesTypeAdapter.dump_python(self.messages, mode="json")
        return pydantic_core.to_json({"model": self.model, "attempts": self.attempts, "messages": messages})

    @classmethod
    def load(cls, data: bytes) -> _Waiting:
        """What `dump` wrote (a record damaged here is refused by the record itself when it is read)."""
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        found = json.loads(data)
        return cls(
            messages=ModelMessagesTypeAdapter.validate_python(found["messages"]),
            model=found.get("model"),
            attempts=[Attempt.model_validate(attempt) for attempt in found.get("attempts") or ()],
        )


def _provider_batch_of(messages: Sequence[ModelMessage]) -> str:
    """The provider batch the last (suspended) response waits on, as pydantic-ai names it in its response id."""
    last = messages[-1] if messages else None
    response_id = getattr(last, "provider_response_id", None) or ""
    parts = response_id.split(":")
    return parts[1] if len(parts) >= 3 and parts[0] == "batch" else "?"


class ProviderBatchRun(BatchRun):
    """A `BatchRun` whose items' model requests go through the provider's batch API.

    Extra keywords: `poll_interval` (seconds between checks of the waiting items), `max_wait` (seconds to
    wait before stopping with items still waiting: they stay recorded, and `--resume` collects them; None
    waits until every item is answered), `reask` (`REASK_POLICIES`), `batch_size` (the most requests in
    one provider batch). `provider_batches` lists the provider batches this run submitted; `waiting` counts
    the items left waiting in one when the run ended.
    """

    def __init__(
        self,
        *args: Any,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        max_wait: float | None = None,
        reask: str = "batch",
        batch_size: int = DEFAULT_BATCH_SIZE,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        if batch_size < 1:
            raise ConfigurationError(f"`batch_size` must be at least 1, not {batch_size}.")
        self.poll_interval, self.max_wait, self.reask, self.batch_size = poll_interval, max_wait, reask, batch_size
        self.capability = provider_batching(batch_size=batch_size, poll_interval=poll_interval, reask=reask)
        self.waiting = 0
        self.polls = 0
        self._check_model()

    @property
    def provider_batches(self) -> list[str]:
        """The provider batches this run submitted, in order."""
        queue: _Queue = self.capability.queue
        return list(queue.provider_batches)

    def _check_model(self) -> None:
        """Refuse, before any item runs, a model that has no batch API (`ConfigurationError` with the fix)."""
        from pydantic_ai.exceptions import UserError
        from pydantic_ai.models import infer_model

        handler = self.host.handler
        templates = [self.host.templates.compiled(name).template for name in self.target.templates]
        for template in templates:
            choice = handler.choose_model(call=self.options.model, template=template.model)
            try:
                built = handler.build(choice)
                model = infer_model(built) if isinstance(built, str) else built  # as the Agent will
            except Exception as exc:  # a model that cannot be built (no key): each item fails saying so
                log.debug("provider_batch_model_check_skipped", model=choice.label, error=str(exc))
                continue
            try:
                self.capability.get_wrapper_model(model)
            except UserError:
                raise ConfigurationError(
                    f"`--provider-batch` cannot batch model {choice.label!r} (template {template.name!r}): its "
                    "endpoint has no batch API pydantic-ai can use (a local server, or a provider without one). "
                    "Batch with a model whose provider has a batch API (`openai:NAME`, `anthropic:NAME`, "
                    "`google-gla:NAME`), or drop `--provider-batch` to run the items as normal calls."
                ) from None

    def _reasks_allowed(self) -> int | None:
        """The re-asks an item may make in all (None: the executor's own count, for a workflow's steps)."""
        if self.reask == "none":
            return 0
        if self.target.kind != "template":
            return None
        if self.options.retries is not None:
            return self.options.retries
        retries = self.host.templates.compiled(self.target.name).template.retries
        return retries if retries is not None else 1  # pydantic-ai's default output retries

    def _options(self, waiting: _Waiting | None) -> Any:
        allowed = self._reasks_allowed()
        history = waiting.messages if waiting is not None else None
        left = None if allowed is None else max(0, allowed - (reask_requests(history) if history else 0))
        batching = Batching(
            capability=self.capability,
            suspend=self.target.kind == "template",
            history=history,
            reasks_left=left,
            model=waiting.model if waiting is not None else None,
            attempts=waiting.attempts if waiting is not None else (),
        )
        return attrs.evolve(self.options, batching=batching)

    async def _launch(self, pending: list[BatchItem], finished: asyncio.Queue[BatchItemResult | None]) -> None:
        started = time.monotonic()
        try:
            recorded: dict[str, tuple[bytes, str]] = {}
            if self.record is not None and self.batch_id is not None:
                recorded = self.record.waiting(self.batch_id, self.target.fingerprint, self.target.model)
            todo: list[tuple[BatchItem, _Waiting | None]] = [
                (item, self._waiting_of(item, recorded[item.id][0]) if item.id in recorded else None)
                for item in pending
            ]
            if recorded:
                log.info("provider_batch_resumed", batch=self.batch_id, waiting=len(recorded))
            async with self.capability:
                while todo:
                    todo = await self._round(todo, finished)
                    self.waiting = sum(1 for _, waiting in todo if waiting is not None)
                    if not todo or self.stopped is not None:
                        break
                    if self.max_wait is not None and time.monotonic() - started + self.poll_interval > self.max_wait:
                        self.stop(f"`--max-wait` of {self.max_wait:g} s passed with items still waiting")
                        break
                    await self._sleep(self.poll_interval)
                    self.polls += 1
        finally:
            finished.put_nowait(None)

    async def _sleep(self, seconds: float) -> None:
        """Wait `seconds`, or less once the run is stopped (Ctrl-C is heard within a tenth of a second)."""
        deadline = time.monotonic() + seconds
        while self.stopped is None and (left := deadline - time.monotonic()) > 0:
            await asyncio.sleep(min(0.1, left))

    async def _round(
        self, todo: list[tuple[BatchItem, _Waiting | None]], finished: asyncio.Queue[BatchItemResult | None]
    ) -> list[tuple[BatchItem, _Waiting | None]]:
        """Run (or resume) every item once; the items still waiting in a provider batch, with their messages."""
        queue: _Queue = self.capability.queue
        slots = asyncio.Semaphore(self.batch_size)
        busy = 0
        still: list[tuple[BatchItem, _Waiting | None]] = []

        async def one(item: BatchItem, waiting: _Waiting | None) -> None:
            nonlocal busy
            async with slots:
                if waiting is None:  # not submitted yet
                    admitted = "stop" if self.stopped is not None else self._admission(item, provider_batch=True)
                    if admitted == "later":  # the worst case of what is in flight reached `--max-cost`
                        still.append((item, None))
                    if admitted != "take":
                        return
                busy += 1
                try:
                    try:
                        clear, kept = await self.target.run_in_clear(
                            self.host, item.id, item.inputs, self._options(waiting), id_field=self.id_field
                        )
                    except Suspended as suspended:
                        now = _Waiting(messages=suspended.messages, model=suspended.model, attempts=suspended.attempts)
                        self._wait(item, now.dump(), _provider_batch_of(suspended.messages))
                        still.append((item, now))
                        if item.id not in self._in_flight and self.budget.limit("cost") is not None:
                            self._in_flight[item.id] = self._worst_cost(item, provider_batch=True)  # resumed
                        return
                finally:
                    busy -= 1
            self._landed(item)
            self._finish(item, clear, kept, finished)

        tasks = [asyncio.create_task(one(item, waiting)) for item, waiting in todo]
        try:
            while not all(task.done() for task in tasks):
                await asyncio.sleep(0.005)
                if queue.waiting > 0 and queue.waiting >= busy:  # every running item waits for a submission
                    await self.capability.flush()
            await asyncio.gather(*tasks)  # re-raises what went wrong in one
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        return still

    def _waiting_of(self, item: BatchItem, data: bytes) -> _Waiting:
        """The recorded messages of an item waiting in a provider batch; `ConfigurationError` when unreadable."""
        try:
            return _Waiting.load(data)
        except (ValueError, TypeError, KeyError) as exc:  # a pydantic ValidationError is a ValueError
            where = str(self.record.path) if self.record is not None else "the batch record"
            raise ConfigurationError(
                f"Item {item.id!r} of batch {self.batch_id!r} is recorded waiting in a provider batch, but its "
                f"messages in {where!r} cannot be read ({type(exc).__name__}): the record is damaged or was written "
                "by another version of atomtask. Move the record aside (or pass another `--db`) to run every item "
                "again; the provider batch it named is then not collected."
            ) from None

    def _wait(self, item: BatchItem, messages: bytes, provider_batch: str) -> None:
        """Record that `item` waits in `provider_batch` (before anything else: a kill after this loses nothing)."""
        if self.record is None or self.batch_id is None:  # kept by the round only: a new run submits it again
            return
        try:
            self.record.wait(
                self.batch_id, self.target.fingerprint, self.target.model, item.id, messages, provider_batch
            )
        except sqlite3.Error as exc:
            self.record_error = self.record_error or f"{type(exc).__name__}: {exc}"
            log.warning("batch_record_write_failed", batch=self.batch_id, item=item.id, error=str(exc))


def run_class_for(args: argparse.Namespace) -> Any:
    """`ProviderBatchRun` with `--poll-interval`, `--max-wait`, `--reask`, `--batch-size`; not with `--engine dbos`."""
    if getattr(args, "engine", "local") == "dbos":
        raise UsageError(
            "`--provider-batch` and `--engine dbos` do not go together: the provider runs the batch. Drop one."
        )
    return functools.partial(
        ProviderBatchRun,
        poll_interval=getattr(args, "poll_interval", None) or DEFAULT_POLL_INTERVAL,
        max_wait=getattr(args, "max_wait", None),
        reask=getattr(args, "reask", None) or "batch",
        batch_size=getattr(args, "batch_size", None) or DEFAULT_BATCH_SIZE,
    )


def options_of(values: Mapping[str, Any]) -> dict[str, Any]:
    """The `ProviderBatchRun` keywords among `TaskSystem.batch` options."""
    names = ("poll_interval", "max_wait", "reask", "batch_size")
    return {name: values[name] for name in names if values.get(name) is not None}
