"""Talking to models: `BaseHandler` (provider settings, the model for each call) and `LLMInteractionManager`
(the only part that builds and runs pydantic-ai `Agent`s), with local repair (`OutputRepair`) and the
ledger of every attempt. Machinery a `TaskSystem` builds for you; importable here for the rare caller
who wires the parts by hand.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from atomtask._lazy import lazy_exports

if TYPE_CHECKING:
    from atomtask.handlers._base import BaseHandler, ModelChoice
    from atomtask.handlers._llm import LLMInteractionManager
    from atomtask.handlers._repair import OutputRepair

__all__ = [
    "BaseHandler",
    "LLMInteractionManager",
    "ModelChoice",
    "OutputRepair",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__, __all__)
