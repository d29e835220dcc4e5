"""Tests for tool-call round trips through `FakeProviderServer`: parallel calls out, tool results back."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from atomtask.testing import (
    FakeProviderServer,
    RecordedRequest,
    Reply,
    TokenUsage,
    ToolCallReply,
    ToolCallsReply,
    ToolResult,
)
from pydantic import BaseModel
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import ModelResponse
from pydantic_ai.models import Model, override_allow_model_requests
from pydantic_ai.settings import ModelSettings

Wire = Literal["openai", "anthropic"]
WIRES: list[Wire] = ["openai", "anthropic"]
CALL_ID_PREFIX: dict[Wire, str] = {"openai": "call_", "anthropic": "toolu_"}
PATHS: dict[Wire, str] = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}


class Quote(BaseModel):
    product: str
    price: float


PRICES = {"grinder": 129.0, "kettle": 45.5}


class Shop:
    """The agent's function tools, recording the arguments the model called them with."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def lookup_price(self, product: str) -> float:
        """The price of `product` in USD."""
        self.calls.append(("lookup_price", product))
        if product not in PRICES:
            raise ModelRetry(f"No price for {product!r}; ask for one of {sorted(PRICES)}.")
        return PRICES[product]

    def fx_rate(self, currency: str) -> float:
        """How much of `currency` one USD buys."""
        self.calls.append(("fx_rate", currency))
        return 0.9


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as server, override_allow_model_requests(True):
        yield server


def model_for(server: FakeProviderServer, wire: Wire) -> Model:
    if wire == "openai":
        return server.openai_chat_model()
    # A capped `max_tokens` keeps pydantic-ai from streaming a non-streamed Anthropic request behind the scenes.
    return server.anthropic_model(settings=ModelSettings(max_tokens=1024))


def agent_for(server: FakeProviderServer, wire: Wire, shop: Shop) -> Agent[None, Quote]:
    return Agent(model_for(server, wire), output_type=Quote, tools=[shop.lookup_price, shop.fx_rate])


async def run(agent: Agent[None, Quote], prompt: str, *, streamed: bool) -> Quote:
    if streamed:
        async with agent.run_stream(prompt) as stream:
            return await stream.get_output()
    return (await agent.run(prompt)).output


def call_id(wire: Wire, number: int) -> str:
    return f"{CALL_ID_PREFIX[wire]}{number}"


def post(server: FakeProviderServer, wire: Wire, body: dict[str, Any]) -> str:
    request = urllib.request.Request(f"{server.base_url}{PATHS[wire]}", data=json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(request, timeout=5) as response:
        assert 200 == response.status
        text: str = response.read().decode()
        return text


def sse_data(text: str) -> list[dict[str, Any]]:
    """The JSON payloads of a server-sent event stream, in order (OpenAI's `[DONE]` left out)."""
    return [
        json.loads(line.removeprefix("data: "))
        for line in text.splitlines()
        if line.startswith("data: ") and line != "data: [DONE]"
    ]


# --- Round trips through pydantic-ai agents -------------------------------------------------------------


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("wire", WIRES)
async def test_function_tool_result_reaches_the_model(server: FakeProviderServer, wire: Wire, streamed: bool) -> None:
    """A scripted call runs the function tool with the model's arguments; the next request carries its result."""
    shop = Shop()
    server.script(
        Reply.tool_calls(("lookup_price", {"product": "grinder"})),
        Reply.tool_call("final_result", {"product": "grinder", "price": 129.0}),
    )
    output = await run(agent_for(server, wire, shop), "Quote a grinder.", streamed=streamed)
    assert Quote(product="grinder", price=129.0) == output
    assert [("lookup_price", "grinder")] == shop.calls
    first, second = server.requests
    assert ["lookup_price", "fx_rate", "final_result"] == first.tool_names
    assert [] == first.tool_results
    assert [ToolResult(call_id=call_id(wire, 1), content="129.0")] == second.tool_results
    assert [streamed, streamed] == [request.streamed for request in server.requests]
    assert 0 == server.pending


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("wire", WIRES)
async def test_parallel_calls_each_get_their_result(server: FakeProviderServer, wire: Wire, streamed: bool) -> None:
    """Two calls in one answer both run, and their results come back in order, each under its own call id."""
    shop = Shop()
    server.script(
        Reply.tool_calls(("lookup_price", {"product": "grinder"}), ("fx_rate", {"currency": "EUR"})),
        Reply.tool_call("final_result", {"product": "grinder", "price": 116.1}),
    )
    output = await run(agent_for(server, wire, shop), "Quote a grinder in EUR.", streamed=streamed)
    assert Quote(product="grinder", price=116.1) == output
    assert [("fx_rate", "EUR"), ("lookup_price", "grinder")] == sorted(shop.calls)  # they run concurrently
    expected = [
        ToolResult(call_id=call_id(wire, 1), content="129.0"),
        ToolResult(call_id=call_id(wire, 2), content="0.9"),
    ]
    assert expected == server.requests[1].tool_results


@pytest.mark.parametrize("wire", WIRES)
async def test_model_retry_message_reaches_the_model(server: FakeProviderServer, wire: Wire) -> None:
    """A tool's `ModelRetry` goes back as its result (an error on Anthropic), and call ids stay unique."""
    shop = Shop()
    server.script(
        Reply.tool_calls(("lookup_price", {"product": "toaster"})),
        Reply.tool_calls(("lookup_price", {"product": "kettle"})),
        Reply.tool_call("final_result", {"product": "kettle", "price": 45.5}),
    )
    output = await run(agent_for(server, wire, shop), "Quote a toaster.", streamed=False)
    assert Quote(product="kettle", price=45.5) == output
    assert [("lookup_price", "toaster"), ("lookup_price", "kettle")] == shop.calls
    [retry] = server.requests[1].tool_results
    assert (call_id(wire, 1), wire == "anthropic") == (retry.call_id, retry.is_error)
    assert "No price for 'toaster'; ask for one of ['grinder', 'kettle']." in retry.content
    assert ToolResult(call_id=call_id(wire, 2), content="45.5") == server.requests[2].tool_results[-1]


@pytest.mark.parametrize("wire", WIRES)
async def test_tool_calls_usage_is_reported(server: FakeProviderServer, wire: Wire) -> None:
    """Token counts given to `Reply.tool_calls()` are the usage of the answer that makes the calls."""
    server.script(
        Reply.tool_calls(("fx_rate", {"currency": "EUR"}), usage=TokenUsage(input_tokens=13, output_tokens=5)),
        Reply.tool_call("final_result", {"product": "fx", "price": 0.9}),
    )
    result = await agent_for(server, wire, Shop()).run("EUR rate?")
    first = next(message for message in result.all_messages() if isinstance(message, ModelResponse))
    assert (13, 5) == (first.usage.input_tokens, first.usage.output_tokens)


# --- The answers on the wire ----------------------------------------------------------------------------

OFFERED_TOOLS: dict[Wire, list[dict[str, Any]]] = {
    "openai": [{"type": "function", "function": {"name": "lookup_price", "parameters": {"type": "object"}}}],
    "anthropic": [{"name": "lookup_price", "input_schema": {"type": "object"}}],
}
# Two answers in a row: two parallel calls (one with its arguments as a raw string), then a single call.
ANSWERS = (
    Reply.tool_calls(("lookup_price", {"product": "grinder"}), ("fx_rate", '{"currency": "EUR"}')),
    Reply.tool_call("lookup_price", {"product": "kettle"}),
)
EXPECTED: list[tuple[list[int], list[tuple[str, object]]]] = [
    ([1, 2], [("lookup_price", {"product": "grinder"}), ("fx_rate", {"currency": "EUR"})]),
    ([3], [("lookup_price", {"product": "kettle"})]),
]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_openai_answer_lists_each_call(server: FakeProviderServer, stream: bool) -> None:
    """OpenAI gets one `tool_calls` entry per call (by `index` when streamed), ids `call_<n>`, reason `tool_calls`."""
    server.script(*ANSWERS)
    body = {"model": "m", "stream": stream, "tools": OFFERED_TOOLS["openai"]}
    for numbers, expected_calls in EXPECTED:
        text = post(server, "openai", body)
        calls: dict[int, dict[str, str]] = {}
        if stream:
            chunks = [chunk for chunk in sse_data(text) if chunk["choices"]]
            finish_reasons = [chunk["choices"][0]["finish_reason"] for chunk in chunks]
            for chunk in chunks:
                for delta in chunk["choices"][0]["delta"].get("tool_calls", []):
                    call = calls.setdefault(delta["index"], {"id": "", "name": "", "arguments": ""})
                    call["id"] += delta.get("id", "")
                    call["name"] += delta["function"].get("name", "")
                    call["arguments"] += delta["function"]["arguments"]
        else:
            [choice] = json.loads(text)["choices"]
            finish_reasons = [choice["finish_reason"]]
            for index, entry in enumerate(choice["message"]["tool_calls"]):
                calls[index] = {"id": entry["id"], **entry["function"]}
        assert ["tool_calls"] == [reason for reason in finish_reasons if reason is not None]
        assert "tool_calls" == finish_reasons[-1]
        assert [call_id("openai", number) for number in numbers] == [calls[index]["id"] for index in sorted(calls)]
        arrived = [(calls[index]["name"], json.loads(calls[index]["arguments"])) for index in sorted(calls)]
        assert expected_calls == arrived


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_anthropic_answer_has_a_block_per_call(server: FakeProviderServer, stream: bool) -> None:
    """Anthropic gets one `tool_use` block per call (streamed: opened, filled, closed in turn), reason `tool_use`."""
    server.script(*ANSWERS)
    body = {"model": "m", "stream": stream, "tools": OFFERED_TOOLS["anthropic"]}
    for numbers, expected_calls in EXPECTED:
        text = post(server, "anthropic", body)
        if stream:
            events = sse_data(text)
            block_events = [event for event in events if event["type"].startswith("content_block_")]
            blocks: list[dict[str, Any]] = []
            for event in block_events:
                if event["type"] == "content_block_start":
                    blocks.append({**event["content_block"], "input": ""})
                elif event["type"] == "content_block_delta":
                    blocks[event["index"]]["input"] += event["delta"]["partial_json"]
            for index, block in enumerate(blocks):
                block["input"] = json.loads(block["input"])
                kinds = [event["type"] for event in block_events if event["index"] == index]
                assert ("content_block_start", "content_block_stop") == (kinds[0], kinds[-1])
            indexes = [event["index"] for event in block_events]
            assert sorted(indexes) == indexes  # each block closes before the next one opens
            [stop_reason] = [event["delta"]["stop_reason"] for event in events if event["type"] == "message_delta"]
        else:
            message = json.loads(text)
            blocks, stop_reason = message["content"], message["stop_reason"]
        assert "tool_use" == stop_reason
        assert {"tool_use"} == {block["type"] for block in blocks}
        assert [call_id("anthropic", number) for number in numbers] == [block["id"] for block in blocks]
        assert expected_calls == [(block["name"], block["input"]) for block in blocks]


# --- Reading back what a request carried ----------------------------------------------------------------


def test_tool_results_read_text_parts_and_skip_other_messages() -> None:
    """`tool_results` joins list contents' text parts and ignores messages that carry no tool result."""
    openai = RecordedRequest(
        path="/v1/chat/completions",
        headers={},
        body={
            "messages": [
                {"role": "user", "content": "Hi"},
                {
                    "role": "tool",
                    "tool_call_id": "a",
                    "content": [{"type": "text", "text": "4"}, {"type": "text", "text": "2"}],
                },
            ]
        },
    )
    anthropic = RecordedRequest(
        path="/v1/messages",
        headers={},
        body={
            "messages": [
                {"role": "user", "content": "Hi"},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "not a result"},
                        {"type": "tool_result", "tool_use_id": "b", "content": "boom", "is_error": True},
                    ],
                },
            ]
        },
    )
    elsewhere = RecordedRequest(path="/v1/other", headers={}, body=openai.body)
    assert [ToolResult(call_id="a", content="42")] == openai.tool_results
    assert [ToolResult(call_id="b", content="boom", is_error=True)] == anthropic.tool_results
    assert [] == elsewhere.tool_results


def test_tool_calls_accepts_pairs_and_tool_call_replies() -> None:
    """`Reply.tool_calls()` takes `(name, args)` pairs and `ToolCallReply`s alike, keeping their order."""
    reply = Reply.tool_calls(("a", {"x": 1}), ToolCallReply('{"y": 2}', name="b"))
    assert ToolCallsReply((ToolCallReply({"x": 1}, name="a"), ToolCallReply('{"y": 2}', name="b"))) == reply


@pytest.mark.parametrize(
    ("calls", "message"),
    [
        ((), "needs at least one call"),
        ((Reply.tool_call("a", usage=TokenUsage(input_tokens=1, output_tokens=1)),), "pass `usage=` to"),
    ],
)
def test_tool_calls_refuses_a_misscripted_answer(calls: tuple[ToolCallReply, ...], message: str) -> None:
    """An answer without calls, or with a usage on one of its calls, is a scripting error raised at once."""
    with pytest.raises(ValueError, match=message):
        Reply.tool_calls(*calls)
