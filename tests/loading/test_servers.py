"""Server profiles (`loading/_servers.py`): the verdict per output mode, names, and detection over HTTP."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from atomtask.errors import ConfigurationError
from atomtask.loading._servers import (
    SERVER_PROFILES,
    detect_server,
    forget_detected,
    is_openai_url,
    mode_support,
    server_of_provider,
    server_profile,
)


def test_llama_cpp_python_takes_native_and_prompted_under_its_grammar_and_tool_mode_only_by_name() -> None:
    profile = SERVER_PROFILES["llama-cpp-python"]
    native = mode_support(profile, "native")
    assert ("ok", True) == (native.verdict, native.constrained)
    assert "json_object, schema" in native.form
    assert mode_support(profile, "prompted").constrained
    tool = mode_support(profile, "tool")
    assert ("ok", True) == (tool.verdict, tool.constrained)
    # With tools of the template's own, the output tool cannot be forced by name, and nothing else is enforced.
    with_tools = mode_support(profile, "tool", function_tools=True)
    assert "refused" == with_tools.verdict
    assert "only by name" in with_tools.message
    assert ("native", "prompted") == with_tools.instead
    # ... and prompted output is then sent unconstrained (the grammar would rule the tool calls out).
    assert not mode_support(profile, "prompted", function_tools=True).constrained


def test_ollama_sends_tool_mode_unforced_and_lm_studio_never_json_object() -> None:
    ollama = mode_support(SERVER_PROFILES["ollama"], "tool")
    assert "unforced" == ollama.verdict
    assert "does not enforce `tool_choice`" in ollama.message
    assert "native" in ollama.instead
    lmstudio = SERVER_PROFILES["lmstudio"]
    assert not lmstudio.json_object
    assert "json_schema" in mode_support(lmstudio, "prompted").form


def test_every_profile_has_a_verdict_for_every_mode() -> None:
    for profile in SERVER_PROFILES.values():
        for mode in ("tool", "native", "prompted"):
            for tools in (False, True):
                support = mode_support(profile, mode, function_tools=tools)
                assert support.verdict in ("ok", "unforced", "refused")
                if support.verdict != "ok":
                    assert support.message and support.instead, (profile.name, mode, tools)
    with pytest.raises(ValueError, match="unknown output mode"):
        mode_support(SERVER_PROFILES["vllm"], "text")


def test_an_unknown_server_name_says_did_you_mean() -> None:
    assert "vllm" == server_profile("vllm").name
    with pytest.raises(ConfigurationError, match="Did you mean 'llama-server'") as caught:
        server_profile("llama-sever")
    assert "generic" in caught.value.message


def test_providers_and_urls() -> None:
    assert "ollama" == server_of_provider("ollama")
    assert server_of_provider("openai-chat") is None
    assert is_openai_url(None)
    assert is_openai_url("https://api.openai.com/v1")
    assert not is_openai_url("http://127.0.0.1:8011/v1")


class _Models(BaseHTTPRequestHandler):
    owner = "me"
    asked: list[str]

    def do_GET(self) -> None:
        type(self).asked.append(self.path)
        if self.owner == "404":
            self.send_error(404)
            return
        body = json.dumps({"object": "list", "data": [{"id": "m", "object": "model", "owned_by": self.owner}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def models_server(request: pytest.FixtureRequest) -> Iterator[tuple[str, list[str]]]:
    handler = type("Handler", (_Models,), {"owner": request.param, "asked": []})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    forget_detected()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", handler.asked
    finally:
        httpd.shutdown()
        httpd.server_close()
        forget_detected()


@pytest.mark.parametrize(
    ("models_server", "kind"),
    [
        ("me", "llama-cpp-python"),
        ("llamacpp", "llama-server"),
        ("vllm", "vllm"),
        ("library", "ollama"),
        ("organization_owner", "lmstudio"),
        ("someone", "generic"),
        ("404", "generic"),
    ],
    indirect=["models_server"],
)
def test_the_server_is_detected_once_per_url(models_server: tuple[str, list[str]], kind: str) -> None:
    url, asked = models_server
    assert kind == detect_server(url).name
    assert kind == detect_server(url + "/").name
    assert ["/v1/models"] == asked  # remembered: asked once


def test_an_unreachable_server_is_generic_and_asked_again() -> None:
    forget_detected()
    with ThreadingHTTPServer(("127.0.0.1", 0), _Models) as httpd:
        port = httpd.server_address[1]  # closed at once: nothing listens there
    assert "generic" == detect_server(f"http://127.0.0.1:{port}/v1", timeout=1).name
    assert "openai" == detect_server("https://api.openai.com/v1").name
