"""A batch's progress on stderr: a `tqdm` bar on a terminal, a plain line every few seconds otherwise, or nothing.

The bar shows done / total, the rate and the ETA (tqdm's own), and the failed items, tokens and cost;
the plain line says the same in words, for logs and CI. `tqdm` is imported only when a bar is drawn.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, TextIO

from atomtask.system.batch_results import BatchItemResult

if TYPE_CHECKING:
    from atomtask.batch.engine import BatchRun

__all__ = ["PLAIN_EVERY", "Progress", "progress_for", "summary_lines"]

PLAIN_EVERY = 5.0
"""Seconds between two plain progress lines."""


class Progress:
    """Nothing shown (`-q`); the base of the two that show something."""

    def __init__(self, run: BatchRun, stream: TextIO) -> None:
        self.run, self.stream = run, stream

    def update(self, result: BatchItemResult) -> None:
        """One item finished (or was read from the record)."""

    def close(self) -> None:
        """The batch ended."""


class _Bar(Progress):
    def __init__(self, run: BatchRun, stream: TextIO) -> None:
        super().__init__(run, stream)
        from tqdm import tqdm  # type: ignore[import-untyped]  # tqdm ships no stubs

        self._bar: Any = tqdm(total=run.total, file=stream, unit="item", desc=run.target.name, dynamic_ncols=True)
        self._last = 0.0

    def update(self, result: BatchItemResult) -> None:
        self._bar.update(1)
        now = time.monotonic()
        if now - self._last >= 0.2 or self.run.not_run == 0:  # the postfix costs a redraw: not for every item
            self._last = now
            self._bar.set_postfix_str(_figures(self.run), refresh=False)

    def close(self) -> None:
        self._bar.set_postfix_str(_figures(self.run), refresh=False)
        self._bar.close()


class _Lines(Progress):
    def __init__(self, run: BatchRun, stream: TextIO) -> None:
        super().__init__(run, stream)
        self._last = time.monotonic()

    def update(self, result: BatchItemResult) -> None:
        now = time.monotonic()
        if now - self._last >= PLAIN_EVERY:
            self._last = now
            print(f"atomtask: batch {self.run.target.name}: {_line(self.run)}", file=self.stream, flush=True)


def progress_for(run: BatchRun, stream: TextIO, *, quiet: bool) -> Progress:
    """The bar on a terminal, plain lines otherwise, nothing when `quiet`."""
    if quiet:
        return Progress(run, stream)
    isatty = getattr(stream, "isatty", None)
    if callable(isatty) and isatty():
        return _Bar(run, stream)
    return _Lines(run, stream)


def _figures(run: BatchRun) -> str:
    spent = run.spent
    cost = f", ${spent.cost:.4f}" if spent.cost is not None else ""
    return f"{run.failed} failed, {spent.total_tokens} tokens{cost}"


def _line(run: BatchRun) -> str:
    finished = run.done + run.failed
    ran = finished - run.resumed
    rate = ran / run.elapsed if run.elapsed > 0 else 0.0
    eta = f", ETA {run.not_run / rate:.0f}s" if rate > 0 else ""
    return f"{finished}/{run.total} finished ({_figures(run)}), {rate:.1f} items/s{eta}"


def summary_lines(run: BatchRun) -> list[str]:
    """The closing summary: done, failed by reason, tokens, cost, wall time, items/s, and how to go on."""
    ran = run.done + run.failed - run.resumed
    rate = ran / run.elapsed if run.elapsed > 0 else 0.0
    reasons = ", ".join(f"{reason} {count}" for reason, count in run.failed_by.most_common())
    failed = f"{run.failed} failed ({reasons})" if run.failed else "0 failed"
    reused = f"; {run.resumed} from the record, not run again" if run.resumed else ""
    spent = run.spent
    cost = f"${spent.cost:.4f}" if spent.cost is not None else "cost unknown"
    if run.budget.cost_unknown:
        cost = f"{cost} (`--max-cost` was not enforced: the model's prices are unknown)"
    lines = [
        f"atomtask: batch {run.batch_id or '-'} ({run.target.name} on {run.target.model}): "
        f"{run.done} done, {failed}{reused}",
        f"atomtask: {spent.total_tokens} tokens, {cost}, {run.elapsed:.1f}s, {rate:.1f} items/s",
    ]
    if run.stopped is not None:
        again = f" (or `atomtask batch --resume {run.batch_id}`)" if run.batch_id else ""
        lines.append(
            f"atomtask: stopped early ({run.stopped}): {run.not_run} items not run; "
            f"run the same command again{again} to run them"
        )
    elif run.failed and run.batch_id:
        lines.append(f"atomtask: `atomtask batch --resume {run.batch_id} --retry-failed` runs the failed items again")
    return lines
