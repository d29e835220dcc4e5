"""The provider batch APIs through the providers' own SDK clients: submit, check, read the results.

OpenAI: the requests go up as a JSONL file (`files.create`, purpose `batch`) of `/v1/chat/completions`
requests, each with its `custom_id`; `batches.create` starts the batch, `batches.retrieve` polls it and
the output and error files (`files.content`) hold one line per request. Anthropic: `messages.batches`
`create`, `retrieve` and `results`. Each result is an `Outcome`: the provider's answer body as a normal
call would have received it, or why there is none (errored, expired, canceled).

Creating a batch is never retried by the SDK (a retry after a lost answer could pay twice); polling is.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from atomtask.batch.provider_models import Endpoint

__all__ = ["OPENAI_ENDPOINT", "Outcome", "Submitted", "check", "results", "submit"]

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
