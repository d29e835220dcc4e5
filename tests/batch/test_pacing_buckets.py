"""The batch's limiters hold a second's share of their per-minute rate: requests are spread, never burst.

A bucket holding a minute's worth let `--rpm 600` start 100 requests in 3 s; providers enforce their
per-minute limits over much shorter windows. These tests count what passes without waiting
(`has_capacity`), on a clock they move themselves: no assertion on how long anything took.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import pytest
from aiolimiter import AsyncLimiter
from atomtask.batch._pacing import Pacer, bucket


class Clock:
    """An event loop whose `time()` this test moves (nothing in these tests waits on a timer)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.loop = asyncio.new_event_loop()
        self.loop.time = lambda: self.now  # type: ignore[method-assign]

    def run(self, make: Callable[[], Coroutine[Any, Any, int]]) -> int:
        return self.loop.run_until_complete(make())


@pytest.fixture
def clock() -> Iterator[Clock]:
    moved = Clock()
    yield moved
    moved.loop.close()


def _at_once(pacer: Pacer, limiter: AsyncLimiter | None) -> Callable[[], Coroutine[Any, Any, int]]:
    """How many items start now without waiting."""

    async def count() -> int:
        assert limiter is not None
        started = 0
        while limiter.has_capacity(max(1.0, pacer.estimate) if limiter is pacer._tpm else 1):
            await pacer.before_item()
            started += 1
        return started

    return count


@pytest.mark.parametrize("rpm", [2, 30, 59, 60, 90, 600, 6000])
def test_after_an_idle_spell_at_most_a_seconds_share_starts_at_once(clock: Clock, rpm: int) -> None:
    """`--rpm N`: after a long idle spell at most ceil(N/60)+1 items start at once (not N), and at least one."""
    pacer = Pacer(rpm=rpm)
    clock.now += 3600
    started = clock.run(_at_once(pacer, pacer._rpm))
    assert 1 <= started <= math.ceil(rpm / 60) + 1


@pytest.mark.parametrize("rpm", [30, 600, 6000])
def test_over_a_minute_requests_are_spread_evenly_at_the_rate(clock: Clock, rpm: int) -> None:
    """Moved 10 ms at a time for a minute: after the first second (a bucket, then the rate) no second starts more
    than a second's share (+1), and the minute about N."""
    pacer = Pacer(rpm=rpm)
    share = math.ceil(rpm / 60)
    per_tick: list[int] = []
    for _ in range(6000):
        per_tick.append(clock.run(_at_once(pacer, pacer._rpm)))
        clock.now += 0.01
    first, *seconds = [sum(per_tick[start : start + 100]) for start in range(0, 6000, 100)]
    assert first <= 2 * share + 1
    assert max(seconds) <= share + 1
    assert rpm <= sum(per_tick) <= rpm + share + 1


def test_tpm_bucket_holds_a_seconds_share_of_tokens(clock: Clock) -> None:
    """`--tpm 60000`: the bucket holds 1,000 tokens (not 60,000): items of 100 tokens, ten start at once."""
    pacer = Pacer(tpm=60_000)
    pacer._tokens, pacer._items = 100, 1  # the average so far: 100 tokens an item
    assert 10 == clock.run(_at_once(pacer, pacer._tpm))


def test_an_item_estimated_above_the_tpm_bucket_still_starts(clock: Clock) -> None:
    """An item expected to spend more tokens than the bucket holds takes the whole bucket and starts (no refusal)."""
    pacer = Pacer(tpm=600)  # a bucket of 10 tokens
    pacer._tokens, pacer._items = 5000, 1

    async def start() -> int:
        return round(await pacer.before_item())

    assert 10 == clock.run(start)


async def test_an_item_spending_more_than_the_bucket_settles_it_a_bucket_at_a_time() -> None:
    """After an item spent 1.2 buckets of tokens, the settling waits for the bucket rather than raising."""
    pacer = Pacer(tpm=60_000)  # 1,000 tokens a second
    taken = await pacer.before_item()
    await asyncio.wait_for(pacer.after_item(1200, taken), timeout=30)  # 1,000 at once, then 200 when drained
    assert 1200.0 == pacer.estimate


@pytest.mark.parametrize(("per_minute", "size"), [(2, 1.0), (60, 1.0), (600, 10.0), (60_000, 1000.0)])
def test_bucket_size_and_rate(per_minute: float, size: float) -> None:
    """`bucket(N)` holds max(1, N/60) and leaks N a minute."""
    limiter = bucket(per_minute)
    assert (size, per_minute / 60) == (limiter.max_rate, limiter.max_rate / limiter.time_period)


@pytest.mark.parametrize(("rpm", "limit", "period"), [(600, 10, 1.0), (30, 1, 2.0), (60, 1, 1.0), (90, 2, 80 / 60)])
def test_the_dbos_queue_limiter_holds_a_seconds_share_too(rpm: float, limit: int, period: float) -> None:
    """`--engine dbos --rpm N`: the queue's DBOS rate limit lets a second's share through, not a minute's worth."""
    from atomtask.batch._dbos import _limiter

    got = _limiter(rpm)
    assert got["limit"] == limit and got["period"] == pytest.approx(period)
    assert got["limit"] * 60 / got["period"] == pytest.approx(rpm)
