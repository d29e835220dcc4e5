"""The schema layer: type strings, YAML field schemas, JSON Schema and Python classes turned into
Pydantic classes, and the `ModelRegistry` that names them (`TaskSystem.models`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from atomtask._lazy import lazy_exports

if TYPE_CHECKING:
    from atomtask.schemas._model_registry import ModelRegistry

__all__ = [
    "ModelRegistry",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__, __all__)
