"""How the `atomtask` command prints log events: on stderr, console lines on a terminal, JSON otherwise.

The library never prints (`atomtask.system.logs`); the command is the application, so it configures
structlog and the standard library's `logging` together: atomtask's events and those of the
libraries underneath (httpx, the provider SDKs, pydantic-ai) go through one handler on stderr with
one renderer. The level is WARNING by default, INFO with `-v`, DEBUG with `-vv`, ERROR with `-q`;
below DEBUG an event's exception is one line, never a traceback.
`configure_logging` returns a function that puts everything back, so `main(argv)` called from
Python leaves no handler behind.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, MutableMapping
from typing import Any, TextIO

__all__ = ["configure_logging", "log_level"]


def log_level(verbose: int, quiet: bool) -> int:
    """WARNING by default; -v INFO; -vv (or more) DEBUG; -q ERROR (quiet wins)."""
    if quiet:
        return logging.ERROR
    return {0: logging.WARNING, 1: logging.INFO}.get(verbose, logging.DEBUG)


class _CommandHandler(logging.StreamHandler):  # type: ignore[type-arg]  # generic only in typeshed
    """The command's handler on stderr (a class of its own so it is found and removed again)."""


def configure_logging(*, verbose: int, quiet: bool, fmt: str, stream: TextIO) -> Callable[[], None]:
    """Send structlog and `logging` events at the chosen level to `stream`; returns the undo function."""
    import structlog

    level = log_level(verbose, quiet)
    use_console = fmt == "console" or (fmt == "auto" and _isatty(stream))
    renderer: Any = (
        structlog.dev.ConsoleRenderer(colors=_isatty(stream)) if use_console else structlog.processors.JSONRenderer()
    )
    timestamper = structlog.processors.TimeStamper(fmt="iso")
    handler = _CommandHandler(stream)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            # Records from the standard library (other packages): their level, logger and `extra` data.
            foreign_pre_chain=[
                structlog.stdlib.add_log_level,
                structlog.stdlib.add_logger_name,
                structlog.stdlib.ExtraAdder(),
                timestamper,
            ],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                *([] if level <= logging.DEBUG else [_without_traceback]),
                *([] if use_console else [structlog.processors.format_exc_info]),
                renderer,
            ],
        )
    )
    was_configured = structlog.is_configured()
    saved_config = structlog.get_config()
    root = logging.getLogger()
    package = logging.getLogger("atomtask")
    saved_levels = (root.level, package.level)
    for old in [h for h in root.handlers if isinstance(h, _CommandHandler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    package.setLevel(level)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.stdlib.add_log_level,
            structlog.stdlib.add_logger_name,
            timestamper,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.make_filtering_bound_logger(level),
        cache_logger_on_first_use=False,
    )

    def undo() -> None:
        root.removeHandler(handler)
        root.setLevel(saved_levels[0])
        package.setLevel(saved_levels[1])
        if was_configured:
            structlog.configure(**saved_config)
        else:
            structlog.reset_defaults()

    return undo


def _without_traceback(_: Any, __: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Below -vv an event keeps its exception as one line (`error`), never a traceback."""
    import sys

    info = event_dict.pop("exc_info", None)
    event_dict.pop("stack_info", None)
    if info is True:
        info = sys.exc_info()
    exc = info[1] if isinstance(info, tuple) else info if isinstance(info, BaseException) else None
    if exc is not None:
        event_dict.setdefault("error", f"{type(exc).__name__}: {exc}")
    return event_dict


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream
        return False
