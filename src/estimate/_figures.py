"""What an estimate says: `Figures` (expected and worst case), one `TemplateEstimate` per template and model,
an `ItemEstimate` per batch item, and the `Estimate` with its totals, its text table and its JSON form.

These are values only: `_requests` measures one model call, `_estimate` traces a template, workflow or
batch and adds the calls up into these.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

__all__ = ["Estimate", "Figures", "ItemEstimate", "TemplateEstimate", "Totals", "add_costs"]


@attrs.frozen(kw_only=True)
class Figures:
    """One quantity of an estimate: what a run is expected to take, and the most it can take (`worst`)."""

    expected: float
    worst: float

    def __add__(self, other: Figures) -> Figures:
        return Figures(expected=self.expected + other.expected, worst=self.worst + other.worst)

    def scaled(self, expected: float, worst: float) -> Figures:
        """These figures for `expected` and `worst` occurrences of what they measure."""
        return Figures(expected=self.expected * expected, worst=self.worst * worst)


ZERO = Figures(expected=0, worst=0)


def add_costs(costs: Iterable[Figures | None]) -> Figures | None:
    """The sum of the known costs (None when none is known: an unknown price is never 0)."""
    known = [cost for cost in costs if cost is not None]
    if not known:
        return None
    total = ZERO
    for cost in known:
        total = total + cost
    return total


@attrs.frozen(kw_only=True)
class TemplateEstimate:
    """One template on one model: its requests, input and output tokens and USD (None: price unknown)."""

    template: str
    model: str
    requests: Figures
    input_tokens: Figures
    output_tokens: Figures
    cost: Figures | None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "template": self.template,
            "model": self.model,
            "requests": _figures(self.requests),
            "input_tokens": _figures(self.input_tokens),
            "output_tokens": _figures(self.output_tokens),
            "cost": _figures(self.cost) if self.cost is not None else None,
            "notes": list(self.notes),
        }


@attrs.frozen(kw_only=True)
class ItemEstimate:
    """One item of a batch: its id and its cost, expected and at worst (None: a price is unknown)."""

    id: str
    index: int
    expected_cost: float | None
    worst_cost: float | None
    input_tokens: Figures
    output_tokens: Figures

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "index": self.index,
            "expected_cost": self.expected_cost,
            "worst_cost": self.worst_cost,
            "input_tokens": _figures(self.input_tokens),
            "output_tokens": _figures(self.output_tokens),
        }


@attrs.frozen(kw_only=True)
class Totals:
    """The whole run: requests, tokens and the USD of the models whose price is known (None: none is)."""

    requests: Figures
    input_tokens: Figures
    output_tokens: Figures
    cost: Figures | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "requests": _figures(self.requests),
            "input_tokens": _figures(self.input_tokens),
            "output_tokens": _figures(self.output_tokens),
            "cost": _figures(self.cost) if self.cost is not None else None,
        }


#: How the figures are counted, printed under the table and given in `to_dict()["rules"]`.
RULES = (
    "input tokens: the request body pydantic-ai would send (prompt, system text, output schema or tool "
    "definitions), built without sending it, at 4 bytes a token",
    "output tokens: the template's `expected_output_tokens`, else a typical valid answer of its schema at 4 "
    "characters a token, else 256 for a text answer; worst: `max_tokens`, else 4x expected (at least 256)",
    "worst case: every retry on every model (fallbacks included), every loop bound and for_each item",
)


@attrs.frozen(kw_only=True)
class Estimate:
    """What a run would cost, without calling a model: per template and model (`rows`), in total, per item.

    `unknown_prices` names the models whose price genai-prices does not know: their rows have `cost`
    None and the total's cost leaves them out (it is None when no price is known).
    """

    name: str
    kind: str  # "template" or "workflow"
    rows: tuple[TemplateEstimate, ...]
    total: Totals
    unknown_prices: tuple[str, ...] = ()
    items: tuple[ItemEstimate, ...] = ()
    provider_batch: bool = False
    notes: tuple[str, ...] = ()

    def render(self) -> str:
        """The text table `--dry-run` prints: one line per template and model, then the total and the notes."""
        head = ("template", "model", "requests", "input tokens", "output tokens", "USD")
        lines = [
            (
                row.template,
                row.model,
                _pair(row.requests, _count),
                _pair(row.input_tokens, _count),
                _pair(row.output_tokens, _count),
                _pair(row.cost, _usd) if row.cost is not None else "price unknown",
            )
            for row in self.rows
        ]
        total = self.total
        lines.append(
            (
                "total",
                "",
                _pair(total.requests, _count),
                _pair(total.input_tokens, _count),
                _pair(total.output_tokens, _count),
                _pair(total.cost, _usd) if total.cost is not None else "price unknown",
            )
        )
        widths = [max(len(cells[i]) for cells in (head, *lines)) for i in range(len(head))]
        what = "provider batch, " if self.provider_batch else ""
        items = f", {len(self.items)} items" if self.items else ""
        out = [
            f"Dry run of {self.kind} {self.name!r} ({what}no model called{items}): expected / worst case",
            "  ".join(cell.ljust(width) for cell, width in zip(head, widths, strict=True)).rstrip(),
        ]
        for index, cells in enumerate(lines):
            if index == len(lines) - 1:
                out.append("  ".join("-" * width for width in widths))
            out.append("  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)).rstrip())
        notes = [*self.notes]
        said: dict[str, list[str]] = {}  # a note the rows share is said once, naming them
        for row in self.rows:
            for note in row.notes:
                said.setdefault(note, []).append(f"{row.template} ({row.model})")
        notes.extend(f"{note}: {', '.join(dict.fromkeys(rows))}" for note, rows in said.items())
        if self.unknown_prices:
            costed = " (the total's USD leaves them out)" if total.cost is not None else ""
            notes.extend(f"price unknown for {model!r}{costed}" for model in self.unknown_prices)
        out.extend(f"note: {note}" for note in dict.fromkeys(notes))
        out.extend(f"rule: {rule}" for rule in RULES)
        return "\n".join(out)

    def to_dict(self) -> dict[str, Any]:
        """The estimate as JSON-ready data (`--dry-run --json`)."""
        return {
            "name": self.name,
            "kind": self.kind,
            "provider_batch": self.provider_batch,
            "rows": [row.to_dict() for row in self.rows],
            "total": self.total.to_dict(),
            "unknown_prices": list(self.unknown_prices),
            "items": [item.to_dict() for item in self.items],
            "notes": list(self.notes),
            "rules": list(RULES),
        }


def _figures(figures: Figures) -> dict[str, float]:
    return {"expected": figures.expected, "worst": figures.worst}


def _pair(figures: Figures, show: Any) -> str:
    return f"{show(figures.expected)} / {show(figures.worst)}"


def _count(value: float) -> str:
    return f"{round(value):,}"


def _usd(value: float) -> str:
    return f"${value:.6f}" if value < 1 else f"${value:,.2f}"
