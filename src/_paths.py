"""Where atomtask keeps its state on disk: `atomtask_home()` (the response cache, durable runs, ...)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["HOME_ENV", "atomtask_home"]

HOME_ENV = "ATOMTASK_HOME"


def atomtask_home() -> Path:
    """`$ATOMTASK_HOME`, else `$XDG_DATA_HOME/atomtask`, else `~/.local/share/atomtask`; not created here.

    Read at each call, so a test or a process that sets the variable later is obeyed.
    """
    explicit = os.environ.get(HOME_ENV)
    if explicit:
        return Path(explicit).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "atomtask"
