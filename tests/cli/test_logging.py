"""The command's log output: one handler on stderr for structlog and `logging`, records only with `-v`."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable, Iterator

import pytest
import structlog
from atomtask._logs import get_logger
from atomtask.cli._main import LOGS_OFF, configure_logging, log_level

Configure = Callable[..., io.StringIO]


@pytest.fixture
def configured() -> Iterator[Configure]:
    """`configure_logging` into a buffer, undone after the test."""
    undos: list[Callable[[], None]] = []

    def configure(*, verbose: int = 0, quiet: bool = False, fmt: str = "json") -> io.StringIO:
        stream = io.StringIO()
        undos.append(configure_logging(verbose=verbose, quiet=quiet, fmt=fmt, stream=stream))
        return stream

    yield configure
    for undo in reversed(undos):
        undo()


def _events(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


@pytest.mark.parametrize(
    ("verbose", "quiet", "level"),
    [
        (0, False, LOGS_OFF),
        (1, False, logging.INFO),
        (2, False, logging.DEBUG),
        (3, False, logging.DEBUG),
        (0, True, LOGS_OFF),
        (2, True, LOGS_OFF),
    ],
)
def test_levels(verbose: int, quiet: bool, level: int) -> None:
    """No records by default or with -q (the command speaks for itself), -v INFO, -vv DEBUG."""
    assert level == log_level(verbose, quiet)


def test_atomtask_and_stdlib_events_share_one_json_handler(configured: Configure) -> None:
    """atomtask's events and another library's `logging` records come out as JSON lines on the stream."""
    stream = configured(verbose=1)
    get_logger("atomtask.executors._atomic").info("task_started", template="t")
    logging.getLogger("somelib.client").warning("request failed", extra={"status": 503})
    logging.getLogger("somelib.client").debug("not shown at -v")
    assert [
        ("task_started", "info", "atomtask.executors._atomic", "t"),
        ("request failed", "warning", "somelib.client", 503),
    ] == [(e["event"], e["level"], e["logger"], e.get("template", e.get("status"))) for e in _events(stream)]


def test_default_level_and_quiet_show_no_record(configured: Configure) -> None:
    """By default and with -q no record is printed, not even an error or another library's warning; -v shows them."""
    stream = configured()
    log = get_logger("atomtask.x")
    log.info("hidden")
    log.warning("task_failed")
    log.error("hidden_error")
    logging.getLogger("somelib").critical("hidden_too")
    quiet = configured(quiet=True)
    log.error("hidden_with_q")
    verbose = configured(verbose=1)
    log.warning("task_failed")
    assert ("", "") == (stream.getvalue(), quiet.getvalue())
    assert ["task_failed"] == [e["event"] for e in _events(verbose)]


def test_python_warnings_are_records_shown_with_v(configured: Configure) -> None:
    """A library's `warnings.warn` is a `py.warnings` record: hidden by default, shown with -v."""
    import warnings

    hidden = configured()
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("prices unknown", UserWarning, stacklevel=1)
    shown = configured(verbose=1)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("prices unknown", UserWarning, stacklevel=1)
    assert "" == hidden.getvalue()
    [event] = _events(shown)
    assert ("py.warnings", True) == (event["logger"], "UserWarning: prices unknown" in str(event["event"]))


def test_console_format_is_not_json(configured: Configure) -> None:
    """`--log-format console` prints readable lines with the event name and its data."""
    stream = configured(fmt="console", verbose=1)
    get_logger("atomtask.x").warning("task_failed", reason="provider_error")
    line = stream.getvalue().strip()
    assert "task_failed" in line and "reason=provider_error" in line
    assert not line.startswith("{")


def test_auto_format_is_json_off_a_terminal(configured: Configure) -> None:
    """`auto` renders JSON when the stream is not a terminal."""
    stream = configured(fmt="auto", verbose=1)
    get_logger("atomtask.x").warning("event_name")
    assert ["event_name"] == [e["event"] for e in _events(stream)]


def test_exceptions_are_one_line_below_debug(configured: Configure) -> None:
    """At -v a logged exception is an `error` field, not a traceback; at -vv the traceback is there."""
    debug = configured(verbose=2)
    try:
        raise ValueError("boom")
    except ValueError:
        get_logger("atomtask.x").exception("task_unexpected_error")
    assert "Traceback" in debug.getvalue()
    plain = configured(verbose=1)  # replaces the -vv configuration
    try:
        raise ValueError("boom")
    except ValueError:
        get_logger("atomtask.x").exception("task_unexpected_error")
        logging.getLogger("somelib").exception("lib_error")
    events = _events(plain)
    assert [("task_unexpected_error", "ValueError: boom"), ("lib_error", "ValueError: boom")] == [
        (e["event"], e["error"]) for e in events
    ]
    assert "Traceback" not in plain.getvalue()


def test_undo_puts_everything_back() -> None:
    """After the command, no handler of it stays on the root logger, structlog is unconfigured, warnings print again."""
    import warnings

    root = logging.getLogger()
    handlers, level, showwarning = list(root.handlers), root.level, warnings.showwarning
    undo = configure_logging(verbose=2, quiet=False, fmt="json", stream=io.StringIO())
    assert structlog.is_configured()
    assert showwarning is not warnings.showwarning  # Python warnings go to `logging` while the command runs
    undo()
    assert (handlers, level, False) == (list(root.handlers), root.level, structlog.is_configured())
    assert showwarning is warnings.showwarning
