"""The memory system: stored documents, and an atomic task that judges which are relevant to a query.

The output schemas (`AssociativeMatchResult`, `MatchItem`) live in `atomtask.schemas.builtins`, since
every `TaskSystem` registers them for the shipped templates; the rest loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from atomtask._lazy import lazy_exports

if TYPE_CHECKING:
    from atomtask.memory.memory_system import MemorySystem
    from atomtask.memory.results import Document, DroppedMatch, MemoryContext, PromptReport
    from atomtask.memory.store import DocumentStore, default_memory_path, fts_query
    from atomtask.schemas.builtins import AssociativeMatchResult, MatchItem

_EXPORTS: dict[str, str] = {
    "AssociativeMatchResult": "atomtask.schemas.builtins",
    "Document": "atomtask.memory.results",
    "DocumentStore": "atomtask.memory.store",
    "DroppedMatch": "atomtask.memory.results",
    "MatchItem": "atomtask.schemas.builtins",
    "MemoryContext": "atomtask.memory.results",
    "MemorySystem": "atomtask.memory.memory_system",
    "PromptReport": "atomtask.memory.results",
    "default_memory_path": "atomtask.memory.store",
    "fts_query": "atomtask.memory.store",
}


__all__ = [
    "AssociativeMatchResult",
    "Document",
    "DocumentStore",
    "DroppedMatch",
    "MatchItem",
    "MemoryContext",
    "MemorySystem",
    "PromptReport",
    "default_memory_path",
    "fts_query",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
