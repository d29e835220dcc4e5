"""The fake provider's values: the replies a test scripts, the token usage they report, the requests it records.

A test builds replies with `Reply` and queues them with `FakeProviderServer.script()`; the server
turns each into an answer on the wire and records every request it receives as a `RecordedRequest`,
which also reads back the tools a request offered, the `ToolResult`s the client sent back and the
`ReceivedFile`s (images, documents, audio) it carried, on each of the three wires (OpenAI chat completions,
OpenAI responses, Anthropic messages); a request inside a provider batch is recorded the same way, with its
batch, custom id and how many times its body was submitted.
A content reply is settled for the wire as an `Answer` (its text or the `WireCall`s it makes, each
tool's arguments as text, its token usage, whether the token limit cut it), the same way for either
wire format, and cut into the deltas a stream carries.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final, Literal, TypeAlias

import attrs

__all__ = [
    "WIRE_BY_PATH",
    "Answer",
    "DelayedReply",
    "DisconnectReply",
    "EmptyReply",
    "ErrorReply",
    "ReceivedFile",
    "RecordedRequest",
    "Reply",
    "ServerReply",
    "TextReply",
    "TokenUsage",
    "ToolCallReply",
    "ToolCallsReply",
    "ToolResult",
    "TruncatedStreamReply",
    "Wire",
    "WireCall",
    "body_hash",
    "body_size",
    "estimated_usage",
    "offered_tool",
    "pieces",
]

Wire: TypeAlias = Literal["openai", "responses", "anthropic"]
"""OpenAI chat completions, OpenAI responses (the Responses API), Anthropic messages."""

WIRE_BY_PATH: Final[dict[str, Wire]] = {
    "/v1/chat/completions": "openai",
    "/v1/responses": "responses",
    "/v1/messages": "anthropic",
}


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


def _calls(calls: Iterable[ToolCallReply]) -> tuple[ToolCallReply, ...]:
    return tuple(calls)


def _one_usage(instance: ToolCallsReply, attribute: object, calls: tuple[ToolCallReply, ...]) -> None:
    """A usage error at scripting time: an answer holds at least one call and reports one token usage."""
    if not calls:
        raise ValueError("`Reply.tool_calls()` needs at least one call, e.g. `Reply.tool_calls(('lookup', {}))`.")
    if any(call.usage is not None for call in calls):
        raise ValueError(
            "The calls of `Reply.tool_calls()` share one answer and so one token usage: "
            "pass `usage=` to `Reply.tool_calls()`, not to its calls."
        )


@attrs.frozen
class ToolCallsReply:
    """The model calls several tools in one answer (parallel tool calls), in the order of `calls`.

    Each call gets its own tool call id, and the client runs them all before it asks the model again.
    A call with `name=None` calls the tool a `ToolCallReply` alone would call.
    """

    calls: tuple[ToolCallReply, ...] = attrs.field(converter=_calls, validator=_one_usage)
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


@attrs.frozen(kw_only=True)
class EmptyReply:
    """A well-formed answer that holds nothing: OpenAI `choices: []`, Anthropic `content: []`."""

    usage: TokenUsage | None = None


@attrs.frozen
class TruncatedStreamReply:
    """The server starts answering `text`, then closes the connection halfway through the body."""

    text: str


@attrs.frozen
class DelayedReply:
    """The server waits `seconds` before giving `reply`; use it with a short `ModelSettings(timeout=...)`."""

    seconds: float
    reply: ServerReply


ServerReply: TypeAlias = (
    TextReply
    | ToolCallReply
    | ToolCallsReply
    | EmptyReply
    | ErrorReply
    | DisconnectReply
    | TruncatedStreamReply
    | DelayedReply
)
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
    def tool_calls(
        *calls: tuple[str, Mapping[str, object] | str] | ToolCallReply,
        usage: TokenUsage | None = None,
    ) -> ToolCallsReply:
        """One answer calling several tools at once, each a `(name, args)` pair or a `ToolCallReply`.

        `Reply.tool_calls(('lookup_price', {'product': 'grinder'}), ('fx_convert', {'to': 'EUR'}))`
        """
        return ToolCallsReply(
            [call if isinstance(call, ToolCallReply) else ToolCallReply(call[1], name=call[0]) for call in calls],
            usage=usage,
        )

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
    def empty(*, usage: TokenUsage | None = None) -> EmptyReply:
        """An answer with no output at all: `choices: []` (OpenAI) or `content: []` (Anthropic)."""
        return EmptyReply(usage=usage)

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
class ToolResult:
    """A tool's result as the client sent it back to the model, for the call with id `call_id`.

    `content` is the text the model reads (text blocks joined); `is_error` is Anthropic's flag for a
    failed call, a retry included (OpenAI has no such flag: a retry there is only its message).
    """

    call_id: str
    content: str
    is_error: bool = False


@attrs.frozen(kw_only=True)
class RecordedRequest:
    """One HTTP request the server received: its `method`, header names lowercased, `body` the parsed JSON object.

    A request inside a provider batch (handed to the script or responder when its batch runs, never in
    `server.requests`) has the path its batch line names (`/v1/responses`, `/v1/chat/completions` or
    `/v1/messages`), no headers, its `batch_id` and `custom_id`, and its `submission`: 1 the first time a
    batch holds this body, 2 when it is submitted again (an expired request resubmitted), and so on.
    """

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    method: str = "POST"
    batch_id: str | None = None
    custom_id: str | None = None
    submission: int | None = None

    @property
    def wire(self) -> Wire | None:
        """`'openai'`, `'responses'` or `'anthropic'` by the path, `None` for a path the server doesn't serve."""
        return WIRE_BY_PATH.get(self.path)

    @property
    def streamed(self) -> bool:
        """Whether the client asked for a server-sent event stream."""
        return self.body.get("stream") is True

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools the request offered (function and output tools alike), in order."""
        tools = self.body.get("tools")
        return [name for tool in (tools if isinstance(tools, list) else []) if (name := _tool_name(tool))]

    @property
    def tool_results(self) -> list[ToolResult]:
        """The tool results the request carried back to the model, in order, for any wire format.

        OpenAI chat completions sends each as a `{"role": "tool"}` message, the Responses API as a
        `function_call_output` input item, Anthropic as `tool_result` blocks in a user message.
        """
        results: list[ToolResult] = []
        for message in self._messages():
            if not isinstance(message, dict):
                continue
            if self.wire == "responses" and message.get("type") == "function_call_output":
                content = _text(message.get("output"))
                results.append(ToolResult(call_id=str(message.get("call_id")), content=content))
            elif self.wire == "openai" and message.get("role") == "tool":
                content = _text(message.get("content"))
                results.append(ToolResult(call_id=str(message.get("tool_call_id")), content=content))
            elif self.wire == "anthropic" and isinstance(blocks := message.get("content"), list):
                results += [
                    ToolResult(
                        call_id=str(block.get("tool_use_id")),
                        content=_text(block.get("content")),
                        is_error=block.get("is_error") is True,
                    )
                    for block in blocks
                    if isinstance(block, dict) and block.get("type") == "tool_result"
                ]
        return results

    @property
    def files(self) -> list[ReceivedFile]:
        """The images, documents and audio files the request's messages carried, in order, for any wire format.

        OpenAI chat completions sends them as `image_url`, `input_audio` and `file` content parts, the
        Responses API as `input_image` and `input_file` parts, Anthropic as `image` and `document` blocks;
        inline data (base64, a `data:` URL) is decoded to give its size and SHA-256.
        """
        found: list[ReceivedFile] = []
        for message in self._messages():
            content = message.get("content") if isinstance(message, dict) else None
            for part in content if isinstance(content, list) else []:
                if isinstance(part, dict):
                    found.extend(_received(part))
        return found

    def _messages(self) -> list[Any]:
        """The conversation: `messages` (chat completions, Anthropic) or the `input` items (Responses API)."""
        messages = self.body.get("input" if self.wire == "responses" else "messages")
        return messages if isinstance(messages, list) else []


@attrs.frozen(kw_only=True)
class ReceivedFile:
    """An image, document or audio file a request carried, as the server read it off the wire.

    `part` is the wire's name for it (`image_url`, `input_audio`, `file`; the Responses API's `input_image`,
    `input_file`; Anthropic's `image`, `document`).
    Inline content has its decoded `size` and `sha256` (and `media_type` where the wire says it); content
    sent by reference has its `url` instead.
    """

    part: str
    media_type: str | None = None
    size: int | None = None
    sha256: str | None = None
    url: str | None = None
    filename: str | None = None


_AUDIO_FORMATS: Final = {"wav": "audio/wav", "mp3": "audio/mpeg"}


def _received(part: dict[str, Any]) -> Iterator[ReceivedFile]:
    kind = part.get("type")
    spec = part.get(kind) if isinstance(kind, str) else None
    if kind == "image_url" and isinstance(spec, dict):
        yield _from_url(kind, str(spec.get("url", "")))
    elif kind == "input_audio" and isinstance(spec, dict):
        data = str(spec.get("data", ""))
        fmt = str(spec.get("format", ""))
        if data.startswith("data:"):
            yield _from_url(kind, data)
        else:
            yield _inline(kind, _AUDIO_FORMATS.get(fmt, f"audio/{fmt}"), data)
    elif kind == "file" and isinstance(spec, dict):
        filename = spec.get("filename")
        found = _from_url(kind, str(spec.get("file_data", "")))
        yield attrs.evolve(found, filename=filename if isinstance(filename, str) else None)
    elif kind == "input_image" and isinstance(url := part.get("image_url"), str):
        yield _from_url(kind, url)
    elif kind == "input_file":
        filename = part.get("filename")
        reference = part.get("file_data") or part.get("file_url") or ""
        found = _from_url(kind, str(reference))
        yield attrs.evolve(found, filename=filename if isinstance(filename, str) else None)
    elif kind in ("image", "document") and isinstance(source := part.get("source"), dict):
        media_type = source.get("media_type")
        if source.get("type") == "base64":
            yield _inline(kind, str(media_type), str(source.get("data", "")))
        elif source.get("type") == "url":
            yield ReceivedFile(part=kind, url=str(source.get("url")))
        elif source.get("type") == "text":
            yield _sized(kind, str(media_type), str(source.get("data", "")).encode())


def _from_url(part: str, url: str) -> ReceivedFile:
    if not url.startswith("data:"):
        return ReceivedFile(part=part, url=url)
    header, _, payload = url[5:].partition(",")
    return _inline(part, header.split(";", 1)[0] or None, payload)


def _inline(part: str, media_type: str | None, payload: str) -> ReceivedFile:
    try:
        data = base64.b64decode(payload, validate=True)
    except (ValueError, binascii.Error):
        return ReceivedFile(part=part, media_type=media_type)
    return _sized(part, media_type, data)


def _sized(part: str, media_type: str | None, data: bytes) -> ReceivedFile:
    return ReceivedFile(part=part, media_type=media_type, size=len(data), sha256=hashlib.sha256(data).hexdigest())


def _tool_name(tool: object) -> str | None:
    """The name of a tool as offered: OpenAI nests it under `function`, Anthropic does not."""
    spec = tool.get("function", tool) if isinstance(tool, dict) else None
    name = spec.get("name") if isinstance(spec, dict) else None
    return name if isinstance(name, str) else None


def _text(content: object) -> str:
    """A message's content as text: a string as is, or its text parts joined (both wires allow a list)."""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "".join(part["text"] for part in parts if isinstance(part, dict) and isinstance(part.get("text"), str))


@attrs.frozen(kw_only=True)
class WireCall:
    """One tool call as it goes on the wire: `number` makes its id (`call_<n>`, `toolu_<n>`), unique per server."""

    number: int
    name: str
    arguments: str


@attrs.frozen(kw_only=True)
class Answer:
    """A content reply settled for the wire; `finish_reason` "length" says it was cut at the token limit."""

    reply_id: int
    text: str | None
    calls: tuple[WireCall, ...] = ()
    usage: TokenUsage
    finish_reason: Literal["length"] | None = None
    """None: it ended on its own (`stop`, or `tool_calls` for calls; Anthropic's `end_turn`, `tool_use`)."""


def offered_tool(wire: Wire, body: dict[str, Any]) -> str | None:
    """The tool `tool_choice` forces or allows first, else the first tool offered."""
    choice = body.get("tool_choice")
    tools: object = body.get("tools")
    if isinstance(choice, dict):
        if choice.get("type") in ("function", "tool"):  # OpenAI and Anthropic forcing one tool
            tools = [choice]
        elif choice.get("type") == "allowed_tools":  # OpenAI restricting the choice to some tools
            # Chat completions nests the list under `allowed_tools`; the Responses API does not.
            tools = (choice.get("allowed_tools") or choice).get("tools")
    for tool in tools if isinstance(tools, list) else []:
        if name := _tool_name(tool):
            return name
    return None


def body_size(body: Mapping[str, Any]) -> int:
    """The bytes of `body` as the SDKs send it: compact JSON, UTF-8 (what a batch request is sized by)."""
    return len(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode())


def body_hash(body: Mapping[str, Any]) -> str:
    """The SHA-256 of `body` as compact JSON with sorted keys: equal for the same request however it was sent."""
    return hashlib.sha256(
        json.dumps(body, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode()
    ).hexdigest()


def estimated_usage(request_size: int, output: str) -> TokenUsage:
    """The token usage of an answer whose reply gives none: 4 bytes a token of the request body and of the output."""
    return TokenUsage(input_tokens=max(1, request_size // 4), output_tokens=max(1, len(output.encode()) // 4))


def pieces(text: str, count: int = 3) -> list[str]:
    """`text` in up to `count` pieces, so streams carry several deltas."""
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]
