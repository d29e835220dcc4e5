"""`--provider-batch`: a template's items answered through the provider's batch API, then checked like normal calls.

`ProviderBatchRun` is a `BatchRun` whose pending items go (1) through a capturing run each, which
yields the exact request a normal call would send; (2) up as one provider batch (`submit`), whose id is
committed to the batch's record (`ProviderBatchRecord`) before polling; (3) through polling every
`poll_interval` seconds until the batch ends (or `max_wait` passes: the run stops, the batch stays
recorded, and the next run polls it again instead of submitting); (4) through
`TaskSystem.execute_async` again with a model answering the batch's body first, so pydantic-ai's
parsing and atomtask's validation, repair, re-asking (as normal calls) and ledger are those of a normal
call. An item the batch has no answer for (errored, expired, canceled) runs as a normal call. Each item
is recorded before it is counted, as in the local engine; recorded items are never submitted again.
A capturing run that asks no model (invalid inputs, a cache hit) is that item's result as it stands.

The capturing model is a copy of the real model (same class, name, settings, profile) whose HTTP
transport takes the first request's body instead of sending it and ends the run with `Captured` (a
`BaseException`: nothing on the way retries it, logs a failed task or keeps a ledger entry). The
replaying copy answers the first request with the body the provider batch returned (marked
`processing: batch`, pydantic-ai's convention that selects batch prices) and sends every later request
(the re-asks of a rejected answer) to the real endpoint.

The batch APIs are called through the providers' own SDK clients. OpenAI: the requests go up as a
JSONL file (`files.create`, purpose `batch`) of `/v1/chat/completions` requests, each with its
`custom_id`; `batches.create` starts the batch, `batches.retrieve` polls it and the output and error
files hold one line per request. Anthropic: `messages.batches` `create`, `retrieve` and `results`.
Creating a batch is never retried by the SDK (a retry after a lost answer could pay twice); polling is.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import io
import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import httpx2
from atomtask._logs import get_logger
from atomtask.batch._items import BatchItem
from atomtask.batch._record import default_record_path, private_record
from atomtask.batch._run import BatchRun
from atomtask.errors import ConfigurationError, UsageError
from atomtask.system._results import BatchItemResult

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ModelResponse
    from pydantic_ai.models import Model, ModelRequestParameters
    from pydantic_ai.settings import ModelSettings

__all__ = [
    "DEFAULT_POLL_INTERVAL",
    "OPENAI_ENDPOINT",
    "Captured",
    "Endpoint",
    "Outcome",
    "ProviderBatch",
    "ProviderBatchRecord",
    "ProviderBatchRun",
    "Submitted",
    "capturing_model",
    "check",
    "endpoint_of",
    "replaying_model",
    "results",
    "run_class_for",
    "submit",
]


@attrs.frozen(kw_only=True)
class Endpoint:
    """The real model a batch calls: its kind (`openai` chat completions or `anthropic`), the model, its client."""

    kind: str
    model: Model
    base_url: str
    api_key: str | None

    @property
    def client(self) -> Any:
        """The provider SDK's client (`AsyncOpenAI`, `AsyncAnthropic`) configured like the model's."""
        return self.model.client  # type: ignore[attr-defined]


def endpoint_of(model: Model | str) -> Endpoint:
    """The `Endpoint` of a model (a string is built as pydantic-ai would); `ConfigurationError` for others."""
    from pydantic_ai.models import infer_model

    built = infer_model(model) if isinstance(model, str) else model
    from pydantic_ai.models.openai import OpenAIChatModel

    if isinstance(built, OpenAIChatModel):
        return Endpoint(kind="openai", model=built, base_url=str(built.client.base_url), api_key=built.client.api_key)
    try:
        from pydantic_ai.models.anthropic import AnthropicModel
    except ImportError:  # pragma: no cover - the anthropic extra is missing
        AnthropicModel = None  # type: ignore[assignment,misc]
    if AnthropicModel is not None and isinstance(built, AnthropicModel):
        client: Any = built.client
        return Endpoint(kind="anthropic", model=built, base_url=str(client.base_url), api_key=client.api_key)
    raise ConfigurationError(
        f"`--provider-batch` needs an OpenAI chat-completions model (`openai-chat:NAME`) or an Anthropic model "
        f"(`anthropic:NAME`), not {getattr(built, 'system', '?')}:{built.model_name}. Drop `--provider-batch` "
        "to run the items as normal calls."
    )


def _copy(endpoint: Endpoint, transport: httpx2.AsyncBaseTransport) -> Model:
    """The endpoint's model again (class, name, settings, profile), over an HTTP client using `transport`."""
    client = httpx2.AsyncClient(transport=transport)
    model: Any = endpoint.model
    if endpoint.kind == "openai":
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        provider = OpenAIProvider(base_url=endpoint.base_url, api_key=endpoint.api_key or "none", http_client=client)
        return OpenAIChatModel(model.model_name, provider=provider, settings=model.settings, profile=model.profile)
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    anthropic = AnthropicProvider(base_url=endpoint.base_url, api_key=endpoint.api_key or "none", http_client=client)
    return AnthropicModel(model.model_name, provider=anthropic, settings=model.settings, profile=model.profile)


class Captured(BaseException):
    """The capturing transport's way out of a run, with the request body.

    A `BaseException`, so no layer on the way counts it as a failure: no retry, no failed-task event.
    """

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__("atomtask provider batch: request captured")
        self.body = body


class _Capture(httpx2.AsyncBaseTransport):
    """An httpx2 transport raising `Captured` with the first request's JSON body instead of sending it."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        raise Captured(json.loads(await request.aread()))


def capturing_model(endpoint: Endpoint) -> Model:
    """A copy of the endpoint's model whose first request raises `Captured` with its body, unsent."""
    return _copy(endpoint, _Capture())


class _Replay(httpx2.AsyncBaseTransport):
    """An httpx2 transport answering the first request with a recorded body, forwarding the others."""

    def __init__(self, answer: Mapping[str, Any]) -> None:
        self.answer, self.real, self.served = dict(answer), httpx2.AsyncHTTPTransport(), False

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if not self.served:
            self.served = True
            sent = json.loads(await request.aread() or b"{}")
            if sent.get("stream") is True:  # pydantic-ai streams some requests itself (Anthropic's long ones)
                events = "".join(_anthropic_events(self.answer)).encode()
                return httpx2.Response(200, content=events, headers={"content-type": "text/event-stream"})
            return httpx2.Response(200, json=self.answer)
        return await self.real.handle_async_request(request)

    async def aclose(self) -> None:
        await self.real.aclose()


def _anthropic_events(message: Mapping[str, Any]) -> list[str]:
    """A finished Anthropic message as the server-sent events of the same message streamed."""

    def event(data: dict[str, Any]) -> str:
        return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"

    usage = dict(message.get("usage") or {})
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 0}}
    events = [event({"type": "message_start", "message": start})]
    for index, block in enumerate(message.get("content") or []):
        if block.get("type") == "tool_use":
            opened = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block.get("input"))}
        elif block.get("type") == "text":
            opened, delta = {**block, "text": ""}, {"type": "text_delta", "text": block.get("text", "")}
        else:
            opened, delta = block, None
        events.append(event({"type": "content_block_start", "index": index, "content_block": opened}))
        if delta is not None:
            events.append(event({"type": "content_block_delta", "index": index, "delta": delta}))
        events.append(event({"type": "content_block_stop", "index": index}))
    stop = {"stop_reason": message.get("stop_reason"), "stop_sequence": message.get("stop_sequence")}
    events.append(event({"type": "message_delta", "delta": stop, "usage": usage}))
    events.append(event({"type": "message_stop"}))
    return events


def replaying_model(endpoint: Endpoint, answer: Mapping[str, Any]) -> Model:
    """A copy of the endpoint's model answering its first request with `answer` (the provider batch's body).

    Later requests (the re-asks after a rejected answer) go to the real endpoint as normal calls.
    """
    from pydantic_ai.models.wrapper import WrapperModel

    class BatchAnswered(WrapperModel):
        """The first response is the provider batch's, priced as a batch answer."""

        first = True

        async def request(
            self,
            messages: list[ModelMessage],
            model_settings: ModelSettings | None,
            model_request_parameters: ModelRequestParameters,
        ) -> ModelResponse:
            response = await self.wrapped.request(messages, model_settings, model_request_parameters)
            if self.first:
                self.first = False
                response.provider_details = {**(response.provider_details or {}), "processing": "batch"}
            return response

    return BatchAnswered(_copy(endpoint, _Replay(answer)))


OPENAI_ENDPOINT = "/v1/chat/completions"
_OPENAI_ENDED = frozenset({"completed", "failed", "expired", "cancelled"})


@attrs.frozen(kw_only=True)
class Submitted:
    """A provider batch: its id and the provider's status when last seen (`ended` once results can be read)."""

    provider_batch_id: str
    status: str
    ended: bool


@attrs.frozen(kw_only=True)
class Outcome:
    """One request's result: `succeeded` with the answer `body`, else `errored`/`expired`/`canceled` and a `message`."""

    status: str
    body: Mapping[str, Any] | None = None
    message: str = ""


async def submit(endpoint: Endpoint, requests: Sequence[tuple[str, Mapping[str, Any]]]) -> Submitted:
    """Start one provider batch of `(custom_id, request body)` pairs."""
    client = endpoint.client.with_options(max_retries=0)
    if endpoint.kind == "openai":
        lines = [
            json.dumps({"custom_id": custom_id, "method": "POST", "url": OPENAI_ENDPOINT, "body": dict(body)})
            for custom_id, body in requests
        ]
        data = ("\n".join(lines) + "\n").encode()
        uploaded = await client.files.create(file=("batch.jsonl", io.BytesIO(data)), purpose="batch")
        batch = await client.batches.create(
            input_file_id=uploaded.id, endpoint=OPENAI_ENDPOINT, completion_window="24h"
        )
        return Submitted(provider_batch_id=batch.id, status=batch.status, ended=batch.status in _OPENAI_ENDED)
    params = [
        {"custom_id": custom_id, "params": {k: v for k, v in body.items() if k != "stream"}}
        for custom_id, body in requests
    ]
    created = await client.messages.batches.create(requests=params)
    return Submitted(
        provider_batch_id=created.id, status=created.processing_status, ended=created.processing_status == "ended"
    )


async def check(endpoint: Endpoint, provider_batch_id: str) -> Submitted:
    """The batch's status now."""
    client = endpoint.client
    if endpoint.kind == "openai":
        batch = await client.batches.retrieve(provider_batch_id)
        return Submitted(provider_batch_id=batch.id, status=batch.status, ended=batch.status in _OPENAI_ENDED)
    found = await client.messages.batches.retrieve(provider_batch_id)
    return Submitted(
        provider_batch_id=found.id, status=found.processing_status, ended=found.processing_status == "ended"
    )


async def results(endpoint: Endpoint, provider_batch_id: str) -> dict[str, Outcome]:
    """Every request's `Outcome` by custom id; a request the provider reports nothing for is missing."""
    if endpoint.kind == "openai":
        return await _openai_results(endpoint.client, provider_batch_id)
    client = endpoint.client
    found: dict[str, Outcome] = {}
    async for entry in await client.messages.batches.results(provider_batch_id):
        result = entry.result
        if result.type == "succeeded":
            found[entry.custom_id] = Outcome(status="succeeded", body=result.message.model_dump(mode="json"))
        elif result.type == "errored":
            error = result.error.model_dump(mode="json")
            found[entry.custom_id] = Outcome(status="errored", message=json.dumps(error.get("error", error)))
        else:
            found[entry.custom_id] = Outcome(status=result.type, message=f"the request was {result.type}")
    return found


async def _openai_results(client: Any, provider_batch_id: str) -> dict[str, Outcome]:
    batch = await client.batches.retrieve(provider_batch_id)
    found: dict[str, Outcome] = {}
    for file_id in (batch.output_file_id, batch.error_file_id):
        if not file_id:
            continue
        content = await client.files.content(file_id)
        for raw in content.text.splitlines():
            if raw.strip():
                line = json.loads(raw)
                found[str(line.get("custom_id"))] = _openai_outcome(line)
    return found


def _openai_outcome(line: Mapping[str, Any]) -> Outcome:
    response = line.get("response") or {}
    error = line.get("error") or {}
    status_code = response.get("status_code")
    if isinstance(status_code, int) and 200 <= status_code < 300 and isinstance(response.get("body"), dict):
        return Outcome(status="succeeded", body=response["body"])
    if error.get("code") == "batch_expired":
        return Outcome(status="expired", message=str(error.get("message") or "the batch expired first"))
    if error.get("code") == "batch_cancelled":
        return Outcome(status="canceled", message=str(error.get("message") or "the batch was cancelled first"))
    if response:
        body = response.get("body") or {}
        detail = body.get("error", body) if isinstance(body, dict) else body
        return Outcome(status="errored", message=f"HTTP {status_code}: {json.dumps(detail)}")
    return Outcome(status="errored", message=json.dumps(error) if error else "no answer")


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
        private_record(self.path)  # owner-only, as the batch record it shares a file with
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
        choice = handler.choose_model(call=self.options.model, template=template.model)
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
                options = attrs.evolve(self.options, model=capturing_model(endpoint))
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
                    options = attrs.evolve(self.options, model=replaying_model(endpoint, outcome.body))
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
        result = self._keep(item, result)  # recorded; a failed write keeps the answer (`BatchRun.unrecorded`)
        self._count(result)
        self.budget.spend(result.usage)
        finished.put_nowait(result)


def run_class_for(args: argparse.Namespace) -> Any:
    """`ProviderBatchRun` with the polling of `--poll-interval` and `--max-wait`; refused with `--engine dbos`."""
    if getattr(args, "engine", "local") == "dbos":
        raise UsageError(
            "`--provider-batch` and `--engine dbos` do not go together: the provider runs the batch. Drop one."
        )
    interval = getattr(args, "poll_interval", None) or DEFAULT_POLL_INTERVAL
    return functools.partial(ProviderBatchRun, poll_interval=interval, max_wait=getattr(args, "max_wait", None))
