"""The wire of the fake provider: the OpenAI and Anthropic formats, and the HTTP server that writes them.

A completion (OpenAI chat completions), a response (OpenAI's Responses API) or a message (Anthropic
messages) as JSON or as server-sent events, with its text or its tool calls (several at once, each with
its own id, as parallel calls come) and why it ended (on its own, or cut at the token limit), and each
provider's error types by status. `HTTPServer` is a threaded server on 127.0.0.1 that hands every
connection, `GET`, `POST` and `DELETE` to its owner (a `FakeProviderServer`); the `send_*` functions
write a JSON body, a chunked server-sent event
stream or a provider-shaped error, each optionally cut off midway, and `cut` drops a connection.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final, Protocol

from atomtask.testing._replies import Answer, ErrorReply, TokenUsage, Wire, WireCall, pieces

__all__ = [
    "ANTHROPIC_ERRORS",
    "OPENAI_ERRORS",
    "HTTPServer",
    "Handler",
    "anthropic_events",
    "anthropic_message",
    "cut",
    "error_body",
    "openai_completion",
    "openai_events",
    "responses_events",
    "responses_object",
    "send_error",
    "send_json",
    "send_stream",
]

_CREATED: Final = 1_700_000_000  # A fixed timestamp keeps recorded responses deterministic.

OPENAI_ERRORS: Final[dict[int, tuple[str, str | None]]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_error", None),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


def openai_completion(answer: Answer, model: str, *, empty: bool = False) -> dict[str, Any]:
    """A chat completion carrying `answer`; `empty` sends `choices: []` (a fault some providers and proxies show)."""
    message: dict[str, Any] = {"role": "assistant", "content": answer.text, "refusal": None}
    if answer.calls:
        message["tool_calls"] = [
            {
                "id": f"call_{call.number}",
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in answer.calls
        ]
    return {
        "id": f"chatcmpl-{answer.reply_id}",
        "object": "chat.completion",
        "created": _CREATED,
        "model": model,
        "choices": []
        if empty
        else [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": _openai_finish(answer),
            }
        ],
        "usage": _openai_usage(answer.usage),
    }


def _openai_finish(answer: Answer) -> str:
    return answer.finish_reason or ("tool_calls" if answer.calls else "stop")


def _openai_usage(usage: TokenUsage) -> dict[str, int]:
    total = usage.input_tokens + usage.output_tokens
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": total,
    }


def openai_events(answer: Answer, model: str, *, empty: bool = False) -> list[str]:
    """The chunks of a streamed completion; `empty` sends only the final usage chunk (no choice ever)."""

    def chunk(delta: dict[str, Any] | None, finish_reason: str | None = None) -> str:
        choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
        data: dict[str, Any] = {
            "id": f"chatcmpl-{answer.reply_id}",
            "object": "chat.completion.chunk",
            "created": _CREATED,
            "model": model,
            "choices": choices,
        }
        if delta is None:
            data["usage"] = _openai_usage(answer.usage)
        return f"data: {json.dumps(data)}\n\n"

    if empty:
        return [chunk(None), "data: [DONE]\n\n"]
    events = [chunk({"role": "assistant", "content": ""})]
    if not answer.calls:
        events += [chunk({"content": piece}) for piece in pieces(answer.text or "")]
    # One call after the other, as OpenAI streams parallel calls: its id and name first, then its arguments.
    for index, call in enumerate(answer.calls):
        start = {"index": index, "id": f"call_{call.number}", "type": "function"}
        events.append(chunk({"tool_calls": [{**start, "function": {"name": call.name, "arguments": ""}}]}))
        events += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in pieces(call.arguments)
        ]
    events.append(chunk({}, _openai_finish(answer)))
    return [*events, chunk(None), "data: [DONE]\n\n"]


def _responses_output(answer: Answer, *, empty: bool) -> list[dict[str, Any]]:
    """The output items of a response: one `message` with its `output_text`, or one `function_call` per call."""
    if empty:
        return []
    if answer.calls:
        return [_function_call(call, call.arguments) for call in answer.calls]
    return [_output_message(answer, answer.text or "")]


def _output_message(answer: Answer, text: str | None, *, status: str = "completed") -> dict[str, Any]:
    content = [] if text is None else [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
    return {
        "type": "message",
        "id": f"msg_{answer.reply_id}",
        "role": "assistant",
        "status": status,
        "content": content,
    }


def _function_call(call: WireCall, arguments: str, *, status: str = "completed") -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{call.number}",
        "call_id": f"call_{call.number}",
        "name": call.name,
        "arguments": arguments,
        "status": status,
    }


def _responses_usage(usage: TokenUsage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


def responses_object(answer: Answer, model: str, *, empty: bool = False, status: str | None = None) -> dict[str, Any]:
    """A Responses API response carrying `answer`; `empty` sends `output: []`.

    An answer cut at the token limit is `incomplete` with `incomplete_details.reason` `max_output_tokens`.
    """
    cut_short = answer.finish_reason == "length"
    return {
        "id": f"resp_{answer.reply_id}",
        "object": "response",
        "created_at": _CREATED,
        "status": status or ("incomplete" if cut_short else "completed"),
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if cut_short else None,
        "instructions": None,
        "metadata": {},
        "model": model,
        "output": [] if status == "in_progress" else _responses_output(answer, empty=empty),
        "parallel_tool_calls": True,
        "temperature": None,
        "tool_choice": "auto",
        "tools": [],
        "top_p": None,
        "usage": None if status == "in_progress" else _responses_usage(answer.usage),
    }


def responses_events(answer: Answer, model: str, *, empty: bool = False) -> list[str]:
    """The events of a streamed response: its items opened, their text or arguments in deltas, then closed."""
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": responses_object(answer, model, status="in_progress")}
    ]
    items = _responses_output(answer, empty=empty)
    for index, item in enumerate(items):
        if item["type"] == "message":
            text = answer.text or ""
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            at = {"item_id": item["id"], "output_index": index, "content_index": 0}
            events += [
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": _output_message(answer, None, status="in_progress"),
                },
                {"type": "response.content_part.added", **at, "part": part},
                *(
                    {"type": "response.output_text.delta", **at, "delta": piece, "logprobs": []}
                    for piece in pieces(text)
                ),
                {"type": "response.output_text.done", **at, "text": text, "logprobs": []},
                {"type": "response.content_part.done", **at, "part": {**part, "text": text}},
            ]
        else:
            call = answer.calls[index]
            at = {"item_id": item["id"], "output_index": index}
            events += [
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": _function_call(call, "", status="in_progress"),
                },
                *(
                    {"type": "response.function_call_arguments.delta", **at, "delta": piece}
                    for piece in pieces(call.arguments)
                ),
                {"type": "response.function_call_arguments.done", **at, "arguments": call.arguments, "name": call.name},
            ]
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    final = responses_object(answer, model, empty=empty)
    done = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
    events.append({"type": done, "response": final})
    return [
        f"event: {event['type']}\ndata: {json.dumps({**event, 'sequence_number': number})}\n\n"
        for number, event in enumerate(events)
    ]


ANTHROPIC_ERRORS: Final[dict[int, str]] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def _anthropic_arguments(call: WireCall) -> object:
    """Anthropic's JSON `input` is an object, so a raw argument string that isn't one goes in verbatim."""
    try:
        return json.loads(call.arguments)
    except ValueError:
        return call.arguments


def _tool_use(call: WireCall, tool_input: object) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_{call.number}", "name": call.name, "input": tool_input}


def anthropic_message(answer: Answer, model: str, *, empty: bool = False) -> dict[str, Any]:
    """A message carrying `answer`, one `tool_use` block per call; `empty` sends `content: []`."""
    if answer.calls:
        content = [_tool_use(call, _anthropic_arguments(call)) for call in answer.calls]
    else:
        content = [{"type": "text", "text": answer.text}]
    return {
        "id": f"msg_{answer.reply_id}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [] if empty else content,
        "stop_reason": _anthropic_stop(answer),
        "stop_sequence": None,
        "usage": _anthropic_usage(answer.usage.input_tokens, answer.usage.output_tokens),
    }


def _anthropic_stop(answer: Answer) -> str:
    if answer.finish_reason == "length":
        return "max_tokens"
    return "tool_use" if answer.calls else "end_turn"


def _anthropic_usage(input_tokens: int, output_tokens: int) -> dict[str, int]:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def anthropic_events(answer: Answer, model: str, *, empty: bool = False) -> list[str]:
    """The events of a streamed message; `empty` sends no content block at all."""

    def event(data: dict[str, Any]) -> str:
        return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"

    start = {**anthropic_message(answer, model), "content": [], "stop_reason": None}
    start["usage"] = _anthropic_usage(answer.usage.input_tokens, 1)
    # Each content block opens, takes its deltas and closes before the next one (a tool call's id and
    # name in its opening, its arguments as JSON pieces), as Anthropic streams several `tool_use` blocks.
    blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]]
    if answer.calls:
        blocks = [
            (
                _tool_use(call, {}),
                [{"type": "input_json_delta", "partial_json": piece} for piece in pieces(call.arguments)],
            )
            for call in answer.calls
        ]
    else:
        text_deltas = [{"type": "text_delta", "text": piece} for piece in pieces(answer.text or "")]
        blocks = [({"type": "text", "text": ""}, text_deltas)]
    content: list[str] = []
    for index, (block, deltas) in enumerate(blocks):
        content.append(event({"type": "content_block_start", "index": index, "content_block": block}))
        content += [event({"type": "content_block_delta", "index": index, "delta": delta}) for delta in deltas]
        content.append(event({"type": "content_block_stop", "index": index}))
    stop_reason = _anthropic_stop(answer)
    return [
        event({"type": "message_start", "message": start}),
        *([] if empty else content),
        event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": _anthropic_usage(answer.usage.input_tokens, answer.usage.output_tokens),
            }
        ),
        event({"type": "message_stop"}),
    ]


class _Owner(Protocol):
    """What the server hands its connections and requests to: a `FakeProviderServer`."""

    keep_alive: bool

    def _track(self, connection: socket.socket, *, add: bool) -> None: ...

    def _handle(self, handler: Handler) -> None: ...


class HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 drops connections a batch opens at once (each retried ~1 s later).
    request_queue_size = 1024

    def __init__(self, fake: _Owner, address: tuple[str, int] = ("127.0.0.1", 0)) -> None:
        self.fake = fake
        super().__init__(address, Handler)

    def handle_error(self, request: socket.socket | tuple[bytes, socket.socket], client_address: Any) -> None:
        # A client that gives up (a timeout test) or a cut we made is no server failure worth a traceback.
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 for chunked bodies, so a cut-off stream is detectably incomplete. Every response still says
    # `Connection: close` (unless the server keeps connections alive): the client then closes its socket
    # after each answer, and no pooled connection outlives a test to be reported as an unclosed transport.
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # Without it every small write waits ~40 ms for a delayed ACK.
    timeout = 60  # A safety net: an idle connection never outlives a forgotten server by long.
    server: HTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        finally:
            self.server.fake._track(self.connection, add=False)

    def do_POST(self) -> None:
        self.server.fake._handle(self)

    def do_GET(self) -> None:  # `/v1/models`, the batch endpoints' status and result downloads
        self.server.fake._handle(self)

    def do_DELETE(self) -> None:  # `DELETE /v1/files/{id}`: pydantic-ai deletes a completed batch's input file
        self.server.fake._handle(self)

    def log_message(self, format: str, *args: Any) -> None:
        return


def error_body(wire: Wire, error: ErrorReply) -> dict[str, Any]:
    """The provider's error body for `error`, as an HTTP error answer (or a batch's error line) carries it."""
    if wire in ("openai", "responses"):
        default_type, default_code = OPENAI_ERRORS.get(error.status, ("server_error", None))
        return {
            "error": {
                "message": error.message,
                "type": error.error_type or default_type,
                "param": None,
                "code": error.code or default_code,
            }
        }
    error_type = error.error_type or ANTHROPIC_ERRORS.get(error.status, "api_error")
    return {"type": "error", "error": {"type": error_type, "message": error.message}}


def send_error(handler: Handler, wire: Wire, error: ErrorReply) -> None:
    send_json(handler, error.status, error_body(wire, error), headers=error.headers)


def send_json(
    handler: Handler,
    status: int,
    payload: dict[str, Any],
    *,
    headers: Mapping[str, str] | None = None,
    truncate: bool = False,
) -> None:
    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    if not handler.server.fake.keep_alive:
        handler.send_header("Connection", "close")
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    if truncate:
        handler.wfile.write(data[: len(data) // 2])
        cut(handler.connection)
        handler.close_connection = True
    else:
        handler.wfile.write(data)


def send_stream(handler: Handler, events: list[str], *, truncate: bool) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    handler.send_header("Transfer-Encoding", "chunked")
    if not handler.server.fake.keep_alive:
        handler.send_header("Connection", "close")
    handler.end_headers()
    for event in events[: max(1, len(events) // 2)] if truncate else events:
        data = event.encode()
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
    if truncate:
        # No terminating zero-length chunk: the client sees an incomplete body, not a short stream.
        cut(handler.connection)
        handler.close_connection = True
    else:
        handler.wfile.write(b"0\r\n\r\n")


def cut(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)
