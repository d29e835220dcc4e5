"""`--server KIND` and `--base-url` on `atomtask run`: the named profile decides what the server receives."""

from __future__ import annotations

import io

import pytest
from atomtask.cli._main import main
from atomtask.testing import FakeProviderServer

pytestmark = pytest.mark.usefixtures("allow_model_requests")


def _run(*extra: str, url: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    argv = ["run", "extract_contact", "-i", "text=Ada Lovelace, ada@example.com", "--model", "openai-chat:smollm2"]
    status = main([*argv, "--base-url", url, "--max-tokens", "200", *extra], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def test_run_with_a_named_server_sends_its_dialect_without_asking_the_server() -> None:
    with FakeProviderServer(server="llama-cpp-python") as server:
        status, out, err = _run("--server", "llama-cpp-python", url=server.openai_base_url)
        assert 0 == status, err
        assert '"name"' in out
        body = server.requests[0].body
        assert {"type": "function", "function": {"name": "final_result"}} == body["tool_choice"]
        assert 200 == body["max_tokens"]
        assert 0 == server.model_listings  # named: no need to ask what it is


def test_run_without_server_asks_it_once_and_gets_the_same() -> None:
    with FakeProviderServer(server="llama-cpp-python") as server:
        status, _, err = _run(url=server.openai_base_url)
        assert 0 == status, err
        assert 1 == server.model_listings
        assert "function" == server.requests[0].body["tool_choice"]["type"]


def test_an_unknown_server_is_a_usage_error_with_did_you_mean() -> None:
    status, _, err = _run("--server", "vlm", url="http://127.0.0.1:9/v1")
    assert 2 == status
    assert "Unknown server 'vlm'" in err and "Did you mean 'vllm'" in err
