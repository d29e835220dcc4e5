"""Tests for the fake provider's `POST /v1/responses` (OpenAI's Responses API) through pydantic-ai's real adapter."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from atomtask.testing import FakeProviderServer, Reply, TokenUsage, ToolResult
from pydantic import BaseModel
from pydantic_ai import Agent, BinaryContent, NativeOutput
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.models import override_allow_model_requests

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24


class Person(BaseModel):
    name: str
    age: int


ADA = {"name": "Ada", "age": 36}


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as server, override_allow_model_requests(True):
        yield server


async def run(agent: Agent[None, Any], prompt: str, *, streamed: bool) -> Any:
    if streamed:
        async with agent.run_stream(prompt) as stream:
            return await stream.get_output()
    return (await agent.run(prompt)).output


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])
async def test_text_answer(server: FakeProviderServer, streamed: bool) -> None:
    """A text reply is the run's output, as JSON or as a stream of Responses events."""
    server.script(Reply.text("Hello, Ada."))
    assert "Hello, Ada." == await run(Agent(server.openai_responses_model()), "Hi", streamed=streamed)
    [request] = server.requests
    assert ("/v1/responses", "responses", streamed) == (request.path, request.wire, request.streamed)


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])
async def test_tool_call_answer(server: FakeProviderServer, streamed: bool) -> None:
    """A tool call without a name calls the output tool, `final_result`, the first of the body's `tools[].name`."""
    server.script(Reply.tool_call(args=ADA))
    agent = Agent(server.openai_responses_model(), output_type=Person)
    assert Person(**ADA) == await run(agent, "Ada is 36.", streamed=streamed)
    assert ["final_result"] == server.requests[0].tool_names


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])
async def test_native_output_answer(server: FakeProviderServer, streamed: bool) -> None:
    """`NativeOutput` asks for a JSON schema format; a text reply of JSON is the output."""
    server.script(Reply.text(json.dumps(ADA)))
    agent = Agent(server.openai_responses_model(), output_type=NativeOutput(Person))
    assert Person(**ADA) == await run(agent, "Ada is 36.", streamed=streamed)
    assert "json_schema" == server.requests[0].body["text"]["format"]["type"]


async def test_malformed_tool_arguments_are_retried(server: FakeProviderServer) -> None:
    """Broken JSON arguments make pydantic-ai re-ask; the retry prompt goes back as a `function_call_output`."""
    server.script(Reply.tool_call(args='{"name": "Ada", "age": '), Reply.tool_call(args=ADA))
    result = await Agent(server.openai_responses_model(), output_type=Person).run("Ada is 36.")
    assert Person(**ADA) == result.output
    [retry] = server.requests[1].tool_results
    assert "call_1" == retry.call_id


async def test_function_tool_results_are_recorded(server: FakeProviderServer) -> None:
    """Parallel calls each get their own call id; the next request carries each tool's result by that id."""

    def double(x: int) -> int:
        """Twice `x`."""
        return 2 * x

    server.script(
        Reply.tool_calls(("double", {"x": 2}), ("double", {"x": 5})),
        Reply.tool_call("final_result", ADA),
    )
    result = await Agent(server.openai_responses_model(), output_type=Person, tools=[double]).run("Go.")
    assert Person(**ADA) == result.output
    expected = [ToolResult(call_id="call_1", content="4"), ToolResult(call_id="call_2", content="10")]
    assert expected == server.requests[1].tool_results


async def test_usage_is_estimated_or_given(server: FakeProviderServer) -> None:
    """Without given counts, input tokens are the body's bytes // 4 and output tokens the answer's; given counts win."""
    server.script(Reply.text("x" * 40), Reply.text("ok", usage=TokenUsage(input_tokens=11, output_tokens=7)))
    agent = Agent(server.openai_responses_model())
    estimated = (await agent.run("Hi")).usage
    size = int(server.requests[0].headers["content-length"])
    assert (size // 4, 10) == (estimated.input_tokens, estimated.output_tokens)
    given = (await agent.run("Hi")).usage
    assert (11, 7) == (given.input_tokens, given.output_tokens)
    paid = server.batches.paid
    assert (2, size // 4 + 11, 17) == (paid.live_requests, paid.live.input_tokens, paid.live.output_tokens)


def test_wire_carries_the_responses_fields(server: FakeProviderServer) -> None:
    """The JSON answer has the Responses object's output items, status and usage details."""
    server.script(Reply.text("Hello"))
    body = json.dumps({"model": "gpt-4o-mini", "input": "Hi"}).encode()
    request = urllib.request.Request(
        f"{server.openai_base_url}/responses", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request) as answer:
        response = json.loads(answer.read())
    assert ("response", "completed", None) == (response["object"], response["status"], response["incomplete_details"])
    [message] = response["output"]
    assert ("message", "assistant", "Hello") == (message["type"], message["role"], message["content"][0]["text"])
    usage = response["usage"]
    assert (len(body) // 4, 1, len(body) // 4 + 1) == (
        usage["input_tokens"],
        usage["output_tokens"],
        usage["total_tokens"],
    )
    assert (0, 0) == (
        usage["input_tokens_details"]["cached_tokens"],
        usage["output_tokens_details"]["reasoning_tokens"],
    )


async def test_error_reply_raises_model_http_error(server: FakeProviderServer) -> None:
    """An `ErrorReply` reaches the run as `ModelHTTPError` with its status and message."""
    server.script(Reply.error(400, "Bad request body."))
    with pytest.raises(ModelHTTPError) as raised:
        await Agent(server.openai_responses_model()).run("Hi")
    assert 400 == raised.value.status_code
    assert "Bad request body." in str(raised.value.body)


async def test_image_is_recorded_as_a_file(server: FakeProviderServer) -> None:
    """An image in the prompt is an `input_image` part, recorded with its media type, size and hash."""
    server.script(Reply.text("A square."))
    await Agent(server.openai_responses_model()).run(["What is it?", BinaryContent(PNG, media_type="image/png")])
    [image] = server.requests[0].files
    assert ("input_image", "image/png", len(PNG)) == (image.part, image.media_type, image.size)


async def test_openai_model_string_reaches_the_responses_route(
    server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`OPENAI_BASE_URL` with an `openai:` model string reaches `POST /v1/responses`."""
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    server.script(Reply.tool_call(args=ADA))
    result = await Agent("openai:gpt-4o-mini", output_type=Person).run("Ada is 36.")
    assert Person(**ADA) == result.output
    assert "/v1/responses" == server.requests[0].path
