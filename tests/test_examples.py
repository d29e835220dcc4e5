"""examples/shop: a template whose model calls a Python function and an MCP server, over real HTTP.

The fake provider server answers in the OpenAI and Anthropic wire formats, streamed or not; the MCP
server (examples/shop/shop/fx_server.py, on the `mcp` package) runs as a real process over stdio or
streamable HTTP. Nothing is mocked: the model's tool calls reach the function and the server with the
model's arguments, their results reach the model in the next request, and the ledger lists each call.
"""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from atomtask import TaskStatus, TaskSystem
from atomtask.cli import main
from atomtask.testing import FakeProviderServer, Reply

SHOP = Path(__file__).resolve().parent.parent / "examples" / "shop"

pytestmark = pytest.mark.usefixtures("allow_model_requests")


@pytest.fixture
def shop(monkeypatch: pytest.MonkeyPatch) -> Path:
    """In the example's folder, with this interpreter first on PATH (the template starts `python -m ...`)."""
    monkeypatch.chdir(SHOP)
    monkeypatch.syspath_prepend(str(SHOP))
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    return SHOP


def _script(server: FakeProviderServer) -> None:
    server.script(
        Reply.tool_call("lookup_price", {"product": "grinder"}),
        Reply.tool_call("fx_convert", {"amount": 89.5, "from_currency": "USD", "to_currency": "EUR"}),
        Reply.tool_call("final_result", {"product": "grinder", "price_eur": 82.34, "price_usd": 89.5}),
    )


def _model(server: FakeProviderServer, wire: str) -> Any:
    return server.openai_chat_model() if wire == "openai" else server.anthropic_model()


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_quote_price_calls_the_function_and_the_mcp_server_over_stdio(shop: Path, wire: str) -> None:
    with FakeProviderServer() as server:
        _script(server)
        system = TaskSystem(model=_model(server, wire), templates=shop / "quote_price.yaml", importable=["shop"])
        result = system.execute("quote_price", {"product": "grinder"})
        requests = server.requests

    assert TaskStatus.COMPLETE == result.status, result.error
    assert {"product": "grinder", "price_eur": 82.34, "price_usd": 89.5} == result.parsedContent.model_dump()
    # The model was offered both tools; each result reached it in the next request.
    assert {"lookup_price", "fx_convert"} <= set(requests[0].tool_names)
    assert ["89.5"] == [r.content for r in requests[1].tool_results]
    assert ["89.5", "82.34"] == [r.content for r in requests[2].tool_results]
    calls = [call for attempt in result.notes.attempts for call in attempt.tool_calls]
    assert [("lookup_price", 89.5), ("fx_convert", 82.34)] == [(c.name, c.result) for c in calls]
    assert {"amount": 89.5, "from_currency": "USD", "to_currency": "EUR"} == calls[1].args
    assert 3 == result.notes.usage.requests


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_quote_price_streamed(shop: Path, wire: str) -> None:
    with FakeProviderServer() as server:
        _script(server)
        system = TaskSystem(model=_model(server, wire), templates=shop / "quote_price.yaml", importable=["shop"])
        stream = system.execute_stream("quote_price", {"product": "grinder"})
        async for _ in stream:
            pass
        result = await stream.get_result()
        requests = server.requests

    assert TaskStatus.COMPLETE == result.status, result.error
    assert all(r.streamed for r in requests)
    assert ["89.5", "82.34"] == [r.content for r in requests[2].tool_results]
    assert 82.34 == result.parsedContent.price_eur


def test_an_mcp_tool_error_goes_back_to_the_model(shop: Path) -> None:
    with FakeProviderServer() as server:
        server.script(
            Reply.tool_call("fx_convert", {"amount": 1, "from_currency": "XYZ", "to_currency": "EUR"}),
            Reply.tool_call("final_result", {"product": "grinder", "price_eur": 1.0, "price_usd": 1.0}),
        )
        system = TaskSystem(model=server.anthropic_model(), templates=shop / "quote_price.yaml", importable=["shop"])
        result = system.execute("quote_price", {"product": "grinder"})
        [returned] = server.requests[1].tool_results

    assert TaskStatus.COMPLETE == result.status, result.error
    assert returned.is_error and "Unknown currency 'XYZ'" in returned.content
    [call] = result.notes.attempts[0].tool_calls
    assert call.retried and call.error is not None and "Unknown currency 'XYZ'" in call.error


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def fx_over_http(shop: Path) -> Iterator[str]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "shop.fx_server", "--http", str(port)],
        cwd=shop,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


def test_an_mcp_server_over_streamable_http(shop: Path, fx_over_http: str) -> None:
    from atomtask import Template

    with FakeProviderServer() as server:
        server.script(
            Reply.tool_call("fx_convert", {"amount": 10, "from_currency": "EUR", "to_currency": "USD"}),
            Reply.tool_call("final_result", {"amount": 10.87}),
        )
        system = TaskSystem(model=server.openai_chat_model())
        system.register(
            Template(
                name="convert",
                instructions="Convert 10 EUR to USD.",
                tools=[{"mcp": {"url": fx_over_http}, "prefix": "fx"}],
                output_format={"type": "json", "schema": {"fields": [{"name": "amount", "type": "float"}]}},
            )
        )
        result = system.execute("convert")
        returned = server.requests[1].tool_results

    assert TaskStatus.COMPLETE == result.status, result.error
    assert ["10.87"] == [r.content for r in returned]


def test_the_cli_runs_the_example_on_the_synthetic_model(shop: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    status = main(
        ["run", "quote_price", "--templates", "quote_price.yaml", "--allow-import", "shop", "-i", "product=grinder"],
        stdout=out,
        stderr=err,
    )
    assert 0 == status, err.getvalue()
    assert {"product", "price_eur", "price_usd"} == set(json.loads(out.getvalue()))
    assert "calls no tool" in err.getvalue()


def test_the_example_checks_clean(shop: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    status = main(["check", "--no-cache", "--allow-import", "shop", "quote_price.yaml"], stdout=out, stderr=err)
    assert 0 == status, out.getvalue() + err.getvalue()


def _answers(server: FakeProviderServer) -> None:
    server.script(
        Reply.tool_call("final_result", {"topic": "status", "currency": "GBP"}),
        Reply.tool_call("fx_convert", {"amount": 113.5, "from_currency": "USD", "to_currency": "GBP"}),
        Reply.tool_call("final_result", {"text": "It has shipped; £89.25 in all.", "total": 89.25, "currency": "GBP"}),
    )


def test_order_reply_runs_model_code_model_with_an_mcp_tool(shop: Path) -> None:
    with FakeProviderServer() as server:
        _answers(server)
        system = TaskSystem(model=server.openai_chat_model(), templates=shop / "order_reply.yaml", importable=["shop"])
        result = system.run_workflow("order_reply", {"order_id": "A-1001", "message": "Where is it? I pay in GBP."})
        requests = server.requests

    assert result.ok, result.error
    assert ["read", "fetch", "answer"] == [visit.step for visit in result.steps]
    assert "shop.orders:fetch_order" == result.steps[1].call
    assert 113.5 == result.state.order.total_usd  # the code step's typed answer, in the state
    # The last model step received the order the code step fetched, and the converted total.
    assert "A-1001" in json.dumps(requests[1].body) and "113.5" in json.dumps(requests[1].body)
    assert ["89.25"] == [r.content for r in requests[2].tool_results]
    [call] = result.steps[2].result.notes.attempts[0].tool_calls
    assert ("fx_convert", 89.25) == (call.name, call.result)
    assert 89.25 == result.state.answer.total


def test_order_reply_reports_the_code_steps_exception_with_its_type(shop: Path) -> None:
    with FakeProviderServer() as server:
        server.script(Reply.tool_call("final_result", {"topic": "status", "currency": "EUR"}))
        system = TaskSystem(model=server.openai_chat_model(), templates=shop / "order_reply.yaml", importable=["shop"])
        result = system.run_workflow("order_reply", {"order_id": "B-9", "message": "Where is my order?"})

    assert not result.ok and result.error is not None
    assert "fetch" == result.error.step
    visits = result.visits("fetch")
    assert 2 == len(visits)  # `retries: 1`
    error = visits[-1].error
    assert error is not None and "code_error" == error.reason.value
    assert error.details["exception"].endswith("OrderNotFoundError")
    assert "No order 'B-9'" in error.details["error"]


def test_the_cli_runs_the_workflow_example_on_the_synthetic_model(shop: Path, tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    argv = ["workflow", "run", "order_reply", "--templates", "order_reply.yaml", "--allow-import", "shop"]
    argv += ["-i", "order_id=A-1002", "-i", "message=Is it on its way? I pay in CHF.", "--db", str(tmp_path / "r.db")]
    status = main(argv, stdout=out, stderr=err)
    assert 0 == status, err.getvalue()
    state = json.loads(out.getvalue())
    assert 249.0 == state["order"]["total_usd"]  # the code step ran for real; the model steps were synthetic
    assert "fetch #1: COMPLETE (call shop.orders:fetch_order)" in err.getvalue()
