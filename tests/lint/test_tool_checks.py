"""`atomtask check` on templates' tools: E130-E132 with places, user code imported only in a helper process."""

from __future__ import annotations

import io
import sys
import textwrap
from pathlib import Path

import pytest
from atomtask.cli import main
from atomtask.lint import check


def _project(tmp_path: Path) -> Path:
    """A package whose import leaves a mark, and a template naming its functions (three of them wrong)."""
    package = tmp_path / "marked_tools"
    package.mkdir()
    (package / "__init__.py").write_text(
        textwrap.dedent(
            """
            from pathlib import Path
            with open(Path(__file__).parent.parent / "imported.txt", "a") as mark:
                mark.write("imported\\n")

            def lookup_price(product: str) -> float:
                return 1.0

            def untyped(product):
                return 1
            """
        ),
        encoding="utf-8",
    )
    (tmp_path / "quote.yaml").write_text(
        textwrap.dedent(
            """\
            name: quote
            instructions: Quote.
            tools:
              - marked_tools:lookup_prize
              - {function: marked_tools:untyped}
              - {function: marked_tools:lookup_price}
              - {function: marked_tools:lookup_price, name: lookup_price}
            """
        ),
        encoding="utf-8",
    )
    return tmp_path


def test_check_reports_each_tool_mistake_with_its_code_and_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _project(tmp_path)
    monkeypatch.chdir(folder)
    monkeypatch.setenv("ATOMTASK_IMPORTABLE", "marked_tools")
    report = check([folder / "quote.yaml"])

    found = {(f.code, f.location.line if f.location else None) for f in report.findings}
    assert {("E130", 4), ("E131", 5), ("E132", 7)} == found
    [e130] = [f for f in report.findings if f.code == "E130"]
    assert "Did you mean 'lookup_price'?" in e130.message
    # The package was imported — by the helper process, not by this one.
    assert "imported\n" == (folder / "imported.txt").read_text()
    assert "marked_tools" not in sys.modules


def test_check_refuses_a_package_that_is_not_allowed_without_importing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _project(tmp_path)
    monkeypatch.chdir(folder)
    out, err = io.StringIO(), io.StringIO()
    status = main(["check", "--no-cache", "quote.yaml"], stdout=out, stderr=err)

    assert 1 == status
    assert "--allow-import marked_tools" in out.getvalue()
    assert not (folder / "imported.txt").exists()

    out = io.StringIO()
    status = main(["check", "--no-cache", "--allow-import", "marked_tools", "quote.yaml"], stdout=out, stderr=err)
    assert "E131" in out.getvalue() and "not in the importable packages" not in out.getvalue()
    assert (folder / "imported.txt").exists()


def test_a_clean_template_with_tools_checks_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _project(tmp_path)
    (folder / "quote.yaml").write_text(
        "name: quote\ninstructions: Quote.\ntools:\n"
        "  - marked_tools:lookup_price\n"
        "  - {function: atomtask.tools:http_get, allow_hosts: [api.example.com]}\n"
        "  - {mcp: {command: python, args: [-m, fx]}, prefix: fx}\n"
        "tool_calls: 3\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(folder)
    monkeypatch.setenv("ATOMTASK_IMPORTABLE", "marked_tools")
    report = check([folder / "quote.yaml"])
    assert [] == [f for f in report.findings if f.code.startswith("E")]


def test_a_template_from_a_python_module_with_function_objects_is_checked_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "app_with_tools.py").write_text(
        textwrap.dedent(
            """
            from atomtask import Template

            def untyped(product):
                return 1

            quote = Template(name="quote", instructions="Quote.", tools=[untyped])
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    report = check(python=[str(tmp_path / "app_with_tools.py")])
    assert ["E131"] == [f.code for f in report.findings if f.code.startswith("E")]


def test_a_helper_that_dies_is_a_finding_not_a_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tool module that ends the process on import leaves the helper without an answer: E130 says so."""
    (tmp_path / "exits_on_import.py").write_text("import os\nos._exit(3)\n", encoding="utf-8")
    (tmp_path / "quote.yaml").write_text(
        "name: quote\ninstructions: Quote.\ntools: [exits_on_import:f]\n", encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ATOMTASK_IMPORTABLE", "exits_on_import")
    [finding] = check([tmp_path / "quote.yaml"]).findings
    assert "E130" == finding.code
    assert "The tools of template 'quote' could not be checked: the helper process" in finding.message
