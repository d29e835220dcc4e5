"""Server profiles: what each kind of OpenAI-compatible endpoint honours, and which one a base URL is.

Local servers speak OpenAI's chat completions, each with a dialect of its own for structured output. A
`ServerProfile` says, for one kind of server, how each output mode is best sent there: the body fields
that make it decode under a grammar built from the schema (llama-cpp-python's `json_object` with a
`schema`, vLLM's `structured_outputs`, `json_schema` response formats), which tool choices it enforces,
which field carries the token limit, and what it refuses. `mode_support` turns that into a verdict per
output mode, the same one `atomtask check` gives before a run and a call gives before its request.

A profile is chosen by name (`server=` of a `TaskSystem`, `--server`), by the provider prefix where
pydantic-ai has one (`ollama:`), or detected once per base URL (`detect_server`: one `GET /models`,
whose `owned_by` each server fills in its own way) and remembered for the process. Nothing here imports
pydantic-ai or makes a request at import time.
"""

from __future__ import annotations

import json
import threading
from typing import Final, Literal, TypeAlias
from urllib.parse import urlsplit

import attrs
from atomtask.errors import ConfigurationError, did_you_mean, near_names

__all__ = [
    "SERVER_PROFILES",
    "Endpoint",
    "ModeSupport",
    "ServerProfile",
    "detect_server",
    "forget_detected",
    "is_openai_url",
    "mode_support",
    "server_of_provider",
    "server_profile",
    "serves_locally",
]

#: How a JSON answer is constrained to the schema: OpenAI's `response_format: json_schema`, llama-cpp-python's
#: `response_format: {type: json_object, schema}`, or vLLM's `structured_outputs: {json: schema}`.
JsonForm: TypeAlias = Literal["json_schema", "json_object_schema", "structured_outputs"]
ToolChoice: TypeAlias = Literal["named", "required"]


@attrs.frozen(kw_only=True)
class ServerProfile:
    """What one kind of OpenAI-compatible server honours.

    - `native`: the form native mode (`mode: native`) is sent in; None: the server has no way to take a schema.
    - `prompted`: the constraint added to prompted mode (the schema is in the instructions either way); None: none.
    - `json_object`: whether it accepts `response_format: {type: json_object}` (pydantic-ai's prompted default).
    - `forced`: the tool choices it enforces (`named`: one function by name; `required`: some tool).
    - `free_tool_calls`: whether it returns tool calls the model chose on its own (`tool_choice: auto`).
    - `max_tokens_field`: the field it reads the token limit from.
    - `null_content`: whether it takes an assistant message with `content: null` beside its tool calls.
    """

    name: str
    title: str
    native: JsonForm | None
    prompted: JsonForm | None
    json_object: bool = True
    forced: frozenset[ToolChoice] = frozenset({"named", "required"})
    free_tool_calls: bool = True
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    null_content: bool = True


_PROFILES: Final = (
    ServerProfile(
        name="openai",
        title="OpenAI",
        native="json_schema",
        prompted=None,
        max_tokens_field="max_completion_tokens",
    ),
    ServerProfile(
        name="ollama",
        title="Ollama",
        native="json_schema",
        prompted="json_schema",
        forced=frozenset(),  # documented as unsupported: sent, not enforced
    ),
    ServerProfile(
        name="vllm",
        title="vLLM",
        native="json_schema",
        prompted="structured_outputs",
    ),
    ServerProfile(
        name="llama-server",
        title="llama.cpp's llama-server",
        native="json_schema",
        prompted="json_object_schema",
        forced=frozenset({"required"}),
    ),
    ServerProfile(
        name="llama-cpp-python",
        title="llama-cpp-python (python -m llama_cpp.server)",
        native="json_object_schema",
        prompted="json_object_schema",
        forced=frozenset({"named"}),
        free_tool_calls=False,
        null_content=False,
    ),
    ServerProfile(
        name="lmstudio",
        title="LM Studio",
        native="json_schema",
        prompted="json_schema",
        json_object=False,
        forced=frozenset({"required"}),
    ),
    ServerProfile(
        name="generic",
        title="an OpenAI-compatible server of unknown kind",
        native="json_schema",
        prompted=None,
        forced=frozenset({"required"}),  # pydantic-ai's own request: `tool_choice: required`
    ),
)

#: Every profile by name (`generic`: a server of unknown kind, sent what pydantic-ai sends but `max_tokens`).
SERVER_PROFILES: Final[dict[str, ServerProfile]] = {profile.name: profile for profile in _PROFILES}

# pydantic-ai providers that are one kind of server (their model strings need no detection).
_PROVIDER_SERVERS: Final = {"ollama": "ollama", "vllm": "vllm"}


def server_profile(name: str, *, where: str = "`server`") -> ServerProfile:
    """The profile named `name`; `ConfigurationError` with "did you mean" for an unknown one."""
    profile = SERVER_PROFILES.get(name)
    if profile is None:
        names = list(SERVER_PROFILES)
        raise ConfigurationError(
            f"Unknown server {name!r} in {where}.{did_you_mean(name, names)} Servers: {', '.join(names)} "
            "(`generic` for any other OpenAI-compatible endpoint).",
            suggestions=near_names(name, names),
        )
    return profile


def server_of_provider(provider: str | None) -> str | None:
    """The server a pydantic-ai provider prefix always means (`ollama` -> `ollama`), if any."""
    return _PROVIDER_SERVERS.get(provider or "")


def serves_locally(provider: str | None, *, base_url: str | None, named: ServerProfile | None) -> bool:
    """Whether a model of `provider` goes to a local OpenAI-compatible server: `ollama:` and `vllm:` always,
    `openai-chat:` when a server other than OpenAI is named, or else when `base_url` is not OpenAI's."""
    if server_of_provider(provider) is not None:
        return True
    if provider != "openai-chat":
        return False
    if named is not None:
        return named.name != "openai"
    return not is_openai_url(base_url)


def is_openai_url(base_url: str | None) -> bool:
    """Whether `base_url` is OpenAI's own API (None: the SDK's default, which is)."""
    if base_url is None:
        return True
    host = urlsplit(base_url).hostname or ""
    return host == "api.openai.com"


@attrs.define
class Endpoint:
    """Where a check sends its models: `base_url` and the server named for it, else the one detected there (once)."""

    base_url: str | None
    named: ServerProfile | None
    _detected: ServerProfile | None = None

    @classmethod
    def of(cls, base_url: str | None, server: str | None) -> Endpoint | None:
        """The endpoint of `--base-url` and `--server` (None: neither given); an unknown server raises."""
        if base_url is None and server is None:
            return None
        return cls(base_url, server_profile(server, where="`--server`") if server is not None else None)

    def profile_for(self, model: str) -> ServerProfile | None:
        """The profile of the local server model string `model` goes to, or None when it goes to none."""
        provider = model.split(":", 1)[0] if ":" in model else None
        if not serves_locally(provider, base_url=self.base_url, named=self.named):
            return None
        fixed = server_of_provider(provider)
        if self.named is None and fixed is not None:
            return SERVER_PROFILES[fixed]
        return self.at_url()

    def at_url(self) -> ServerProfile:
        """The server named for the endpoint, else the one at `base_url` (asked once; OpenAI's URL is `openai`)."""
        if self.named is not None:
            return self.named
        if self._detected is None:
            self._detected = detect_server(self.base_url) if self.base_url is not None else SERVER_PROFILES["generic"]
        return self._detected


# -- verdicts -----------------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class ModeSupport:
    """What a server does with one output mode: `ok`, `unforced` (sent, not enforced: may fail) or `refused`.

    `form` is what atomtask sends for it there (`response_format: json_schema`, a named tool choice, ...);
    `message` says why, for a refused or unforced mode, and `instead` the modes to use.
    """

    verdict: Literal["ok", "unforced", "refused"]
    form: str
    message: str = ""
    instead: tuple[str, ...] = ()

    @property
    def constrained(self) -> bool:
        return self.verdict == "ok" and "grammar" in self.form


_FORM_TEXT: Final[dict[str, str]] = {
    "json_schema": "`response_format: json_schema` (grammar-constrained)",
    "json_object_schema": "`response_format: {type: json_object, schema}` (grammar-constrained)",
    "structured_outputs": "`structured_outputs: {json: schema}` (grammar-constrained)",
}


_NAMED: Final = "the output tool by name (`tool_choice: {function}`, grammar-constrained)"


def mode_support(profile: ServerProfile, mode: str, *, function_tools: bool = False) -> ModeSupport:
    """How `profile`'s server takes output `mode` (`tool`, `native`, `prompted`) for a template.

    `function_tools`: the template offers tools of its own, so the output tool cannot be forced by name
    before they ran (the request must allow any tool).
    """
    good = [m for m in ("native", "prompted", "tool") if m != mode and _usable(profile, m, function_tools)]
    if mode == "native":
        if profile.native is None:
            return ModeSupport(
                verdict="refused",
                form="none",
                message=f"{profile.title} takes no JSON Schema for an answer, so `mode: native` cannot be sent there.",
                instead=tuple(good),
            )
        return ModeSupport(verdict="ok", form=_FORM_TEXT[profile.native])
    if mode == "prompted":
        if profile.prompted is None or function_tools:
            plain = (
                "the schema in the instructions, `response_format: json_object`"
                if profile.json_object
                else ("the schema in the instructions only")
            )
            return ModeSupport(verdict="ok", form=plain)
        return ModeSupport(verdict="ok", form=f"the schema in the instructions and {_FORM_TEXT[profile.prompted]}")
    if mode == "tool":
        if not function_tools and "named" in profile.forced:
            return ModeSupport(verdict="ok", form=_NAMED)
        if "required" in profile.forced:
            return ModeSupport(verdict="ok", form="`tool_choice: required`")
        why = (
            f"{profile.title} enforces a tool choice only by name, which would force the answer before the "
            "template's own tools ran"
            if "named" in profile.forced
            else f"{profile.title} does not enforce `tool_choice`"
        )
        if profile.free_tool_calls:
            return ModeSupport(
                verdict="unforced",
                form="`tool_choice: required` (not enforced)",
                message=f"{why}: the model may answer in prose instead of calling the output tool.",
                instead=tuple(good),
            )
        return ModeSupport(
            verdict="refused",
            form="none",
            message=f"{why}, and returns no tool call the model was not forced to make, so `mode: tool` cannot "
            "get an answer there.",
            instead=tuple(good),
        )
    raise ValueError(f"unknown output mode {mode!r}")


def _usable(profile: ServerProfile, mode: str, function_tools: bool) -> bool:
    if mode == "native":
        return profile.native is not None
    if mode == "tool":
        return bool(profile.forced) and (not function_tools or "required" in profile.forced)
    return True


# -- detection ----------------------------------------------------------------------------------------------

# `owned_by` of `GET /models`, as each server fills it in.
_OWNERS: Final = {
    "llamacpp": "llama-server",
    "vllm": "vllm",
    "library": "ollama",
    "ollama": "ollama",
    "organization_owner": "lmstudio",
    "me": "llama-cpp-python",
}

_detected: dict[str, ServerProfile] = {}
_detecting = threading.Lock()


def detect_server(base_url: str, *, timeout: float = 3.0) -> ServerProfile:
    """The kind of server at `base_url`, asked once per URL for this process (`generic` when it cannot tell).

    OpenAI's own URL is known without asking. Otherwise one `GET {base_url}/models`: each server names the
    owner of its models in its own way; an error status is a server of unknown kind. An unreachable server
    is `generic` and is not remembered, so the next call asks again.
    """
    if is_openai_url(base_url):
        return SERVER_PROFILES["openai"]
    key = base_url.rstrip("/")
    with _detecting:
        known = _detected.get(key)
        if known is not None:
            return known
        kind = _ask(key, timeout)
        profile = SERVER_PROFILES[kind or "generic"]
        if kind is not None:
            _detected[key] = profile
        return profile


def _ask(base_url: str, timeout: float) -> str | None:
    """The server kind `GET /models` shows; "generic" for an answer naming no known owner; None: no answer."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(f"{base_url}/models", headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = json.loads(response.read(1_000_000) or b"null")
    except urllib.error.HTTPError:  # it answered, without the list: a server of unknown kind
        return "generic"
    except (OSError, ValueError):  # nothing there (yet), or not JSON: ask again at the next request
        return None
    models = body.get("data") if isinstance(body, dict) else None
    for model in models if isinstance(models, list) else []:
        owner = model.get("owned_by") if isinstance(model, dict) else None
        if isinstance(owner, str) and owner in _OWNERS:
            return _OWNERS[owner]
    return "generic"


def forget_detected() -> None:
    """Forget every detected server (for tests that reuse a port)."""
    with _detecting:
        _detected.clear()
