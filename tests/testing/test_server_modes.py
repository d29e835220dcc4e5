"""The fake provider's local-server modes (`FakeProviderServer(server=...)`, `_servers`): each server's truth.

Plain HTTP with the exact bodies a client sends: what each server lists, refuses, reads of the token limits
and constrains decoding to; then each mode through pydantic-ai, and `serve --server`.
"""

from __future__ import annotations

import argparse
import io
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any, Literal

import jsonschema
import pytest
from atomtask.testing import SERVER_MODES, FakeProviderServer, Reply, TokenUsage
from atomtask.testing._serve import _server, build_parser
from pydantic import BaseModel
from pydantic_ai import Agent, NativeOutput, PromptedOutput
from pydantic_ai.exceptions import ModelHTTPError, UnexpectedModelBehavior
from pydantic_ai.models import override_allow_model_requests


class Person(BaseModel):
    name: str
    age: int


PERSON: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
SKU: dict[str, Any] = {
    "type": "object",
    "properties": {"sku": {"type": "string", "pattern": r"^[A-Z]{3}-\d{4}$"}},
    "required": ["sku"],
}
ASK = [{"role": "user", "content": "Who wrote the first program?"}]
PROMPTED = [
    {
        "role": "system",
        "content": f"Always respond with a JSON object that's compatible with this schema:\n\n{json.dumps(PERSON)}\n\n"
        "Don't include any text or Markdown fencing before or after.",
    },
    *ASK,
]


def tool(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


LOOKUP, FINAL = tool("lookup", SKU), tool("final_result", PERSON)
TOOLS = [LOOKUP, FINAL]  # pydantic-ai lists function tools before its output tool
JSON_SCHEMA = {"type": "json_schema", "json_schema": {"name": "Person", "schema": PERSON, "strict": True}}
JSON_OBJECT_SCHEMA = {"type": "json_object", "schema": PERSON}
NAMED_LOOKUP = {"type": "function", "function": {"name": "lookup"}}


@pytest.fixture
def servers() -> Iterator[dict[str | None, FakeProviderServer]]:
    """One server per mode (and one without), started together."""
    started = {name: FakeProviderServer(server=name).start() for name in (*SERVER_MODES, None)}
    try:
        yield started
    finally:
        for server in started.values():
            server.close()


def post(server: FakeProviderServer, body: dict[str, Any]) -> tuple[int, Any]:
    """POST `body` to the chat completions endpoint; the status and the parsed JSON answer."""
    data = json.dumps({"model": "any", **body}).encode()
    request = urllib.request.Request(
        f"{server.openai_base_url}/chat/completions", data=data, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def post_stream(server: FakeProviderServer, body: dict[str, Any]) -> tuple[str, str, list[dict[str, Any]], int]:
    """A streamed request: the text, the tool call arguments, the chunks' choices and the usage's output tokens."""
    status, chunks = 200, []
    data = json.dumps({"model": "any", "stream": True, **body}).encode()
    request = urllib.request.Request(f"{server.openai_base_url}/chat/completions", data=data)
    with urllib.request.urlopen(request, timeout=10) as response:
        assert status == response.status
        for line in response.read().decode().splitlines():
            if line.startswith("data: {"):
                chunks.append(json.loads(line[len("data: ") :]))
    choices = [choice for chunk in chunks for choice in chunk["choices"]]
    deltas = [choice["delta"] for choice in choices]
    text = "".join(delta.get("content") or "" for delta in deltas)
    arguments = "".join(call["function"]["arguments"] for delta in deltas for call in delta.get("tool_calls", []))
    usage = next(chunk["usage"] for chunk in chunks if chunk.get("usage"))
    return text, arguments, choices, usage["completion_tokens"]


def choice_of(answer: Any) -> dict[str, Any]:
    (choice,) = answer["choices"]
    return dict(choice)


# The models list


@pytest.mark.parametrize(
    ("mode", "owner"),
    [
        ("llama-cpp-python", "me"),
        ("llama-server", "llamacpp"),
        ("vllm", "vllm"),
        ("ollama", "library"),
        ("lmstudio", "organization_owner"),
        ("openai", "system"),
        (None, "atomtask-fake"),
    ],
)
def test_models_list_names_each_servers_owner(
    servers: dict[str | None, FakeProviderServer], mode: str | None, owner: str
) -> None:
    """`GET /v1/models` lists one model, `owned_by` as the emulated server says it."""
    with urllib.request.urlopen(f"{servers[mode].openai_base_url}/models", timeout=10) as response:
        page = json.loads(response.read())
    assert "list" == page["object"]
    (model,) = page["data"]
    assert ("model", owner, 0) == (model["object"], model["owned_by"], model["created"])
    assert isinstance(model["id"], str) and model["id"]
    assert mode == servers[mode].server


def test_the_modes_are_the_six_servers_and_another_name_is_refused() -> None:
    """`SERVER_MODES` names the servers; any other name is a `ValueError` listing them, with a guess."""
    assert ("llama-cpp-python", "ollama", "vllm", "llama-server", "lmstudio", "openai") == SERVER_MODES
    with pytest.raises(ValueError, match="Unknown server 'olama'; the fake provider emulates llama-cpp-python, ") as e:
        FakeProviderServer(server="olama")
    assert str(e.value).endswith("Did you mean 'ollama'?")


# Refusals


LITERAL_ERROR = (
    "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or "
    "'json_object'\", 'input': 'json_schema', 'ctx': {'expected': \"'text' or 'json_object'\"}}]"
)


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])
def test_llama_cpp_python_refuses_a_json_schema_response_format(
    servers: dict[str | None, FakeProviderServer], streamed: bool
) -> None:
    """HTTP 500 with its validation error, before any scripted reply is used; the request is still recorded."""
    server = servers["llama-cpp-python"]
    server.script(Reply.text("kept"))
    status, body = post(server, {"messages": ASK, "response_format": JSON_SCHEMA, "stream": streamed})
    expected = {"message": LITERAL_ERROR, "type": "internal_server_error", "param": None, "code": None}
    assert (500, {"error": expected}) == (status, body)
    assert 1 == server.pending
    assert [JSON_SCHEMA] == [request.body["response_format"] for request in server.requests]


def test_llama_cpp_python_refuses_an_assistant_message_without_content(
    servers: dict[str | None, FakeProviderServer],
) -> None:
    """An assistant message's `content: null` beside its tool calls is HTTP 500 at its index; other servers take it."""
    call = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"sku": "ABC-1234"}'}}
    messages = [
        *ASK,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "found"},
    ]
    status, body = post(servers["llama-cpp-python"], {"messages": messages, "tools": TOOLS})
    error = (
        "[{'type': 'string_type', 'loc': ('body', 'messages', 1, 'content'), "
        "'msg': 'Input should be a valid string', 'input': None}]"
    )
    assert (500, error, "internal_server_error") == (status, body["error"]["message"], body["error"]["type"])
    for mode in ("llama-server", "vllm", "ollama", "lmstudio", "openai"):
        assert 200 == post(servers[mode], {"messages": messages, "tools": TOOLS})[0], mode


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])
def test_lmstudio_refuses_a_json_object_response_format(
    servers: dict[str | None, FakeProviderServer], streamed: bool
) -> None:
    """HTTP 400 with LM Studio's own error body (a string), the script untouched; with a schema beside it too."""
    server = servers["lmstudio"]
    server.script(Reply.text("kept"))
    for response_format in ({"type": "json_object"}, JSON_OBJECT_SCHEMA):
        status, body = post(server, {"messages": ASK, "response_format": response_format, "stream": streamed})
        assert (400, {"error": "'response_format.type' must be 'json_schema' or 'text'"}) == (status, body)
    assert (1, 2) == (server.pending, len(server.requests))


@pytest.mark.parametrize(
    ("mode", "response_format"),
    [(mode, JSON_SCHEMA) for mode in SERVER_MODES if mode != "llama-cpp-python"]
    + [(mode, {"type": "json_object"}) for mode in SERVER_MODES if mode != "lmstudio"]
    + [(None, JSON_SCHEMA), (None, {"type": "json_object"})],
)
def test_other_servers_take_those_response_formats(
    servers: dict[str | None, FakeProviderServer], mode: str | None, response_format: dict[str, Any]
) -> None:
    """A refusal is one server's: the others answer the same request, a scripted reply as scripted."""
    servers[mode].script(Reply.text("scripted"))
    status, body = post(servers[mode], {"messages": ASK, "response_format": response_format})
    assert (200, "scripted") == (status, choice_of(body)["message"]["content"])


# The token limit each server reads


HONOURED = {
    "llama-cpp-python": {"max_tokens"},
    "ollama": {"max_tokens"},
    "llama-server": {"max_tokens"},
    "lmstudio": {"max_tokens"},
    "vllm": {"max_tokens", "max_completion_tokens"},
    "openai": {"max_tokens", "max_completion_tokens"},
    None: set(),  # without a mode a limit cuts nothing, as before modes
}
LONG = "word " * 80  # 400 bytes: 100 tokens by the usage estimate


@pytest.mark.parametrize("field", ["max_tokens", "max_completion_tokens"])
@pytest.mark.parametrize("mode", [*SERVER_MODES, None])
def test_a_longer_answer_is_cut_at_the_limit_the_server_reads(
    servers: dict[str | None, FakeProviderServer], mode: str | None, field: str
) -> None:
    """The limit a server reads cuts the text to ~N tokens, finish_reason "length"; a field it ignores cuts nothing."""
    server = servers[mode]
    server.script(Reply.text(LONG), Reply.text(LONG))
    _, body = post(server, {"messages": ASK, field: 10})
    text, _, choices, streamed_tokens = post_stream(server, {"messages": ASK, field: 10})
    choice = choice_of(body)
    if field in HONOURED[mode]:
        assert (LONG[:40], "length", 10) == (
            choice["message"]["content"],
            choice["finish_reason"],
            body["usage"]["completion_tokens"],
        )
        assert (LONG[:40], "length", 10) == (text, choices[-1]["finish_reason"], streamed_tokens)
    else:
        assert (LONG, "stop", 100) == (
            choice["message"]["content"],
            choice["finish_reason"],
            body["usage"]["completion_tokens"],
        )
        assert (LONG, "stop", 100) == (text, choices[-1]["finish_reason"], streamed_tokens)


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])
def test_a_tool_calls_arguments_are_cut_too(servers: dict[str | None, FakeProviderServer], streamed: bool) -> None:
    """A call longer than the limit keeps ~N tokens of its arguments (no longer JSON), finish_reason "length"."""
    server = servers["vllm"]
    args = {"name": "Ada Lovelace " * 10, "age": 36}
    server.script(Reply.tool_call("final_result", args))
    body = {"messages": ASK, "tools": TOOLS, "max_completion_tokens": 5}
    full = json.dumps(args)
    if streamed:
        _, arguments, choices, tokens = post_stream(server, body)
        finish = choices[-1]["finish_reason"]
    else:
        _, answer = post(server, body)
        (call,) = choice_of(answer)["message"]["tool_calls"]
        arguments, finish = call["function"]["arguments"], choice_of(answer)["finish_reason"]
        tokens = answer["usage"]["completion_tokens"]
    assert (full[:20], "length", 5) == (arguments, finish, tokens)


def test_vllm_reads_max_completion_tokens_before_max_tokens(servers: dict[str | None, FakeProviderServer]) -> None:
    """With both fields sent, vLLM (like OpenAI) takes `max_completion_tokens`."""
    server = servers["vllm"]
    server.script(Reply.text(LONG))
    _, body = post(server, {"messages": ASK, "max_tokens": 5, "max_completion_tokens": 20})
    assert (LONG[:80], 20) == (choice_of(body)["message"]["content"], body["usage"]["completion_tokens"])


def test_a_reply_within_the_limit_and_its_scripted_usage_are_kept(
    servers: dict[str | None, FakeProviderServer],
) -> None:
    """An answer no longer than the limit ends as usual; a scripted usage over the limit is capped at it."""
    server = servers["llama-server"]
    server.script(Reply.text("short"), Reply.text("short", usage=TokenUsage(input_tokens=3, output_tokens=50)))
    _, within = post(server, {"messages": ASK, "max_tokens": 10})
    _, over = post(server, {"messages": ASK, "max_tokens": 10})
    assert ("short", "stop") == (choice_of(within)["message"]["content"], choice_of(within)["finish_reason"])
    assert ("short", "length", 10) == (
        choice_of(over)["message"]["content"],
        choice_of(over)["finish_reason"],
        over["usage"]["completion_tokens"],
    )


# The default answers: a small model, right only where the server constrains decoding

Expect = Literal["json", "prose"] | tuple[Literal["tool"], str]

ROWS: list[tuple[str, str, dict[str, Any], Expect]] = [
    # llama-cpp-python: json_object with a schema and a named tool choice; never "required"
    ("llama-cpp-python", "json_object with schema", {"response_format": JSON_OBJECT_SCHEMA}, "json"),
    ("llama-cpp-python", "named tool", {"tools": TOOLS, "tool_choice": NAMED_LOOKUP}, ("tool", "lookup")),
    ("llama-cpp-python", "required", {"tools": TOOLS, "tool_choice": "required"}, "prose"),
    ("llama-cpp-python", "auto", {"tools": TOOLS, "tool_choice": "auto"}, "prose"),
    ("llama-cpp-python", "json_object", {"response_format": {"type": "json_object"}}, "prose"),
    ("llama-cpp-python", "prompted", {"messages": PROMPTED}, "prose"),
    # llama-server: json_schema, json_object with a schema, required (a named choice read as required)
    ("llama-server", "json_schema", {"response_format": JSON_SCHEMA}, "json"),
    ("llama-server", "json_object with schema", {"response_format": JSON_OBJECT_SCHEMA}, "json"),
    ("llama-server", "required", {"tools": TOOLS, "tool_choice": "required"}, ("tool", "final_result")),
    ("llama-server", "named tool", {"tools": TOOLS, "tool_choice": NAMED_LOOKUP}, ("tool", "final_result")),
    ("llama-server", "required, no output tool", {"tools": [LOOKUP], "tool_choice": "required"}, ("tool", "lookup")),
    ("llama-server", "auto", {"tools": TOOLS}, "prose"),
    ("llama-server", "structured_outputs", {"structured_outputs": {"json": PERSON}}, "prose"),
    ("llama-server", "prompted", {"messages": PROMPTED, "response_format": {"type": "json_object"}}, "prose"),
    # vllm: json_schema, structured_outputs, named or required
    ("vllm", "json_schema", {"response_format": JSON_SCHEMA}, "json"),
    ("vllm", "structured_outputs", {"structured_outputs": {"json": PERSON}}, "json"),
    ("vllm", "named tool", {"tools": TOOLS, "tool_choice": NAMED_LOOKUP}, ("tool", "lookup")),
    ("vllm", "required", {"tools": TOOLS, "tool_choice": "required"}, ("tool", "final_result")),
    ("vllm", "auto", {"tools": TOOLS, "tool_choice": "auto"}, "prose"),
    ("vllm", "json_object with schema", {"response_format": JSON_OBJECT_SCHEMA}, "prose"),
    ("vllm", "prompted", {"messages": PROMPTED}, "prose"),
    # ollama: json_schema; any offered tools (tool_choice ignored)
    ("ollama", "json_schema", {"response_format": JSON_SCHEMA}, "json"),
    ("ollama", "auto", {"tools": TOOLS}, ("tool", "final_result")),
    ("ollama", "named tool ignored", {"tools": TOOLS, "tool_choice": NAMED_LOOKUP}, ("tool", "final_result")),
    ("ollama", "no output tool", {"tools": [LOOKUP], "tool_choice": "none"}, ("tool", "lookup")),
    ("ollama", "json_object with schema", {"response_format": JSON_OBJECT_SCHEMA}, "prose"),
    ("ollama", "prompted", {"messages": PROMPTED}, "prose"),
    # lmstudio: json_schema, required
    ("lmstudio", "json_schema", {"response_format": JSON_SCHEMA}, "json"),
    ("lmstudio", "required", {"tools": TOOLS, "tool_choice": "required"}, ("tool", "final_result")),
    ("lmstudio", "named tool", {"tools": TOOLS, "tool_choice": NAMED_LOOKUP}, "prose"),
    ("lmstudio", "auto", {"tools": TOOLS}, "prose"),
    ("lmstudio", "prompted", {"messages": PROMPTED}, "prose"),
    # openai: as asked, the prompt included
    ("openai", "json_schema", {"response_format": JSON_SCHEMA}, "json"),
    ("openai", "prompted", {"messages": PROMPTED}, "json"),
    ("openai", "named tool", {"tools": TOOLS, "tool_choice": NAMED_LOOKUP}, ("tool", "lookup")),
    ("openai", "required", {"tools": TOOLS, "tool_choice": "required"}, ("tool", "final_result")),
    ("openai", "auto", {"tools": TOOLS}, ("tool", "final_result")),
]


def check(text: str | None, calls: list[dict[str, Any]], expect: Expect) -> None:
    """The answer is what `expect` says: schema-valid JSON text, a valid call of that tool, or prose."""
    if expect == "json":
        assert text is not None and not calls
        jsonschema.validate(json.loads(text), PERSON)
    elif expect == "prose":
        assert text is not None and not calls
        assert text.startswith("Sure! Here is the information you asked for: ")
        with pytest.raises(ValueError):
            json.loads(text)
    else:
        (call,) = calls
        assert expect[1] == call["function"]["name"]
        jsonschema.validate(json.loads(call["function"]["arguments"]), SKU if expect[1] == "lookup" else PERSON)


@pytest.mark.parametrize(("mode", "form", "extra", "expect"), ROWS, ids=[f"{row[0]}-{row[1]}" for row in ROWS])
def test_the_default_answer_is_right_exactly_where_the_server_constrains_decoding(
    servers: dict[str | None, FakeProviderServer], mode: str, form: str, extra: dict[str, Any], expect: Expect
) -> None:
    """With no script, a constrained form gets schema-valid JSON or a valid call; an unconstrained one prose."""
    status, body = post(servers[mode], {"messages": ASK, **extra})
    message = choice_of(body)["message"]
    assert 200 == status
    check(message["content"], message.get("tool_calls", []), expect)
    finish = choice_of(body)["finish_reason"]
    assert ("stop" if isinstance(expect, str) else "tool_calls") == finish


@pytest.mark.parametrize(
    ("mode", "extra", "expect"),
    [
        ("llama-cpp-python", {"response_format": JSON_OBJECT_SCHEMA}, "json"),
        ("vllm", {"tools": TOOLS, "tool_choice": NAMED_LOOKUP}, ("tool", "lookup")),
        ("lmstudio", {"messages": PROMPTED}, "prose"),
    ],
)
def test_streamed_default_answers_are_the_same(
    servers: dict[str | None, FakeProviderServer], mode: str, extra: dict[str, Any], expect: Expect
) -> None:
    """A stream carries the same answer as JSON would, in deltas."""
    text, arguments, _, _ = post_stream(servers[mode], {"messages": ASK, **extra})
    calls = [{"function": {"name": expect[1], "arguments": arguments}}] if isinstance(expect, tuple) else []
    check(None if calls else text, calls, expect)
    _, body = post(servers[mode], {"messages": ASK, **extra})
    assert (choice_of(body)["message"]["content"] or "") == text


def test_default_answers_are_the_same_for_the_same_request(servers: dict[str | None, FakeProviderServer]) -> None:
    """Deterministic: the same request gets the same prose, another request another one."""
    server = servers["llama-server"]
    first, again, other = (
        choice_of(post(server, {"messages": [{"role": "user", "content": said}]})[1])["message"]["content"]
        for said in ("Hi", "Hi", "Hello")
    )
    assert first == again != other


def test_a_responder_and_a_script_come_before_the_default(servers: dict[str | None, FakeProviderServer]) -> None:
    """In a mode the script, then the responder answer first; the mode's refusals and limit still apply."""
    server = servers["llama-cpp-python"]
    server.script(Reply.text("scripted"))
    server.respond_with(lambda request: Reply.text(LONG))
    answers = [post(server, {"messages": ASK, "max_tokens": 3})[1] for _ in range(2)]
    assert ["scripted", LONG[:12]] == [choice_of(answer)["message"]["content"] for answer in answers]
    assert 500 == post(server, {"messages": ASK, "response_format": JSON_SCHEMA})[0]


def test_without_a_mode_the_script_still_runs_out(servers: dict[str | None, FakeProviderServer]) -> None:
    """The plain fake provider has no default answer: HTTP 500 "no scripted reply left", as before modes."""
    status, body = post(servers[None], {"messages": ASK})
    assert 500 == status and "no scripted reply left" in body["error"]["message"]


# Through pydantic-ai


@pytest.mark.parametrize(
    ("mode", "output", "outcome"),
    [
        ("llama-cpp-python", NativeOutput(Person), (ModelHTTPError, "literal_error")),
        ("llama-cpp-python", Person, (UnexpectedModelBehavior, "Exceeded maximum output retries")),
        ("ollama", Person, Person),
        ("vllm", NativeOutput(Person), Person),
        ("llama-server", Person, Person),
        ("lmstudio", PromptedOutput(Person), (ModelHTTPError, "'response_format.type' must be")),
        ("lmstudio", NativeOutput(Person), Person),
        ("openai", PromptedOutput(Person), Person),
    ],
    ids=[
        "llama-cpp-python-native",
        "llama-cpp-python-tool",
        "ollama-tool",
        "vllm-native",
        "llama-server-tool",
        "lmstudio-prompted",
        "lmstudio-native",
        "openai-prompted",
    ],
)
def test_each_mode_through_pydantic_ai(
    servers: dict[str | None, FakeProviderServer], mode: str, output: Any, outcome: Any
) -> None:
    """pydantic-ai's tool, native and prompted output get a valid answer or the server's clear error."""
    agent = Agent(servers[mode].openai_chat_model(), output_type=output, retries=1)
    with override_allow_model_requests(True):
        if outcome is Person:
            assert isinstance(agent.run_sync("Who wrote the first program?").output, Person)
            return
        error, says = outcome
        with pytest.raises(error) as raised:
            agent.run_sync("Who wrote the first program?")
    assert says in str(raised.value)
    if isinstance(raised.value, ModelHTTPError):
        assert (500 if mode == "llama-cpp-python" else 400) == raised.value.status_code


def test_a_tool_round_trip_meets_llama_cpp_pythons_content_refusal(
    servers: dict[str | None, FakeProviderServer],
) -> None:
    """pydantic-ai sends `content: null` beside its tool calls: llama-cpp-python refuses the second request."""
    server = servers["llama-cpp-python"]
    server.script(Reply.tool_call("lookup", {"sku": "ABC-1234"}))

    def lookup(sku: str) -> str:
        return "found"

    agent = Agent(server.openai_chat_model(), output_type=Person, tools=[lookup])
    with override_allow_model_requests(True), pytest.raises(ModelHTTPError) as raised:
        agent.run_sync("Who?")
    assert 500 == raised.value.status_code
    assert "('body', 'messages', 1, 'content')" in str(raised.value.body)


def test_a_cut_answer_reaches_pydantic_ai_as_cut(servers: dict[str | None, FakeProviderServer]) -> None:
    """`max_tokens` (sent as `max_completion_tokens`) cuts vLLM's answer; llama-server ignores that field."""
    settings: Any = {"max_tokens": 3}
    for mode, cut in (("vllm", True), ("llama-server", False)):
        servers[mode].script(Reply.text(LONG))
        agent = Agent(servers[mode].openai_chat_model(settings=settings))
        with override_allow_model_requests(True):
            result = agent.run_sync("Say a lot.")
        assert (LONG[:12] if cut else LONG) == result.output, mode
        assert {"max_completion_tokens": 3} == {k: v for k, v in servers[mode].requests[-1].body.items() if "max" in k}


# `python -m atomtask.testing serve --server NAME`


def test_serve_help_documents_the_server_modes() -> None:
    """`serve --help` names `--server NAME`, each server and what it constrains."""
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    help_text = subparsers.choices["serve"].format_help()
    assert "--server NAME" in help_text
    for mode in SERVER_MODES:
        assert f"\n    {mode} " in help_text, mode


def test_serve_server_answers_as_that_server_does() -> None:
    """`serve --server llama-cpp-python` says what it emulates and answers with that server's defaults and refusals."""
    args = build_parser().parse_args(["serve", "--port", "0", "--server", "llama-cpp-python", "-q"])
    server, mode = _server(args, io.StringIO())
    assert "emulating llama-cpp-python: schema-valid synthetic data where it constrains decoding, else prose" == mode
    with server:
        assert "llama-cpp-python" == server.server
        assert 500 == post(server, {"messages": ASK, "response_format": JSON_SCHEMA})[0]
        _, body = post(server, {"messages": ASK, "response_format": JSON_OBJECT_SCHEMA})
        check(choice_of(body)["message"]["content"], [], "json")
        _, body = post(server, {"messages": ASK, "tools": TOOLS, "tool_choice": "required"})
        check(choice_of(body)["message"]["content"], [], "prose")


def test_serve_server_with_replies_keeps_the_refusals_and_the_limit(tmp_path: Any) -> None:
    """A replies file answers first; the server's refusals and its token limit still apply."""
    replies = tmp_path / "replies.yaml"
    replies.write_text(f"- text: {LONG.strip()}\n", encoding="utf-8")
    argv = ["serve", "--port", "0", "--server", "lmstudio", "--replies", str(replies), "-q"]
    server, mode = _server(build_parser().parse_args(argv), io.StringIO())
    assert mode.startswith("emulating lmstudio: replaying 1 reply from ")
    with server:
        assert 400 == post(server, {"messages": ASK, "response_format": {"type": "json_object"}})[0]
        _, body = post(server, {"messages": ASK, "max_tokens": 2, "max_completion_tokens": 50})
        assert ("word wor", "length") == (choice_of(body)["message"]["content"], choice_of(body)["finish_reason"])


def test_serve_refuses_an_unknown_server() -> None:
    """`--server` takes only the emulated servers' names (argparse's usage error, exit 2)."""
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["serve", "--server", "tgi"])
    assert 2 == exited.value.code
