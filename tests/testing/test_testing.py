"""Tests for `atomtask.testing`: the fake provider server and the scripted `FunctionModel`."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any, Literal

import atomtask.testing
import pytest
from atomtask.testing import (
    FakeProviderServer,
    Reply,
    ScriptedCall,
    ScriptError,
    ScriptExhaustedError,
    TextReply,
    TokenUsage,
    ToolCallReply,
    scripted_model,
)
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.exceptions import (
    ModelAuthenticationError,
    ModelConnectionError,
    ModelHTTPError,
    ModelRateLimitError,
    ModelServerError,
    ModelTimeoutError,
    UnexpectedModelBehavior,
)
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models import Model, override_allow_model_requests
from pydantic_ai.models.function import AgentInfo
from pydantic_ai.settings import ModelSettings


class Person(BaseModel):
    name: str
    age: int


ADA = {"name": "Ada", "age": 36}
# `anthropic-json` caps `max_tokens` so pydantic-ai sends a plain JSON request; with the model's default
# `max_tokens` it streams every request behind the scenes, which `anthropic-sse` covers.
Wire = Literal["openai", "anthropic-json", "anthropic-sse"]
WIRES: list[Wire] = ["openai", "anthropic-json", "anthropic-sse"]


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as server, override_allow_model_requests(True):
        yield server


def model_for(
    server: FakeProviderServer, wire: Wire, *, max_retries: int = 0, settings: ModelSettings | None = None
) -> Model:
    model_settings = ModelSettings(**(settings or {}))
    if wire == "openai":
        return server.openai_chat_model(max_retries=max_retries, settings=model_settings)
    if wire == "anthropic-json":
        model_settings.setdefault("max_tokens", 1024)
    return server.anthropic_model(max_retries=max_retries, settings=model_settings)


# --- The kit's surface ----------------------------------------------------------------------------------


def test_public_api_is_pinned() -> None:
    """The kit's public names change only on purpose."""
    expected = [
        "SERVER_MODES",
        "DelayedReply",
        "DisconnectReply",
        "EmptyReply",
        "ErrorReply",
        "FakeBatches",
        "FakeProviderServer",
        "PaidUsage",
        "ReceivedFile",
        "RecordedRequest",
        "Reply",
        "ReplyFunction",
        "ScriptError",
        "ScriptExhaustedError",
        "ScriptedCall",
        "ScriptedModel",
        "ScriptedReply",
        "ServerReply",
        "SubmittedBatch",
        "TextReply",
        "TokenUsage",
        "ToolCallReply",
        "ToolCallsReply",
        "ToolResult",
        "TruncatedStreamReply",
        "scripted_model",
    ]
    assert expected == atomtask.testing.__all__


def test_import_loads_no_provider_sdk() -> None:
    """Importing the kit imports neither `openai` nor `anthropic`, which are slow and optional."""
    code = "import sys, atomtask.testing; print(sorted({'openai', 'anthropic'} & set(sys.modules)))"
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "[]" == completed.stdout.strip()


def test_server_lifecycle() -> None:
    """`base_url` needs a running server; `close()` frees the port and threads, is idempotent, and is final."""
    server = FakeProviderServer()
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.base_url
    server.start()
    assert server.base_url.startswith("http://127.0.0.1:")
    assert f"{server.base_url}/v1" == server.openai_base_url
    assert server.base_url == server.anthropic_base_url
    port = int(server.base_url.rsplit(":", 1)[1])
    server.close()
    server.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    assert [] == [thread for thread in threading.enumerate() if thread.name == "fake-provider"]
    with pytest.raises(RuntimeError, match="closed"):
        server.start()


# --- Structured output through the real SDKs --------------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
async def test_tool_output_is_parsed(server: FakeProviderServer, wire: Wire) -> None:
    """A scripted call to the first offered tool becomes the agent's typed output."""
    server.script(Reply.tool_call(args=ADA))
    result = await Agent(model_for(server, wire), output_type=Person).run("Ada is 36.")
    assert Person(name="Ada", age=36) == result.output
    assert [wire == "anthropic-sse"] == [request.streamed for request in server.requests]
    assert 0 == server.pending


@pytest.mark.parametrize("wire", ["openai", "anthropic-json"])
async def test_streamed_tool_output_is_parsed(server: FakeProviderServer, wire: Wire) -> None:
    """`run_stream` gets the same output from the server-sent event stream."""
    server.script(Reply.tool_call(args=ADA))
    async with Agent(model_for(server, wire), output_type=Person).run_stream("Ada is 36.") as stream:
        output = await stream.get_output()
    assert Person(name="Ada", age=36) == output
    assert [True] == [request.streamed for request in server.requests]


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("wire", ["openai", "anthropic-json"])
async def test_text_output_is_parsed(server: FakeProviderServer, wire: Wire, streamed: bool) -> None:
    """A scripted text answer arrives whole, whether sent as one body or as deltas."""
    server.script(Reply.text("Hello there, general."))
    agent = Agent(model_for(server, wire))
    if streamed:
        async with agent.run_stream("Hi") as stream:
            output = await stream.get_output()
    else:
        output = (await agent.run("Hi")).output
    assert "Hello there, general." == output


@pytest.mark.parametrize("wire", WIRES)
async def test_reply_usage_is_reported(server: FakeProviderServer, wire: Wire) -> None:
    """Token counts given with a reply reach pydantic-ai's run usage unchanged."""
    server.script(Reply.text("ok", usage=TokenUsage(input_tokens=11, output_tokens=7)))
    result = await Agent(model_for(server, wire)).run("Hi")
    assert (11, 7) == (result.usage.input_tokens, result.usage.output_tokens)


@pytest.mark.parametrize("wire", ["openai", "anthropic-json"])
async def test_default_usage_is_estimated_from_sizes(server: FakeProviderServer, wire: Wire) -> None:
    """Without given counts, input tokens come from the request size and output tokens from the reply."""
    server.script(Reply.text("x" * 40))
    result = await Agent(model_for(server, wire)).run("Hi")
    request_size = int(server.requests[0].headers["content-length"])
    assert (request_size // 4, 10) == (result.usage.input_tokens, result.usage.output_tokens)


async def test_named_tool_call_runs_a_function_tool(server: FakeProviderServer) -> None:
    """A tool call by name runs the agent's function tool, and its result is sent back to the model."""
    agent = Agent(server.openai_chat_model())

    @agent.tool_plain
    def double(x: int) -> int:
        return 2 * x

    server.script(Reply.tool_call("double", {"x": 21}), Reply.text("It is 42."))
    result = await agent.run("Double 21.")
    assert "It is 42." == result.output
    tool_message = server.requests[1].body["messages"][-1]
    assert ("tool", "42") == (tool_message["role"], tool_message["content"])


async def test_concurrent_runs_each_get_one_reply(server: FakeProviderServer) -> None:
    """Replies are handed out once each under concurrent requests, and every request is recorded."""
    texts = [f"answer {n}" for n in range(8)]
    server.script(*(Reply.text(text) for text in texts))
    agent = Agent(server.openai_chat_model())
    results = await asyncio.gather(*(agent.run("Hi") for _ in texts))
    assert sorted(texts) == sorted(result.output for result in results)
    assert 8 == len(server.requests)


# --- What the model received ----------------------------------------------------------------------------


async def test_openai_request_is_recorded(server: FakeProviderServer) -> None:
    """The recorded OpenAI request holds the system prompt, the instructions and the output tool schema."""
    server.script(Reply.tool_call(args=ADA))
    agent = Agent(
        server.openai_chat_model(),
        output_type=Person,
        system_prompt="You are careful.",
        instructions="Extract.",
    )
    await agent.run("Ada is 36.")
    [request] = server.requests
    assert ("/v1/chat/completions", "openai") == (request.path, request.wire)
    assert "Bearer test-key" == request.headers["authorization"]
    assert "gpt-4o-mini" == request.body["model"]
    system = [m["content"] for m in request.body["messages"] if m["role"] == "system"]
    assert ["You are careful.", "Extract."] == system
    [tool] = request.body["tools"]
    assert "final_result" == tool["function"]["name"]
    assert {"name", "age"} == set(tool["function"]["parameters"]["properties"])


async def test_anthropic_request_is_recorded(server: FakeProviderServer) -> None:
    """The recorded Anthropic request holds the system blocks and the output tool's input schema."""
    server.script(Reply.tool_call(args=ADA))
    agent = Agent(
        server.anthropic_model(),
        output_type=Person,
        system_prompt="You are careful.",
        instructions="Extract.",
    )
    await agent.run("Ada is 36.")
    [request] = server.requests
    assert ("/v1/messages", "anthropic") == (request.path, request.wire)
    assert "claude-haiku-4-5" == request.body["model"]
    assert ["You are careful.", "Extract."] == [block["text"] for block in request.body["system"]]
    [tool] = request.body["tools"]
    assert "final_result" == tool["name"]
    assert ["name", "age"] == tool["input_schema"]["required"]


# --- Failures -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize(
    ("status", "category"),
    [(401, ModelAuthenticationError), (429, ModelRateLimitError), (500, ModelServerError)],
)
async def test_error_reply_raises_model_http_error(
    server: FakeProviderServer, wire: Wire, status: int, category: type[Exception]
) -> None:
    """An error reply surfaces as pydantic-ai's `ModelHTTPError` of the status's category."""
    server.script(Reply.error(status, "scripted failure"))
    with pytest.raises(ModelHTTPError) as raised:
        await Agent(model_for(server, wire), output_type=Person).run("Hi")
    assert status == raised.value.status_code
    assert isinstance(raised.value, category)


async def test_error_body_is_provider_shaped(server: FakeProviderServer) -> None:
    """Error bodies follow each provider's shape, with the type and code the provider sends for the status."""
    server.script(Reply.error(401, "bad key"), Reply.error(401, "bad key"))
    with pytest.raises(ModelHTTPError) as openai_error:
        await Agent(server.openai_chat_model()).run("Hi")
    with pytest.raises(ModelHTTPError) as anthropic_error:
        await Agent(server.anthropic_model()).run("Hi")
    expected_openai = {
        "message": "bad key",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_api_key",
    }
    assert expected_openai == openai_error.value.body
    expected_anthropic = {"type": "error", "error": {"type": "authentication_error", "message": "bad key"}}
    assert expected_anthropic == anthropic_error.value.body


async def test_error_headers_are_sent(server: FakeProviderServer) -> None:
    """Headers given with an error reply reach the client, e.g. `retry-after` on a 429."""
    server.script(Reply.error(429, "slow down", {"retry-after": "3"}))
    with pytest.raises(ModelRateLimitError) as raised:
        await Agent(server.openai_chat_model()).run("Hi")
    assert 3.0 == raised.value.retry_after


@pytest.mark.parametrize("wire", WIRES)
async def test_disconnect_raises_connection_error(server: FakeProviderServer, wire: Wire) -> None:
    """A connection closed without an answer surfaces as `ModelConnectionError`."""
    server.script(Reply.disconnect())
    with pytest.raises(ModelConnectionError):
        await Agent(model_for(server, wire)).run("Hi")


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("wire", ["openai", "anthropic-json"])
async def test_truncated_body_raises_connection_error(server: FakeProviderServer, wire: Wire, streamed: bool) -> None:
    """A body cut off midway, streamed or not, surfaces as `ModelConnectionError`, not a short answer."""
    server.script(Reply.truncated_stream("A long answer that never finishes."))
    agent = Agent(model_for(server, wire))
    with pytest.raises(ModelConnectionError):
        if streamed:
            async with agent.run_stream("Hi") as stream:
                await stream.get_output()
        else:
            await agent.run("Hi")


@pytest.mark.parametrize("wire", WIRES)
async def test_delay_past_timeout_raises_timeout_error(server: FakeProviderServer, wire: Wire) -> None:
    """A reply later than the client timeout raises `ModelTimeoutError`; closing doesn't wait for it."""
    server.script(Reply.delay(30, Reply.text("too late")))
    with pytest.raises(ModelTimeoutError):
        await Agent(model_for(server, wire, settings=ModelSettings(timeout=0.1))).run("Hi")


async def test_delay_within_timeout_answers(server: FakeProviderServer) -> None:
    """A short delay still delivers the reply it wraps."""
    server.script(Reply.delay(0.05, Reply.text("on time")))
    assert "on time" == (await Agent(server.openai_chat_model()).run("Hi")).output


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize(
    "bad_args", ['{"name": "Ada", "age": ', {"name": "Ada"}], ids=["malformed-json", "missing-field"]
)
async def test_bad_tool_args_are_retried(server: FakeProviderServer, wire: Wire, bad_args: Any) -> None:
    """Invalid output arguments make pydantic-ai send the error back and use the second scripted reply."""
    server.script(Reply.tool_call(args=bad_args), Reply.tool_call(args=ADA))
    result = await Agent(model_for(server, wire), output_type=Person).run("Ada is 36.")
    assert Person(name="Ada", age=36) == result.output
    assert 2 == len(server.requests)
    retry_prompt = json.dumps(server.requests[1].body["messages"][-1])
    assert ("json_invalid" if isinstance(bad_args, str) else "missing") in retry_prompt


async def test_streamed_output_failure_is_not_retried(server: FakeProviderServer) -> None:
    """pydantic-ai's `run_stream` does not retry bad output, so the second reply stays unused."""
    server.script(Reply.tool_call(args='{"name": '), Reply.tool_call(args=ADA))
    with pytest.raises(UnexpectedModelBehavior, match="retries are not supported"):
        async with Agent(server.openai_chat_model(), output_type=Person).run_stream("Hi") as stream:
            await stream.get_output()
    assert 1 == server.pending


@pytest.mark.parametrize("wire", WIRES)
async def test_exhausted_script_answers_500_without_sdk_retries(server: FakeProviderServer, wire: Wire) -> None:
    """With no reply left the server answers 500 "no scripted reply left", which the SDKs don't retry."""
    with pytest.raises(ModelHTTPError) as raised:
        await Agent(model_for(server, wire, max_retries=2)).run("Hi")
    assert 500 == raised.value.status_code
    assert "no scripted reply left for request #1 (0 scripted)" in str(raised.value)
    assert 1 == len(server.requests)


async def test_unnamed_tool_call_without_tools_answers_500(server: FakeProviderServer) -> None:
    """A tool call without a name, to a request offering no tools, answers 500 and says to pass `name=`."""
    server.script(Reply.tool_call(args={"x": 1}))
    with pytest.raises(ModelHTTPError, match="Pass `name=`"):
        await Agent(server.openai_chat_model()).run("Hi")


def test_unknown_path_answers_404_and_keeps_the_script(server: FakeProviderServer) -> None:
    """A request to a path the server doesn't serve gets a 404 with a hint and consumes no reply."""
    server.script(Reply.text("kept"))
    request = urllib.request.Request(f"{server.base_url}/v1/v1/messages", data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request, timeout=5)
    assert 404 == raised.value.code
    assert "appends `/v1/messages`" in raised.value.read().decode()
    assert 1 == server.pending


def test_keep_alive_answers_several_requests_on_one_connection() -> None:
    """With `keep_alive=True` two requests share one connection; by default each answer closes its connection."""
    import http.client

    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    for keep_alive, expected in ((True, [(None, True), (None, True)]), (False, [("close", False), ("close", False)])):
        with FakeProviderServer(keep_alive=keep_alive) as fake:
            fake.script(Reply.text("one"), Reply.text("two"))
            connection = http.client.HTTPConnection("127.0.0.1", int(fake.base_url.rsplit(":", 1)[1]), timeout=5)
            seen = []
            for _ in range(2):
                if not keep_alive:
                    connection.close()  # the server closed it: a new one for the next request
                connection.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
                response = connection.getresponse()
                assert 200 == response.status
                response.read()
                seen.append((response.getheader("Connection"), connection.sock is not None))  # still open?
            connection.close()
            assert expected == seen
            assert 0 == fake.pending


@pytest.mark.parametrize(
    ("path", "stream", "empty_marker"),
    [
        ("/v1/chat/completions", False, '"choices": []'),
        ("/v1/chat/completions", True, '"choices": []'),
        ("/v1/messages", False, '"content": []'),
        ("/v1/messages", True, "event: message_stop"),
    ],
)
def test_empty_reply_answers_without_any_output(
    server: FakeProviderServer, path: str, stream: bool, empty_marker: str
) -> None:
    """`Reply.empty()` answers 200 with `choices: []` (OpenAI) or `content: []` (Anthropic), streamed or not."""
    server.script(Reply.empty())
    body = json.dumps({"model": "m", "stream": stream}).encode()
    request = urllib.request.Request(f"{server.base_url}{path}", data=body, method="POST")
    with urllib.request.urlopen(request, timeout=5) as response:
        text = response.read().decode()
    assert 200 == response.status
    assert empty_marker in text
    assert "tool_calls" not in text and "content_block_start" not in text and '"delta": {"content"' not in text


# --- Environment wiring ---------------------------------------------------------------------------------


async def test_openai_environment_reaches_server(server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """`OPENAI_BASE_URL` and an `openai-chat:` model string reach the fake server."""
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    server.script(Reply.tool_call(args=ADA))
    result = await Agent("openai-chat:gpt-4o-mini", output_type=Person).run("Ada is 36.")
    assert Person(name="Ada", age=36) == result.output
    assert "Bearer env-key" == server.requests[0].headers["authorization"]


async def test_anthropic_environment_reaches_server(
    server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ANTHROPIC_BASE_URL` and an `anthropic:` model string reach the fake server."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key")
    server.script(Reply.tool_call(args=ADA))
    result = await Agent("anthropic:claude-haiku-4-5", output_type=Person).run("Ada is 36.")
    assert Person(name="Ada", age=36) == result.output
    assert "/v1/messages" == server.requests[0].path


# --- Scripted FunctionModel -----------------------------------------------------------------------------


async def test_scripted_model_records_what_the_model_got() -> None:
    """Each call records the messages and `AgentInfo`: instructions, system prompts, output tools."""
    model = scripted_model(ADA)
    agent = Agent(model, output_type=Person, system_prompt="You are careful.", instructions="Extract.")
    result = await agent.run("Ada is 36.")
    assert Person(name="Ada", age=36) == result.output
    [call] = model.calls
    assert "Extract." == call.instructions
    assert ["You are careful."] == call.system_prompts
    assert ["final_result"] == [tool.name for tool in call.info.output_tools]
    assert 0 == model.pending


async def test_scripted_text_replies_in_order() -> None:
    """`str` and `TextReply` replies are text answers, given in order across runs."""
    model = scripted_model("first", TextReply("second"))
    agent = Agent(model)
    assert ["first", "second"] == [(await agent.run("Hi")).output for _ in range(2)]


async def test_scripted_bad_args_are_retried() -> None:
    """Malformed tool arguments make pydantic-ai retry, which takes the next scripted reply."""
    model = scripted_model(ToolCallReply('{"name": '), ToolCallReply(ADA))
    result = await Agent(model, output_type=Person).run("Ada is 36.")
    assert Person(name="Ada", age=36) == result.output
    assert 2 == len(model.calls)


async def test_scripted_named_call_runs_function_tool() -> None:
    """A named `ToolCallReply` calls that function tool; an unnamed one prefers the output tool."""
    model = scripted_model(ToolCallReply({"x": 2}, name="double"), ToolCallReply({"name": "Ada", "age": 4}))
    agent = Agent(model, output_type=Person)

    @agent.tool_plain
    def double(x: int) -> int:
        return 2 * x

    result = await agent.run("Double 2.")
    assert Person(name="Ada", age=4) == result.output
    assert ["double"] == [tool.name for tool in model.calls[1].info.function_tools]


async def test_scripted_function_reply_sees_the_request() -> None:
    """A function reply builds its own response from the messages and `AgentInfo`."""

    def echo(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(f"{len(messages)} message(s), instructions {info.instructions!r}")])

    result = await Agent(scripted_model(echo), instructions="Be brief.").run("Hi")
    assert "1 message(s), instructions 'Be brief.'" == result.output


async def test_scripted_stream() -> None:
    """`run_stream` gets text and tool-call replies as deltas."""
    async with Agent(scripted_model("streamed text answer")).run_stream("Hi") as stream:
        assert "streamed text answer" == await stream.get_output()
    async with Agent(scripted_model(ADA), output_type=Person).run_stream("Hi") as stream:
        assert Person(name="Ada", age=36) == await stream.get_output()


async def test_scripted_usage_is_reported() -> None:
    """Token counts given with a reply replace `FunctionModel`'s estimate."""
    model = scripted_model(TextReply("ok", usage=TokenUsage(input_tokens=5, output_tokens=2)))
    result = await Agent(model).run("Hi")
    assert (5, 2) == (result.usage.input_tokens, result.usage.output_tokens)


async def test_scripted_exhaustion_names_the_count() -> None:
    """Asking for more replies than scripted raises `ScriptExhaustedError` saying how many there were."""
    agent = Agent(scripted_model("only one"))
    await agent.run("Hi")
    with pytest.raises(ScriptExhaustedError, match="only 1 were scripted") as raised:
        await agent.run("Hi again")
    assert 1 == raised.value.scripted


async def test_scripted_unnamed_call_without_tools_raises() -> None:
    """An unnamed tool call when the agent offers no tool raises `ScriptError` asking for `name=`."""
    with pytest.raises(ScriptError, match=r"name=\.\.\."):
        await Agent(scripted_model(ToolCallReply({"x": 1}))).run("Hi")


def test_scripted_call_is_frozen() -> None:
    """Recorded calls can't be changed after the fact."""
    model = scripted_model("ok")
    Agent(model).run_sync("Hi")
    call: ScriptedCall = model.calls[0]
    with pytest.raises(AttributeError):
        call.messages = []  # type: ignore[misc]  # Assigning to a frozen attrs field is the point here.
