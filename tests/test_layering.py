"""The shape of the package: layers one way, no circles, private implementation, one home for each name."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import atomtask
import pytest

from tests.conftest import REPO

SRC = REPO / "src"
#: The packages that export public names (in their `__init__`), and what each is for.
PUBLIC_PACKAGES = ("", "cli", "executors", "handlers", "lint", "loading", "memory", "schemas", "testing", "workflows")
#: The exception class that lives with the code it signals through (see the signals section of `atomtask.errors`).
SIGNALS_OUTSIDE_ERRORS = {"EmptyAnswerError"}


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def _dotted(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(["atomtask", *parts])


def test_only_the_manager_imports_pydantic_ai_agent() -> None:
    """`LLMInteractionManager` (`handlers/_llm.py`) is the only module that builds pydantic-ai Agents."""
    pattern = re.compile(r"^\s*from pydantic_ai(\.agent)? import [^\n]*\bAgent\b", re.MULTILINE)
    users = sorted(str(path.relative_to(REPO)) for path in _modules() if pattern.search(path.read_text()))
    assert ["src/handlers/_llm.py"] == users


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
        importer="atomtask.system._templates",
        imported="atomtask._task_system",
        line_number=3,
        line_contents="from atomtask._task_system import TaskSystem",
    )
    report = _broken(contracts["layers"], graph, capsys)
    assert "atomtask.system._templates -> atomtask._task_system" in report


def test_a_circle_inside_a_layer_breaks_the_acyclic_contract(
    contracts: dict[str, Any], graph: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two vocabulary modules importing each other are reported, with the import that closes the circle."""
    graph.add_import(
        importer="atomtask.system._templates",
        imported="atomtask.system._options",
        line_number=5,
        line_contents="from atomtask.system._options import CallOptions",
    )
    report = _broken(contracts["acyclic"], graph, capsys)
    assert "No cycles are allowed in atomtask.system." in report
    assert "- ._templates -> ._options (1 import)" in report


def test_every_module_says_its_concern() -> None:
    """Every module opens with a docstring: one concept a module, however long that is (ARCHITECTURE.md)."""
    undocumented = [
        str(path.relative_to(REPO)) for path in _modules() if not ast.get_docstring(ast.parse(path.read_text()))
    ]
    assert [] == undocumented


def test_implementation_modules_are_private() -> None:
    """A module users do not import is `_private`; only package `__init__`s and `atomtask.errors` are public."""
    public = [
        str(path.relative_to(REPO))
        for path in _modules()
        if not path.name.startswith("_") and path.relative_to(SRC).as_posix() != "errors.py"
    ]
    assert [] == public


def _top_level(tree: ast.Module) -> tuple[set[str], list[str]]:
    """The names a module defines (not imports) at its top level, and its `__all__`."""
    defined: set[str] = set()
    listed: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node in tree.body:
            defined.add(node.name)
    for node in tree.body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        for target in targets:
            if isinstance(target, ast.Name):
                defined.add(target.id)
                if target.id == "__all__" and isinstance(node, ast.Assign):
                    listed = list(ast.literal_eval(node.value))
        if isinstance(node, ast.If | ast.Try):  # a definition under a condition (`try: import x` ... `except`)
            for inner in ast.walk(node):
                if isinstance(inner, ast.ClassDef | ast.FunctionDef):
                    defined.add(inner.name)
    return defined, listed


def test_no_module_only_re_exports_and_none_lists_a_name_it_does_not_define() -> None:
    """Every implementation module defines what it lists in `__all__`: no second import path for any name."""
    problems = []
    for path in _modules():
        if path.name == "__init__.py" or path.name == "__main__.py":
            continue
        defined, listed = _top_level(ast.parse(path.read_text()))
        if not defined - {"__all__"}:
            problems.append(f"{path.relative_to(REPO)} defines nothing")
        foreign = sorted(set(listed) - defined)
        if foreign:
            problems.append(f"{path.relative_to(REPO)} lists {foreign}")
    assert [] == problems


def _exports(package: str) -> dict[str, str]:
    """`{name: module}` of a public package's exports, from the `TYPE_CHECKING` block it loads them by."""
    path = SRC.joinpath(*package.split("."), "__init__.py") if package else SRC / "__init__.py"
    found: dict[str, str] = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("atomtask"):
            for alias in node.names:
                found[alias.asname or alias.name] = node.module
    return found


def test_each_public_name_has_one_home() -> None:
    """A name is exported by one package, from a private module (or from `atomtask.errors`, itself public)."""
    homes: dict[str, list[str]] = {}
    for package in PUBLIC_PACKAGES:
        for name, module in _exports(package).items():
            if name == "lazy_exports" or (package == "cli" and name == "main"):
                continue
            last = module.rsplit(".", 1)[-1]
            assert last.startswith("_") or module == "atomtask.errors", (
                f"{package or 'atomtask'} exports {name} from {module}"
            )
            homes.setdefault(name, []).append(package or "atomtask")
    shared = {name: where for name, where in homes.items() if len(where) > 1}
    assert {} == shared


def _exception_classes(tree: ast.Module) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            bases = [ast.unparse(base) for base in node.bases]
            if any(base.endswith(("Error", "Exception")) or base == "BaseException" for base in bases):
                names.append(node.name)
    return names


def test_every_exception_class_lives_in_atomtask_errors() -> None:
    """Outside `atomtask.errors` an exception class is private to its module (`_Name`), or the one documented."""
    elsewhere = {
        f"{path.relative_to(REPO)}:{name}"
        for path in _modules()
        if path.relative_to(SRC).as_posix() != "errors.py"
        for name in _exception_classes(ast.parse(path.read_text()))
        if not name.startswith("_") and name not in SIGNALS_OUTSIDE_ERRORS
    }
    assert set() == elsewhere


def test_every_error_a_user_can_meet_is_exported_from_atomtask() -> None:
    """Each public exception of `atomtask.errors` (but the internal signals and the test doubles') is in `atomtask`."""
    from atomtask import errors

    tree = ast.parse((SRC / "errors.py").read_text())
    source = (SRC / "errors.py").read_text()
    signals = source[source.index("# -- Signals inside atomtask") :]
    user_facing = [
        name for name in _exception_classes(tree) if f"class {name}(" not in signals and not name.startswith("Script")
    ]
    assert [] == [name for name in user_facing if name not in atomtask.__all__]
    assert set(errors.__all__) >= set(user_facing)


def test_options_travel_as_one_typed_value() -> None:
    """No layer passes a call's options along as an untyped `dict[str, Any]` (they are one `CallOptions`)."""
    offenders = [str(path.relative_to(REPO)) for path in _modules() if "options: dict[str, Any]" in path.read_text()]
    assert [] == offenders
