"""The HTTP side of the fake provider: a threaded server on 127.0.0.1 and the responses it writes.

`HTTPServer` hands every connection and `POST` to its owner (a `FakeProviderServer`); the `send_*`
functions write a JSON body, a chunked server-sent event stream or a provider-shaped error, each
optionally cut off midway, and `cut` drops a connection.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from atomtask.testing.anthropic_wire import ANTHROPIC_ERRORS
from atomtask.testing.openai_wire import OPENAI_ERRORS
from atomtask.testing.replies import ErrorReply, Wire

__all__ = ["HTTPServer", "Handler", "cut", "send_error", "send_json", "send_stream"]


class _Owner(Protocol):
    """What the server hands its connections and requests to: a `FakeProviderServer`."""

    keep_alive: bool

    def _track(self, connection: socket.socket, *, add: bool) -> None: ...

    def _handle(self, handler: Handler) -> None: ...


class HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 drops connections a batch opens at once (each retried ~1 s later).
    request_queue_size = 1024

    def __init__(self, fake: _Owner) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", 0), Handler)

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

    def do_GET(self) -> None:  # the batch endpoints' status and result downloads
        self.server.fake._handle(self)

    def log_message(self, format: str, *args: Any) -> None:
        return


def _error_body(wire: Wire, error: ErrorReply) -> dict[str, Any]:
    if wire == "openai":
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
    send_json(handler, error.status, _error_body(wire, error), headers=error.headers)


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
