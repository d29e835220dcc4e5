"""What a fake provider run from the shell answers: schema-valid data, a replies file, delays and faults.

`python -m atomtask.testing serve` (`_serve`) gives its `FakeProviderServer` one `ServedAnswers` as its
responder. Each request is answered the way it asks, for either wire format:

- a call of its output tool when it offers one (a tool named `final_result...`, the tool `tool_choice`
  forces, or the first tool when a tool call is required), with that tool's parameters;
- JSON text when it asks for a JSON Schema response (`response_format` on OpenAI, `output_config` on
  Anthropic), or when its prompt carries pydantic-ai's prompted-output schema;
- plain text otherwise.

By default the value is the synthetic model's (`atomtask:synthetic`): an instance the schema accepts,
plausible where it can be, the same for the same request (or, with `serve --server NAME`, that local
server's small model's, `_servers`). With a replies file, its entries are used in order instead
(`read_replies`):

```yaml
- output: {name: Ada Lovelace, email: ada@example.com}   # sent as the request asks (tool call or JSON text)
- '{"name": "Grace Hopper", "email": null,}'              # a raw answer: the output tool's arguments, else text
- text: "Sorry, I cannot help with that."                 # plain text, whatever was asked
- tool_call: {product: grinder}                           # a call of a tool (`tool:` names it; default as above)
  tool: lookup_price
- error: 429                                              # an HTTP error, with an optional `message:`
  message: slow down
- disconnect: true                                        # the connection closed without an answer
- output: {name: Alan Turing}
  delay: 2.5                                              # any entry: wait this many seconds first
```

A file ending in `.jsonl` or `.ndjson` holds one entry a line as JSON (`{"output": {...}}`, `"raw"`);
any other is a YAML list (JSON included). A mistake is a `RepliesFileError` at the entry's file:line:col.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
from collections.abc import Callable
from pathlib import Path
from random import Random
from typing import Any, Final, Literal, TypeAlias

import attrs
import yaml
from atomtask.errors import RepliesFileError, SourceLocation, did_you_mean
from atomtask.testing._replies import (
    DelayedReply,
    DisconnectReply,
    ErrorReply,
    RecordedRequest,
    ServerReply,
    TextReply,
    ToolCallReply,
    offered_tool,
)

__all__ = ["FileReply", "ServedAnswers", "Target", "read_replies", "target_of", "tool_parameters"]

Kind: TypeAlias = Literal["raw", "output", "text", "tool_call", "error", "disconnect"]

_KINDS: Final[tuple[Kind, ...]] = ("output", "text", "tool_call", "error", "disconnect")
_KEYS: Final = (*_KINDS, "tool", "message", "delay")
_JSON_LINES: Final = (".jsonl", ".ndjson")
_PROMPTED: Final = "compatible with this schema:"  # pydantic-ai's default prompted-output instructions


@attrs.frozen(kw_only=True)
class FileReply:
    """One entry of a replies file; how it goes on the wire is settled against the request it answers.

    `kind` "raw" is a bare string entry: the output tool's arguments when the request offers one, else text.
    """

    kind: Kind
    value: Any = None
    tool: str | None = None
    message: str | None = None
    delay: float = 0.0
    location: SourceLocation


@attrs.frozen(kw_only=True)
class Target:
    """What a request asks for: a call of `tool` (with its `schema`), JSON text (`schema`, if known), or text."""

    kind: Literal["tool", "json", "text"]
    tool: str | None = None
    schema: Any = None


def target_of(request: RecordedRequest) -> Target:
    """The answer `request` asks for, read from its tools, `tool_choice` and response format (either wire)."""
    body = request.body
    tools = tool_parameters(body)
    choice = body.get("tool_choice")
    if tools and choice != "none":
        forced = offered_tool(request.wire or "openai", body) if isinstance(choice, dict) else None
        named = [name for name in tools if name.startswith("final_result")]
        required = choice in ("required", "any") or (isinstance(choice, dict) and choice.get("type") == "any")
        name = forced or (named[0] if named else None) or (next(iter(tools)) if required else None)
        if name is not None and name in tools:
            return Target(kind="tool", tool=name, schema=tools[name])
    native = _native_schema(body)
    if native is not None:
        return Target(kind="json", schema=native)
    prompted = _prompted_schema(body)
    if prompted is not None:
        return Target(kind="json", schema=prompted)
    response_format = body.get("response_format")
    if isinstance(response_format, dict) and response_format.get("type") == "json_object":
        return Target(kind="json", schema={"type": "object"})
    return Target(kind="text")


def tool_parameters(body: dict[str, Any]) -> dict[str, Any]:
    """The tools offered, by name, each with its parameters' JSON Schema (OpenAI nests them under `function`)."""
    found: dict[str, Any] = {}
    tools = body.get("tools")
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, dict):
            continue
        spec = tool.get("function", tool)
        name = spec.get("name") if isinstance(spec, dict) else None
        if isinstance(name, str):
            found[name] = spec.get("parameters", spec.get("input_schema", {"type": "object"}))
    return found


def _native_schema(body: dict[str, Any]) -> Any:
    response_format = body.get("response_format")
    if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        spec = response_format.get("json_schema")
        return spec.get("schema", {"type": "object"}) if isinstance(spec, dict) else {"type": "object"}
    for outer in (body.get("output_config"), {"format": body.get("output_format")}):
        fmt = outer.get("format") if isinstance(outer, dict) else None
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            return fmt.get("schema", {"type": "object"})
    return None


def _prompted_schema(body: dict[str, Any]) -> Any:
    """The schema pydantic-ai's prompted output writes into the instructions, when it is there."""
    for text in _texts(body):
        at = text.find(_PROMPTED)
        start = text.find("{", at) if at >= 0 else -1
        if start >= 0:
            try:
                schema, _ = json.JSONDecoder().raw_decode(text, start)
            except ValueError:
                continue
            return schema
    return None


def _texts(body: dict[str, Any]) -> list[str]:
    """Every piece of text of the system prompt and the messages (a string, or text blocks)."""
    found: list[str] = []

    def add(content: object) -> None:
        if isinstance(content, str):
            found.append(content)
        elif isinstance(content, list):
            found.extend(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))

    add(body.get("system"))
    messages = body.get("messages")
    for message in messages if isinstance(messages, list) else []:
        if isinstance(message, dict):
            add(message.get("content"))
    return found


def synthetic_reply(request: RecordedRequest, target: Target) -> ServerReply:
    """The synthetic model's answer to `request`: schema-valid, plausible, the same for the same request."""
    from atomtask.handlers._plausible import plausible_text
    from atomtask.handlers._synthetic import synthetic_instance

    seed = _seed(request, target)
    if target.kind == "tool":
        return ToolCallReply(_as_args(synthetic_instance(target.schema, seed)), name=target.tool)
    if target.kind == "json":
        return TextReply(json.dumps(synthetic_instance(target.schema, seed), ensure_ascii=False))
    return TextReply(plausible_text(Random(seed)))


def _seed(request: RecordedRequest, target: Target) -> int:
    """From what was said and asked, never from ids or times: the same request gets the same answer."""
    said = json.dumps([request.body.get("system"), request.body.get("messages"), target.schema], sort_keys=True)
    return int.from_bytes(hashlib.sha256(said.encode()).digest()[:8], "big")


def _as_args(value: Any) -> dict[str, Any] | str:
    return value if isinstance(value, dict) else json.dumps(value, ensure_ascii=False)


def file_reply(entry: FileReply, target: Target) -> ServerReply:
    """`entry` as the wire reply to a request that asks for `target`."""
    reply: ServerReply
    match entry.kind:
        case "raw" if target.kind == "tool":
            reply = ToolCallReply(str(entry.value), name=target.tool)
        case "raw" | "text":
            reply = TextReply(str(entry.value))
        case "output" if target.kind == "tool":
            reply = ToolCallReply(_as_args(entry.value), name=target.tool)
        case "output":
            value = entry.value
            reply = TextReply(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
        case "tool_call":
            reply = ToolCallReply(entry.value, name=entry.tool or target.tool)
        case "error":
            message = entry.message or f"Error {entry.value} from the replies file ({entry.location})."
            reply = ErrorReply(status=int(entry.value), message=message)
        case _:
            reply = DisconnectReply()
    return DelayedReply(entry.delay, reply) if entry.delay > 0 else reply


class ServedAnswers:
    """The responder of a served fake provider: faults first, then the replies file or synthetic data.

    `fail_first` requests are answered with HTTP `fail_status`; every answer waits `delay` seconds (over
    an entry's own `delay:`). Replies are used in order, again from the first with `cycle`; past the
    last, the server answers HTTP 500 saying so. Without replies, `default(request)` answers (None: the
    synthetic model, as the request asks). Each answer is reported to `log` as one line. It is called on
    the server's handler threads, so it takes a lock.
    """

    def __init__(
        self,
        *,
        replies: list[FileReply] | None = None,
        source: str | None = None,
        cycle: bool = False,
        delay: float = 0.0,
        fail_first: int = 0,
        fail_status: int = 500,
        default: Callable[[RecordedRequest], ServerReply] | None = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self._replies = replies
        self._default = default
        self._source = source
        self._cycle = cycle
        self._delay = delay
        self._fail_first = fail_first
        self._fail_status = fail_status
        self._log = log
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)
        self._used = 0

    def __call__(self, request: RecordedRequest) -> ServerReply:
        with self._lock:
            number = next(self._numbers)
            entry = self._next_entry() if number > self._fail_first else None
        target = target_of(request)
        reply: ServerReply
        if number <= self._fail_first:
            reply = ErrorReply(
                status=self._fail_status,
                message=f"Injected failure {number} of {self._fail_first} (`--fail-first {self._fail_first}`).",
            )
        elif self._replies is None:
            reply = synthetic_reply(request, target) if self._default is None else self._default(request)
        elif entry is None:
            reply = ErrorReply(
                status=500,
                message=f"No reply left in {self._source!r} ({len(self._replies)} replies, all used): add replies, "
                "pass `--cycle` to start again from the first, or restart the server.",
                headers={"x-should-retry": "false"},
                error_type="fake_server_error",
            )
        else:
            reply = file_reply(entry, target)
        if self._log is not None:
            self._log(f"#{number} {request.path} -> {describe(reply)}")
        return DelayedReply(self._delay, reply) if self._delay > 0 else reply

    def _next_entry(self) -> FileReply | None:
        if not self._replies:
            return None
        if self._used >= len(self._replies) and not self._cycle:
            return None
        entry = self._replies[self._used % len(self._replies)]
        self._used += 1
        return entry


def describe(reply: ServerReply, width: int = 100) -> str:
    """One short line saying what `reply` sends (for the server's log)."""
    text: str
    match reply:
        case DelayedReply(seconds=seconds, reply=inner):
            text = f"after {seconds:g} s, {describe(inner, width)}"
        case ToolCallReply(args=args, name=name):
            shown = args if isinstance(args, str) else json.dumps(dict(args), ensure_ascii=False)
            text = f"tool call {name or '(first tool)'} {shown}"
        case TextReply(text=content):
            text = f"text {json.dumps(content, ensure_ascii=False)}"
        case ErrorReply(status=status, message=message):
            text = f"HTTP {status} {message}"
        case DisconnectReply():
            text = "disconnect"
        case _:
            text = type(reply).__name__
    return text if len(text) <= width else text[: width - 3] + "..."


# Reading a replies file


def read_replies(path: Path) -> list[FileReply]:
    """The entries of the replies file at `path` (JSON lines, or a YAML list); raises `RepliesFileError`."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RepliesFileError(f"Cannot read the replies file {str(path)!r} ({exc.strerror}).") from None
    except UnicodeDecodeError as exc:
        raise RepliesFileError(
            f"The replies file {str(path)!r} is not UTF-8 text (byte offset {exc.start}); save it as UTF-8."
        ) from None
    entries = _json_lines(text, str(path)) if path.suffix in _JSON_LINES else _yaml_list(text, str(path))
    if not entries:
        raise RepliesFileError(
            "The replies file holds no replies; write one entry per answer (e.g. `- output: {name: Ada}`).",
            location=SourceLocation(file=str(path), line=1),
        )
    return entries


def _json_lines(text: str, file: str) -> list[FileReply]:
    entries = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RepliesFileError(
                f"Line {number} is not JSON ({exc.msg}); write one JSON value a line, e.g. "
                '`{"output": {"name": "Ada"}}`.',
                location=SourceLocation(file=file, line=number, column=exc.colno),
            ) from None
        where = SourceLocation(file=file, line=number, column=1)
        entries.append(_entry(value, where, {}))
    return entries


def _yaml_list(text: str, file: str) -> list[FileReply]:
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = _at(file, mark) if mark is not None else SourceLocation(file=file)
        raise RepliesFileError(f"Malformed YAML: {exc.problem or exc.context}.", location=where) from None
    except yaml.YAMLError as exc:
        raise RepliesFileError(f"Malformed YAML: {exc}.", location=SourceLocation(file=file)) from None
    if root is None:
        return []
    if not isinstance(root, yaml.SequenceNode):
        raise RepliesFileError(
            "A replies file is a list of replies (`- output: {...}`), or JSON lines in a `.jsonl` file.",
            location=_at(file, root.start_mark),
        )
    entries = []
    for node in root.value:
        value = yaml.SafeLoader("").construct_document(node)
        pairs = node.value if isinstance(node, yaml.MappingNode) else []
        keys = {str(key.value): _at(file, key.start_mark) for key, _ in pairs}
        entries.append(_entry(value, _at(file, node.start_mark), keys))
    return entries


def _at(file: str, mark: yaml.Mark) -> SourceLocation:
    return SourceLocation(file=file, line=mark.line + 1, column=mark.column + 1)


def _entry(value: Any, where: SourceLocation, keys: dict[str, SourceLocation]) -> FileReply:
    """One entry checked: a string, or a mapping with exactly one of `_KINDS` (and the keys that go with it)."""
    if isinstance(value, str):
        return FileReply(kind="raw", value=value, location=where)
    if not isinstance(value, dict):
        raise RepliesFileError(
            f"A reply is a string (the raw answer) or a mapping such as `{{output: ...}}`, not a "
            f"{type(value).__name__}.",
            location=where,
        )
    for key in value:
        if key not in _KEYS:
            hint = did_you_mean(str(key), _KEYS) or f" Valid keys: {', '.join(_KEYS)}."
            raise RepliesFileError(f"Unknown key {key!r} in a reply.{hint}", location=keys.get(str(key), where))
    kinds = sorted((key for key in _KINDS if key in value), key=list(value).index)  # as written
    if len(kinds) != 1:
        said = f"both `{kinds[0]}` and `{kinds[1]}`" if kinds else "none of them"
        raise RepliesFileError(
            f"A reply has exactly one of `{'`, `'.join(_KINDS)}`; this one has {said}.",
            location=keys.get(kinds[1], where) if len(kinds) > 1 else where,
        )
    kind = kinds[0]
    for extra, owner in (("tool", "tool_call"), ("message", "error")):
        if extra in value and kind != owner:
            raise RepliesFileError(f"`{extra}` goes with `{owner}`, not `{kind}`.", location=keys.get(extra, where))
    at = keys.get(kind, where)
    content = value[kind]
    if kind == "text" and not isinstance(content, str):
        raise RepliesFileError("`text` is the answer's text; write a string (quote it).", location=at)
    if kind == "tool_call" and not isinstance(content, dict | str):
        raise RepliesFileError("`tool_call` is the call's arguments: a mapping, or raw text.", location=at)
    if kind == "error" and not (isinstance(content, int) and 400 <= content <= 599 and not isinstance(content, bool)):
        raise RepliesFileError(f"`error` is an HTTP status from 400 to 599 (e.g. 429), not {content!r}.", location=at)
    if kind == "disconnect" and content is not True:
        raise RepliesFileError("Write `disconnect: true` to close the connection without an answer.", location=at)
    tool, message, delay = value.get("tool"), value.get("message"), value.get("delay", 0)
    if tool is not None and not isinstance(tool, str):
        raise RepliesFileError(
            "`tool` is the name of the tool to call; write a string.", location=keys.get("tool", where)
        )
    if message is not None and not isinstance(message, str):
        raise RepliesFileError("`message` is the error's text; write a string.", location=keys.get("message", where))
    if isinstance(delay, bool) or not isinstance(delay, int | float) or delay < 0:
        raise RepliesFileError(
            f"`delay` is seconds to wait (0 or more), not {delay!r}.", location=keys.get("delay", where)
        )
    return FileReply(kind=kind, value=content, tool=tool, message=message, delay=float(delay), location=where)
