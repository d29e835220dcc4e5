"""`Budget`: one kind of budget for a task's attempts, a workflow run and its sub-workflows, and a batch."""

from __future__ import annotations

from atomtask import TemplateLimits, UsageNotes
from atomtask.handlers._budget import Budget
from atomtask.handlers._ledger import remaining_limits
from structlog.testing import capture_logs


def test_a_budget_without_limits_is_never_exhausted() -> None:
    """No limits: nothing is ever reached and the next call may spend anything."""
    budget = Budget()
    budget.spend(UsageNotes(requests=100, input_tokens=10**6, cost=50.0))
    assert (None, None) == (budget.exhausted(), budget.remaining())


def test_the_first_limit_reached_is_named_and_the_rest_is_what_is_left() -> None:
    """Spent meets a limit: `exhausted` names it; before that, `remaining` is each limit minus what was spent."""
    budget = Budget(limits=TemplateLimits(requests=3, total_tokens=100))
    budget.spend(UsageNotes(requests=1, input_tokens=30, output_tokens=10))
    assert budget.exhausted() is None
    assert TemplateLimits(requests=2, total_tokens=60) == budget.remaining()
    budget.spend(UsageNotes(requests=2))
    assert "requests" == budget.exhausted()
    assert "requests: 3" == budget.describe("requests")


def test_a_child_counts_in_its_parent_and_holds_the_tightest_of_both() -> None:
    """A sub-workflow's budget: spending counts upward, and the parent's smaller allowance holds in the child."""
    parent = Budget(limits=TemplateLimits(requests=4))
    child = Budget(limits=TemplateLimits(requests=10, cost=1.0), parent=parent)
    child.spend(UsageNotes(requests=3, cost=0.1))
    assert (3, 3) == (parent.used.requests, child.used.requests)
    left = child.remaining()
    assert left is not None
    assert (1, 0.9) == (left.requests, left.cost)
    assert "requests: 4" == child.describe("requests")
    child.spend(UsageNotes(requests=1))
    assert ("requests", "requests") == (child.exhausted(), parent.exhausted())


def test_a_cost_limit_without_prices_is_noticed_once_and_logged() -> None:
    """Usage without a price under a cost limit sets `cost_unknown` and logs `budget_cost_unknown` once."""
    budget = Budget(limits=TemplateLimits(cost=0.5))
    with capture_logs() as logs:
        budget.spend(UsageNotes(requests=1, input_tokens=10))
        budget.spend(UsageNotes(requests=1, input_tokens=10))
    assert budget.cost_unknown
    assert ["budget_cost_unknown"] == [entry["event"] for entry in logs]
    assert budget.exhausted() is None


def test_a_tasks_remaining_limits_come_from_the_same_budget() -> None:
    """The ledger's pydantic-ai limits for the next attempt: what the call's limits leave, or what was used up."""
    limits = TemplateLimits(requests=3, output_tokens=50)
    left = remaining_limits(limits, UsageNotes(requests=1, output_tokens=20))
    assert not isinstance(left, str) and left is not None
    assert (2, 30) == (left.request_limit, left.output_tokens_limit)
    assert "the `requests` limit of 3 (3 used)" == remaining_limits(limits, UsageNotes(requests=3))
