"""Workflows: typed state flowing through steps, checked before a token is spent.

The declaration (`Workflow`, `Step`) is vocabulary (`atomtask.system`); here are the checks, the
`WorkflowRegistry` (`TaskSystem.workflows`), the expression language, the `WorkflowRunner` and the
pictures. Importing the registry does not import the runner, which imports pydantic-ai.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from atomtask._lazy import lazy_exports

if TYPE_CHECKING:
    from atomtask.workflows._registry import WorkflowRegistry
    from atomtask.workflows._runner import WorkflowRunner

__all__ = [
    "WorkflowRegistry",
    "WorkflowRunner",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__, __all__)
