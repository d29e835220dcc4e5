"""The pydantic-ai models a provider batch runs its items through: one that captures, one that replays.

The batch request of an item is the exact HTTP body a normal call would send: the item runs through
`TaskSystem.execute_async` with a copy of the real model (same class, name, settings, profile) whose
HTTP transport takes the first request's body instead of sending it and ends the run with `Captured`
(a `BaseException`: nothing on the way retries it, logs a failed task or keeps a ledger entry). So
rendering, output tools or prompted output, and every setting are pydantic-ai's and the handler's own,
not rebuilt here (pydantic-ai's own `Model.batch_encode` exists, but for OpenAI only through the
Responses API, not the chat completions a normal `openai-chat:` call sends).

Collection runs the item again through `execute_async` with another copy whose transport answers
the first request with the body the provider batch returned, and sends every later request (the
re-asks of a rejected answer) to the real endpoint. pydantic-ai's own response parsing, atomtask's
validation, repair, re-asking and attempt ledger all run as for a normal call; the first response is
marked `processing: batch` (pydantic-ai's convention that selects batch prices for its cost).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs
import httpx2
from atomtask.system.errors import ConfigurationError

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ModelResponse
    from pydantic_ai.models import Model, ModelRequestParameters
    from pydantic_ai.settings import ModelSettings

__all__ = ["Captured", "Endpoint", "capturing_model", "endpoint_of", "replaying_model"]


@attrs.frozen(kw_only=True)
class Endpoint:
    """The real model a batch calls: its kind (`openai` chat completions or `anthropic`), the model, its client."""

    kind: str
    model: Model
    base_url: str
    api_key: str | None

    @property
    def client(self) -> Any:
        """The provider SDK's client (`AsyncOpenAI`, `AsyncAnthropic`) configured like the model's."""
        return self.model.client  # type: ignore[attr-defined]


def endpoint_of(model: Model | str) -> Endpoint:
    """The `Endpoint` of a model (a string is built as pydantic-ai would); `ConfigurationError` for others."""
    from pydantic_ai.models import infer_model

    built = infer_model(model) if isinstance(model, str) else model
    from pydantic_ai.models.openai import OpenAIChatModel

    if isinstance(built, OpenAIChatModel):
        return Endpoint(kind="openai", model=built, base_url=str(built.client.base_url), api_key=built.client.api_key)
    try:
        from pydantic_ai.models.anthropic import AnthropicModel
    except ImportError:  # pragma: no cover - the anthropic extra is missing
        AnthropicModel = None  # type: ignore[assignment,misc]
    if AnthropicModel is not None and isinstance(built, AnthropicModel):
        client: Any = built.client
        return Endpoint(kind="anthropic", model=built, base_url=str(client.base_url), api_key=client.api_key)
    raise ConfigurationError(
        f"`--provider-batch` needs an OpenAI chat-completions model (`openai-chat:NAME`) or an Anthropic model "
        f"(`anthropic:NAME`), not {getattr(built, 'system', '?')}:{built.model_name}. Drop `--provider-batch` "
        "to run the items as normal calls."
    )


def _copy(endpoint: Endpoint, transport: httpx2.AsyncBaseTransport) -> Model:
    """The endpoint's model again (class, name, settings, profile), over an HTTP client using `transport`."""
    client = httpx2.AsyncClient(transport=transport)
    model: Any = endpoint.model
    if endpoint.kind == "openai":
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        provider = OpenAIProvider(base_url=endpoint.base_url, api_key=endpoint.api_key or "none", http_client=client)
        return OpenAIChatModel(model.model_name, provider=provider, settings=model.settings, profile=model.profile)
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    anthropic = AnthropicProvider(base_url=endpoint.base_url, api_key=endpoint.api_key or "none", http_client=client)
    return AnthropicModel(model.model_name, provider=anthropic, settings=model.settings, profile=model.profile)


class Captured(BaseException):
    """The capturing transport's way out of a run, with the request body.

    A `BaseException`, so no layer on the way counts it as a failure: no retry, no failed-task event.
    """

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__("atomtask provider batch: request captured")
        self.body = body


class _Capture(httpx2.AsyncBaseTransport):
    """An httpx2 transport raising `Captured` with the first request's JSON body instead of sending it."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        raise Captured(json.loads(await request.aread()))


def capturing_model(endpoint: Endpoint) -> Model:
    """A copy of the endpoint's model whose first request raises `Captured` with its body, unsent."""
    return _copy(endpoint, _Capture())


class _Replay(httpx2.AsyncBaseTransport):
    """An httpx2 transport answering the first request with a recorded body, forwarding the others."""

    def __init__(self, answer: Mapping[str, Any]) -> None:
        self.answer, self.real, self.served = dict(answer), httpx2.AsyncHTTPTransport(), False

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if not self.served:
            self.served = True
            sent = json.loads(await request.aread() or b"{}")
            if sent.get("stream") is True:  # pydantic-ai streams some requests itself (Anthropic's long ones)
                events = "".join(_anthropic_events(self.answer)).encode()
                return httpx2.Response(200, content=events, headers={"content-type": "text/event-stream"})
            return httpx2.Response(200, json=self.answer)
        return await self.real.handle_async_request(request)

    async def aclose(self) -> None:
        await self.real.aclose()


def _anthropic_events(message: Mapping[str, Any]) -> list[str]:
    """A finished Anthropic message as the server-sent events of the same message streamed."""

    def event(data: dict[str, Any]) -> str:
        return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"

    usage = dict(message.get("usage") or {})
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 0}}
    events = [event({"type": "message_start", "message": start})]
    for index, block in enumerate(message.get("content") or []):
        if block.get("type") == "tool_use":
            opened = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block.get("input"))}
        elif block.get("type") == "text":
            opened, delta = {**block, "text": ""}, {"type": "text_delta", "text": block.get("text", "")}
        else:
            opened, delta = block, None
        events.append(event({"type": "content_block_start", "index": index, "content_block": opened}))
        if delta is not None:
            events.append(event({"type": "content_block_delta", "index": index, "delta": delta}))
        events.append(event({"type": "content_block_stop", "index": index}))
    stop = {"stop_reason": message.get("stop_reason"), "stop_sequence": message.get("stop_sequence")}
    events.append(event({"type": "message_delta", "delta": stop, "usage": usage}))
    events.append(event({"type": "message_stop"}))
    return events


def replaying_model(endpoint: Endpoint, answer: Mapping[str, Any]) -> Model:
    """A copy of the endpoint's model answering its first request with `answer` (the provider batch's body).

    Later requests (the re-asks after a rejected answer) go to the real endpoint as normal calls.
    """
    from pydantic_ai.models.wrapper import WrapperModel

    class BatchAnswered(WrapperModel):
        """The first response is the provider batch's, priced as a batch answer."""

        first = True

        async def request(
            self,
            messages: list[ModelMessage],
            model_settings: ModelSettings | None,
            model_request_parameters: ModelRequestParameters,
        ) -> ModelResponse:
            response = await self.wrapped.request(messages, model_settings, model_request_parameters)
            if self.first:
                self.first = False
                response.provider_details = {**(response.provider_details or {}), "processing": "batch"}
            return response

    return BatchAnswered(_copy(endpoint, _Replay(answer)))
