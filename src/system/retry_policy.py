"""How provider faults are retried: a small declaration, kept free of pydantic-ai imports."""

from __future__ import annotations

import attrs

__all__ = ["ProviderRetries"]


@attrs.frozen(kw_only=True)
class ProviderRetries:
    """How provider faults (429, 5xx, timeouts, dropped connections) are retried before giving up.

    The n-th retry waits `backoff * 2**(n-1)` seconds (or the provider's `Retry-After`), at most
    `max_backoff`. `attempts=0` turns retrying off; `backoff=0` retries at once (tests).
    """

    attempts: int = attrs.field(default=2, validator=attrs.validators.ge(0))
    backoff: float = attrs.field(default=0.5, validator=attrs.validators.ge(0))
    max_backoff: float = attrs.field(default=8.0, validator=attrs.validators.ge(0))

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number `retry` (1-based)."""
        if retry_after is not None:
            return min(self.max_backoff, max(0.0, retry_after))
        return min(self.max_backoff, self.backoff * 2.0 ** (retry - 1))
