"""A batch's progress and summary on stderr: a bar on a terminal, plain lines otherwise, nothing with `-q`."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from atomtask import BatchItemResult, BatchRun, TaskSystem
from atomtask.cli import _batch as progress
from atomtask.handlers._blocking import run_blocking

from tests.batch_helpers import write_templates


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def _run(tmp_path: Path, count: int = 6) -> BatchRun:
    system = TaskSystem(templates=write_templates(tmp_path / "templates"))  # the synthetic model: offline
    return system.batch("tag", [{"text": f"item-{n}"} for n in range(count)], concurrency=2)


def _drive(run: BatchRun, shown: progress.Progress) -> list[BatchItemResult]:
    async def collect() -> list[BatchItemResult]:
        results = []
        async for result in run:
            shown.update(result)
            results.append(result)
        shown.close()
        return results

    return run_blocking(collect())


def test_a_terminal_gets_a_bar(tmp_path: Path) -> None:
    """On a terminal the bar shows done/total, the failed items and the tokens."""
    run, stream = _run(tmp_path), Terminal()
    shown = progress.progress_for(run, stream, quiet=False)
    _drive(run, shown)
    text = stream.getvalue()
    assert "6/6" in text
    assert "0 failed" in text and "tokens" in text


def test_a_pipe_gets_plain_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not on a terminal: a plain periodic line with finished/total, rate and tokens (every `PLAIN_EVERY` s)."""
    monkeypatch.setattr(progress, "PLAIN_EVERY", 0.0)
    run, stream = _run(tmp_path), io.StringIO()
    _drive(run, progress.progress_for(run, stream, quiet=False))
    last = stream.getvalue().splitlines()[-1]
    assert last.startswith("atomtask: batch tag: 6/6 finished (0 failed, ")
    assert "items/s" in last


def test_quiet_shows_nothing(tmp_path: Path) -> None:
    """`-q`: no progress at all, even on a terminal."""
    run, stream = _run(tmp_path), Terminal()
    _drive(run, progress.progress_for(run, stream, quiet=True))
    assert "" == stream.getvalue()


def test_summary_names_done_failed_tokens_and_rate(tmp_path: Path) -> None:
    """The summary: done, failed by reason, tokens, cost, wall time and items/s; how to go on when stopped."""
    run = _run(tmp_path)
    _drive(run, progress.Progress(run, io.StringIO()))
    run.failed_by["provider_error"] = 2
    run.failed, run.done = 2, 4
    run.stop("budget: the batch's `--max-total-tokens` of 10")
    lines = progress.summary_lines(run)
    assert "(tag on atomtask:synthetic): 4 done, 2 failed (provider_error 2)" in lines[0]
    assert "tokens, cost unknown" in lines[1] and "items/s" in lines[1]
    assert "stopped early (budget: the batch's `--max-total-tokens` of 10)" in lines[2]
