"""Templates run end to end over real HTTP against the local fake provider server.

These are the only tests that let real pydantic-ai model classes send requests, and only to
127.0.0.1 (the `allow_model_requests` fixture).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from atomtask import FailureReason, ProviderRetries, TaskSystem
from atomtask.testing import FakeProviderServer, Reply

pytestmark = pytest.mark.usefixtures("allow_model_requests")

CONTACT = {"name": "Ada Lovelace", "email": "ada@example.com", "phone": None, "company": None}


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


@pytest.fixture
def system(templates_dir: Path) -> TaskSystem:
    # Provider faults are reported at once here; their retries are tested in test_ledger.py.
    return TaskSystem(templates=templates_dir, provider_retries=ProviderRetries(attempts=0))


def test_openai_chat_model_string_via_environment(
    server: FakeProviderServer, system: TaskSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`openai-chat:` with OPENAI_BASE_URL reaches the server; the system text and prompt are sent."""
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    server.script(Reply.tool_call(args=CONTACT))
    result = system.execute(
        "extract_contact", {"text": "Ada Lovelace, ada@example.com"}, model="openai-chat:gpt-4o-mini"
    )
    assert "Ada Lovelace" == result.unwrap().name
    body = server.requests[0].body
    assert "gpt-4o-mini" == body["model"]
    sent = " ".join(str(m.get("content")) for m in body["messages"])
    assert "careful data-entry clerk" in sent
    assert "Ada Lovelace, ada@example.com" in sent
    assert "Contact" in str(body["tools"]) or "name" in str(body["tools"])
    assert result.notes.usage.input_tokens > 0


def test_base_url_reaches_an_openai_compatible_server(server: FakeProviderServer, templates_dir: Path) -> None:
    """`TaskSystem(base_url=...)` sends `openai-chat:` models to a local OpenAI-compatible server."""
    server.script(Reply.tool_call(args=CONTACT))
    system = TaskSystem(model="openai-chat:llama3.2", templates=templates_dir, base_url=server.openai_base_url)
    result = system.execute("extract_contact", {"text": "Ada"})
    assert result.ok, result.error
    assert "llama3.2" == server.requests[0].body["model"]


def test_anthropic_model_string_via_environment(
    server: FakeProviderServer, system: TaskSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`anthropic:` with ANTHROPIC_BASE_URL reaches the server (streamed SSE) and validates."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")
    server.script(Reply.tool_call(args=CONTACT))
    result = system.execute("extract_contact", {"text": "Ada"}, model="anthropic:claude-haiku-4-5")
    assert "ada@example.com" == result.unwrap().email
    body = server.requests[0].body
    assert "careful data-entry clerk" in str(body.get("system"))


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_invalid_answer_over_http_is_retried(server: FakeProviderServer, system: TaskSystem, wire: str) -> None:
    """A tool call with invalid arguments is sent back and the second answer is used."""
    model = server.openai_chat_model() if wire == "openai" else server.anthropic_model()
    server.script(Reply.tool_call(args={"email": "no name"}), Reply.tool_call(args=CONTACT))
    result = system.execute("extract_contact", {"text": "Ada"}, model=model)
    assert result.ok, result.error
    assert 2 == len(result.notes.attempts)
    assert result.notes.attempts[0].errors
    assert 2 == len(server.requests)


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_server_error_is_a_provider_error_with_status(
    server: FakeProviderServer, system: TaskSystem, wire: str
) -> None:
    """HTTP 503 becomes FAILED provider_error carrying the status and the provider."""
    model = server.openai_chat_model() if wire == "openai" else server.anthropic_model()
    server.script(Reply.error(503, "overloaded, try later"))
    result = system.execute("extract_contact", {"text": "Ada"}, model=model)
    assert result.error is not None
    assert FailureReason.PROVIDER_ERROR == result.error.reason
    assert 503 == result.error.details["status"]
    assert "overloaded, try later" in result.error.message


def test_authentication_failure_names_the_env_variable(
    server: FakeProviderServer, system: TaskSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HTTP 401 says which environment variable to set, and never echoes the key."""
    key = "sk-secret-abcdef0123456789"
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", key)
    server.script(Reply.error(401, f"Incorrect API key provided: {key}"))
    result = system.execute("extract_contact", {"text": "Ada"}, model="openai-chat:gpt-4o-mini")
    assert result.error is not None
    assert FailureReason.PROVIDER_ERROR == result.error.reason
    assert 401 == result.error.details["status"]
    assert "OPENAI_API_KEY" in result.error.message
    assert key not in result.model_dump_json()


def test_connection_refused_is_a_provider_error(system: TaskSystem) -> None:
    """A server that is gone gives FAILED provider_error, not an exception."""
    with FakeProviderServer() as gone:
        model = gone.openai_chat_model()
    result = system.execute("extract_contact", {"text": "Ada"}, model=model)
    assert result.error is not None
    assert FailureReason.PROVIDER_ERROR == result.error.reason


def test_empty_choices_from_a_model_string_are_a_provider_error(
    server: FakeProviderServer, system: TaskSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An `openai-chat:` answer with `choices: []` is FAILED provider_error naming the empty answer."""
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    server.script(Reply.empty())
    result = system.execute("extract_contact", {"text": "Ada"}, model="openai-chat:gpt-4o-mini")
    assert result.error is not None
    assert FailureReason.PROVIDER_ERROR == result.error.reason
    assert "no `choices`" in result.error.message
    assert "EmptyAnswerError" == result.error.details["error_type"]
    assert 1 == len(server.requests)


@pytest.mark.parametrize(
    ("model", "path"), [("ollama:llama3.2", "/v1/chat/completions"), ("anthropic:claude-haiku-4-5", "/v1/messages")]
)
def test_base_url_reaches_the_server_for_other_providers(
    server: FakeProviderServer, templates_dir: Path, monkeypatch: pytest.MonkeyPatch, model: str, path: str
) -> None:
    """`base_url` is used by `ollama:` and `anthropic:` model strings too, not silently ignored."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")
    base_url = server.openai_base_url if model.startswith("ollama") else server.anthropic_base_url
    server.script(Reply.tool_call(args=CONTACT))
    system = TaskSystem(model=model, templates=templates_dir, base_url=base_url)
    result = system.execute("extract_contact", {"text": "Ada"})
    assert result.ok, result.error
    assert [path] == [r.path for r in server.requests]
    assert model.split(":", 1)[1] == server.requests[0].body["model"]


def test_base_url_with_a_fixed_endpoint_provider_is_a_configuration_error(templates_dir: Path) -> None:
    """A provider that takes no `base_url` fails the task with a `configuration_error` naming why."""
    system = TaskSystem(model="cerebras:llama3.1-8b", templates=templates_dir, base_url="http://127.0.0.1:9/v1")
    result = system.execute("extract_contact", {"text": "Ada"})
    assert result.error is not None
    assert FailureReason.CONFIGURATION_ERROR == result.error.reason
    assert "cannot take a `base_url`" in result.error.message
