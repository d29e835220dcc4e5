"""`atomtask run --stream`: the object drawn in place on a terminal, the same output as `run` otherwise."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from atomtask import PartialOutput
from atomtask.cli._main import main
from atomtask.cli._stream import LiveView
from pydantic import BaseModel

COMMAND = [sys.executable, "-m", "atomtask.cli"]
ERASE = "\x1b[J"


class Terminal(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


class Point(BaseModel):
    x: int
    y: int = 0


def test_run_stream_piped_prints_the_final_json(templates_dir: Path) -> None:
    """Piped, `run --stream` prints what `run` prints: the output as JSON, then the status line; exit 0."""
    argv = ["run", "extract_contact", "-i", "text=Ada, ada@example.com", "--templates", str(templates_dir)]
    streamed_out, streamed_err = io.StringIO(), io.StringIO()
    plain_out = io.StringIO()
    assert 0 == main([*argv, "--stream"], stdout=streamed_out, stderr=streamed_err), streamed_err.getvalue()
    assert 0 == main(argv, stdout=plain_out, stderr=io.StringIO())
    assert json.loads(plain_out.getvalue()) == json.loads(streamed_out.getvalue())
    assert ERASE not in streamed_err.getvalue()
    assert (
        streamed_err.getvalue().splitlines()[-1].startswith("atomtask: extract_contact COMPLETE on atomtask:synthetic")
    )


def test_on_a_terminal_partials_are_drawn_on_stderr_and_erased(templates_dir: Path) -> None:
    """With stderr a terminal, the object is drawn there and erased; stdout gets the final JSON."""
    out, err = io.StringIO(), Terminal()
    argv = ["run", "extract_contact", "-i", "text=Ada", "--stream", "--templates", str(templates_dir)]
    assert 0 == main(argv, stdout=out, stderr=err)
    assert "… attempt 1 on atomtask:synthetic" in err.getvalue()
    assert ERASE in err.getvalue()
    assert "name" in json.loads(out.getvalue())
    assert err.getvalue().splitlines()[-1].startswith("atomtask: extract_contact COMPLETE")


def test_quiet_draws_nothing(templates_dir: Path) -> None:
    """`-q` keeps stderr silent even on a terminal."""
    out, err = io.StringIO(), Terminal()
    argv = ["-q", "run", "extract_contact", "-i", "text=Ada", "--stream", "--templates", str(templates_dir)]
    assert 0 == main(argv, stdout=out, stderr=err)
    assert "" == err.getvalue()


def test_a_failed_streamed_task_exits_like_run(templates_dir: Path) -> None:
    """An unknown template is exit 2 with the error, streamed or not."""
    err = io.StringIO()
    assert 2 == main(["run", "nope", "--stream", "--templates", str(templates_dir)], stdout=io.StringIO(), stderr=err)
    assert "template_not_found" in err.getvalue()


def test_live_view_redraws_over_the_last_drawing() -> None:
    """The second drawing first moves up over the first (its line count) and erases it; `clear` erases the last."""
    screen = Terminal()
    view = LiveView(screen)
    view.show(PartialOutput(output=Point(x=1), attempt=1, model="m"))
    first = screen.getvalue()
    assert first.startswith("… attempt 1 on m\n{")
    view.show(PartialOutput(output=Point(x=12, y=3), attempt=2, model="m"))
    lines = first.count("\n")
    assert screen.getvalue()[len(first) :].startswith(f"\x1b[{lines}F{ERASE}… attempt 2 on m")
    view.clear()
    assert screen.getvalue().endswith(f"\x1b[{lines}F{ERASE}")


def test_a_drawing_taller_than_the_screen_shows_its_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the last rows fit: the drawing is cut from the top so it can still be redrawn in place."""
    monkeypatch.setenv("LINES", "4")
    monkeypatch.setenv("COLUMNS", "80")
    screen = Terminal()
    LiveView(screen).show(PartialOutput(output={"a": 1, "b": 2, "c": 3, "d": 4}, attempt=1, model="m"))
    assert ['  "c": 3,', '  "d": 4', "}"] == screen.getvalue().splitlines()
