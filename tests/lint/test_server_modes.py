"""P308 and P309: a template's output mode against the local server at `--base-url` (its server profile)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from atomtask.cli._main import main
from atomtask.lint import check

QUOTE = """\
schemas:
  - name: Quote
    fields:
      - {name: price, type: float, description: The price in EUR}
templates:
  - name: quote
    description: A product's price.
    params: {product: {type: str, description: the product}}
    instructions: "Price of {{product}}?"
    tools: ["tests.handlers.tool_funcs:lookup_price"]
    output_format: {type: json, schema: Quote, mode: tool}
  - name: quote_native
    description: A product's price.
    params: {product: {type: str, description: the product}}
    instructions: "Price of {{product}}?"
    output_format: {type: json, schema: Quote, mode: native}
"""


@pytest.fixture
def quote(tmp_path: Path) -> Path:
    (tmp_path / "quote.yaml").write_text(QUOTE, encoding="utf-8")
    return tmp_path


def _codes(report: object) -> list[tuple[str, int | None]]:
    return [(f.code, f.location.line if f.location else None) for f in report.findings if f.code.startswith("P3")]  # type: ignore[attr-defined]


def test_llama_cpp_python_refuses_tool_mode_beside_tools_at_the_mode_line(quote: Path) -> None:
    report = check(
        [quote], models=["openai-chat:smollm2"], base_url="http://127.0.0.1:8011/v1", server="llama-cpp-python"
    )
    assert [("P308", 11)] == _codes(report)
    message = next(f.message for f in report.findings if f.code == "P308")
    assert "'quote'" in message and "only by name" in message
    assert "Use `mode: native` or `mode: prompted`." in message


def test_ollama_takes_tool_mode_unforced_as_a_warning(quote: Path) -> None:
    report = check([quote], models=["ollama:llama3.2"], base_url="http://127.0.0.1:11434/v1")
    assert [("P309", 11)] == _codes(report)  # named by its provider: no request to the URL is needed
    assert ["warning"] == [f.severity.value for f in report.findings if f.code == "P309"]


def test_no_finding_without_an_endpoint_or_for_openai(quote: Path) -> None:
    assert [] == _codes(check([quote], models=["openai-chat:smollm2"]))
    assert [] == _codes(check([quote], models=["openai-chat:gpt-4o"], base_url="https://api.openai.com/v1"))
    assert [] == _codes(check([quote], models=["openai-chat:smollm2"], base_url="http://x/v1", server="vllm"))


def test_the_command_takes_base_url_and_server_and_refuses_an_unknown_server(quote: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    argv = ["check", str(quote), "--model", "openai-chat:smollm2", "--no-cache"]
    status = main(
        [*argv, "--base-url", "http://127.0.0.1:9/v1", "--server", "llama-cpp-python"], stdout=out, stderr=err
    )
    assert 1 == status
    assert "P308" in out.getvalue()
    out, err = io.StringIO(), io.StringIO()
    assert 2 == main([*argv, "--server", "llama-cpp-pyton"], stdout=out, stderr=err)
    assert "Did you mean 'llama-cpp-python'" in err.getvalue()


def test_the_cache_tells_servers_apart(quote: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A check served from the cache gives the findings of its own server, not another's."""
    monkeypatch.setenv("ATOMTASK_CACHE_DIR", str(tmp_path / "cache"))
    argv = ["check", str(quote), "--model", "openai-chat:smollm2", "--base-url", "http://127.0.0.1:9/v1"]
    for server, code in [
        ("llama-cpp-python", "P308"),
        ("vllm", None),
        ("llama-cpp-python", "P308"),
        ("ollama", "P309"),
    ]:
        out = io.StringIO()
        main([*argv, "--server", server], stdout=out, stderr=io.StringIO())
        found = [c for c in ("P308", "P309") if c in out.getvalue()]
        assert ([code] if code else []) == found, (server, out.getvalue())
