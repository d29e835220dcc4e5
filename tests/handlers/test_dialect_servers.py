"""Every shipped template against the fake provider's local-server modes, the server detected, as a user runs it.

Each mode of `FakeProviderServer(server=...)` answers as that kind of server does: it refuses what the
server refuses, reads the token limit from the field the server reads, and its "model" answers valid
JSON only under a grammar the server enforces (prose otherwise). So a template answered valid at the
first try proves that atomtask asked in a form that server enforces; a mode the server cannot take
must fail before any request, saying which modes work.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from atomtask import FailureReason, ProviderRetries, TaskSystem
from atomtask._task_system import bundled_templates_path
from atomtask.handlers._synthetic import synthetic_instance
from atomtask.loading._servers import SERVER_PROFILES, forget_detected, mode_support
from atomtask.system._templates import OutputMode
from atomtask.testing import FakeProviderServer
from pydantic_ai.models import override_allow_model_requests

MODES = ("tool", "native", "prompted")


@pytest.fixture(autouse=True)
def _fresh_detection() -> Iterator[None]:
    forget_detected()  # every fake server is a new process's first meeting with its URL
    with override_allow_model_requests(True):
        yield
    forget_detected()


def _system(url: str, **options: object) -> TaskSystem:
    return TaskSystem(
        model="openai-chat:smollm2",
        templates=bundled_templates_path(),
        base_url=url,
        provider_retries=ProviderRetries(attempts=0),
        **options,  # type: ignore[arg-type]
    )


def _in_mode(system: TaskSystem, name: str, mode: str) -> str:
    template = system.templates.get(name)
    output = template.output_format.model_copy(update={"mode": OutputMode(mode)})
    system.register(template.model_copy(update={"name": f"{name}__{mode}", "output_format": output, "location": None}))
    return f"{name}__{mode}"


def _inputs(system: TaskSystem, name: str) -> dict[str, object]:
    schema = system.templates.compiled(name).inputs.json_schema()
    return dict(synthetic_instance(schema, seed=7))


def _json_templates(system: TaskSystem) -> list[str]:
    return [n for n in system.templates.names() if system.templates.compiled(n).output_cls is not None]


@pytest.mark.parametrize("kind", ["llama-cpp-python", "ollama", "vllm", "llama-server", "lmstudio"])
@pytest.mark.parametrize("mode", MODES)
def test_every_shipped_template_is_valid_at_the_first_try_in_every_mode_the_server_takes(kind: str, mode: str) -> None:
    with FakeProviderServer(server=kind) as server:
        system = _system(server.openai_base_url)
        names = _json_templates(system)
        assert len(names) >= 14
        for name in names:
            result = system.execute(_in_mode(system, name, mode), _inputs(system, name))
            assert result.ok, (kind, mode, name, result.error)
            assert 1 == len(result.notes.attempts), (kind, mode, name, result.notes.attempts)
        assert 1 == server.model_listings  # the kind was asked once for the URL, then remembered
        assert len(names) == len(server.requests)


def test_without_its_profile_llama_cpp_python_fails_and_the_failure_names_the_refused_field() -> None:
    """What the issue's user met: `server="generic"` sends pydantic-ai's own native request, refused with HTTP 500."""
    with FakeProviderServer(server="llama-cpp-python") as server:
        system = _system(server.openai_base_url, server="generic")
        result = system.execute(_in_mode(system, "extract_contact", "native"), {"text": "Ada, ada@example.com"})
        assert FailureReason.PROVIDER_ERROR == result.error.reason
        assert "response_format.type" == result.error.details["refused"]
        assert "Input should be 'text' or 'json_object'" in result.error.message
        assert 1 == len(server.requests)  # a refusal is not retried as a provider fault
        # In tool mode it answers prose: the failure says the endpoint returned no tool calls.
        tool = system.execute(_in_mode(system, "extract_contact", "tool"), {"text": "Ada, ada@example.com"})
        assert tool.error.details.get("no_tool_calls") is True
        assert "`mode: prompted` or `mode: native`" in tool.error.message


@pytest.mark.parametrize("kind", ["llama-cpp-python", "ollama", "vllm"])
def test_max_tokens_is_honoured_and_a_cut_answer_says_so(kind: str) -> None:
    with FakeProviderServer(server=kind) as server:
        system = _system(server.openai_base_url, model_settings={"max_tokens": 3})
        result = system.execute(_in_mode(system, "summarize", "native"), {"document": "A long text " * 40}, retries=0)
        assert server.requests[0].body["max_tokens"] == 3
        assert "max_completion_tokens" not in server.requests[0].body
        first = result.notes.attempts[0]
        assert ("length", 3) == (first.finish_reason, first.usage.output_tokens)
        assert FailureReason.OUTPUT_VALIDATION_FAILURE == result.error.reason
        assert "cut off at max_tokens=3" in result.error.message


def test_a_mode_a_server_refuses_fails_before_any_request_on_every_profile() -> None:
    """Beside tools of its own, a template's tool mode is refused where the profile says so, and only there."""
    for kind, profile in SERVER_PROFILES.items():
        refused = mode_support(profile, "tool", function_tools=True).verdict == "refused"
        assert refused == (kind == "llama-cpp-python"), kind
