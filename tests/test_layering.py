"""Architecture rules from DESIGN.md that a refactor must not break silently."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.conftest import REPO


def test_only_the_manager_imports_pydantic_ai_agent() -> None:
    """`LLMInteractionManager` (handlers/llm.py) is the only module that builds pydantic-ai Agents."""
    pattern = re.compile(r"^\s*from pydantic_ai(\.agent)? import [^\n]*\bAgent\b", re.MULTILINE)
    users = sorted(
        str(path.relative_to(REPO)) for path in (REPO / "src").rglob("*.py") if pattern.search(path.read_text())
    )
    assert ["src/handlers/llm.py"] == users


def _contracts() -> dict[str, Any]:
    """The import-linter contracts declared in pyproject.toml, by id, ready to check."""
    from importlinter import configuration
    from importlinter.application import use_cases
    from importlinter.contracts.acyclic_siblings import AcyclicSiblingsContract
    from importlinter.contracts.layers import LayersContract

    configuration.configure()  # what the `lint-imports` command does first: readers, printer, timer

    # The contract types pyproject.toml uses, by their public classes (import-linter's own type
    # registry is private and has changed between releases).
    types = {"layers": LayersContract, "acyclic_siblings": AcyclicSiblingsContract}
    options = use_cases.read_user_options(str(REPO / "pyproject.toml"))
    return {
        spec["id"]: types[spec["type"]](
            name=spec["name"], session_options=options.session_options, contract_options=spec
        )
        for spec in options.contracts_options
    }


@pytest.fixture(scope="module")
def contracts() -> dict[str, Any]:
    return _contracts()


@pytest.fixture
def graph() -> Any:
    import grimp

    return grimp.build_graph("atomtask", cache_dir=None)


def _broken(contract: Any, graph: Any, capsys: pytest.CaptureFixture[str]) -> str:
    """What import-linter prints for `contract` on `graph` (empty when the contract is kept)."""
    check = contract.check(graph, verbose=False)
    if check.kept:
        return ""
    contract.render_broken_contract(check)
    return capsys.readouterr().out


@pytest.mark.parametrize("contract_id", ["layers", "acyclic"])
def test_the_package_keeps_its_import_contracts(
    contract_id: str, contracts: dict[str, Any], graph: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The layers of ARCHITECTURE.md point one way and no package has an import circle (pyproject.toml)."""
    assert "" == _broken(contracts[contract_id], graph, capsys)


def test_an_upward_import_breaks_the_layers_contract_naming_the_import(
    contracts: dict[str, Any], graph: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """A vocabulary module importing the facade is reported with both module names."""
    graph.add_import(
        importer="atomtask.system.templates",
        imported="atomtask.task_system",
        line_number=3,
        line_contents="from atomtask.task_system import TaskSystem",
    )
    report = _broken(contracts["layers"], graph, capsys)
    assert "atomtask.system.templates -> atomtask.task_system" in report


def test_a_circle_inside_a_layer_breaks_the_acyclic_contract(
    contracts: dict[str, Any], graph: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two vocabulary modules importing each other (the old errors/results circle) are reported."""
    graph.add_import(
        importer="atomtask.system.errors",
        imported="atomtask.system.results",
        line_number=5,
        line_contents="from atomtask.system.results import TaskResult",
    )
    report = _broken(contracts["acyclic"], graph, capsys)
    assert ("No cycles are allowed in atomtask.system.", "- .results -> .errors (1 import)") == tuple(
        line for line in report.splitlines() if line.startswith(("No cycles", "- ."))
    )


def test_every_module_is_small_and_says_its_concern() -> None:
    """No module of the package is over 400 lines, and each opens with a docstring (ARCHITECTURE.md)."""
    import ast

    too_long, undocumented = [], []
    for path in sorted((REPO / "src").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        name = str(path.relative_to(REPO))
        if text.count("\n") > 400:
            too_long.append(name)
        if not ast.get_docstring(ast.parse(text)):
            undocumented.append(name)
    assert ([], []) == (too_long, undocumented)
