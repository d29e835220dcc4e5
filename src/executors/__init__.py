"""Running one task: `AtomicTaskExecutor` validates inputs, renders prompts, hands one call to the
manager and returns a `TaskResult` (also streamed, and through the response cache). A `TaskSystem`
builds it; importable here for the rare caller who wires the parts by hand, with the `CallOptions` a
call passes it (what `TaskSystem.execute`'s keyword arguments become).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from atomtask._lazy import lazy_exports

if TYPE_CHECKING:
    from atomtask.executors._atomic import AtomicTaskExecutor
    from atomtask.system._options import CallOptions

__all__ = ["AtomicTaskExecutor", "CallOptions"]

__getattr__, __dir__ = lazy_exports(__name__, __file__, __all__)
