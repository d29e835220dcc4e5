"""The loading layer: declaration files read into `Declarations` (one reader registry that front ends
plug into), model strings and settings checked without importing a provider SDK, the `ModelAliases` models are
named by (`TaskSystem.model_aliases`), and the `TemplateRegistry` of checked templates (`TaskSystem.templates`).

A front end that reads its own file format registers a reader: `register_reader((".ext",), read)`,
where `read(path, errors)` returns the file's `Declarations` (see ARCHITECTURE.md, "Adding a front end").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from atomtask._lazy import lazy_exports

if TYPE_CHECKING:
    from atomtask.loading._declarations import Declarations
    from atomtask.loading._model_aliases import ModelAliases
    from atomtask.loading._readers import register_reader
    from atomtask.loading._template_registry import TemplateRegistry

__all__ = ["Declarations", "ModelAliases", "TemplateRegistry", "register_reader"]

__getattr__, __dir__ = lazy_exports(__name__, __file__, __all__)
