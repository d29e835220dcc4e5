"""Each request to a local server in the form that server honours (`handlers/_dialect.py`), over real HTTP.

The fake provider records every request body, so these tests read what a server would receive for each
server profile and output mode: the grammar-constrained form, the token limit's field, the named tool
choice, a refused mode stopped before any request, and a user's own `extra_body` left winning.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from atomtask import FailureReason, ProviderRetries, TaskSystem, Template
from atomtask.testing import FakeProviderServer, Reply
from pydantic import BaseModel

pytestmark = pytest.mark.usefixtures("allow_model_requests")

FUNCS = "tests.handlers.tool_funcs"


class Person(BaseModel):
    name: str
    age: int


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


def _system(server: FakeProviderServer, kind: str | None, mode: str, **extra: Any) -> TaskSystem:
    system = TaskSystem(
        model="openai-chat:smollm2",
        base_url=server.openai_base_url,
        server=kind,
        provider_retries=ProviderRetries(attempts=0),
        importable=["tests"],
        model_settings={"max_tokens": 64},
    )
    system.models.register(Person)
    fields: dict[str, Any] = {
        "name": "person",
        "params": {"text": "str"},
        "instructions": "Who is in: {{text}}",
        "output_format": {"type": "json", "schema": "Person", "mode": mode},
    }
    system.register(Template(**(fields | extra)))
    return system


def _chats(server: FakeProviderServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests if r.path.endswith("/chat/completions")]


def test_llama_cpp_python_native_goes_as_json_object_with_the_schema_and_max_tokens(server: FakeProviderServer) -> None:
    server.script(Reply.text('{"name": "Ada", "age": 36}'))
    result = _system(server, "llama-cpp-python", "native").execute("person", {"text": "Ada, 36"})
    assert result.ok, result.error
    body = _chats(server)[0]
    form = body["response_format"]
    assert "json_object" == form["type"]  # not `json_schema`, which it answers with HTTP 500
    assert ["age", "name"] == sorted(form["schema"]["properties"])
    assert 64 == body["max_tokens"]
    assert "max_completion_tokens" not in body  # which it ignores


def test_llama_cpp_python_prompted_keeps_the_schema_in_the_instructions_and_constrains(
    server: FakeProviderServer,
) -> None:
    server.script(Reply.text('{"name": "Ada", "age": 36}'))
    assert _system(server, "llama-cpp-python", "prompted").execute("person", {"text": "Ada"}).ok
    body = _chats(server)[0]
    assert {"type", "schema"} == set(body["response_format"])
    assert "json_object" == body["response_format"]["type"]
    assert "compatible with this schema" in str(body["messages"])


def test_llama_cpp_python_tool_mode_names_the_output_tool_and_reasks_with_text_content(
    server: FakeProviderServer,
) -> None:
    """`tool_choice: required` is ignored there; the named choice is enforced. A re-ask sends `content: ""`."""
    server.script(Reply.tool_call(args={"name": "Ada", "age": "old"}), Reply.tool_call(args={"name": "Ada", "age": 36}))
    result = _system(server, "llama-cpp-python", "tool").execute("person", {"text": "Ada"})
    assert result.ok, result.error
    first, second = _chats(server)
    assert {"type": "function", "function": {"name": "final_result"}} == first["tool_choice"]
    answered = [m for m in second["messages"] if m["role"] == "assistant"]
    assert "" == answered[0]["content"]  # `null` beside tool calls is refused with HTTP 500 there
    assert answered[0]["tool_calls"]
    # The run's own history is unchanged: the ledger shows the tool call as the model made it.
    assert "final_result" == result.notes.attempts[0].tool_name


def test_a_mode_the_server_cannot_take_fails_before_any_request(server: FakeProviderServer) -> None:
    system = _system(server, "llama-cpp-python", "tool", tools=[f"{FUNCS}:lookup_price"])
    result = system.execute("person", {"text": "Ada"})
    assert FailureReason.CONFIGURATION_ERROR == result.error.reason
    message = result.error.message
    assert "llama-cpp-python" in message and "only by name" in message
    assert "`mode: native` or `mode: prompted`" in message
    assert [] == _chats(server)  # nothing was sent, nothing paid


def test_vllm_prompted_asks_for_structured_outputs(server: FakeProviderServer) -> None:
    server.script(Reply.text('{"name": "Ada", "age": 36}'))
    assert _system(server, "vllm", "prompted").execute("person", {"text": "Ada"}).ok
    body = _chats(server)[0]
    assert ["age", "name"] == sorted(body["structured_outputs"]["json"]["properties"])


def test_lm_studio_prompted_asks_for_json_schema_never_json_object(server: FakeProviderServer) -> None:
    server.script(Reply.text('{"name": "Ada", "age": 36}'))
    assert _system(server, "lmstudio", "prompted").execute("person", {"text": "Ada"}).ok
    form = _chats(server)[0]["response_format"]
    assert "json_schema" == form["type"]
    assert "Person" == form["json_schema"]["schema"]["title"] or "age" in str(form["json_schema"]["schema"])


def test_ollama_tool_mode_is_sent_unforced_with_one_warning(
    server: FakeProviderServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.script(Reply.tool_call(args={"name": "Ada", "age": 36}), Reply.tool_call(args={"name": "Bo", "age": 2}))
    system = _system(server, "ollama", "tool")
    with caplog.at_level(logging.WARNING, logger="atomtask"):
        assert system.execute("person", {"text": "Ada"}).ok
        assert system.execute("person", {"text": "Bo"}).ok
    warned = [r for r in caplog.records if "server_mode_unforced" in r.getMessage()]
    assert 1 == len(warned)  # once per Agent, not once per request
    assert "required" == _chats(server)[0]["tool_choice"]  # pydantic-ai's own request, unchanged


def test_a_users_own_extra_body_wins(server: FakeProviderServer) -> None:
    server.script(Reply.text('{"name": "Ada", "age": 36}'))
    mine = {"response_format": {"type": "json_object", "schema": {"type": "object"}}, "mirostat": 2}
    system = _system(server, "llama-cpp-python", "native", model_settings={"extra_body": mine})
    assert system.execute("person", {"text": "Ada"}).ok
    body = _chats(server)[0]
    assert {"type": "json_object", "schema": {"type": "object"}} == body["response_format"]
    assert 2 == body["mirostat"]


def test_server_openai_keeps_max_completion_tokens_and_pydantic_ais_requests(server: FakeProviderServer) -> None:
    """Unless the user says otherwise: `server="openai"` (an OpenAI proxy at a local URL) changes nothing."""
    server.script(Reply.tool_call(args={"name": "Ada", "age": 36}))
    system = _system(server, "openai", "tool")
    assert system.execute("person", {"text": "Ada"}).ok
    body = _chats(server)[0]
    assert 64 == body["max_completion_tokens"]
    assert "max_tokens" not in body
    assert "required" == body["tool_choice"]
    assert system.handler.dialect(system.handler.choose_model()) is None


def test_openais_own_endpoint_gets_no_dialect(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    handler = TaskSystem(model="openai-chat:gpt-4o-mini").handler
    assert handler.dialect(handler.choose_model()) is None
    assert "openai-chat:gpt-4o-mini" == handler.build(handler.choose_model())  # the string, as pydantic-ai takes it
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    local = TaskSystem(model="openai-chat:llama").handler
    assert local.dialect(local.choose_model()) is not None


def test_an_unknown_server_name_is_refused_with_did_you_mean() -> None:
    from atomtask.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="Did you mean 'ollama'"):
        TaskSystem(server="olama")
