"""How fast a batch may go: requests and tokens per minute, the provider's 429s, and how much it may spend.

`Pacer` is what every item waits on before it starts: a shared pause after any item's request was
refused with a rate limit (as long as the provider's `Retry-After`, else `DEFAULT_PAUSE`), then the
requests-per-minute and tokens-per-minute limiters (`aiolimiter`'s leaky buckets). Each bucket holds
about one second's share of its rate (`bucket`), not a minute's: providers enforce their per-minute
limits over shorter windows (OpenAI's are quantised to the second or so), so a batch that started a
minute's worth of requests at once would be refused; `--rpm 600` starts 10 at once, then one every
0.1 s. Tokens are not known before an item runs, so an item takes the running average up front (at
most a bucket's worth: one larger item still starts once the bucket is empty) and settles the
difference when it ends, a bucket at a time. The batch's `max_cost` and `max_tokens` (`--max-cost`,
`--max-total-tokens`: totals across its items) are a `Budget` (`batch_budget`) that says when the
batch must stop taking items (`reached`).
"""

from __future__ import annotations

import asyncio
import time

from aiolimiter import AsyncLimiter
from atomtask._logs import get_logger
from atomtask.handlers._budget import Budget
from atomtask.system._templates import TemplateLimits

__all__ = ["DEFAULT_PAUSE", "Pacer", "batch_budget", "bucket", "reached"]

log = get_logger(__name__)

DEFAULT_PAUSE = 1.0
"""Seconds every worker waits after a 429 that named no `Retry-After`."""


def bucket(per_minute: float) -> AsyncLimiter:
    """A leaky bucket for `per_minute` holding one second's share of it (at least 1: a whole request).

    `AsyncLimiter(size, period)` lets `size` through at once, then `size` every `period` seconds:
    `bucket(600)` is 10 a 1 s, `bucket(30)` 1 a 2 s, the same rate as `per_minute` a 60 s.
    """
    size = max(1.0, per_minute / 60)
    return AsyncLimiter(size, size * 60 / per_minute)


class Pacer:
    """The rate limits of one batch (`rpm`, `tpm`: None for none) and its shared backoff after a 429."""

    def __init__(self, *, rpm: float | None = None, tpm: float | None = None) -> None:
        self._rpm = bucket(rpm) if rpm else None
        self._tpm = bucket(tpm) if tpm else None
        self._tpm_max = self._tpm.max_rate if self._tpm is not None else 0.0
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
        """Wait for the shared pause and the limiters; returns the tokens taken from the `tpm` bucket.

        An item takes its estimate, at most the bucket's size (more would never fit: it would wait forever).
        """
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
        """Settle an item's tokens with the `tpm` bucket (the part beyond what it took up front), a bucket at a time."""
        self._tokens += tokens
        self._items += 1
        if self._tpm is None:
            return
        owed = tokens - taken
        while owed > 0:
            chunk = min(owed, self._tpm_max)
            await self._tpm.acquire(chunk)
            owed -= chunk


def batch_budget(*, max_cost: float | None = None, max_tokens: int | None = None) -> Budget:
    """The budget of a batch: `max_cost` USD and `max_tokens` tokens across its items (None: no cap)."""
    if max_cost is None and max_tokens is None:
        return Budget()
    return Budget(limits=TemplateLimits(cost=max_cost, total_tokens=max_tokens))


def reached(budget: Budget) -> str | None:
    """What the batch reached (`the batch's --max-cost of $0.5 ($0.5012 spent)`), or None while it may go on."""
    metric = budget.exhausted()
    if metric == "cost":
        return f"the batch's `--max-cost` of ${budget.limit('cost'):g} (${budget.spent('cost'):.4f} spent)"
    if metric == "total_tokens":
        return (
            f"the batch's `--max-total-tokens` of {budget.limit('total_tokens'):g} "
            f"({budget.spent('total_tokens'):g} spent)"
        )
    return None
