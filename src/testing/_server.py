"""A fake LLM provider on localhost that speaks the OpenAI and Anthropic wire formats over real HTTP.

OpenAI's chat completions and Responses API, Anthropic's messages, and the batch APIs of both. The
provider SDKs, their HTTP client and pydantic-ai's adapters all run for real, so a test sees what
a user's code would see from the provider: parsed output, retries on bad output, `ModelHTTPError` on
error statuses, connection errors on a dropped connection. Only the stdlib and `attrs` are imported
here; the SDKs are imported inside the methods that build pydantic-ai models.

The server itself lives here; the values a test scripts and reads back are in `_replies`, the three
wire formats and the HTTP plumbing in `_wire`, the batch endpoints (and the log of what was submitted
and paid) in `_batches`, what each kind of local
server accepts, refuses and enforces (the `server=` modes) in `_servers`. The kit's public names are
exported from `atomtask.testing`.
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
from collections import deque
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import urlsplit

from atomtask.testing._batches import FakeBatches
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
    ToolCallReply,
    ToolCallsReply,
    TruncatedStreamReply,
    Wire,
    WireCall,
    estimated_usage,
    offered_tool,
)
from atomtask.testing._servers import LocalServer, ServerName, local_server, models_page
from atomtask.testing._wire import (
    Handler,
    HTTPServer,
    anthropic_events,
    anthropic_message,
    cut,
    openai_completion,
    openai_events,
    responses_events,
    responses_object,
    send_error,
    send_json,
    send_stream,
)

if TYPE_CHECKING:
    import httpx2
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.settings import ModelSettings

__all__ = [
    "FakeProviderServer",
]


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

    Routes: `POST /v1/chat/completions` (OpenAI chat completions), `POST /v1/responses` (OpenAI's
    Responses API, which pydantic-ai's `OpenAIResponsesModel` and `openai:` model strings use) and
    `POST /v1/messages` (Anthropic messages), each as JSON or, when the body has `"stream": true`, as
    server-sent events; and the batch APIs pydantic-ai's `BatchModelRequests` calls (OpenAI files and
    batches, Anthropic message batches), programmed and logged through `server.batches` (`FakeBatches`),
    whose requests are answered by the same script or responder. When the
    script runs out the server answers HTTP 500 "no scripted reply left" with `x-should-retry: false`, so
    the SDKs don't retry it. Every request is recorded in `requests`, in order; the images, documents and
    audio a request carried are in its `files` (`ReceivedFile`: media type, decoded size, SHA-256, or the URL).

    A tool-call round trip: `Reply.tool_calls(...)` answers with one or more calls to the agent's function
    tools, each with an id unique to the server (`call_1`, `call_2`, ... on OpenAI; `toolu_1`, ... on
    Anthropic); the next request's `tool_results` hold what the tools returned, by call id:
        ```python
        server.script(
            Reply.tool_calls(('lookup_price', {'product': 'grinder'})),
            Reply.tool_call('final_result', {'price': 129.0}),
        )
        agent = Agent(server.anthropic_model(), output_type=Quote, tools=[lookup_price])
        assert Quote(price=129.0) == (await agent.run('Quote a grinder.')).output
        assert [ToolResult(call_id='toolu_1', content='129.0')] == server.requests[1].tool_results
        ```

    Code that builds its model from a model string reaches the server through the SDKs' environment
    variables: `OPENAI_BASE_URL=server.openai_base_url` with `openai-chat:<model>` (chat completions)
    or `openai:<model>` (responses), and
    `ANTHROPIC_BASE_URL=server.anthropic_base_url` with `anthropic:<model>` (with any `OPENAI_API_KEY` /
    `ANTHROPIC_API_KEY`). Those models keep the SDKs' default of 2 retries with backoff on 5xx, 429 and
    dropped connections; the models from `openai_chat_model()`, `openai_responses_model()` and
    `anthropic_model()` try once.

    Every answer closes its connection (`Connection: close`), so no pooled connection outlives a
    test; `keep_alive=True` keeps connections open between answers, as a real provider does (for
    benchmarks, where a new connection per request would be measured instead of the client).

    It listens on a free port of 127.0.0.1 unless `host` and `port` say otherwise (`python -m atomtask.testing
    serve --port 8765` runs one from the shell, `_serve`). `GET /v1/models` lists one model
    (counted in `model_listings`, not recorded in `requests`).

    `server=` (one of `SERVER_MODES`) answers chat completions as that kind of local server does
    (`_servers`): its `owned_by` in `/v1/models`, its refusals (before any scripted reply is used), the
    token limit it reads (`max_tokens` or `max_completion_tokens`: a longer answer is cut, with
    `finish_reason: "length"`) and, with no script or responder, a small model's answers: schema-valid
    only where the server constrains decoding, else prose. Without a mode a request's token limit cuts
    nothing and the script runs out as above.
        ```python
        with FakeProviderServer(server='llama-cpp-python') as server:
            agent = Agent(server.openai_chat_model(), output_type=NativeOutput(Person))
            with override_allow_model_requests(True), pytest.raises(ModelHTTPError):  # HTTP 500
                agent.run_sync('Who?')  # llama-cpp-python refuses a `json_schema` response format
        ```
    """

    def __init__(
        self, *, keep_alive: bool = False, host: str = "127.0.0.1", port: int = 0, server: str | None = None
    ) -> None:
        self.keep_alive = keep_alive
        self._mode: LocalServer | None = None if server is None else local_server(server)
        self._address = (host, port)
        self._lock = threading.Lock()
        self._replies: deque[ServerReply] = deque()
        self._scripted = 0
        self._responder: Callable[[RecordedRequest], ServerReply] | None = None
        self._requests: list[RecordedRequest] = []
        self._listings = 0  # `GET /v1/models` asked
        self._connections: set[socket.socket] = set()
        self._closing = threading.Event()
        self._ids = itertools.count(1)
        self._call_ids = itertools.count(1)  # Tool call ids are unique across answers, as a conversation needs.
        self._httpd: HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.batches = FakeBatches(self)  # the batch endpoints' state (`_batches`)

    # Lifecycle

    def start(self) -> Self:
        """Bind the port (a free one by default) and serve in a background thread; `close()` stops it.

        Raises `OSError` when the address cannot be bound (a port in use, an unknown host).
        """
        if self._closing.is_set():
            raise RuntimeError("This FakeProviderServer was closed; create a new one.")
        if self._httpd is None:
            self._httpd = HTTPServer(self, self._address)
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
            cut(connection)
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

    def respond_with(self, responder: Callable[[RecordedRequest], ServerReply] | None) -> None:
        """Answer every request the script does not cover with `responder(request)` (None: stop).

        For many concurrent requests whose order is not known (a batch), the reply can depend on the
        request: `server.respond_with(lambda r: Reply.tool_call(args=...) if "a" in str(r.body) else ...)`.
        It is called on the server's handler threads, so it must be thread-safe.
        """
        with self._lock:
            self._responder = responder

    @property
    def server(self) -> ServerName | None:
        """The kind of server emulated (one of `SERVER_MODES`), None for the plain fake provider."""
        return None if self._mode is None else self._mode.name

    @property
    def pending(self) -> int:
        """How many scripted replies are still unused."""
        with self._lock:
            return len(self._replies)

    @property
    def requests(self) -> list[RecordedRequest]:
        """A copy of every request received so far, in order (but `GET /v1/models`: see `model_listings`)."""
        with self._lock:
            return list(self._requests)

    @property
    def model_listings(self) -> int:
        """How many times `GET /v1/models` was asked (atomtask asks once per base URL, to know the server's kind)."""
        with self._lock:
            return self._listings

    # Addresses and models

    @property
    def base_url(self) -> str:
        """`http://<host>:<port>` (`http://127.0.0.1:<port>` by default), once started."""
        if self._httpd is None:
            raise RuntimeError(
                "The FakeProviderServer is not running: call `start()` or use `with FakeProviderServer()`."
            )
        return f"http://{self._address[0]}:{self._httpd.server_address[1]}"

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

    def openai_responses_model(
        self, model_name: str = "gpt-4o-mini", *, max_retries: int = 0, settings: ModelSettings | None = None
    ) -> OpenAIResponsesModel:
        """A pydantic-ai `OpenAIResponsesModel` wired to this server, dummy key, `max_retries` SDK retries.

        The model `BatchModelRequests` batches OpenAI requests through (`POST /v1/responses` lines).
        """
        from pydantic_ai.models.openai import OpenAIResponsesModel
        from pydantic_ai.providers.openai import OpenAIProvider

        provider = OpenAIProvider(base_url=self.openai_base_url, api_key="test-key", http_client=_http_client())
        return OpenAIResponsesModel(model_name, provider=provider, settings=_with_retries(max_retries, settings))

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
            cut(connection)

    def _record(self, request: RecordedRequest) -> int:
        with self._lock:
            self._requests.append(request)
            return len(self._requests)

    def _next_reply(self, number: int, request: RecordedRequest | None = None) -> ServerReply | ErrorReply:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
            scripted = self._scripted
            responder = self._responder
        if responder is not None and request is not None:
            return responder(request)
        if self._mode is not None and request is not None and request.wire == "openai":
            return self._mode.default_reply(request)
        message = (
            f"FakeProviderServer: no scripted reply left for {_which(number, request)} "
            f"({scripted} scripted). Add replies with `server.script(...)` or `server.respond_with(...)`."
        )
        return _final(500, message)

    def _handle(self, handler: Handler) -> None:
        path = urlsplit(handler.path).path
        raw = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        try:
            parsed: object = json.loads(raw) if raw else {}
        except ValueError:
            parsed = None
        body: dict[str, Any] = parsed if isinstance(parsed, dict) else {}
        headers = {name.lower(): value for name, value in handler.headers.items()}
        if path == "/v1/models" and handler.command == "GET":  # a client asking what serves here: not a model request
            with self._lock:
                self._listings += 1
            page = models_page("atomtask-fake", "fake-model") if self._mode is None else self._mode.models()
            send_json(handler, 200, page)
            return
        request = RecordedRequest(path=path, headers=headers, body=body, method=handler.command)
        number = self._record(request)
        if FakeBatches.serves(path):
            self.batches.handle(handler, path, raw, headers)
            return
        wire = WIRE_BY_PATH.get(path)
        if wire is None:
            hint = (
                " The Anthropic SDK appends `/v1/messages` to `server.anthropic_base_url`."
                if "messages" in path
                else ""
            )
            send_error(handler, "openai", _final(404, f"The fake provider does not serve {path!r}.{hint}"))
            return
        if not isinstance(parsed, dict):
            send_error(handler, wire, _final(400, f"Request #{number} has no JSON object as its body."))
            return
        refusal = self._mode.refusal(body) if self._mode is not None and wire == "openai" else None
        if refusal is not None:
            send_json(handler, refusal.status, refusal.body)
            return
        self._answer(handler, wire, self._next_reply(number, request), body, raw_size=len(raw), number=number)

    def _answer(
        self,
        handler: Handler,
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
                    cut(handler.connection)
                    handler.close_connection = True
                else:
                    self._answer(handler, wire, inner, body, raw_size=raw_size, number=number)
            case ErrorReply():
                send_error(handler, wire, reply)
            case DisconnectReply():
                cut(handler.connection)
                handler.close_connection = True
            case TextReply() | ToolCallReply() | ToolCallsReply() | TruncatedStreamReply() | EmptyReply():
                answer = self._resolve(reply, wire, body, raw_size=raw_size, number=number)
                if isinstance(answer, ErrorReply):
                    send_error(handler, wire, answer)
                    return
                if self._mode is not None and wire == "openai":
                    answer = self._mode.within_limit(answer, body)
                model = str(body.get("model", "fake-model"))
                empty = isinstance(reply, EmptyReply)
                self.batches.paid_live(answer.usage)  # Sent (even cut off), so billed as a real provider bills it.
                truncate = isinstance(reply, TruncatedStreamReply)
                if body.get("stream") is True:
                    stream = {"openai": openai_events, "responses": responses_events, "anthropic": anthropic_events}
                    send_stream(handler, stream[wire](answer, model, empty=empty), truncate=truncate)
                else:
                    whole = {"openai": openai_completion, "responses": responses_object, "anthropic": anthropic_message}
                    send_json(handler, 200, whole[wire](answer, model, empty=empty), truncate=truncate)

    def _resolve(
        self,
        reply: TextReply | ToolCallReply | ToolCallsReply | TruncatedStreamReply | EmptyReply,
        wire: Wire,
        body: dict[str, Any],
        *,
        raw_size: int,
        number: int,
    ) -> Answer | ErrorReply:
        """Settle what goes on the wire for a content reply: each tool's name and id, its arguments as a string."""
        reply_id = next(self._ids)
        if isinstance(reply, ToolCallReply | ToolCallsReply):
            calls: list[WireCall] = []
            for call in (reply,) if isinstance(reply, ToolCallReply) else reply.calls:
                name = call.name or offered_tool(wire, body)
                if name is None:
                    return _final(
                        500,
                        f"FakeProviderServer: a tool call without a name (`Reply.tool_call()`) calls the first "
                        f"tool offered, but {_which(number, None)} offered none. Pass `name=`.",
                    )
                arguments = call.args if isinstance(call.args, str) else json.dumps(dict(call.args))
                calls.append(WireCall(number=next(self._call_ids), name=name, arguments=arguments))
            usage = reply.usage or estimated_usage(raw_size, "".join(call.arguments for call in calls))
            return Answer(reply_id=reply_id, text=None, calls=tuple(calls), usage=usage)
        if isinstance(reply, EmptyReply):
            usage = reply.usage or estimated_usage(raw_size, "")
            return Answer(reply_id=reply_id, text=None, usage=usage)
        usage = (reply.usage if isinstance(reply, TextReply) else None) or estimated_usage(raw_size, reply.text)
        return Answer(reply_id=reply_id, text=reply.text, usage=usage)


def _which(number: int, request: RecordedRequest | None) -> str:
    """How an error names a request: its number on the server, or its place in a batch (`number` 0)."""
    if request is not None and request.batch_id is not None:
        return f"batch request {request.custom_id!r} of batch {request.batch_id!r}"
    return f"request #{number}" if number else "a batch request"


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
