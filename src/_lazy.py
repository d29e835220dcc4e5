"""Lazy exports for package `__init__` modules, so importing a package stays cheap.

A package writes each public name once, in an `if TYPE_CHECKING:` block of `from ... import ...`
statements (what type checkers and readers see), and lists it in its sorted `__all__`.
`lazy_exports` reads that block from the package's own source and imports a name's module only when
the name is first used: `atomtask --help` imports neither pydantic-ai nor a provider SDK.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, file: str, public: Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module `__getattr__` that imports each name of `public` from where `file`'s `TYPE_CHECKING` block says.

    Raises `ImportError` at once when a name of `public` is not imported in that block (or imported twice).

    Example:
        ```python
        if TYPE_CHECKING:
            from atomtask._task_system import TaskSystem

        __all__ = ["TaskSystem"]
        __getattr__, __dir__ = lazy_exports(__name__, __file__, __all__)
        ```
    """
    exports = _type_checking_imports(Path(file).read_text(encoding="utf-8"))
    missing = sorted(set(public) - set(exports) - set(vars(sys.modules[package])))
    if missing:
        raise ImportError(f"{package}: {', '.join(missing)} in `__all__` but not imported under `TYPE_CHECKING`")

    def __getattr__(name: str) -> Any:
        found = exports.get(name)
        if found is None or name not in public:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, original = found
        value = getattr(importlib.import_module(module), original)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(public)

    return __getattr__, __dir__


def _type_checking_imports(source: str) -> dict[str, tuple[str, str]]:
    """`{name: (module, name there)}` for each `from module import ...` under the top-level `if TYPE_CHECKING:`."""
    found: dict[str, tuple[str, str]] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            continue
        for statement in node.body:
            if isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
                for alias in statement.names:
                    name = alias.asname or alias.name
                    if name in found:
                        raise ImportError(f"{name!r} is imported twice under `TYPE_CHECKING`")
                    found[name] = (statement.module, alias.name)
    return found
