"""How fast a batch may go: requests and tokens per minute, the provider's 429s, and the batch's budget.

`Pacer` is what every item waits on before it starts: a shared pause after any item's request was
refused with a rate limit (as long as the provider's `Retry-After`, else `DEFAULT_PAUSE`), then the
requests-per-minute and tokens-per-minute limiters (`aiolimiter`'s leaky buckets). Tokens are not
known before an item runs, so an item takes the running average up front and settles the difference
when it ends. `Budget` counts the tokens and cost spent and says when the batch must stop taking items;
an item that spent tokens at no known price makes `max_cost` unenforceable (`cost_unknown`), said once.
"""

from __future__ import annotations

import asyncio
import time

import attrs
from aiolimiter import AsyncLimiter
from atomtask.system.logs import get_logger
from atomtask.system.results import UsageNotes

__all__ = ["COST_UNKNOWN", "DEFAULT_PAUSE", "Budget", "Pacer"]

log = get_logger(__name__)

COST_UNKNOWN = (
    "`--max-cost` cannot be enforced: the model's prices are unknown, so its answers have no cost; "
    "cap the batch with `--max-tokens N` instead"
)

DEFAULT_PAUSE = 1.0
"""Seconds every worker waits after a 429 that named no `Retry-After`."""


class Pacer:
    """The rate limits of one batch (`rpm`, `tpm`: None for none) and its shared backoff after a 429."""

    def __init__(self, *, rpm: float | None = None, tpm: float | None = None) -> None:
        self._rpm = AsyncLimiter(rpm, 60) if rpm else None
        self._tpm = AsyncLimiter(tpm, 60) if tpm else None
        self._tpm_max = float(tpm or 0)
        self._resume_at = 0.0
        self._tokens = 0
        self._items = 0
        self.rate_limited = 0

    def on_rate_limited(self, retry_after: float | None) -> None:
        """A request was refused with a rate limit: every worker waits before starting its next item."""
        self.rate_limited += 1
        pause = DEFAULT_PAUSE if retry_after is None else max(0.0, retry_after)
        self._resume_at = max(self._resume_at, time.monotonic() + pause)

    @property
    def estimate(self) -> float:
        """The tokens an item is expected to spend: the average so far (1 before any item ended)."""
        return self._tokens / self._items if self._items else 1.0

    async def before_item(self) -> float:
        """Wait for the shared pause and the limiters; returns the tokens taken from the `tpm` bucket."""
        while (wait := self._resume_at - time.monotonic()) > 0:
            await asyncio.sleep(wait)
        if self._rpm is not None:
            await self._rpm.acquire()
        taken = 0.0
        if self._tpm is not None:
            taken = min(self.estimate, self._tpm_max)
            await self._tpm.acquire(taken)
        return taken

    async def after_item(self, tokens: int, taken: float) -> None:
        """Settle an item's tokens with the `tpm` bucket (the part beyond what it took up front)."""
        self._tokens += tokens
        self._items += 1
        if self._tpm is None:
            return
        owed = tokens - taken
        while owed > 0:
            chunk = min(owed, self._tpm_max)
            await self._tpm.acquire(chunk)
            owed -= chunk


@attrs.define(kw_only=True)
class Budget:
    """The batch's spend across its items and its caps (`max_cost` USD, `max_tokens`; None: no cap)."""

    max_cost: float | None = None
    max_tokens: int | None = None
    spent: UsageNotes = attrs.field(factory=UsageNotes)
    cost_unknown: bool = False
    """True once an item spent tokens with no known price while `max_cost` is set: the cap cannot hold."""

    def add(self, usage: UsageNotes) -> None:
        """Count one finished item's usage (and notice a `max_cost` that cannot be enforced)."""
        self.spent = self.spent + usage
        if self.max_cost is not None and not self.cost_unknown and usage.total_tokens and usage.cost is None:
            self.cost_unknown = True
            log.warning("batch_cost_unknown", max_cost=self.max_cost, detail=COST_UNKNOWN)

    def exceeded(self) -> str | None:
        """What was reached (`--max-cost $0.50`), or None while the batch may go on."""
        if self.max_cost is not None and (self.spent.cost or 0.0) >= self.max_cost:
            return f"the batch's `--max-cost` of ${self.max_cost:g} (${self.spent.cost or 0.0:.4f} spent)"
        if self.max_tokens is not None and self.spent.total_tokens >= self.max_tokens:
            return f"the batch's `--max-tokens` of {self.max_tokens} ({self.spent.total_tokens} spent)"
        return None
