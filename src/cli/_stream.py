"""`atomtask run --stream`: the output object filling in on the terminal while the model streams.

With `--stream`, `run` runs the task through `TaskSystem.execute_stream`. When stderr is a terminal
(and `-q` is not given) each partial output is drawn there as indented JSON, redrawn in place as it
grows, under a line naming the attempt and model (a re-asked answer starts a new drawing); the
drawing is erased at the end, and the command then prints exactly what `run` prints: the final
output (or `--result`) on stdout and the status line on stderr. When stderr is not a terminal
nothing is drawn, so a pipe or a CI log gets the same output as `run` without `--stream`.
"""

from __future__ import annotations

import argparse
import shutil
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from atomtask.executors._streaming import PartialOutput, TaskStream
    from atomtask.system._results import TaskResult

__all__ = ["LiveView", "is_terminal", "run_streamed", "with_stream"]


def with_stream(p: argparse.ArgumentParser) -> None:
    """The `--stream` flag of `run`."""
    p.add_argument(
        "--stream",
        action="store_true",
        help="stream the answer: on a terminal, show the output object filling in (on stderr); "
        "the final output is printed as without it",
    )


def run_streamed(stream: TaskStream[Any], err: TextIO, *, live: bool) -> TaskResult[Any]:
    """Run `stream` (from `TaskSystem.execute_stream`), drawing each partial on `err` when `live`; the final result."""
    import asyncio

    view = LiveView(err) if live else None

    async def consume() -> TaskResult[Any]:
        async with stream:
            async for partial in stream:
                if view is not None:
                    view.show(partial)
            return await stream.get_result()

    try:
        return asyncio.run(consume())
    finally:
        if view is not None:
            view.clear()


def is_terminal(stream: TextIO) -> bool:
    """Whether `stream` is an interactive terminal."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


class LiveView:
    """One JSON drawing on a terminal, redrawn in place: cursor up over the last one, erase, write."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.height = 0  # terminal rows the last drawing took

    def show(self, partial: PartialOutput[Any]) -> None:
        """Draw `partial` (its attempt and model, then its output as JSON) over the previous drawing."""
        import pydantic_core

        body = pydantic_core.to_json(partial.output, indent=2).decode()
        lines = [f"… attempt {partial.attempt} on {partial.model}", *body.splitlines()]
        columns, rows = shutil.get_terminal_size()
        # A drawing taller than the screen cannot be redrawn in place: show its end (where it grows).
        lines = lines[-max(1, rows - 1) :]
        self._erase()
        self.out.write("\n".join(lines) + "\n")
        self.out.flush()
        self.height = sum(max(1, -(-len(line) // max(1, columns))) for line in lines)

    def clear(self) -> None:
        """Erase the last drawing."""
        self._erase()
        self.out.flush()

    def _erase(self) -> None:
        if self.height:
            # Up `height` lines to column 1, then erase to the end of the screen.
            self.out.write(f"\x1b[{self.height}F\x1b[J")
            self.height = 0
