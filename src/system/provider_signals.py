"""Provider signals for whoever runs many tasks at once: "the provider said 429, wait this long".

The attempt ledger (`handlers/ledger.py`) calls `report_rate_limited(retry_after)` when a request is
refused with a rate limit; a batch sets a listener for its items (`rate_limit_listener`, a context
variable, so each asyncio task of the batch inherits it) and slows every worker down. Without a
listener the call does nothing, so a lone task pays nothing for it.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

__all__ = ["rate_limit_listener", "report_rate_limited"]

rate_limit_listener: ContextVar[Callable[[float | None], None] | None] = ContextVar(
    "atomtask_rate_limit_listener", default=None
)
"""Called with the provider's `Retry-After` (seconds, None when it gave none) on every rate-limited request."""


def report_rate_limited(retry_after: float | None) -> None:
    """Tell the current listener, if any, that the provider refused a request with a rate limit."""
    listener = rate_limit_listener.get()
    if listener is not None:
        listener(retry_after)
