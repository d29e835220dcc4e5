"""Built-in tools a template may name, each off until a template names it: no shell tool, nothing open-ended.

    tools:
      - {function: atomtask.tools:http_get, allow_hosts: [api.example.com]}
      - {function: atomtask.tools:read_text, root: data/}

Both are tool factories: the entry's other keys are their options, and they return the pydantic-ai
`Tool` the model calls. From Python: `Template(..., tools=[http_get(allow_hosts=["api.example.com"])])`.
A request the tool refuses (a host not allowed, a path outside the folder, a missing file) goes back to
the model as a retry message (`ModelRetry`), so it can correct its arguments; it never fails the task.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from atomtask._lazy import lazy_exports

if TYPE_CHECKING:
    from atomtask.tools._builtin import http_get, read_text

__all__ = ["http_get", "read_text"]

__getattr__, __dir__ = lazy_exports(__name__, __file__, __all__)
