"""`ServerDialect`: each request to a local OpenAI-compatible server in the form that server honours.

A pydantic-ai capability on the Agents of `openai-chat:` models sent to an endpoint other than OpenAI's
(and of `ollama:` and `vllm:` models). Before each request it takes the server's `ServerProfile` (named
with `server=`, else detected once per base URL) and, through the request's model settings
(`extra_body`, which the OpenAI SDK merges over the body pydantic-ai built), asks for the structured
output the way that server enforces it:

- native and prompted output: the server's grammar-constrained form (`response_format: json_schema`,
  llama-cpp-python's `{type: json_object, schema}`, vLLM's `structured_outputs`), for the very schema
  pydantic-ai put in the request;
- tool output with no tools of the template's own: the output tool by name, where the server enforces
  only a named tool choice;
- a mode the server cannot take at all: a `ConfigurationError` naming the server, the mode and the modes
  to use, before any request is sent;
- an assistant turn that called tools without text, for a server that refuses `content: null`: sent
  with empty text (on the wire only; the run's history is unchanged).

A user's own `extra_body` keys win over the ones added here. The token limit's field (`max_tokens`) is
the model's profile, set when the handler builds the model (`BaseHandler.build`).
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, cast

from atomtask._logs import get_logger
from atomtask.errors import ConfigurationError
from atomtask.loading._servers import ServerProfile, detect_server, mode_support
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import ModelRequestContext, ModelRequestParameters
from pydantic_ai.settings import ModelSettings

__all__ = ["ServerDialect", "dialect_body"]

log = get_logger(__name__)


class ServerDialect(AbstractCapability[Any]):
    """Sends each request of a run in the dialect of the server behind its model (see the module docstring).

    `profile`: the server named by the user; None: detected from the model's base URL at the first request.
    """

    def __init__(self, profile: ServerProfile | None = None) -> None:
        self.profile = profile
        self._warned: set[str] = set()

    async def server(self, base_url: str | None) -> ServerProfile:
        """The profile of the server at `base_url`: the named one, else detected (once per URL, off the loop)."""
        if self.profile is not None:
            return self.profile
        if base_url is None:
            return detect_server("https://api.openai.com/v1")
        return await asyncio.to_thread(detect_server, base_url)

    async def prepare_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        model = request_context.model
        profile = await self.server(getattr(model, "base_url", None))
        params = request_context.model_request_parameters
        extra, warning = dialect_body(profile, params, model_name=model.model_name)
        if warning is not None and warning not in self._warned:  # once per Agent, not once per request
            self._warned.add(warning)
            log.warning("server_mode_unforced", server=profile.name, model=model.model_name, note=warning)
        changes: dict[str, Any] = {}
        if extra:
            settings = dict(request_context.model_settings or {})
            own = settings.get("extra_body")
            settings["extra_body"] = {**extra, **(own if isinstance(own, dict) else {})}
            changes["model_settings"] = cast(ModelSettings, settings)
        if not profile.null_content:
            messages = _with_text(request_context.messages)
            if messages is not None:
                changes["messages"] = messages
        return dataclasses.replace(request_context, **changes) if changes else request_context


def dialect_body(
    profile: ServerProfile, params: ModelRequestParameters, *, model_name: str
) -> tuple[dict[str, Any], str | None]:
    """The body fields that ask `profile`'s server for the output `params` describe, in its own form.

    Returns them with a warning for a mode the server takes without enforcing it (else None). Raises
    `ConfigurationError` for an output mode the server cannot take.
    """
    mode = params.output_mode
    function_tools = bool(params.function_tools)
    warning = None
    if mode in ("native", "prompted", "tool"):
        support = mode_support(profile, mode, function_tools=function_tools)
        if support.verdict == "refused":
            instead = " or ".join(f"`mode: {m}`" for m in support.instead) or "another server"
            raise ConfigurationError(
                f"{support.message} Use {instead} (`output_format.mode`) for model {model_name!r}; "
                "`atomtask check --model ... --base-url ...` tells this before a run (P308)."
            )
        if support.verdict == "unforced":
            warning = support.message
    body: dict[str, Any] = {}
    schema = params.output_object.json_schema if params.output_object is not None else None
    if mode == "native" and schema is not None:
        _constrain(body, profile.native, schema, params)
    elif mode == "prompted" and schema is not None and not function_tools:
        _constrain(body, profile.prompted, schema, params)
    elif mode == "tool" and len(params.output_tools) == 1 and not function_tools and "named" in profile.forced:
        body["tool_choice"] = {"type": "function", "function": {"name": params.output_tools[0].name}}
    return body, warning


def _constrain(body: dict[str, Any], form: str | None, schema: dict[str, Any], params: ModelRequestParameters) -> None:
    """Add the body field that decodes the answer under `schema` in `form` (None: pydantic-ai's request as it is)."""
    if form == "json_object_schema":
        body["response_format"] = {"type": "json_object", "schema": schema}
    elif form == "structured_outputs":
        body["structured_outputs"] = {"json": schema}
    elif form == "json_schema" and params.output_mode == "prompted":  # native mode sends it already
        name = params.output_object.name if params.output_object is not None else None
        spec = {"name": name or "final_result", "schema": schema}
        body["response_format"] = {"type": "json_schema", "json_schema": spec}


def _with_text(messages: list[Any]) -> list[Any] | None:
    """`messages` with empty text beside every tool-calling answer that has none; None when none lacks it."""
    changed = False
    result: list[Any] = []
    for message in messages:
        if (
            isinstance(message, ModelResponse)
            and any(isinstance(part, ToolCallPart) for part in message.parts)
            and not any(isinstance(part, TextPart) for part in message.parts)
        ):
            message = dataclasses.replace(message, parts=[TextPart(content=""), *message.parts])
            changed = True
        result.append(message)
    return result if changed else None
