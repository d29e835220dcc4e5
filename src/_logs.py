"""atomtask's loggers: structured events that stay silent unless the application configures logging.

A library must not print. structlog's built-in default prints every event to stdout, so atomtask's
modules take their logger from `get_logger(__name__)` here instead of `structlog.get_logger()`:

- When the application has configured structlog (`structlog.configure(...)`, or the `atomtask`
  command doing it for itself), events go through that configuration, unchanged.
- Otherwise they go to the standard library's `logging`, under the logger named after the module
  (`atomtask.executors._atomic`, ...): the event name is the message and the event's data is in the
  record's attributes (`extra`), so `logging.basicConfig(...)`, `dictConfig` or an OpenTelemetry log
  handler see structured events. With no handler configured, nothing is printed: the `atomtask`
  logger carries a `NullHandler`, as the logging HOWTO asks of libraries.

Usage: `log = get_logger(__name__)` at module level, then `log.info("task_started", template=name)`.
Code that emits several events for one short piece of work (a task: started, one per attempt,
completed) takes `events = log.current()` once and calls `events.info(...)` on it: the configuration
is looked up once for all of them.
"""

from __future__ import annotations

import functools
import logging
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import structlog

__all__ = ["get_logger"]

logging.getLogger("atomtask").addHandler(logging.NullHandler())

# Attributes a `logging.LogRecord` already has: an `extra` key among them makes `logging` raise
# KeyError, so such event keys are passed on with a trailing underscore instead.
_RECORD_ATTRIBUTES = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}


def _keep_record_attributes(_: Any, __: str, event_dict: structlog.typing.EventDict) -> structlog.typing.EventDict:
    for key in [k for k in event_dict if k in _RECORD_ATTRIBUTES]:
        event_dict[f"{key}_"] = event_dict.pop(key)
    return event_dict


@functools.cache
def _stdlib_processors() -> list[Any]:
    import structlog

    return [
        structlog.stdlib.filter_by_level,  # first: a disabled level costs one `isEnabledFor` call
        structlog.contextvars.merge_contextvars,
        _keep_record_attributes,
        structlog.stdlib.render_to_log_kwargs,
    ]


class _Logger:
    """Follows structlog's configuration when there is one, the standard library's `logging` otherwise.

    Decided at each event, not at import: an application may configure logging after importing
    atomtask, and `structlog.testing.capture_logs` configures structlog for the length of a test.
    One structlog proxy is kept per logger while the configuration stays the same object for object
    (a new `structlog.configure(...)` or `reset_defaults()` gets a new one); when the application asked
    structlog to `cache_logger_on_first_use`, the bound logger it hands out is kept instead, so an event
    costs no logger construction. Without that option each event builds its logger, as structlog does.
    """

    __slots__ = ("_config", "_name", "_proxy", "_stdlib")

    def __init__(self, name: str) -> None:
        self._name = name
        self._stdlib: Any = None
        self._proxy: Any = None
        self._config: dict[str, Any] | None = None

    def current(self) -> Any:
        """The logger events go to now (structlog's, the standard library's, or none when nothing can show
        them), with `debug` ... `exception`.

        Hold it for one short piece of work only: it does not follow a later change of configuration.
        """
        if "structlog" not in sys.modules and not logging.getLogger(self._name).isEnabledFor(logging.CRITICAL):
            # Never imported, so never configured, and `logging` drops every level here (the `atomtask`
            # command without `-v`): the stdlib logger below would drop the event too, so structlog (and the
            # rich, asyncio and greenlet it imports, ~0.1 s) is not imported for it.
            return _SILENT
        import structlog  # at the first event, not with this module: a command that logs nothing never pays for it

        if structlog.is_configured():
            config = structlog.get_config()
            # One comparison, in C: a value kept from a configuration is equal to itself (`is` first), and a
            # new `structlog.configure(...)` or `reset_defaults()` brings new processors, classes or factories.
            if config != self._config:
                proxy = structlog.get_logger(self._name)
                # Cached on first use: the bound logger itself (what the proxy would hand out each time).
                self._proxy = proxy.bind() if config["cache_logger_on_first_use"] else proxy
                self._config = config  # kept, so the objects compared stay alive
            return self._proxy
        if self._stdlib is None:
            self._stdlib = structlog.stdlib.BoundLogger(logging.getLogger(self._name), _stdlib_processors(), {})
        return self._stdlib

    def debug(self, event: str, **data: Any) -> None:
        self.current().debug(event, **data)

    def info(self, event: str, **data: Any) -> None:
        self.current().info(event, **data)

    def warning(self, event: str, **data: Any) -> None:
        self.current().warning(event, **data)

    def error(self, event: str, **data: Any) -> None:
        self.current().error(event, **data)

    def exception(self, event: str, **data: Any) -> None:
        """An error event with the exception being handled (its traceback goes where logs go)."""
        self.current().exception(event, **data)


class _Silent:
    """The logger of an event nothing can show: every method does nothing."""

    def _drop(self, event: str, **data: Any) -> None:
        pass

    debug = info = warning = error = exception = _drop


_SILENT = _Silent()


def get_logger(name: str) -> _Logger:
    """The logger for module `name` (pass `__name__`)."""
    return _Logger(name)
