"""The fake provider's values: the replies a test scripts, the token usage they report, the requests it records.

A test builds replies with `Reply` and queues them with `FakeProviderServer.script()`; the server
turns each into an answer on the wire and records every request it receives as a `RecordedRequest`.
A content reply is settled for the wire as an `Answer` (the tool it calls, its arguments as text, its
token usage), the same way for either wire format, and cut into the deltas a stream carries.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, TypeAlias

import attrs

__all__ = [
    "WIRE_BY_PATH",
    "Answer",
    "DelayedReply",
    "DisconnectReply",
    "EmptyReply",
    "ErrorReply",
    "RecordedRequest",
    "Reply",
    "ServerReply",
    "TextReply",
    "TokenUsage",
    "ToolCallReply",
    "TruncatedStreamReply",
    "Wire",
    "estimated_usage",
    "offered_tool",
    "pieces",
]

Wire: TypeAlias = Literal["openai", "anthropic"]

WIRE_BY_PATH: Final[dict[str, Wire]] = {"/v1/chat/completions": "openai", "/v1/messages": "anthropic"}


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
    TextReply | ToolCallReply | EmptyReply | ErrorReply | DisconnectReply | TruncatedStreamReply | DelayedReply
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
class RecordedRequest:
    """One HTTP request the server received: header names are lowercased, `body` is the parsed JSON object."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def wire(self) -> Wire | None:
        """`'openai'` or `'anthropic'` by the request path, `None` for a path the server doesn't serve."""
        return WIRE_BY_PATH.get(self.path)

    @property
    def streamed(self) -> bool:
        """Whether the client asked for a server-sent event stream."""
        return self.body.get("stream") is True


@attrs.frozen(kw_only=True)
class Answer:
    reply_id: int
    text: str | None
    tool_name: str | None
    arguments: str | None
    usage: TokenUsage


def offered_tool(wire: Wire, body: dict[str, Any]) -> str | None:
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


def estimated_usage(request_size: int, output: str) -> TokenUsage:
    return TokenUsage(input_tokens=max(1, request_size // 4), output_tokens=max(1, len(output.encode()) // 4))


def pieces(text: str, count: int = 3) -> list[str]:
    """`text` in up to `count` pieces, so streams carry several deltas."""
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]
