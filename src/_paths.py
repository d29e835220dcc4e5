"""What atomtask reads from the environment about the machine: where its state lives (`atomtask_home()`, one
folder: the response cache, durable runs, batch records, the memory store) and which packages declarations may
import code from (`env_importable()`)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["HOME_ENV", "IMPORTABLE_ENV", "atomtask_home", "env_importable"]

HOME_ENV = "ATOMTASK_HOME"
IMPORTABLE_ENV = "ATOMTASK_IMPORTABLE"


def env_importable() -> tuple[str, ...]:
    """The packages `$ATOMTASK_IMPORTABLE` allows declarations to import from (comma-separated; `atomtask
    --allow-import` adds to it while a command runs)."""
    return tuple(p.strip() for p in os.environ.get(IMPORTABLE_ENV, "").split(",") if p.strip())


def atomtask_home() -> Path:
    """`$ATOMTASK_HOME`, else `$XDG_DATA_HOME/atomtask`, else `~/.local/share/atomtask`; not created here.

    Read at each call, so a test or a process that sets the variable later is obeyed.
    """
    explicit = os.environ.get(HOME_ENV)
    if explicit:
        return Path(explicit).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "atomtask"
