"""One model call measured without sending it: its request bodies, its answer's size, its price.

The input tokens of a request are counted from the body the provider would receive, built by
pydantic-ai itself: a twin of the call's model (the same model class, name, profile and settings)
whose SDK client has an HTTP transport that keeps the body and answers "not sent", so the request
never leaves the process and needs no API key. `openai:` models build a Responses API body,
`openai-chat:` a Chat Completions one, `anthropic:` a Messages one; any other model (another
provider, a local or scripted model) is counted as a Chat Completions request with its own profile,
and the estimate says so. A token is 4 bytes of that body (`CHARS_PER_TOKEN`), the usual rule of
thumb, and what the fake provider server (`atomtask.testing`) reports.

A re-ask carries the earlier answer and its validation errors: its body is built too (one invalid
answer and a retry prompt listing an error for every field), and each further attempt adds one more
such turn. The answer's size is the template's `expected_output_tokens`, else a typical valid
instance of the output schema as the model receives it (the synthetic model's answer), else
`TEXT_OUTPUT_TOKENS` for text. Prices come from genai-prices through `ModelResponse.cost()`, as the
ledger prices answers (`processing: batch` for a provider batch); a model it does not know has no
price (None, never 0).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final, TypeVar

import attrs
from atomtask.estimate._figures import Figures
from atomtask.handlers._base import BaseHandler, ModelChoice, is_embedded
from atomtask.handlers._blocking import run_blocking
from atomtask.handlers._llm import ModelCall, output_spec, probe_request, run_settings
from atomtask.loading._providers import provider_of
from atomtask.system._templates import OutputMode

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_OUTPUT_RETRIES",
    "TEXT_OUTPUT_TOKENS",
    "Measured",
    "Meter",
    "off_the_loop",
]

#: Bytes of a request body (or characters of an answer) per token: the usual rule of thumb.
CHARS_PER_TOKEN: Final = 4
#: The expected answer of a text template that declares no `expected_output_tokens`.
TEXT_OUTPUT_TOKENS: Final = 256
#: Without `max_tokens`, an answer is assumed at most this many times its expected size ...
WORST_FACTOR: Final = 4
#: ... and at least this many tokens.
WORST_MIN_TOKENS: Final = 256
#: The output retries of a template that sets none (pydantic-ai's default).
DEFAULT_OUTPUT_RETRIES: Final = 1
#: The tool rounds assumed at worst for a template with tools and no `tool_calls` bound.
WORST_TOOL_ROUNDS: Final = 4
_NOT_SENT: Final = "atomtask-estimate-not-sent"
_T = TypeVar("_T")


@attrs.frozen(kw_only=True)
class Measured:
    """One call of a template on one of its models (the first, or a fallback), all attempts counted."""

    template: str
    model: str
    requests: Figures
    input_tokens: Figures
    output_tokens: Figures
    cost: Figures | None
    priced: bool
    notes: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class _Price:
    """What genai-prices looks a model up by, as `ModelResponse` carries it."""

    model_name: str
    provider_name: str | None
    provider_url: str | None


@attrs.frozen(kw_only=True)
class _Twin:
    """A model that builds the same request as the call's, and the bodies it was asked to send."""

    model: Any  # a pydantic-ai `Model`
    sink: list[bytes]
    price: _Price | None
    note: str | None
    settings: Mapping[str, Any] | None


@attrs.frozen(kw_only=True)
class _Shape:
    """What a template's requests on one model look like: the parameters sent, the answer and one re-ask turn."""

    params: Any  # pydantic-ai `ModelRequestParameters`
    answer_tokens: int
    turn_bytes: int  # what one invalid answer and its retry prompt add to the next request
    notes: tuple[str, ...]


class Meter:
    """Measures model calls for one estimate, keeping each model's twin and each template's shape."""

    def __init__(self, handler: BaseHandler, *, provider_batch: bool = False) -> None:
        self.handler = handler
        self.provider_batch = provider_batch
        self._twins: dict[Any, _Twin] = {}
        self._shapes: dict[tuple[Any, ...], _Shape] = {}

    def measure(self, call: ModelCall, expected_output_tokens: int | None = None) -> list[Measured]:
        """`call` on its model and each fallback: the model's expected figures, and every attempt at worst."""
        found: list[Measured] = []
        for index, choice in enumerate((call.model, *call.fallbacks)):
            found.append(self._one(call, choice, expected_output_tokens, first=index == 0))
        return found

    def _one(self, call: ModelCall, choice: ModelChoice, declared: int | None, *, first: bool) -> Measured:
        twin = self._twin(choice)
        settings = dict(run_settings(self.handler.model_settings, call.model_settings) or {})
        merged: dict[str, Any] = {**(twin.settings or {}), **settings}
        shape = self._shape(call, choice, twin, merged, declared)
        notes = list(shape.notes)
        if twin.note:
            notes.append(twin.note)
        base = self._body(twin, [_first_request(call)], merged, shape.params)
        out_expected = shape.answer_tokens
        max_tokens = merged.get("max_tokens")
        if isinstance(max_tokens, int) and max_tokens > 0:
            out_worst = max_tokens
        else:
            out_worst = max(WORST_FACTOR * out_expected, WORST_MIN_TOKENS)
            notes.append(f"no max_tokens: worst case assumed {out_worst} output tokens an answer")
        retries = call.retries if call.retries is not None else DEFAULT_OUTPUT_RETRIES
        attempts = retries + 1
        tools = call.tools
        has_tools = tools is not None and bool(tools.functions or tools.mcp)
        rounds_expected = 1 if has_tools else 0
        rounds_worst = 0
        if has_tools and tools is not None:
            rounds_worst = tools.limit if tools.limit is not None else WORST_TOOL_ROUNDS
            notes.append(
                f"tools: expected 1 tool round, worst {rounds_worst} an attempt"
                + ("" if tools.limit is not None else " (no `tool_calls` bound: assumed)")
            )
            if tools.mcp:
                notes.append("the MCP servers' tool definitions are not counted (they are listed only when connected)")
        turn_worst = shape.turn_bytes + CHARS_PER_TOKEN * max(0, out_worst - out_expected)
        # Each request of a model's run carries every earlier turn of that run.
        requests_worst = attempts * (1 + rounds_worst)
        input_worst = requests_worst * base + turn_worst * requests_worst * (requests_worst - 1) // 2
        requests_expected = 1 + rounds_expected
        input_expected = requests_expected * base + shape.turn_bytes * rounds_expected
        if not first:  # a fallback runs only when the model before it failed
            requests_expected = input_expected = 0
        requests = Figures(expected=requests_expected, worst=requests_worst)
        input_tokens = Figures(expected=input_expected // CHARS_PER_TOKEN, worst=input_worst // CHARS_PER_TOKEN)
        output_tokens = Figures(
            expected=out_expected * requests_expected if first else 0, worst=out_worst * requests_worst
        )
        cost = self._cost(twin.price, input_tokens, output_tokens)
        if cost is None:
            notes.append(f"price unknown for {choice.label!r}")
        return Measured(
            template=call.template,
            model=choice.label,
            requests=requests,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost=cost,
            priced=cost is not None,
            notes=tuple(notes),
        )

    # -- the request -----------------------------------------------------------------------------------

    def _shape(
        self, call: ModelCall, choice: ModelChoice, twin: _Twin, settings: dict[str, Any], declared: int | None
    ) -> _Shape:
        functions = call.tools.functions if call.tools is not None else ()
        key = (call.template, _model_key(choice), call.output_cls, call.mode, id(functions), declared, repr(settings))
        shape = self._shapes.get(key)
        if shape is None:
            shape = self._shapes[key] = self._new_shape(call, twin, settings, declared)
        return shape

    def _new_shape(self, call: ModelCall, twin: _Twin, settings: dict[str, Any], declared: int | None) -> _Shape:
        from pydantic_ai.messages import (
            ModelRequest,
            ModelResponse,
            RetryFeedbackPart,
            RetryInfo,
            TextPart,
            ToolCallPart,
            ToolReturnPart,
        )

        info = off_the_loop(lambda: probe_request(twin.model.profile, output_spec(call.output_cls, call.mode)))
        params = info.model_request_parameters
        if call.tools is not None and call.tools.functions:
            params = dataclasses.replace(params, function_tools=[tool.tool_def for tool in call.tools.functions])
        notes: list[str] = []
        schema: Any = None
        tool_name: str | None = None
        if call.output_cls is not None and call.mode is OutputMode.TOOL and params.output_tools:
            tool_name = params.output_tools[0].name
            schema = params.output_tools[0].parameters_json_schema
        elif call.output_cls is not None and params.output_object is not None:
            schema = params.output_object.json_schema
        if schema is not None:
            text = typical_answer(json.dumps(schema, sort_keys=True))
            instance: Any = json.loads(text)
        else:
            text = "x" * (TEXT_OUTPUT_TOKENS * CHARS_PER_TOKEN)
            instance = None
        if declared is not None:
            tokens = declared
        elif schema is not None:
            tokens = max(1, len(text.encode()) // CHARS_PER_TOKEN)
        else:
            tokens = TEXT_OUTPUT_TOKENS
            notes.append(f"text answer: {TEXT_OUTPUT_TOKENS} output tokens assumed (set `expected_output_tokens`)")
        # A re-ask as pydantic-ai writes it: the output tool's retried result, else feedback after the text.
        errors: Any = _errors(instance) if isinstance(instance, dict) else "Please answer again."
        answer: Any
        retry: Any
        if tool_name is not None:
            answer = ToolCallPart(tool_name, args=instance, tool_call_id="call_estimate_0")
            retry = ToolReturnPart(
                tool_name=tool_name,
                content=errors,
                tool_call_id="call_estimate_0",
                outcome="retried",
                retry=RetryInfo(cause="validation_error"),
            )
        else:
            answer = TextPart(text)
            retry = RetryFeedbackPart(content=errors, retry=RetryInfo(cause="validation_error"))
        first = _first_request(call)
        base = self._body(twin, [first], settings, params)
        again = self._body(twin, [first, ModelResponse(parts=[answer]), ModelRequest(parts=[retry])], settings, params)
        return _Shape(params=params, answer_tokens=tokens, turn_bytes=max(0, again - base), notes=tuple(notes))

    def _body(self, twin: _Twin, messages: list[Any], settings: Mapping[str, Any], params: Any) -> int:
        """The size in bytes of the body `twin` builds for `messages` (built, kept by its transport, not sent)."""
        from pydantic_ai.models import override_allow_model_requests

        async def build() -> None:
            try:
                prepared = twin.model.prepare_messages(messages, params)  # as an Agent does before each request
                await twin.model.request(prepared, {**settings, "max_retries": 0}, params)
            except Exception:  # the transport's "not sent", as the SDK's error
                pass

        twin.sink.clear()
        # The twin's transport keeps every request in this process: allowing it here sends nothing anywhere.
        with override_allow_model_requests(True):
            run_blocking(build())
        if not twin.sink:  # pragma: no cover - every pydantic-ai model class sends its request through the client
            raise AssertionError(f"model {twin.model!r} built no request")
        return len(twin.sink[-1])

    def _twin(self, choice: ModelChoice) -> _Twin:
        key = _model_key(choice)
        twin = self._twins.get(key)
        if twin is None:
            twin = self._twins[key] = self._new_twin(choice)
        return twin

    def _new_twin(self, choice: ModelChoice) -> _Twin:
        from pydantic_ai.models import Model, infer_model_profile

        try:
            built: Model | str = self.handler.build(choice)
        except Exception:  # an endpoint or SDK problem the run would report: the request is still the same
            built = choice.spec
        sink: list[bytes] = []
        if isinstance(built, str):
            provider = provider_of(built)
            name = built.split(":", 1)[1] if ":" in built else built
            kind = _KINDS.get(provider or "")
            try:
                profile: Any = infer_model_profile(built)
            except Exception:
                profile = None
            price = (
                None
                if is_embedded(built)
                else _Price(model_name=name, provider_name=_PRICED_AS.get(provider or "", provider), provider_url=None)
            )
            base_url = self.handler.base_url
            settings = None
        else:
            name = built.model_name
            kind = _kind_of(built)
            profile = built.profile
            embedded = kind is None and not hasattr(built, "client")
            price = (
                None if embedded else _Price(model_name=name, provider_name=built.system, provider_url=built.base_url)
            )
            base_url = built.base_url if kind is not None else None
            settings = built.settings
        note = None
        if kind is None:
            note = "request size counted as an OpenAI Chat Completions request with this model's profile"
        model = _capture_model(kind or "chat", name, profile, base_url, sink)
        return _Twin(model=model, sink=sink, price=price, note=note, settings=settings)

    def _cost(self, price: _Price | None, input_tokens: Figures, output_tokens: Figures) -> Figures | None:
        if price is None:
            return None
        expected = _usd(price, int(input_tokens.expected), int(output_tokens.expected), self.provider_batch)
        worst = _usd(price, int(input_tokens.worst), int(output_tokens.worst), self.provider_batch)
        if expected is None or worst is None:
            return None
        return Figures(expected=expected, worst=worst)


# The request body each provider prefix builds (`None`: counted as Chat Completions), and how genai-prices names it.
_KINDS: Final = {
    "openai": "responses",
    "openai-responses": "responses",
    "openai-chat": "chat",
    "anthropic": "anthropic",
}
_PRICED_AS: Final = {"openai-chat": "openai", "openai-responses": "openai"}


def _kind_of(model: Any) -> str | None:
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel

    if isinstance(model, OpenAIResponsesModel):
        return "responses"
    if isinstance(model, OpenAIChatModel):
        return "chat"
    if isinstance(model, AnthropicModel):
        return "anthropic"
    return None


def _model_key(choice: ModelChoice) -> Any:
    return choice.spec if isinstance(choice.spec, str) else ("instance", id(choice.spec))


def _capture_model(kind: str, name: str, profile: Any, base_url: str | None, sink: list[bytes]) -> Any:
    """A pydantic-ai model of `kind` whose client keeps each request body in `sink` and sends nothing."""
    import httpx2

    async def keep(request: httpx2.Request) -> httpx2.Response:
        sink.append(request.content)
        return httpx2.Response(400, json={"error": {"message": "not sent: atomtask estimate", "type": "not_sent"}})

    client = httpx2.AsyncClient(transport=httpx2.MockTransport(keep))
    if kind == "anthropic":
        from anthropic import AsyncAnthropic
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        anthropic = AsyncAnthropic(api_key=_NOT_SENT, base_url=base_url, http_client=client, max_retries=0)
        return AnthropicModel(name, provider=AnthropicProvider(anthropic_client=anthropic), profile=profile)
    from openai import AsyncOpenAI
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    openai = AsyncOpenAI(api_key=_NOT_SENT, base_url=base_url, http_client=client, max_retries=0)
    provider = OpenAIProvider(openai_client=openai)
    if kind == "responses":
        return OpenAIResponsesModel(name, provider=provider, profile=profile)
    return OpenAIChatModel(name, provider=provider, profile=profile)


def _first_request(call: ModelCall) -> Any:
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    return ModelRequest(parts=[UserPromptPart(content=call.user_prompt)], instructions=call.system)


def _errors(instance: Mapping[str, Any]) -> list[Any]:
    """A retry prompt's errors for an answer that got every field wrong: the most a re-ask usually carries."""
    return [
        {"type": "value_error", "loc": (field,), "msg": f"Value error, invalid {field}", "input": value}
        for field, value in instance.items()
    ]


#: The synthetic answers a typical answer is chosen among: their sizes vary with the seed (list lengths, texts).
_TYPICAL_OF: Final = 8


@functools.lru_cache(maxsize=256)
def typical_answer(schema: str) -> str:
    """A valid instance of the JSON Schema `schema` as JSON text: the synthetic model's answer of about mean size."""
    from atomtask.handlers._synthetic import synthetic_instance

    answers = [
        json.dumps(synthetic_instance(json.loads(schema), seed), ensure_ascii=False) for seed in range(_TYPICAL_OF)
    ]
    mean = sum(len(answer) for answer in answers) / len(answers)
    return min(answers, key=lambda answer: abs(len(answer) - mean))


def _usd(price: _Price, input_tokens: int, output_tokens: int, batch: bool) -> float | None:
    """What genai-prices says `input_tokens` and `output_tokens` of the model cost (None: it does not know)."""
    from pydantic_ai.messages import ModelResponse
    from pydantic_ai.usage import RequestUsage

    response = ModelResponse(
        parts=[],
        usage=RequestUsage(input_tokens=input_tokens, output_tokens=output_tokens),
        model_name=price.model_name,
        provider_name=price.provider_name,
        provider_url=price.provider_url,
        provider_details={"processing": "batch"} if batch else None,
    )
    try:
        return float(response.cost().total_price)
    except (LookupError, ValueError, AssertionError):  # what genai-prices raises for a model it cannot price
        return None


def off_the_loop(function: Callable[[], _T]) -> _T:
    """`function()`, on a worker thread when this thread runs an event loop (pydantic-ai's `run_sync` needs none)."""
    if asyncio._get_running_loop() is None:
        return function()
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(function).result()
