"""atomtask's loggers: silent by default, structured through `logging` or structlog when configured."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest
import structlog
from atomtask._logs import get_logger


@pytest.fixture
def unconfigured_structlog() -> Iterator[None]:
    """structlog as an application that never configured it sees it (tests elsewhere configure it)."""
    structlog.reset_defaults()
    yield
    structlog.reset_defaults()


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def records() -> Iterator[list[logging.LogRecord]]:
    """The records reaching a handler on the `atomtask` logger at DEBUG."""
    handler = _Records()
    logger = logging.getLogger("atomtask")
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler.records
    logger.removeHandler(handler)
    logger.setLevel(old_level)


def test_events_go_to_stdlib_logging_with_their_data_as_attributes(
    unconfigured_structlog: None, records: list[logging.LogRecord]
) -> None:
    """Unconfigured structlog: the event is the record's message and its data the record's attributes."""
    get_logger("atomtask.executors._atomic").info("task_started", template="extract", attempt=2)

    [record] = records
    assert ("atomtask.executors._atomic", logging.INFO, "task_started") == (record.name, record.levelno, record.msg)
    assert ("extract", 2) == (record.__dict__["template"], record.__dict__["attempt"])


def test_event_keys_that_clash_with_record_attributes_are_kept_renamed(
    unconfigured_structlog: None, records: list[logging.LogRecord]
) -> None:
    """A key `logging` reserves (`name`, `module`) does not raise; it arrives with a trailing underscore."""
    get_logger("atomtask.x").warning("renamed", name="Contact", module="m")

    [record] = records
    assert ("Contact", "m") == (record.__dict__["name_"], record.__dict__["module_"])
    assert "atomtask.x" == record.name


def test_disabled_levels_are_dropped_before_rendering(
    unconfigured_structlog: None, records: list[logging.LogRecord]
) -> None:
    """Below the logger's level nothing reaches a handler."""
    logging.getLogger("atomtask").setLevel(logging.WARNING)

    log = get_logger("atomtask.y")
    log.debug("hidden")
    log.info("hidden")
    log.error("shown", template="t")

    assert ["shown"] == [r.msg for r in records]


def test_exception_events_carry_the_traceback_to_logging(
    unconfigured_structlog: None, records: list[logging.LogRecord]
) -> None:
    """`log.exception` hands the exception being handled to the record (`exc_info`)."""
    try:
        raise ValueError("bad")
    except ValueError:
        get_logger("atomtask.z").exception("task_unexpected_error", template="t")

    [record] = records
    assert record.exc_info is not None
    assert ValueError is record.exc_info[0]


def test_a_configured_structlog_receives_the_events() -> None:
    """When structlog is configured (here by `capture_logs`), events go through its processors."""
    with structlog.testing.capture_logs() as captured:
        get_logger("atomtask.executors._atomic").info("task_started", template="extract")

    assert [{"event": "task_started", "template": "extract", "log_level": "info"}] == captured


def test_a_library_user_who_configures_nothing_sees_nothing() -> None:
    """A whole task run from Python, with no logging set up, prints nothing on stdout or stderr."""
    script = textwrap.dedent(
        """
        from atomtask import TaskSystem, Template
        system = TaskSystem(model="test")
        system.register(Template(name="hello", instructions="Say hi"))
        assert system.execute("hello").ok
        assert not system.execute("missing").ok  # a failure logs a warning event
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)

    assert (0, "", "") == (done.returncode, done.stdout, done.stderr)


def test_logging_basic_config_shows_the_events() -> None:
    """`logging.basicConfig(level=INFO)` is all an application needs to see atomtask's events."""
    script = textwrap.dedent(
        """
        import logging
        logging.basicConfig(level=logging.INFO, format="%(name)s %(message)s template=%(template)s")
        from atomtask import TaskSystem, Template
        system = TaskSystem(model="test")
        system.register(Template(name="hello", instructions="Say hi"))
        system.execute("hello")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)

    assert "" == done.stdout
    assert "atomtask.executors._atomic task_started template=hello" in done.stderr.splitlines()


def test_every_module_logs_through_get_logger() -> None:
    """No module but this one (and the CLI, which configures structlog) takes structlog's own loggers."""
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "src"
    offenders = [
        str(path.relative_to(src))
        for path in sorted(src.rglob("*.py"))
        if "structlog.get_logger(" in path.read_text(encoding="utf-8")
        and path.relative_to(src).as_posix() not in {"_logs.py", "cli/_main.py"}
    ]

    assert [] == offenders


def test_a_new_structlog_configuration_takes_effect_for_loggers_already_used() -> None:
    """Loggers kept between events (cache_logger_on_first_use) follow a later `structlog.configure`."""
    saved = structlog.get_config()
    log = get_logger("atomtask.executors._atomic")
    try:
        structlog.configure(
            wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING), cache_logger_on_first_use=True
        )
        with structlog.testing.capture_logs() as hidden:
            log.info("task_started", template="a")
        structlog.configure(
            wrapper_class=structlog.make_filtering_bound_logger(logging.INFO), cache_logger_on_first_use=True
        )
        with structlog.testing.capture_logs() as shown:
            log.info("task_started", template="b")
    finally:
        structlog.configure(**saved)

    assert ([], ["b"]) == (hidden, [e["template"] for e in shown])


def test_structlog_reset_sends_events_back_to_stdlib_logging(
    unconfigured_structlog: None, records: list[logging.LogRecord]
) -> None:
    """After structlog is reset to its defaults, a logger that used it goes to `logging` again."""
    log = get_logger("atomtask.w")
    structlog.configure(cache_logger_on_first_use=True)
    with structlog.testing.capture_logs() as captured:
        log.info("via_structlog")
    structlog.reset_defaults()
    log.info("via_logging")

    assert (["via_structlog"], ["via_logging"]) == ([e["event"] for e in captured], [r.msg for r in records])
