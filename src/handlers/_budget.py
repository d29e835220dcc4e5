"""`Budget`: what may still be spent (requests, tokens, cost), counted against limits and a parent's.

One kind of budget serves every level that spends: a task's attempts and fallbacks against its call's
`limits` (the ledger), a workflow run against its `limits` (a sub-workflow's budget a child of its
parent's), a batch against `max_cost` and `max_tokens`. A limit is reached when what was spent meets
it, here or in any parent. A cost limit cannot hold while usage arrives without a price (a model whose
prices are unknown): the budget notices it once (`cost_unknown`) and logs `budget_cost_unknown`.
Light on purpose (no pydantic-ai): workflows and batches import it while pydantic-ai is not wanted yet.
"""

from __future__ import annotations

import attrs
from atomtask._logs import get_logger
from atomtask.system._results import UsageNotes
from atomtask.system._templates import TemplateLimits

__all__ = ["COST_UNKNOWN", "METRICS", "Budget"]

log = get_logger(__name__)

#: What a `TemplateLimits` caps, in the order a reached limit is reported.
METRICS = ("requests", "input_tokens", "output_tokens", "total_tokens", "cost")

COST_UNKNOWN = (
    "a cost limit cannot be enforced: the model's prices are unknown, so its answers have no cost; "
    "limit tokens instead (`total_tokens`, `--max-tokens N`)"
)


@attrs.define
class Budget:
    """What may still be spent: its own `limits`, and its parent's; `used` is what was spent here.

    Example:
        ```python
        run = Budget(limits=TemplateLimits(requests=20))
        step = Budget(limits=TemplateLimits(total_tokens=5000), parent=run)
        step.spend(result.notes.usage)  # counted in `run` too
        step.exhausted()  # "requests" once 20 requests were made, here or anywhere under `run`
        ```
    """

    limits: TemplateLimits | None = None
    parent: Budget | None = None
    used: UsageNotes = attrs.field(factory=UsageNotes)
    cost_unknown: bool = False

    def spend(self, usage: UsageNotes) -> None:
        """Count `usage` here and in every parent (and notice a cost limit that cannot hold)."""
        self.used = self.used + usage
        if not self.cost_unknown and usage.total_tokens and usage.cost is None and self._limited("cost"):
            self.cost_unknown = True
            log.warning("budget_cost_unknown", cost_limit=self.describe("cost"), detail=COST_UNKNOWN)
        if self.parent is not None:
            self.parent.spend(usage)

    def spent(self, metric: str) -> float:
        """What was spent here of `metric` (a cost of unknown price counts as nothing)."""
        used = self.used
        if metric == "total_tokens":
            return used.total_tokens
        if metric == "cost":
            return used.cost or 0.0
        return float(getattr(used, metric))

    def left(self) -> dict[str, float | None]:
        """What may still be spent of each metric (None: no limit), the tightest of its own and its parents'."""
        own: dict[str, float | None] = dict.fromkeys(METRICS)
        if self.limits is not None:
            for name in METRICS:
                limit = getattr(self.limits, name)
                if limit is not None:
                    own[name] = limit - self.spent(name)
        if self.parent is not None:
            for name, value in self.parent.left().items():
                mine = own[name]
                if value is not None and (mine is None or value < mine):
                    own[name] = value
        return own

    def exhausted(self) -> str | None:
        """The first metric whose limit is reached (`"requests"`), or None while there is budget left."""
        for name, value in self.left().items():
            if value is not None and value <= 0:
                return name
        return None

    def remaining(self) -> TemplateLimits | None:
        """What the next call may spend, as limits (None: no limit); call `exhausted()` first."""
        left = {name: value for name, value in self.left().items() if value is not None and value > 0}
        return TemplateLimits(**left) if left else None

    def limit(self, metric: str) -> float | None:
        """The limit of `metric` that holds here: of its own and its parents', the one with least left (None: none)."""
        holding: tuple[float, float] | None = None  # (left, limit)
        budget: Budget | None = self
        while budget is not None:
            value = getattr(budget.limits, metric) if budget.limits is not None else None
            if value is not None:
                left = value - budget.spent(metric)
                if holding is None or left < holding[0]:
                    holding = (left, float(value))
            budget = budget.parent
        return None if holding is None else holding[1]

    def describe(self, metric: str) -> str:
        """`requests: 20` for the limit of `metric` that holds here (its name alone when there is none)."""
        value = self.limit(metric)
        return metric if value is None else f"{metric}: {value:g}"

    def _limited(self, metric: str) -> bool:
        return self.limit(metric) is not None
