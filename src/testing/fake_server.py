"""A fake LLM provider on localhost that speaks the OpenAI and Anthropic wire formats over real HTTP.

The provider SDKs, their HTTP client and pydantic-ai's adapters all run for real, so a test sees what
a user's code would see from the provider: parsed output, retries on bad output, `ModelHTTPError` on
error statuses, connection errors on a dropped connection. Only the stdlib and `attrs` are imported
here; the SDKs are imported inside the methods that build pydantic-ai models.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import sys
import threading
from collections import deque
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Literal, Self, TypeAlias
from urllib.parse import urlsplit

import attrs

if TYPE_CHECKING:
    import httpx2
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.settings import ModelSettings

Wire: TypeAlias = Literal["openai", "anthropic"]

_WIRE_BY_PATH: Final[dict[str, Wire]] = {"/v1/chat/completions": "openai", "/v1/messages": "anthropic"}
_CREATED: Final = 1_700_000_000  # A fixed timestamp keeps recorded responses deterministic.


@attrs.frozen(kw_only=True)
class TokenUsage:
    """Token counts a reply reports; by default derived from the request and reply sizes (4 bytes a token)."""

    input_tokens: int
    output_tokens: int


@attrs.frozen
class TextReply:
    """The model answers with plain text."""

    text: str
    usage: TokenUsage | None = attrs.field(default=None, kw_only=True)


@attrs.frozen
class ToolCallReply:
    """The model calls a tool with `args`: a dict, or a raw string sent verbatim (so it can be malformed).

    `name=None` calls the tool the request forces through `tool_choice`, else the first tool it offers:
    pydantic-ai's output tool (usually `final_result`) for an agent with an output type and no function
    tools. pydantic-ai lists function tools before output tools, so name the tool when there are some.
    """

    args: Mapping[str, object] | str
    name: str | None = attrs.field(default=None, kw_only=True)
    usage: TokenUsage | None = attrs.field(default=None, kw_only=True)


@attrs.frozen(kw_only=True)
class ErrorReply:
    """An HTTP error with the provider's error body; `error_type` and `code` default to the provider's."""

    status: int
    message: str
    headers: Mapping[str, str] = attrs.field(factory=dict)
    error_type: str | None = None
    code: str | None = None


@attrs.frozen(kw_only=True)
class DisconnectReply:
    """The server reads the request, then closes the connection without answering."""


@attrs.frozen
class TruncatedStreamReply:
    """The server starts answering `text`, then closes the connection halfway through the body."""

    text: str


@attrs.frozen
class DelayedReply:
    """The server waits `seconds` before giving `reply`; use it with a short `ModelSettings(timeout=...)`."""

    seconds: float
    reply: ServerReply


ServerReply: TypeAlias = TextReply | ToolCallReply | ErrorReply | DisconnectReply | TruncatedStreamReply | DelayedReply
"""Anything `FakeProviderServer.script()` accepts."""


class Reply:
    """Constructors for replies: `server.script(Reply.tool_call(args={'x': 1}), Reply.text('done'))`."""

    @staticmethod
    def text(text: str, *, usage: TokenUsage | None = None) -> TextReply:
        """A plain text answer."""
        return TextReply(text, usage=usage)

    @staticmethod
    def tool_call(
        name: str | None = None,
        args: Mapping[str, object] | str | None = None,
        *,
        usage: TokenUsage | None = None,
    ) -> ToolCallReply:
        """A call to tool `name` (`None`: the first tool offered) with `args` (a dict, or a raw string)."""
        return ToolCallReply({} if args is None else args, name=name, usage=usage)

    @staticmethod
    def error(
        status: int,
        message: str,
        headers: Mapping[str, str] | None = None,
        *,
        error_type: str | None = None,
        code: str | None = None,
    ) -> ErrorReply:
        """An HTTP error `status` with a provider-shaped body carrying `message`."""
        return ErrorReply(status=status, message=message, headers=dict(headers or {}), error_type=error_type, code=code)

    @staticmethod
    def disconnect() -> DisconnectReply:
        """Close the connection without answering."""
        return DisconnectReply()

    @staticmethod
    def truncated_stream(text: str) -> TruncatedStreamReply:
        """Start answering `text` and cut the connection off midway."""
        return TruncatedStreamReply(text)

    @staticmethod
    def delay(seconds: float, reply: ServerReply) -> DelayedReply:
        """Give `reply` after `seconds`."""
        return DelayedReply(seconds, reply)


@attrs.frozen(kw_only=True)
class RecordedRequest:
    """One HTTP request the server received: header names are lowercased, `body` is the parsed JSON object."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def wire(self) -> Wire | None:
        """`'openai'` or `'anthropic'` by the request path, `None` for a path the server doesn't serve."""
        return _WIRE_BY_PATH.get(self.path)

    @property
    def streamed(self) -> bool:
        """Whether the client asked for a server-sent event stream."""
        return self.body.get("stream") is True


class FakeProviderServer:
    """A fake OpenAI/Anthropic provider on `127.0.0.1`, answering requests with scripted replies in order.

    Example:
        ```python
        with FakeProviderServer() as server:
            server.script(Reply.tool_call(args={'name': 'Ada'}))
            agent = Agent(server.openai_chat_model(), output_type=Person)
            with override_allow_model_requests(True):
                assert Person(name='Ada') == agent.run_sync('Who?').output
            assert 'tools' in server.requests[0].body
        ```

    Routes: `POST /v1/chat/completions` (OpenAI chat completions) and `POST /v1/messages` (Anthropic
    messages), each as JSON or, when the body has `"stream": true`, as server-sent events. When the
    script runs out the server answers HTTP 500 "no scripted reply left" with `x-should-retry: false`, so
    the SDKs don't retry it. Every request is recorded in `requests`, in order.

    Code that builds its model from a model string reaches the server through the SDKs' environment
    variables: `OPENAI_BASE_URL=server.openai_base_url` with `openai-chat:<model>`, and
    `ANTHROPIC_BASE_URL=server.anthropic_base_url` with `anthropic:<model>` (with any `OPENAI_API_KEY` /
    `ANTHROPIC_API_KEY`). Those models keep the SDKs' default of 2 retries with backoff on 5xx, 429 and
    dropped connections; the models from `openai_chat_model()` and `anthropic_model()` try once.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._replies: deque[ServerReply] = deque()
        self._scripted = 0
        self._requests: list[RecordedRequest] = []
        self._connections: set[socket.socket] = set()
        self._closing = threading.Event()
        self._ids = itertools.count(1)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # Lifecycle

    def start(self) -> Self:
        """Bind a free port on 127.0.0.1 and serve in a background thread; `close()` stops it."""
        if self._closing.is_set():
            raise RuntimeError("This FakeProviderServer was closed; create a new one.")
        if self._httpd is None:
            self._httpd = _HTTPServer(self)
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                # `close()` waits up to one poll interval for the loop to notice; 10 ms keeps teardown quick.
                kwargs={"poll_interval": 0.01},
                name="fake-provider",
                daemon=True,
            )
            self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving, drop open connections (waking delayed replies) and free the port; idempotent."""
        self._closing.set()
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            _cut(connection)
        httpd.server_close()  # Joins the handler threads, which the cut connections let finish.
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # Script and record

    def script(self, *replies: ServerReply) -> None:
        """Queue `replies`; each request to a served path takes the next one."""
        with self._lock:
            self._replies.extend(replies)
            self._scripted += len(replies)

    @property
    def pending(self) -> int:
        """How many scripted replies are still unused."""
        with self._lock:
            return len(self._replies)

    @property
    def requests(self) -> list[RecordedRequest]:
        """A copy of every request received so far, in order."""
        with self._lock:
            return list(self._requests)

    # Addresses and models

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:<port>`, once started."""
        if self._httpd is None:
            raise RuntimeError(
                "The FakeProviderServer is not running: call `start()` or use `with FakeProviderServer()`."
            )
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def openai_base_url(self) -> str:
        """The `base_url` for the OpenAI SDK (it appends `/chat/completions`)."""
        return f"{self.base_url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The `base_url` for the Anthropic SDK (it appends `/v1/messages` itself)."""
        return self.base_url

    def openai_chat_model(
        self, model_name: str = "gpt-4o-mini", *, max_retries: int = 0, settings: ModelSettings | None = None
    ) -> OpenAIChatModel:
        """A pydantic-ai `OpenAIChatModel` wired to this server, dummy key, `max_retries` SDK retries."""
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        provider = OpenAIProvider(base_url=self.openai_base_url, api_key="test-key", http_client=_http_client())
        return OpenAIChatModel(model_name, provider=provider, settings=_with_retries(max_retries, settings))

    def anthropic_model(
        self,
        model_name: str = "claude-haiku-4-5",
        *,
        max_retries: int = 0,
        settings: ModelSettings | None = None,
    ) -> AnthropicModel:
        """A pydantic-ai `AnthropicModel` wired to this server, dummy key, `max_retries` SDK retries."""
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        provider = AnthropicProvider(base_url=self.anthropic_base_url, api_key="test-key", http_client=_http_client())
        return AnthropicModel(model_name, provider=provider, settings=_with_retries(max_retries, settings))

    # Called from handler threads

    def _track(self, connection: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)
        if add and self._closing.is_set():
            _cut(connection)

    def _record(self, request: RecordedRequest) -> int:
        with self._lock:
            self._requests.append(request)
            return len(self._requests)

    def _next_reply(self, number: int) -> ServerReply | ErrorReply:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
            scripted = self._scripted
        message = (
            f"FakeProviderServer: no scripted reply left for request #{number} "
            f"({scripted} scripted). Add replies with `server.script(...)`."
        )
        return _final(500, message)

    def _handle(self, handler: _Handler) -> None:
        path = urlsplit(handler.path).path
        raw = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        try:
            parsed: object = json.loads(raw) if raw else {}
        except ValueError:
            parsed = None
        body: dict[str, Any] = parsed if isinstance(parsed, dict) else {}
        headers = {name.lower(): value for name, value in handler.headers.items()}
        number = self._record(RecordedRequest(path=path, headers=headers, body=body))
        wire = _WIRE_BY_PATH.get(path)
        if wire is None:
            hint = (
                " The Anthropic SDK appends `/v1/messages` to `server.anthropic_base_url`."
                if "messages" in path
                else ""
            )
            _send_error(handler, "openai", _final(404, f"The fake provider does not serve {path!r}.{hint}"))
            return
        if not isinstance(parsed, dict):
            _send_error(handler, wire, _final(400, f"Request #{number} has no JSON object as its body."))
            return
        self._answer(handler, wire, self._next_reply(number), body, raw_size=len(raw), number=number)

    def _answer(
        self,
        handler: _Handler,
        wire: Wire,
        reply: ServerReply,
        body: dict[str, Any],
        *,
        raw_size: int,
        number: int,
    ) -> None:
        match reply:
            case DelayedReply(seconds=seconds, reply=inner):
                if self._closing.wait(seconds):
                    _cut(handler.connection)
                    handler.close_connection = True
                else:
                    self._answer(handler, wire, inner, body, raw_size=raw_size, number=number)
            case ErrorReply():
                _send_error(handler, wire, reply)
            case DisconnectReply():
                _cut(handler.connection)
                handler.close_connection = True
            case TextReply() | ToolCallReply() | TruncatedStreamReply():
                answer = self._resolve(reply, wire, body, raw_size=raw_size, number=number)
                if isinstance(answer, ErrorReply):
                    _send_error(handler, wire, answer)
                    return
                model = str(body.get("model", "fake-model"))
                if body.get("stream") is True:
                    events = _openai_events(answer, model) if wire == "openai" else _anthropic_events(answer, model)
                    _send_stream(handler, events, truncate=isinstance(reply, TruncatedStreamReply))
                else:
                    payload = (
                        _openai_completion(answer, model) if wire == "openai" else _anthropic_message(answer, model)
                    )
                    _send_json(handler, 200, payload, truncate=isinstance(reply, TruncatedStreamReply))

    def _resolve(
        self,
        reply: TextReply | ToolCallReply | TruncatedStreamReply,
        wire: Wire,
        body: dict[str, Any],
        *,
        raw_size: int,
        number: int,
    ) -> _Answer | ErrorReply:
        """Settle what goes on the wire for a content reply: the tool name, the arguments as a string."""
        reply_id = next(self._ids)
        if isinstance(reply, ToolCallReply):
            name = reply.name or _offered_tool(wire, body)
            if name is None:
                return _final(
                    500,
                    f"FakeProviderServer: `Reply.tool_call()` without a name calls the first tool offered, "
                    f"but request #{number} offered none. Pass `name=`.",
                )
            arguments = reply.args if isinstance(reply.args, str) else json.dumps(dict(reply.args))
            usage = reply.usage or _estimated_usage(raw_size, arguments)
            return _Answer(reply_id=reply_id, text=None, tool_name=name, arguments=arguments, usage=usage)
        usage = (reply.usage if isinstance(reply, TextReply) else None) or _estimated_usage(raw_size, reply.text)
        return _Answer(reply_id=reply_id, text=reply.text, tool_name=None, arguments=None, usage=usage)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeProviderServer) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: socket.socket | tuple[bytes, socket.socket], client_address: Any) -> None:
        # A client that gives up (a timeout test) or a cut we made is no server failure worth a traceback.
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 for chunked bodies, so a cut-off stream is detectably incomplete. Every response still says
    # `Connection: close`: the client then closes its socket after each answer, and no pooled connection
    # outlives a test to be reported as an unclosed transport.
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # Without it every small write waits ~40 ms for a delayed ACK.
    timeout = 60  # A safety net: an idle connection never outlives a forgotten server by long.
    server: _HTTPServer

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

    def log_message(self, format: str, *args: Any) -> None:
        return


@attrs.frozen(kw_only=True)
class _Answer:
    reply_id: int
    text: str | None
    tool_name: str | None
    arguments: str | None
    usage: TokenUsage


_OPENAI_ERRORS: Final[dict[int, tuple[str, str | None]]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_error", None),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}
_ANTHROPIC_ERRORS: Final[dict[int, str]] = {
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


def _final(status: int, message: str) -> ErrorReply:
    """An error of the fake server itself, which the SDKs must not retry."""
    return ErrorReply(
        status=status, message=message, headers={"x-should-retry": "false"}, error_type="fake_server_error"
    )


def _http_client() -> httpx2.AsyncClient:
    """pydantic-ai's default client, minus the ~30 ms of loading CA certificates that plain HTTP never uses.

    The server closes every connection after its answer, so the client pools nothing: it needs no closing
    and can serve any event loop, which is what pydantic-ai otherwise manages for a client it creates.
    """
    import httpx2
    from pydantic_ai.models import create_async_httpx2_client

    return create_async_httpx2_client(transport=httpx2.AsyncHTTPTransport(verify=False))


def _with_retries(max_retries: int, settings: ModelSettings | None) -> ModelSettings:
    from pydantic_ai.settings import ModelSettings

    merged = ModelSettings(max_retries=max_retries)
    merged.update(settings or {})
    return merged


def _offered_tool(wire: Wire, body: dict[str, Any]) -> str | None:
    """The tool `tool_choice` forces or allows first, else the first tool offered."""
    choice = body.get("tool_choice")
    tools: object = body.get("tools")
    if isinstance(choice, dict):
        if choice.get("type") in ("function", "tool"):  # OpenAI and Anthropic forcing one tool
            tools = [choice]
        elif choice.get("type") == "allowed_tools":  # OpenAI restricting the choice to some tools
            tools = (choice.get("allowed_tools") or {}).get("tools")
    for tool in tools if isinstance(tools, list) else []:
        spec = tool.get("function", tool) if isinstance(tool, dict) else None
        if isinstance(spec, dict) and isinstance(name := spec.get("name"), str):
            return name
    return None


def _estimated_usage(request_size: int, output: str) -> TokenUsage:
    return TokenUsage(input_tokens=max(1, request_size // 4), output_tokens=max(1, len(output.encode()) // 4))


def _pieces(text: str, count: int = 3) -> list[str]:
    """`text` in up to `count` pieces, so streams carry several deltas."""
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _anthropic_arguments(answer: _Answer) -> object:
    """Anthropic's JSON `input` is an object, so a raw argument string that isn't one goes in verbatim."""
    assert answer.arguments is not None
    try:
        return json.loads(answer.arguments)
    except ValueError:
        return answer.arguments


def _openai_completion(answer: _Answer, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.text, "refusal": None}
    if answer.tool_name is not None:
        message["tool_calls"] = [
            {
                "id": f"call_{answer.reply_id}",
                "type": "function",
                "function": {"name": answer.tool_name, "arguments": answer.arguments},
            }
        ]
    return {
        "id": f"chatcmpl-{answer.reply_id}",
        "object": "chat.completion",
        "created": _CREATED,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "stop" if answer.tool_name is None else "tool_calls",
            }
        ],
        "usage": _openai_usage(answer.usage),
    }


def _openai_usage(usage: TokenUsage) -> dict[str, int]:
    total = usage.input_tokens + usage.output_tokens
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": total,
    }


def _openai_events(answer: _Answer, model: str) -> list[str]:
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

    events = [chunk({"role": "assistant", "content": ""})]
    if answer.tool_name is None:
        events += [chunk({"content": piece}) for piece in _pieces(answer.text or "")]
        events.append(chunk({}, "stop"))
    else:
        call = {"index": 0, "id": f"call_{answer.reply_id}", "type": "function"}
        events.append(chunk({"tool_calls": [{**call, "function": {"name": answer.tool_name, "arguments": ""}}]}))
        events += [
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            for piece in _pieces(answer.arguments or "")
        ]
        events.append(chunk({}, "tool_calls"))
    return [*events, chunk(None), "data: [DONE]\n\n"]


def _anthropic_message(answer: _Answer, model: str) -> dict[str, Any]:
    if answer.tool_name is None:
        content: dict[str, Any] = {"type": "text", "text": answer.text}
    else:
        content = {
            "type": "tool_use",
            "id": f"toolu_{answer.reply_id}",
            "name": answer.tool_name,
            "input": _anthropic_arguments(answer),
        }
    return {
        "id": f"msg_{answer.reply_id}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [content],
        "stop_reason": "end_turn" if answer.tool_name is None else "tool_use",
        "stop_sequence": None,
        "usage": _anthropic_usage(answer.usage.input_tokens, answer.usage.output_tokens),
    }


def _anthropic_usage(input_tokens: int, output_tokens: int) -> dict[str, int]:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def _anthropic_events(answer: _Answer, model: str) -> list[str]:
    def event(data: dict[str, Any]) -> str:
        return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"

    start = {**_anthropic_message(answer, model), "content": [], "stop_reason": None}
    start["usage"] = _anthropic_usage(answer.usage.input_tokens, 1)
    if answer.tool_name is None:
        block: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": piece} for piece in _pieces(answer.text or "")]
    else:
        block = {"type": "tool_use", "id": f"toolu_{answer.reply_id}", "name": answer.tool_name, "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in _pieces(answer.arguments or "")]
    stop_reason = "end_turn" if answer.tool_name is None else "tool_use"
    return [
        event({"type": "message_start", "message": start}),
        event({"type": "content_block_start", "index": 0, "content_block": block}),
        *(event({"type": "content_block_delta", "index": 0, "delta": delta}) for delta in deltas),
        event({"type": "content_block_stop", "index": 0}),
        event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": _anthropic_usage(answer.usage.input_tokens, answer.usage.output_tokens),
            }
        ),
        event({"type": "message_stop"}),
    ]


def _error_body(wire: Wire, error: ErrorReply) -> dict[str, Any]:
    if wire == "openai":
        default_type, default_code = _OPENAI_ERRORS.get(error.status, ("server_error", None))
        return {
            "error": {
                "message": error.message,
                "type": error.error_type or default_type,
                "param": None,
                "code": error.code or default_code,
            }
        }
    error_type = error.error_type or _ANTHROPIC_ERRORS.get(error.status, "api_error")
    return {"type": "error", "error": {"type": error_type, "message": error.message}}


def _send_error(handler: _Handler, wire: Wire, error: ErrorReply) -> None:
    _send_json(handler, error.status, _error_body(wire, error), headers=error.headers)


def _send_json(
    handler: _Handler,
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
    handler.send_header("Connection", "close")
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    if truncate:
        handler.wfile.write(data[: len(data) // 2])
        _cut(handler.connection)
        handler.close_connection = True
    else:
        handler.wfile.write(data)


def _send_stream(handler: _Handler, events: list[str], *, truncate: bool) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    handler.send_header("Transfer-Encoding", "chunked")
    handler.send_header("Connection", "close")
    handler.end_headers()
    for event in events[: max(1, len(events) // 2)] if truncate else events:
        data = event.encode()
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
    if truncate:
        # No terminating zero-length chunk: the client sees an incomplete body, not a short stream.
        _cut(handler.connection)
        handler.close_connection = True
    else:
        handler.wfile.write(b"0\r\n\r\n")


def _cut(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)
