"""A batch's progress and summary on stderr: a bar on a terminal, plain lines otherwise, nothing with `-q`."""

from __future__ import annotations

import asyncio
import io
import re
from pathlib import Path

import pytest
from atomtask import BatchItemResult, BatchRun, TaskSystem
from atomtask.cli import _batch as progress
from atomtask.handlers._blocking import run_blocking
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

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


class Slow:
    """A model answering `tag` items, each after `delay` seconds (0: at once)."""

    def __init__(self) -> None:
        self.delay = 0.0
        self.model = FunctionModel(self.answer)

    async def answer(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        await asyncio.sleep(self.delay)
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"label": "x", "item": "y"})])


def test_the_bar_shows_every_item_that_finishes_a_tenth_of_a_second_after_the_last(tmp_path: Path) -> None:
    """40 items read back from the record at once, then 12 finishing one at a time, >= 0.12 s apart: each of
    the 12 counts is drawn (a bar that learned to skip from the burst would show none until the end)."""
    slow = Slow()
    system = TaskSystem(model=slow.model, templates=write_templates(tmp_path / "templates"))
    items = [{"id": f"i{n}", "text": f"item-{n}"} for n in range(52)]
    db = tmp_path / "batches.sqlite3"
    system.batch_sync("tag", items[:40], batch_id="b", db=db, concurrency=8)
    slow.delay = 0.12
    run, stream = system.batch("tag", items, batch_id="b", db=db, concurrency=1), Terminal()
    _drive(run, progress.progress_for(run, stream, quiet=False))
    assert 40 == run.resumed
    drawn = stream.getvalue().split("\r")
    shown = {int(found) for frame in drawn for found in re.findall(r"(\d+)/52", frame)}
    assert set(range(41, 53)) <= shown
    assert "0 failed" in drawn[-1] and "52/52" in drawn[-1]  # the last frame: the end, with the figures


def _pty_output(tmp_path: Path, *, columns: int) -> str:
    """What a small batch's bar writes to a real pseudo-terminal `columns` wide (0: never sized)."""
    import fcntl
    import os
    import pty
    import struct
    import termios

    main_fd, tty_fd = pty.openpty()
    if columns:
        fcntl.ioctl(tty_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    os.set_blocking(main_fd, False)
    with os.fdopen(tty_fd, "w", encoding="utf-8", buffering=1) as stream:
        run = _run(tmp_path)
        _drive(run, progress.progress_for(run, stream, quiet=False))
    chunks = []
    while True:
        try:
            chunk = os.read(main_fd, 65536)
        except (BlockingIOError, OSError):
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main_fd)
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.parametrize("columns", [100, 0])
def test_a_pseudo_terminal_gets_the_bar_even_when_it_reports_no_width(tmp_path: Path, columns: int) -> None:
    """On a real pseudo-terminal the bar is drawn; one that reports 0 columns gets an 80-column bar, not nothing."""
    shown = _pty_output(tmp_path, columns=columns)
    assert "6/6" in shown and "0 failed" in shown
