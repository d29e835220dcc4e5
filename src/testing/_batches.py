"""The batch endpoints of the fake provider, exactly those pydantic-ai's `BatchModelRequests` calls, and their log.

OpenAI (`OpenAIResponsesModel`, batch lines for `/v1/responses`; lines for `/v1/chat/completions` work
too): `POST /v1/files` (multipart, purpose `batch`), `GET /v1/files/{id}/content`, `DELETE /v1/files/{id}`,
`POST /v1/batches`, `GET /v1/batches/{id}`, `POST /v1/batches/{id}/cancel`. Anthropic (`AnthropicModel`,
the SDK's `beta.messages.batches`): `POST /v1/messages/batches`, `GET /v1/messages/batches/{id}`,
`GET /v1/messages/batches/{id}/results` (the `results_url` of an ended batch) and
`POST /v1/messages/batches/{id}/cancel`.

A batch runs on the status check that ends it: each of its requests is then answered by the server's
script or responder as a live request of its wire would be (a content reply is its answer, with the
usage estimate of its body unless the reply gives one; an `ErrorReply` its error line or `errored`
result; a reply with broken JSON a malformed answer; a `DelayedReply` its reply, at once; a
`DisconnectReply` an HTTP 500 error), handed over as a `RecordedRequest` with the path of its line,
its body, `batch_id`, `custom_id` and `submission`. What `FakeBatches` is told
changes that: status checks answered in progress first, requests that expire, whole batches that end
`expired` or `failed`, creations refused, cancellation.

The requests inside a batch never come over HTTP, so they are not in `server.requests` (the HTTP calls
to the batch endpoints are). `FakeBatches` logs each batch created instead (`log`, `submissions`,
`by_body_hash`, `resubmitted`), and the tokens paid, batch and live (`paid`): what a benchmark checks
"nothing submitted or paid twice" against.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import threading
from collections import deque
from collections.abc import Callable, Collection
from typing import Any, Final, Literal, Protocol, TypeAlias

import attrs
from atomtask.testing._replies import (
    WIRE_BY_PATH,
    Answer,
    DelayedReply,
    DisconnectReply,
    EmptyReply,
    ErrorReply,
    RecordedRequest,
    ServerReply,
    TextReply,
    TokenUsage,
    ToolCallReply,
    ToolCallsReply,
    TruncatedStreamReply,
    Wire,
    body_hash,
    body_size,
)
from atomtask.testing._wire import (
    Handler,
    anthropic_message,
    error_body,
    openai_completion,
    responses_object,
    send_error,
    send_json,
)

__all__ = ["BatchEnding", "FakeBatches", "PaidUsage", "SubmittedBatch"]

_CREATED: Final = 1_700_000_000
_DAY: Final = 86_400

BatchEnding: TypeAlias = Literal["expired", "failed"]
"""How `FakeBatches.end_next()` ends a whole batch instead of running it."""

_Outcome: TypeAlias = dict[str, Any] | ErrorReply | Literal["expired", "canceled"]
"""A request's result: the answer's wire body, its error, or that the batch ended before running it."""

_RUNNING: Final = frozenset({"validating", "in_progress", "finalizing"})
_ENDED: Final = frozenset({"completed", "expired", "failed", "cancelled"})


class _Server(Protocol):
    """What the batches use of their `FakeProviderServer` (not imported: it imports this module)."""

    @property
    def base_url(self) -> str: ...

    def _next_reply(self, number: int, request: RecordedRequest | None = None) -> ServerReply | ErrorReply: ...

    def _resolve(
        self,
        reply: TextReply | ToolCallReply | ToolCallsReply | TruncatedStreamReply | EmptyReply,
        wire: Wire,
        body: dict[str, Any],
        *,
        raw_size: int,
        number: int,
    ) -> Answer | ErrorReply: ...


@attrs.frozen(kw_only=True)
class SubmittedBatch:
    """One batch as it was created: its id, the wire of its requests, and each request's custom id and body SHA-256.

    `body_hashes[i]` is the SHA-256 of `custom_ids[i]`'s request body (compact JSON, sorted keys), so the
    same request submitted twice has the same hash whatever custom id it was given.
    """

    id: str
    wire: Wire
    custom_ids: tuple[str, ...]
    body_hashes: tuple[str, ...]


@attrs.frozen(kw_only=True)
class PaidUsage:
    """The tokens the fake provider billed: every answered batch request and every live answer it sent.

    An error, an expired or a cancelled request is not billed; an answer is, malformed or not.
    """

    batch_requests: int
    batch: TokenUsage
    live_requests: int
    live: TokenUsage

    @property
    def total(self) -> TokenUsage:
        """Batch and live tokens together."""
        return TokenUsage(
            input_tokens=self.batch.input_tokens + self.live.input_tokens,
            output_tokens=self.batch.output_tokens + self.live.output_tokens,
        )


@attrs.define(kw_only=True)
class _Request:
    custom_id: str
    path: str
    body: dict[str, Any]
    submission: int


@attrs.define(kw_only=True)
class _Batch:
    """The mutable state of one batch, guarded by the `FakeBatches` lock; `status` in OpenAI's words."""

    id: str
    kind: Literal["openai", "anthropic"]
    endpoint: str
    input_file_id: str | None
    requests: list[_Request]
    ending: BatchEnding | None
    status: str = "validating"
    polls: int = 0
    outcomes: dict[str, _Outcome] = attrs.field(factory=dict)
    errors: list[dict[str, Any]] = attrs.field(factory=list)
    output_file_id: str | None = None
    error_file_id: str | None = None


class FakeBatches:
    """The batch endpoints' behaviour and log; `server.batches` of a `FakeProviderServer`.

    Programmable (set before or while a test runs; read at each status check or creation):
        in_progress_polls: how many status checks of a batch are answered in progress (`in_progress`,
            the last of two or more `finalizing`) before the next one ends it. 0: the first check does.
        expire: the requests reported expired when their batch ends, never answered: a collection of
            custom ids (expired at every submission), or a predicate on the request's `RecordedRequest`,
            e.g. `lambda r: r.submission == 1` to expire only the first submission, which pydantic-ai
            resubmits in a new batch. An OpenAI batch holding one ends `expired`.

    Methods `end_next()` (whole batches ending `expired` or `failed`) and `refuse_create()` (creations
    answered with an error) queue what the next batches created meet. A request's own error or
    malformed answer comes from the script or responder, as for a live request. A cancelled batch
    (`POST .../cancel`) answers `cancelling` (Anthropic `canceling`), then `cancelled` (`ended`) at its
    next status check, its unrun requests reported `batch_cancelled` (Anthropic `canceled`).

    Log (thread-safe copies): `created`, `log`, `submissions()`, `by_body_hash()`, `resubmitted()`,
    `outcomes()`, `answered`, `paid`, `deleted_files`.

    Example:
        ```python
        server.respond_with(lambda r: Reply.error(400, 'No.') if 'Bob' in str(r.body) else Reply.tool_call(args=...))
        server.batches.in_progress_polls = 2  # two checks in progress, the third ends the batch
        server.batches.expire = lambda r: r.submission == 1 and 'Di' in str(r.body)  # resubmitted once
        agent = Agent(server.openai_responses_model(), output_type=Person, capabilities=[BatchModelRequests()])
        ...  # the runs
        assert 1 == len(server.batches.resubmitted())  # Di's request, in the first two batches
        ```
    """

    def __init__(self, server: _Server) -> None:
        self._server = server
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.in_progress_polls = 0
        self.expire: Collection[str] | Callable[[RecordedRequest], bool] = frozenset()
        self._endings: deque[BatchEnding] = deque()
        self._refusals: deque[ErrorReply] = deque()
        self._files: dict[str, bytes] = {}
        self._deleted: list[str] = []
        self._batches: dict[str, _Batch] = {}
        self._log: list[SubmittedBatch] = []
        self._by_hash: dict[str, list[str]] = {}
        self._by_custom_id: dict[str, list[str]] = {}
        self._answered = 0
        self._batch_usage = (0, 0, 0)  # requests, input tokens, output tokens
        self._live_usage = (0, 0, 0)

    # Programming

    def end_next(self, *endings: BatchEnding) -> None:
        """End the next batches created, one per ending, as a whole without running a request.

        `"expired"`: every request is reported expired (OpenAI `batch_expired` lines, Anthropic `expired`
        results), which pydantic-ai resubmits. `"failed"`: an OpenAI batch ends `failed` with one entry in
        `errors` per line (each request an HTTP 400 for pydantic-ai); Anthropic has no failed batch, so
        each of its requests is `errored` with an `invalid_request_error`.
        """
        with self._lock:
            self._endings.extend(endings)

    def refuse_create(self, *errors: ErrorReply) -> None:
        """Answer the next batch creations with `errors`, one each, in order (nothing is created)."""
        with self._lock:
            self._refusals.extend(errors)

    # Log

    @property
    def created(self) -> list[str]:
        """The ids of the batches created, in order."""
        with self._lock:
            return [batch.id for batch in self._log]

    @property
    def log(self) -> list[SubmittedBatch]:
        """Every batch created, in order: its id, wire, custom ids and body hashes."""
        with self._lock:
            return list(self._log)

    def submissions(self, custom_id: str) -> list[str]:
        """The ids of the batches that held a request with `custom_id`, in order."""
        with self._lock:
            return list(self._by_custom_id.get(custom_id, ()))

    def by_body_hash(self) -> dict[str, list[str]]:
        """For each request body submitted (its SHA-256), the ids of the batches that held it, in order."""
        with self._lock:
            return {digest: list(ids) for digest, ids in self._by_hash.items()}

    def resubmitted(self) -> dict[str, list[str]]:
        """The request bodies more than one batch held (pydantic-ai resubmits expired and transient failures).

        Equal requests in one batch (two items with the same prompt) are not resubmissions: a batch
        counts once per body here, though `by_body_hash()` lists it once per request holding the body.
        """
        held = {digest: list(dict.fromkeys(ids)) for digest, ids in self.by_body_hash().items()}
        return {digest: ids for digest, ids in held.items() if len(ids) > 1}

    def outcomes(self, batch_id: str) -> dict[str, str]:
        """How each request of an ended batch ended, by custom id: `succeeded`, `errored`, `expired`, `canceled`.

        Empty while the batch runs; a failed OpenAI batch's requests are `errored`.
        """
        with self._lock:
            batch = self._batches[batch_id]
            if batch.status == "failed":
                return {request.custom_id: "errored" for request in batch.requests}
            return {custom_id: _outcome_name(outcome) for custom_id, outcome in batch.outcomes.items()}

    @property
    def answered(self) -> int:
        """How many requests inside batches the script or responder answered (with content or an error)."""
        with self._lock:
            return self._answered

    @property
    def paid(self) -> PaidUsage:
        """The tokens billed so far, for batch requests answered with content and for live answers."""
        with self._lock:
            batch, live = self._batch_usage, self._live_usage
        return PaidUsage(
            batch_requests=batch[0],
            batch=TokenUsage(input_tokens=batch[1], output_tokens=batch[2]),
            live_requests=live[0],
            live=TokenUsage(input_tokens=live[1], output_tokens=live[2]),
        )

    @property
    def deleted_files(self) -> list[str]:
        """The ids of the files deleted (pydantic-ai deletes a completed batch's input file), in order."""
        with self._lock:
            return list(self._deleted)

    def paid_live(self, usage: TokenUsage) -> None:
        """Count a live answer's tokens as paid (called by the server for each content answer it sends)."""
        with self._lock:
            self._live_usage = _plus(self._live_usage, usage)

    # HTTP

    @staticmethod
    def serves(path: str) -> bool:
        """True for the paths of the batch endpoints."""
        return path.startswith(("/v1/files", "/v1/batches", "/v1/messages/batches"))

    def handle(self, handler: Handler, path: str, raw: bytes, headers: dict[str, str]) -> None:
        """Answer one request to a batch endpoint."""
        parts = path.strip("/").split("/")
        method = handler.command
        if parts[:2] == ["v1", "files"]:
            if method == "POST" and len(parts) == 2:
                send_json(handler, 200, self._upload(raw, headers.get("content-type", "")))
                return
            with self._lock:
                data = self._files.get(parts[2]) if len(parts) > 2 else None
            if data is not None and len(parts) == 4 and parts[3] == "content" and method == "GET":
                _send_bytes(handler, data)
                return
            if data is not None and len(parts) == 3 and method == "DELETE":
                with self._lock:
                    self._files.pop(parts[2], None)
                    self._deleted.append(parts[2])
                send_json(handler, 200, {"id": parts[2], "object": "file", "deleted": True})
                return
        elif parts[:2] == ["v1", "batches"]:
            if method == "POST" and len(parts) == 2:
                self._create(handler, "openai", json.loads(raw or b"{}"))
                return
            if self._answers_batch(handler, parts[2:], method):
                return
        elif parts[:3] == ["v1", "messages", "batches"]:
            if method == "POST" and len(parts) == 3:
                self._create(handler, "anthropic", json.loads(raw or b"{}"))
                return
            if len(parts) == 5 and parts[4] == "results" and method == "GET" and (found := self._ended(parts[3])):
                _send_bytes(handler, _anthropic_results(found))
                return
            if self._answers_batch(handler, parts[3:], method):
                return
        message = {"error": {"message": f"The fake provider has no batch resource {path!r}.", "type": "not_found"}}
        send_json(handler, 404, message)

    def _answers_batch(self, handler: Handler, rest: list[str], method: str) -> bool:
        """`GET {id}` (a status check) and `POST {id}/cancel`; False for anything else."""
        with self._lock:
            known = bool(rest) and rest[0] in self._batches
        if known and len(rest) == 1 and method == "GET":
            send_json(handler, 200, self._view(self._poll(rest[0])))
            return True
        if known and len(rest) == 2 and rest[1] == "cancel" and method == "POST":
            send_json(handler, 200, self._view(self._cancel(rest[0])))
            return True
        return False

    def _upload(self, raw: bytes, content_type: str) -> dict[str, Any]:
        head = f"Content-Type: {content_type}\r\n\r\n".encode()
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + raw)
        data = b""
        for part in message.iter_parts():
            if part.get_param("name", header="content-disposition") == "file":
                payload = part.get_payload(decode=True)
                data = payload if isinstance(payload, bytes) else b""
        with self._lock:
            file_id = f"file-{next(self._ids)}"
            self._files[file_id] = data
        return {
            "id": file_id,
            "object": "file",
            "bytes": len(data),
            "created_at": _CREATED,
            "filename": "batch.jsonl",
            "purpose": "batch",
            "status": "processed",
        }

    def _create(self, handler: Handler, kind: Literal["openai", "anthropic"], body: dict[str, Any]) -> None:
        wire: Wire = "responses" if kind == "openai" else "anthropic"
        endpoint = str(body.get("endpoint", "/v1/responses"))
        if kind == "openai":
            with self._lock:
                data = self._files.get(str(body.get("input_file_id")))
            if data is None:
                missing = (
                    f"No file with id {body.get('input_file_id')!r}: upload the batch input with `POST /v1/files`."
                )
                send_error(handler, wire, ErrorReply(status=400, message=missing))
                return
            text = data.decode()
            lines = [json.loads(line) for line in text.splitlines() if line.strip()]
            wire = WIRE_BY_PATH.get(endpoint, "responses")
            requests = [(str(line["custom_id"]), str(line.get("url", endpoint)), dict(line["body"])) for line in lines]
        else:
            requests = [(str(r["custom_id"]), "/v1/messages", dict(r["params"])) for r in body.get("requests", [])]
        hashes = [body_hash(request_body) for _, _, request_body in requests]
        with self._lock:
            refusal = self._refusals.popleft() if self._refusals else None
            if refusal is None:
                batch_id = f"{'batch' if kind == 'openai' else 'msgbatch'}_{next(self._ids)}"
                batch = _Batch(
                    id=batch_id,
                    kind=kind,
                    endpoint=endpoint,
                    input_file_id=body.get("input_file_id"),
                    requests=[
                        _Request(
                            custom_id=custom_id,
                            path=path,
                            body=request_body,
                            submission=len(set(self._by_hash.get(digest, ()))) + 1,
                        )
                        for (custom_id, path, request_body), digest in zip(requests, hashes, strict=True)
                    ],
                    ending=self._endings.popleft() if self._endings else None,
                )
                self._batches[batch_id] = batch
                self._log.append(
                    SubmittedBatch(
                        id=batch_id,
                        wire=wire,
                        custom_ids=tuple(custom_id for custom_id, _, _ in requests),
                        body_hashes=tuple(hashes),
                    )
                )
                for (custom_id, _, _), digest in zip(requests, hashes, strict=True):
                    self._by_hash.setdefault(digest, []).append(batch_id)
                    self._by_custom_id.setdefault(custom_id, []).append(batch_id)
        if refusal is not None:
            send_error(handler, wire, refusal)
            return
        send_json(handler, 200, self._view(batch))

    def _poll(self, batch_id: str) -> _Batch:
        """A status check: in progress for `in_progress_polls` checks, then the batch runs and ends."""
        with self._lock:
            batch = self._batches[batch_id]
            batch.polls += 1
            runs = batch.status in _RUNNING and batch.polls > self.in_progress_polls
            if runs:
                batch.status = "running"  # Checks made while it runs see it in progress.
            elif batch.status in _RUNNING:
                last = batch.polls == self.in_progress_polls and self.in_progress_polls > 1
                batch.status = "finalizing" if last else "in_progress"
            elif batch.status == "cancelling":
                self._end(batch, "cancelled", {request.custom_id: "canceled" for request in batch.requests})
        if runs:
            self._run(batch)
        return batch

    def _cancel(self, batch_id: str) -> _Batch:
        with self._lock:
            batch = self._batches[batch_id]
            if batch.status in _RUNNING:
                batch.status = "cancelling"
        return batch

    def _ended(self, batch_id: str) -> _Batch | None:
        with self._lock:
            batch = self._batches.get(batch_id)
            return batch if batch is not None and batch.status in _ENDED else None

    def _run(self, batch: _Batch) -> None:
        """Answer every request of `batch` (outside the lock: the responder may take its time), then end it."""
        if batch.ending == "failed":
            if batch.kind == "anthropic":
                refused = ErrorReply(status=400, message="The fake provider failed this batch (`end_next('failed')`).")
                with self._lock:
                    self._end(batch, "completed", {request.custom_id: refused for request in batch.requests})
                return
            with self._lock:
                batch.errors = [
                    {
                        "code": "invalid_request",
                        "message": "The fake provider failed this batch (`end_next('failed')`).",
                        "param": "body",
                        "line": line,
                    }
                    for line in range(1, len(batch.requests) + 1)
                ]
                self._end(batch, "failed", {})
            return
        outcomes: dict[str, _Outcome] = {}
        for request in batch.requests:
            recorded = RecordedRequest(
                path=request.path,
                headers={},
                body=request.body,
                batch_id=batch.id,
                custom_id=request.custom_id,
                submission=request.submission,
            )
            outcomes[request.custom_id] = (
                "expired" if batch.ending == "expired" or self._expires(recorded) else self._answer(recorded)
            )
        expired = any(outcome == "expired" for outcome in outcomes.values())
        with self._lock:
            self._end(batch, "expired" if expired and batch.kind == "openai" else "completed", outcomes)

    def _expires(self, request: RecordedRequest) -> bool:
        expire = self.expire
        return bool(expire(request)) if callable(expire) else request.custom_id in expire

    def _answer(self, request: RecordedRequest) -> _Outcome:
        """One batch request answered as a live request of its wire would be: its wire body, or its error."""
        reply = self._server._next_reply(0, request)
        while isinstance(reply, DelayedReply):  # A batch answers when it ends, whatever a reply's delay.
            reply = reply.reply
        if isinstance(reply, DisconnectReply):
            reply = ErrorReply(status=500, message="The server had an error while processing your request.")
        wire = request.wire or "responses"
        answer = (
            reply
            if isinstance(reply, ErrorReply)
            else self._server._resolve(reply, wire, request.body, raw_size=body_size(request.body), number=0)
        )
        with self._lock:
            self._answered += 1
            if not isinstance(answer, ErrorReply):
                self._batch_usage = _plus(self._batch_usage, answer.usage)
        if isinstance(answer, ErrorReply):
            return answer
        model = str(request.body.get("model", "fake-model"))
        write = {"openai": openai_completion, "responses": responses_object, "anthropic": anthropic_message}[wire]
        body = write(answer, model, empty=isinstance(reply, EmptyReply))
        if wire == "anthropic":
            # Anthropic's tool input is always a JSON object, and pydantic-ai validates a batch result (a live
            # answer it doesn't): arguments that are no object go as `{}`, an answer still missing its fields.
            for block in body["content"]:
                if block["type"] == "tool_use" and not isinstance(block["input"], dict):
                    block["input"] = {}
        return body

    def _end(self, batch: _Batch, status: str, outcomes: dict[str, _Outcome]) -> None:
        """Record how `batch` ended and, for OpenAI, write its output and error files (under the lock)."""
        batch.status = status
        batch.outcomes = outcomes
        if batch.kind != "openai":
            return
        wire = WIRE_BY_PATH.get(batch.endpoint, "responses")
        lines = [(custom_id, _openai_line(wire, custom_id, outcome)) for custom_id, outcome in outcomes.items()]
        output = [line for custom_id, line in lines if isinstance(outcomes[custom_id], dict)]
        errors = [line for custom_id, line in lines if not isinstance(outcomes[custom_id], dict)]
        for name, file_lines in (("output_file_id", output), ("error_file_id", errors)):
            if file_lines:
                file_id = f"file-{next(self._ids)}"
                self._files[file_id] = ("\n".join(json.dumps(line) for line in file_lines) + "\n").encode()
                setattr(batch, name, file_id)

    def _view(self, batch: _Batch) -> dict[str, Any]:
        """The batch object the SDK reads, as each provider words it."""
        with self._lock:
            status = "in_progress" if batch.status == "running" else batch.status
            total = len(batch.requests)
            names = [_outcome_name(outcome) for outcome in batch.outcomes.values()]
            if batch.kind == "openai":
                view: dict[str, Any] = {
                    "id": batch.id,
                    "object": "batch",
                    "endpoint": batch.endpoint,
                    "input_file_id": batch.input_file_id,
                    "completion_window": "24h",
                    "status": status,
                    "created_at": _CREATED,
                    "expires_at": _CREATED + _DAY,
                    "output_file_id": batch.output_file_id,
                    "error_file_id": batch.error_file_id,
                    "errors": {"object": "list", "data": batch.errors} if batch.errors else None,
                    "request_counts": {
                        "total": total,
                        "completed": names.count("succeeded"),
                        "failed": len(names) - names.count("succeeded") + (total if status == "failed" else 0),
                    },
                }
                return view
            ended = status in _ENDED
            counts = {"processing": 0 if ended else total, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
            for name in names:
                counts[name] += 1
            return {
                "id": batch.id,
                "type": "message_batch",
                "processing_status": "ended" if ended else "canceling" if status == "cancelling" else "in_progress",
                "request_counts": counts,
                "created_at": "2023-11-14T22:13:20Z",
                "expires_at": "2023-11-15T22:13:20Z",
                "ended_at": "2023-11-14T23:13:20Z" if ended else None,
                "cancel_initiated_at": "2023-11-14T22:20:00Z" if status in ("cancelling", "cancelled") else None,
                "archived_at": None,
                "results_url": f"{self._server.base_url}/v1/messages/batches/{batch.id}/results" if ended else None,
            }


def _plus(total: tuple[int, int, int], usage: TokenUsage) -> tuple[int, int, int]:
    return total[0] + 1, total[1] + usage.input_tokens, total[2] + usage.output_tokens


def _outcome_name(outcome: _Outcome) -> str:
    if isinstance(outcome, dict):
        return "succeeded"
    return "errored" if isinstance(outcome, ErrorReply) else outcome


def _openai_line(wire: Wire, custom_id: str, outcome: _Outcome) -> dict[str, Any]:
    """A line of an OpenAI batch's output file (an answer, or a request's HTTP error) or error file (unrun)."""
    line: dict[str, Any] = {"id": f"batch_req_{custom_id}", "custom_id": custom_id, "response": None, "error": None}
    if isinstance(outcome, dict):
        line["response"] = {"status_code": 200, "request_id": f"req_{custom_id}", "body": outcome}
    elif isinstance(outcome, ErrorReply):
        body = error_body(wire, outcome)
        line["response"] = {"status_code": outcome.status, "request_id": f"req_{custom_id}", "body": body}
    elif outcome == "expired":
        line["error"] = {
            "code": "batch_expired",
            "message": "This request could not be executed before the completion window expired.",
        }
    else:
        line["error"] = {
            "code": "batch_cancelled",
            "message": "This request was not executed because the batch was cancelled.",
        }
    return line


def _anthropic_results(batch: _Batch) -> bytes:
    lines = []
    for custom_id, outcome in batch.outcomes.items():
        if isinstance(outcome, dict):
            result: dict[str, Any] = {"type": "succeeded", "message": outcome}
        elif isinstance(outcome, ErrorReply):
            result = {"type": "errored", "error": error_body("anthropic", outcome)}
        else:
            result = {"type": outcome}
        lines.append(json.dumps({"custom_id": custom_id, "result": result}))
    return ("\n".join(lines) + "\n").encode()


def _send_bytes(handler: Handler, data: bytes) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "application/octet-stream")
    handler.send_header("Content-Length", str(len(data)))
    if not handler.server.fake.keep_alive:
        handler.send_header("Connection", "close")
    handler.end_headers()
    handler.wfile.write(data)
