"""What a run would cost before the first token: `atomtask run|workflow run|batch --dry-run`, `TaskSystem.estimate`.

`_estimate` traces a template, a workflow or a batch's items the way a run goes, without a model
(`estimate_task`, `estimate_workflow`, `estimate_items`); `_requests` measures each call from the
request body pydantic-ai would send and prices it with genai-prices; `_figures` holds what comes out
(`Estimate`, `TemplateEstimate`, `ItemEstimate`, `Figures`: expected and worst case).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from atomtask._lazy import lazy_exports

if TYPE_CHECKING:
    from atomtask.estimate._estimate import estimate_items, estimate_task, estimate_workflow
    from atomtask.estimate._figures import Estimate, Figures, ItemEstimate, TemplateEstimate, Totals

__all__ = [
    "Estimate",
    "Figures",
    "ItemEstimate",
    "TemplateEstimate",
    "Totals",
    "estimate_items",
    "estimate_task",
    "estimate_workflow",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__, __all__)
