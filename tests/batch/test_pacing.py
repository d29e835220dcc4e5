"""The batch's pace: the shared pause after a 429, the per-minute limiters, and the budget."""

from __future__ import annotations

import asyncio
import time

import pytest
from atomtask import UsageNotes
from atomtask.batch._pacing import DEFAULT_PAUSE, Pacer, batch_budget, reached


async def test_a_rate_limit_makes_every_worker_wait_its_retry_after() -> None:
    """After `on_rate_limited(0.2)` no item starts before the 0.2 s are over."""
    pacer = Pacer()
    pacer.on_rate_limited(0.2)
    resume_at = time.monotonic() + 0.2
    await pacer.before_item()
    assert time.monotonic() >= resume_at - 0.01
    assert 1 == pacer.rate_limited


async def test_without_retry_after_the_pause_is_the_default() -> None:
    """A 429 that names no wait pauses for `DEFAULT_PAUSE`; a later, shorter one does not shorten it."""
    pacer = Pacer()
    pacer.on_rate_limited(None)
    pacer.on_rate_limited(0.0)
    assert pacer._resume_at - time.monotonic() > DEFAULT_PAUSE - 0.1


async def test_tokens_taken_up_front_follow_the_average() -> None:
    """An item takes the average tokens per item from the `tpm` bucket (here 1,000 tokens: a second's share)."""
    pacer = Pacer(tpm=60_000)
    assert 1.0 == await pacer.before_item()
    await pacer.after_item(300, 1.0)
    await pacer.after_item(100, 0.0)
    assert 200.0 == pacer.estimate
    assert 200.0 == await pacer.before_item()


def test_budget_says_what_was_reached() -> None:
    """The budget is reached when the spend meets a cap; without caps never."""
    budget = batch_budget(max_tokens=100)
    budget.spend(UsageNotes(input_tokens=60, output_tokens=30))
    assert reached(budget) is None
    budget.spend(UsageNotes(input_tokens=10))
    assert "`--max-total-tokens` of 100 (100 spent)" in (reached(budget) or "")
    costly = batch_budget(max_cost=0.01)
    costly.spend(UsageNotes(cost=0.02))
    assert "`--max-cost` of $0.01 ($0.0200 spent)" in (reached(costly) or "")
    assert reached(batch_budget()) is None


async def test_rpm_holds_items_beyond_the_rate() -> None:
    """With `rpm=2` one item starts at once; the second waits for the bucket to drain (30 s)."""
    pacer = Pacer(rpm=2)
    await pacer.before_item()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(pacer.before_item(), timeout=0.2)


def test_a_cost_cap_without_prices_is_noticed_once() -> None:
    """Tokens spent at no known price make `max_cost` unenforceable: `cost_unknown`, and it never stops the batch."""
    budget = batch_budget(max_cost=0.01)
    budget.spend(UsageNotes(requests=1, input_tokens=10, output_tokens=5))
    assert budget.cost_unknown
    assert reached(budget) is None
    priced = batch_budget(max_cost=0.01)
    priced.spend(UsageNotes(requests=1, input_tokens=10, output_tokens=5, cost=0.001))
    assert not priced.cost_unknown
