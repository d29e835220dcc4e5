"""The batch endpoints of the fake provider: OpenAI's Files and Batch API, Anthropic's Message Batches.

OpenAI: `POST /v1/files` (multipart, purpose `batch`), `GET /v1/files/{id}/content`, `POST /v1/batches`,
`GET /v1/batches/{id}`. Anthropic: `POST /v1/messages/batches`, `GET /v1/messages/batches/{id}` and
`GET /v1/messages/batches/{id}/results`. A batch answers `in_progress` to its first `in_progress_polls`
checks, then ends: each of its requests is answered then by the server's script or responder, as a
normal request would be (a content reply is the answer, an `ErrorReply` the request's error), except
the custom ids in `expire`, reported expired (the batch then ends `expired`). The requests inside a
batch are not in the server's request log (they never came over HTTP); `answered` counts them.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import threading
from typing import Any

from atomtask.testing._replies import DelayedReply, DisconnectReply, ErrorReply, RecordedRequest
from atomtask.testing._wire import Handler, anthropic_message, openai_completion, send_json

__all__ = ["FakeBatches"]

_CREATED = 1_700_000_000


class FakeBatches:
    """The state of the fake provider's batches; `server.batches` of a `FakeProviderServer`.

    Attributes:
        in_progress_polls: how many status checks a new batch answers `in_progress` before it ends.
        expire: custom ids reported `batch_expired` (OpenAI) / `expired` (Anthropic), never answered.
        created: the ids of the batches created, in order.
        answered: how many requests inside batches were answered.
    """

    def __init__(self, server: Any) -> None:  # the `FakeProviderServer` (not imported: it imports this module)
        self._server = server
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.in_progress_polls = 0
        self.expire: set[str] = set()
        self.created: list[str] = []
        self.answered = 0
        self._files: dict[str, bytes] = {}
        self._batches: dict[str, dict[str, Any]] = {}

    @staticmethod
    def serves(path: str) -> bool:
        """True for the paths of the batch endpoints."""
        return path.startswith(("/v1/files", "/v1/batches", "/v1/messages/batches"))

    def handle(self, handler: Handler, path: str, raw: bytes, headers: dict[str, str]) -> None:
        """Answer one request to a batch endpoint."""
        parts = path.strip("/").split("/")
        post = handler.command == "POST"
        if parts[:2] == ["v1", "files"]:
            if post and len(parts) == 2:
                send_json(handler, 200, self._upload(raw, headers.get("content-type", "")))
                return
            if len(parts) == 4 and parts[3] == "content" and parts[2] in self._files:
                _send_bytes(handler, self._files[parts[2]])
                return
        elif parts[:2] == ["v1", "batches"]:
            if post and len(parts) == 2:
                send_json(handler, 200, self._create("openai", json.loads(raw or b"{}")))
                return
            if len(parts) == 3 and parts[2] in self._batches:
                send_json(handler, 200, self._view(self._poll(parts[2])))
                return
        elif parts[:3] == ["v1", "messages", "batches"]:
            if post and len(parts) == 3:
                send_json(handler, 200, self._create("anthropic", json.loads(raw or b"{}")))
                return
            if len(parts) == 4 and parts[3] in self._batches:
                send_json(handler, 200, self._view(self._poll(parts[3])))
                return
            if len(parts) == 5 and parts[4] == "results" and parts[3] in self._batches:
                _send_bytes(handler, self._anthropic_results(self._batches[parts[3]]))
                return
        message = {"error": {"message": f"The fake provider has no batch resource {path!r}.", "type": "not_found"}}
        send_json(handler, 404, message)

    # OpenAI

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

    def _create(self, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        if kind == "openai":
            text = self._files.get(str(body.get("input_file_id")), b"").decode()
            lines = [json.loads(line) for line in text.splitlines() if line.strip()]
            requests = [(str(line["custom_id"]), dict(line["body"])) for line in lines]
        else:
            requests = [(str(r["custom_id"]), dict(r["params"])) for r in body.get("requests", [])]
        with self._lock:
            prefix = "batch" if kind == "openai" else "msgbatch"
            batch_id = f"{prefix}_{next(self._ids)}"
            batch: dict[str, Any] = {"id": batch_id, "kind": kind, "polls": 0, "requests": requests, "status": None}
            batch["input_file_id"] = body.get("input_file_id")
            self._batches[batch_id] = batch
            self.created.append(batch_id)
        return self._view(batch)

    def _poll(self, batch_id: str) -> dict[str, Any]:
        with self._lock:
            batch = self._batches[batch_id]
            batch["polls"] += 1
            ends = batch["status"] is None and batch["polls"] > self.in_progress_polls
            if ends:
                batch["status"] = "ending"
        if ends:
            self._answer(batch)
        return batch

    def _answer(self, batch: dict[str, Any]) -> None:
        """Answer every request of `batch` through the server's script or responder, as normal requests."""
        answers: dict[str, Any] = {}
        for custom_id, body in batch["requests"]:
            if custom_id in self.expire:
                answers[custom_id] = "expired"
                continue
            path = "/v1/chat/completions" if batch["kind"] == "openai" else "/v1/messages"
            reply = self._server._next_reply(0, RecordedRequest(path=path, headers={}, body=body))
            while isinstance(reply, DelayedReply):
                reply = reply.reply
            if isinstance(reply, DisconnectReply):
                reply = ErrorReply(status=500, message="The server had an error while processing your request.")
            if isinstance(reply, ErrorReply):
                answers[custom_id] = reply
                continue
            size = len(json.dumps(body))
            answer = self._server._resolve(reply, batch["kind"], body, raw_size=size, number=0)
            if isinstance(answer, ErrorReply):
                answers[custom_id] = answer
                continue
            model = str(body.get("model", "fake-model"))
            wire = openai_completion if batch["kind"] == "openai" else anthropic_message
            answers[custom_id] = wire(answer, model)
        with self._lock:
            self.answered += len(answers)
            batch["answers"] = answers
            expired = any(value == "expired" for value in answers.values())
            batch["status"] = "expired" if expired else "completed"
            if batch["kind"] == "openai":
                output = [_openai_line(cid, value) for cid, value in answers.items() if isinstance(value, dict)]
                errors = [_openai_line(cid, value) for cid, value in answers.items() if not isinstance(value, dict)]
                for name, lines in (("output_file_id", output), ("error_file_id", errors)):
                    if lines:
                        file_id = f"file-{next(self._ids)}"
                        self._files[file_id] = ("\n".join(json.dumps(line) for line in lines) + "\n").encode()
                        batch[name] = file_id

    def _view(self, batch: dict[str, Any]) -> dict[str, Any]:
        status = batch["status"] if batch["status"] in ("completed", "expired") else None
        total = len(batch["requests"])
        answers = batch.get("answers", {})
        failed = sum(1 for value in answers.values() if not isinstance(value, dict))
        if batch["kind"] == "openai":
            view = {
                "id": batch["id"],
                "object": "batch",
                "endpoint": "/v1/chat/completions",
                "input_file_id": batch["input_file_id"],
                "completion_window": "24h",
                "status": status or "in_progress",
                "created_at": _CREATED,
                "request_counts": {"total": total, "completed": len(answers) - failed, "failed": failed},
            }
            for name in ("output_file_id", "error_file_id"):
                if name in batch:
                    view[name] = batch[name]
            return view
        base = self._server.base_url
        counts = {"processing": 0 if status else total, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        for value in answers.values():
            key = "succeeded" if isinstance(value, dict) else "expired" if value == "expired" else "errored"
            counts[key] += 1
        return {
            "id": batch["id"],
            "type": "message_batch",
            "processing_status": "ended" if status else "in_progress",
            "request_counts": counts,
            "created_at": "2023-11-14T22:13:20Z",
            "expires_at": "2023-11-15T22:13:20Z",
            "ended_at": "2023-11-14T23:13:20Z" if status else None,
            "cancel_initiated_at": None,
            "archived_at": None,
            "results_url": f"{base}/v1/messages/batches/{batch['id']}/results" if status else None,
        }

    @staticmethod
    def _anthropic_results(batch: dict[str, Any]) -> bytes:
        lines = []
        for custom_id, value in batch.get("answers", {}).items():
            if isinstance(value, dict):
                result: dict[str, Any] = {"type": "succeeded", "message": value}
            elif value == "expired":
                result = {"type": "expired"}
            else:
                error = {"type": value.error_type or "api_error", "message": value.message}
                result = {"type": "errored", "error": {"type": "error", "error": error}}
            lines.append(json.dumps({"custom_id": custom_id, "result": result}))
        return ("\n".join(lines) + "\n").encode()


def _openai_line(custom_id: str, value: Any) -> dict[str, Any]:
    line: dict[str, Any] = {"id": f"batch_req_{custom_id}", "custom_id": custom_id, "response": None, "error": None}
    if isinstance(value, dict):
        line["response"] = {"status_code": 200, "request_id": f"req_{custom_id}", "body": value}
    elif value == "expired":
        line["error"] = {"code": "batch_expired", "message": "This request could not be executed before expiring."}
    else:
        error = {"message": value.message, "type": value.error_type or "server_error", "code": value.code}
        line["response"] = {"status_code": value.status, "request_id": f"req_{custom_id}", "body": {"error": error}}
    return line


def _send_bytes(handler: Handler, data: bytes) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "application/octet-stream")
    handler.send_header("Content-Length", str(len(data)))
    handler.send_header("Connection", "close")
    handler.end_headers()
    handler.wfile.write(data)
