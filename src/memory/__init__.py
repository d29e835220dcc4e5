"""The memory system: stored documents, and an atomic task that judges which are relevant to a query.

`MemorySystem` and `MemoryContext` are exported from `atomtask` too; the output schemas
(`AssociativeMatchResult`, `MatchItem`) are registered in every `TaskSystem` for the shipped templates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from atomtask._lazy import lazy_exports

if TYPE_CHECKING:
    from atomtask.memory._memory import (
        Document,
        DocumentStore,
        DroppedMatch,
        PromptReport,
        default_memory_path,
        fts_query,
    )

__all__ = [
    "Document",
    "DocumentStore",
    "DroppedMatch",
    "PromptReport",
    "default_memory_path",
    "fts_query",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__, __all__)
