"""What each kind of local OpenAI-compatible server accepts, refuses and enforces, for the fake provider's modes.

`FakeProviderServer(server=NAME)` (and `python -m atomtask.testing serve --server NAME`) answers
`/v1/chat/completions` as that server does, whatever the reply's source (a script, a responder, the default):

- llama-cpp-python (models `owned_by` "me") refuses a `json_schema` response format and an assistant
  message's `content: null` (HTTP 500, its validation errors), reads `max_tokens` only, constrains a
  `json_object` response format with a `schema` and a named `tool_choice` (never "required").
- ollama ("library") reads `max_tokens` only, constrains a `json_schema` response format, and calls a
  tool whenever tools are offered (the output tool `final_result...`, else the first; `tool_choice` ignored).
- vllm ("vllm") reads `max_completion_tokens`, else `max_tokens`; constrains `json_schema`, the body's
  `structured_outputs: {"json": schema}`, and a named or "required" `tool_choice`.
- llama-server ("llamacpp") reads `max_tokens` only; constrains `json_schema`, `json_object` with a
  `schema`, and a "required" `tool_choice` (a named one is read as "required").
- lmstudio ("organization_owner") refuses a `json_object` response format (HTTP 400, `{"error": "..."}`),
  reads `max_tokens` only, constrains `json_schema` and a "required" `tool_choice`.
- openai ("system") reads `max_completion_tokens`, else `max_tokens`, and answers as asked, as `serve` does.

A server cuts an answer longer than the limit it reads to about that many tokens (4 bytes a token,
as the usage estimate) with `finish_reason: "length"`. Its default answer is a small model's: right
(the synthetic model's schema-valid data) exactly where the server constrains decoding, else prose
that is no JSON, whatever the prompt or an unconstrained `json_object` asks; only the `openai` model
follows the prompt. The refusal bodies are each server's own shape; their exact text is the
emulation's best knowledge, to be checked against the real servers.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

import attrs
from atomtask.testing._replies import Answer, RecordedRequest, ServerReply, TokenUsage, WireCall

if TYPE_CHECKING:
    from atomtask.testing._served import Target

__all__ = ["SERVER_MODES", "LocalServer", "Refusal", "ServerName", "local_server", "models_page"]

ServerName: TypeAlias = Literal["llama-cpp-python", "ollama", "vllm", "llama-server", "lmstudio", "openai"]

SERVER_MODES: Final[tuple[ServerName, ...]] = (
    "llama-cpp-python",
    "ollama",
    "vllm",
    "llama-server",
    "lmstudio",
    "openai",
)
"""The local servers `FakeProviderServer(server=...)` emulates (`openai`: the hosted API)."""

JsonForm: TypeAlias = Literal["json_schema", "json_object_schema", "structured_outputs"]
"""How a request can constrain the answer to a JSON Schema: `response_format` of type `json_schema`, of type
`json_object` with a `schema` beside it, or vLLM's `structured_outputs: {"json": schema}` in the body."""

ToolForm: TypeAlias = Literal["named", "named_as_required", "required", "offered"]
"""When a server forces a tool call: a named `tool_choice` (that tool), a named one read as `required`,
`"required"` (the output tool, else the first), or whenever tools are offered (the model's own choice)."""

_CHARS_PER_TOKEN: Final = 4  # as `estimated_usage`
_PROSE: Final = "Sure! Here is the information you asked for: "


@attrs.frozen(kw_only=True)
class Refusal:
    """An error a server answers instead of a completion: its status and its own body (not always OpenAI's shape)."""

    status: int
    body: dict[str, Any]


@attrs.frozen(kw_only=True)
class LocalServer:
    """One kind of server: what it lists, refuses, reads of the token limits and constrains decoding to."""

    name: ServerName
    owner: str
    model_id: str
    limits: tuple[str, ...]
    """The token-limit fields it reads, the first one sent winning; the others it ignores."""
    json_forms: frozenset[JsonForm] = frozenset()
    tool_forms: frozenset[ToolForm] = frozenset()
    obedient: bool = False
    """A large model that follows the prompt (pydantic-ai's prompted schema, its output tool) unforced."""

    def models(self) -> dict[str, Any]:
        """The body of `GET /v1/models`."""
        return models_page(self.owner, self.model_id)

    def refusal(self, body: Mapping[str, Any]) -> Refusal | None:
        """The error the server answers `body` with, or None when it takes the request."""
        response_type = _response_format(body).get("type")
        if self.name == "lmstudio" and response_type == "json_object":
            return Refusal(status=400, body={"error": "'response_format.type' must be 'json_schema' or 'text'"})
        if self.name != "llama-cpp-python":
            return None
        errors: list[dict[str, Any]] = []  # what its pydantic request model reports, FastAPI's `loc` first
        if response_type == "json_schema":
            expected = "'text' or 'json_object'"
            errors.append(
                {
                    "type": "literal_error",
                    "loc": ("body", "response_format", "type"),
                    "msg": f"Input should be {expected}",
                    "input": response_type,
                    "ctx": {"expected": expected},
                }
            )
        messages = body.get("messages")
        for index, message in enumerate(messages if isinstance(messages, list) else []):
            if isinstance(message, dict) and message.get("role") == "assistant" and message.get("content", "") is None:
                errors.append(
                    {
                        "type": "string_type",
                        "loc": ("body", "messages", index, "content"),
                        "msg": "Input should be a valid string",
                        "input": None,
                    }
                )
        if not errors:
            return None
        error = {"message": repr(errors), "type": "internal_server_error", "param": None, "code": None}
        return Refusal(status=500, body={"error": error})

    def token_limit(self, body: Mapping[str, Any]) -> int | None:
        """The most output tokens the server lets the answer to `body` have (None: no limit sent that it reads)."""
        for field in self.limits:
            value = body.get(field)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
        return None

    def enforced(self, request: RecordedRequest) -> Target | None:
        """What the server constrains the answer to `request` to (a tool call, schema JSON), or None: free text."""
        from atomtask.testing._served import Target, target_of, tool_parameters

        if self.obedient:
            return target_of(request)
        body = request.body
        tools = tool_parameters(body)
        choice = body.get("tool_choice")
        named = _named_tool(choice)
        preferred = next((name for name in tools if name.startswith("final_result")), next(iter(tools), None))
        forced = (
            (named is not None and "named_as_required" in self.tool_forms)
            or (choice == "required" and "required" in self.tool_forms)
            or (bool(tools) and "offered" in self.tool_forms)
        )
        tool = named if named is not None and "named" in self.tool_forms else preferred if forced else None
        if tool is not None and tool in tools:
            return Target(kind="tool", tool=tool, schema=tools[tool])
        schema = self._json_schema(body)
        return None if schema is None else Target(kind="json", schema=schema)

    def _json_schema(self, body: Mapping[str, Any]) -> object:
        response_format = _response_format(body)
        kind = response_format.get("type")
        if kind == "json_schema" and "json_schema" in self.json_forms:
            spec = response_format.get("json_schema")
            return spec.get("schema", {"type": "object"}) if isinstance(spec, dict) else {"type": "object"}
        if kind == "json_object" and "schema" in response_format and "json_object_schema" in self.json_forms:
            return response_format["schema"]
        outputs = body.get("structured_outputs")
        if isinstance(outputs, dict) and "json" in outputs and "structured_outputs" in self.json_forms:
            return outputs["json"]
        return None

    def default_reply(self, request: RecordedRequest) -> ServerReply:
        """The server's small model answering `request`: schema-valid where decoding is constrained, else prose."""
        from atomtask.testing._replies import TextReply
        from atomtask.testing._served import Target, synthetic_reply

        target = self.enforced(request)
        if target is not None:
            return synthetic_reply(request, target)
        said = synthetic_reply(request, Target(kind="text"))
        return TextReply(_PROSE + (said.text if isinstance(said, TextReply) else ""))

    def within_limit(self, answer: Answer, body: Mapping[str, Any]) -> Answer:
        """`answer` cut to the token limit the server reads from `body`, with `finish_reason` "length"."""
        limit = self.token_limit(body)
        if limit is None or answer.usage.output_tokens <= limit:
            return answer
        room = limit * _CHARS_PER_TOKEN
        calls: list[WireCall] = []
        for call in answer.calls:
            if room <= 0:
                break
            calls.append(attrs.evolve(call, arguments=call.arguments[:room]))
            room -= len(call.arguments)
        return attrs.evolve(
            answer,
            text=None if answer.text is None else answer.text[: limit * _CHARS_PER_TOKEN],
            calls=tuple(calls),
            usage=TokenUsage(input_tokens=answer.usage.input_tokens, output_tokens=limit),
            finish_reason="length",
        )


_ONLY_MAX_TOKENS: Final = ("max_tokens",)
_EITHER: Final = ("max_completion_tokens", "max_tokens")

_SERVERS: Final[dict[str, LocalServer]] = {
    server.name: server
    for server in (
        LocalServer(
            name="llama-cpp-python",
            owner="me",
            model_id="models/SmolLM2-135M-Instruct-Q8_0.gguf",
            limits=_ONLY_MAX_TOKENS,
            json_forms=frozenset({"json_object_schema"}),
            tool_forms=frozenset({"named"}),
        ),
        LocalServer(
            name="ollama",
            owner="library",
            model_id="smollm2:135m",
            limits=_ONLY_MAX_TOKENS,
            json_forms=frozenset({"json_schema"}),
            tool_forms=frozenset({"offered"}),
        ),
        LocalServer(
            name="vllm",
            owner="vllm",
            model_id="HuggingFaceTB/SmolLM2-135M-Instruct",
            limits=_EITHER,
            json_forms=frozenset({"json_schema", "structured_outputs"}),
            tool_forms=frozenset({"named", "required"}),
        ),
        LocalServer(
            name="llama-server",
            owner="llamacpp",
            model_id="SmolLM2-135M-Instruct-Q8_0.gguf",
            limits=_ONLY_MAX_TOKENS,
            json_forms=frozenset({"json_schema", "json_object_schema"}),
            tool_forms=frozenset({"named_as_required", "required"}),
        ),
        LocalServer(
            name="lmstudio",
            owner="organization_owner",
            model_id="smollm2-135m-instruct",
            limits=_ONLY_MAX_TOKENS,
            json_forms=frozenset({"json_schema"}),
            tool_forms=frozenset({"required"}),
        ),
        LocalServer(name="openai", owner="system", model_id="gpt-4o-mini", limits=_EITHER, obedient=True),
    )
}


def local_server(name: str) -> LocalServer:
    """The server called `name` (one of `SERVER_MODES`); raises `ValueError` naming them for another name."""
    server = _SERVERS.get(name)
    if server is None:
        close = difflib.get_close_matches(name, SERVER_MODES, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"Unknown server {name!r}; the fake provider emulates {', '.join(SERVER_MODES)}.{hint}")
    return server


def models_page(owner: str, model_id: str) -> dict[str, Any]:
    """The body of `GET /v1/models` listing one model, owned by `owner` as the server says."""
    return {"object": "list", "data": [{"id": model_id, "object": "model", "owned_by": owner, "created": 0}]}


def _response_format(body: Mapping[str, Any]) -> dict[str, Any]:
    response_format = body.get("response_format")
    return response_format if isinstance(response_format, dict) else {}


def _named_tool(choice: object) -> str | None:
    """The tool a `{"type": "function", "function": {"name": ...}}` tool choice names."""
    if isinstance(choice, dict) and choice.get("type") == "function":
        function = choice.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        return name if isinstance(name, str) else None
    return None
