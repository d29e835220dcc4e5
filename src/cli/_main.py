"""The `atomtask` command's entry point: `main(argv) -> int`, testable without a subprocess.

It parses the arguments (`_args`), configures log output, dispatches to the commands (`_commands`,
`_workflow`, `_batch`, `_memory`, `_check`, `_test`) and turns whatever goes wrong into one line on
stderr and an exit status, never a traceback:

- 0 success; 1 the task (or workflow) ran and FAILED; 2 the command could not run (usage errors,
  argparse's own);
- a reader that closes stdout early (`atomtask run ... | head -1`) ends the command quietly (141,
  as a process killed by SIGPIPE would);
- Ctrl-C is 130; an unexpected exception is one line (the traceback with `-vv`) and 1.

With `ATOMTASK_OTEL=1` the command exports its spans as the standard `OTEL_*` variables say (`_otel`).

The library never prints (`atomtask._logs`); the command is the application, so it configures
structlog and the standard library's `logging` together: atomtask's events and those of the
libraries underneath (httpx, the provider SDKs, pydantic-ai) go through one handler on stderr with
one renderer, console lines on a terminal and JSON otherwise. The command says what happened in its
own words, once (`atomtask: error: ...`, a status line, a notice), so log records are shown only when
asked for: none by default or with `-q`, INFO and up with `-v`, DEBUG with `-vv`; below DEBUG an
event's exception is one line, never a traceback. `configure_logging` returns a function that puts
everything back, so `main(argv)` called from Python leaves no handler behind. Heavy imports
(pydantic-ai, and through it any provider SDK) happen inside the commands, so `atomtask --help` and
`atomtask --version` stay instant.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import warnings
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from typing import Any, TextIO

from atomtask._paths import IMPORTABLE_ENV
from atomtask.cli._args import build_parser, log_options

__all__ = ["LOGS_OFF", "configure_logging", "log_level", "main"]


#: Above every level: no record is shown (the command reports failures and warnings itself).
LOGS_OFF = logging.CRITICAL + 1


def log_level(verbose: int, quiet: bool) -> int:
    """No log records by default or with -q (quiet wins); -v INFO and up; -vv (or more) DEBUG."""
    if quiet or verbose <= 0:
        return LOGS_OFF
    return logging.INFO if verbose == 1 else logging.DEBUG


class _CommandHandler(logging.StreamHandler):  # type: ignore[type-arg]  # generic only in typeshed
    """The command's handler on stderr (a class of its own so it is found and removed again).

    Its formatter (structlog's) is made for the first record it shows: a command that shows none does
    not import structlog (~0.1 s of start-up with the rich and asyncio it imports).
    """

    def __init__(self, stream: TextIO, make_formatter: Callable[[], logging.Formatter]) -> None:
        super().__init__(stream)
        self._make_formatter = make_formatter

    def format(self, record: logging.LogRecord) -> str:
        if self.formatter is None:
            self.setFormatter(self._make_formatter())
        return super().format(record)


def _formatter(level: int, *, use_console: bool, colors: bool) -> logging.Formatter:
    """The command handler's formatter: atomtask's structlog events and other packages' records, one renderer."""
    import structlog

    renderer: Any = structlog.dev.ConsoleRenderer(colors=colors) if use_console else structlog.processors.JSONRenderer()
    return structlog.stdlib.ProcessorFormatter(
        # Records from the standard library (other packages): their level, logger and `extra` data.
        foreign_pre_chain=[
            structlog.stdlib.add_log_level,
            structlog.stdlib.add_logger_name,
            structlog.stdlib.ExtraAdder(),
            structlog.processors.TimeStamper(fmt="iso"),
        ],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            *([] if level <= logging.DEBUG else [_without_traceback]),
            *([] if use_console else [structlog.processors.format_exc_info]),
            renderer,
        ],
    )


def configure_logging(*, verbose: int, quiet: bool, fmt: str, stream: TextIO) -> Callable[[], None]:
    """Send structlog and `logging` events at the chosen level to `stream`; returns the undo function."""
    level = log_level(verbose, quiet)
    use_console = fmt == "console" or (fmt == "auto" and _isatty(stream))
    colors = _isatty(stream)
    handler = _CommandHandler(stream, lambda: _formatter(level, use_console=use_console, colors=colors))
    # Python warnings (a library's `CostNotFoundWarning`, a deprecation) are log records too (`py.warnings`):
    # shown with `-v`; what the user must know the command says itself.
    saved_showwarning = warnings.showwarning
    logging.captureWarnings(True)
    root = logging.getLogger()
    package = logging.getLogger("atomtask")
    saved_levels = (root.level, package.level)
    for old in [h for h in root.handlers if isinstance(h, _CommandHandler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    package.setLevel(level)
    # No record is shown and structlog was never imported (so never configured): atomtask's events go to
    # `logging`, whose levels drop them (`atomtask._logs`), and structlog stays unimported.
    silent = level == LOGS_OFF and "structlog" not in sys.modules
    unconfigure = None if silent else _configure_structlog(level)

    def undo() -> None:
        root.removeHandler(handler)
        logging.captureWarnings(False)
        warnings.showwarning = saved_showwarning
        root.setLevel(saved_levels[0])
        package.setLevel(saved_levels[1])
        if unconfigure is not None:
            unconfigure()

    return undo


def _configure_structlog(level: int) -> Callable[[], None]:
    """structlog's events at `level` to the command's handler (through `logging`); returns the undo function."""
    import structlog

    was_configured = structlog.is_configured()
    saved_config = structlog.get_config()
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.stdlib.add_log_level,
            structlog.stdlib.add_logger_name,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        # structlog's filtering levels stop at CRITICAL; `logging` (the level set above) drops the rest.
        wrapper_class=structlog.make_filtering_bound_logger(min(level, logging.CRITICAL)),
        cache_logger_on_first_use=False,
    )

    def undo() -> None:
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


EXIT_OK = 0
EXIT_TASK_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141


def main(
    argv: Sequence[str] | None = None,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    stdin: TextIO | None = None,
) -> int:
    """Run the CLI; returns the exit status (0 ok, 1 task failed, 2 usage error).

    `stdin` is what `-i key=@-` reads (default: `sys.stdin`). Bare `atomtask` prints the help on
    stderr and returns 2.
    """
    # pydantic-ai shows a multi-line Logfire banner on a terminal at the first agent run; the
    # command owns its stderr. Read at each run, so setting it here is early enough.
    os.environ.setdefault("PYDANTIC_AI_NO_BANNER", "1")
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not arguments:
        parser.print_help(err)
        return EXIT_USAGE
    args = parser.parse_args(arguments)
    args.process_exits = argv is None  # the process's own command line: it ends when `main` returns
    verbose, quiet, log_format = log_options(args)
    args.quiet = quiet  # given before or after the command; the commands leave out their notices too

    undo = configure_logging(verbose=verbose, quiet=quiet, fmt=log_format, stream=err)
    try:
        with warnings.catch_warnings(), allowed_imports(getattr(args, "allow_import", None) or []):
            from atomtask.errors import DefaultModelWarning

            # The commands print the default-model notice themselves (once, and not with `-q`).
            warnings.simplefilter("ignore", DefaultModelWarning)
            return _guarded(args, out, err, stdin, verbose)
    finally:
        undo()


@contextlib.contextmanager
def allowed_imports(packages: Sequence[str]) -> Iterator[None]:
    """While a command runs: `--allow-import` packages added to `$ATOMTASK_IMPORTABLE` (its worker processes
    inherit it), and the working directory on `sys.path` (last), so `shop.prices:lookup_price` is found as
    `python -m` would find it."""
    saved = os.environ.get(IMPORTABLE_ENV)
    cwd = os.getcwd()
    added_path = cwd not in sys.path and "" not in sys.path
    if packages:
        os.environ[IMPORTABLE_ENV] = ",".join([*([saved] if saved else []), *packages])
    if added_path:
        sys.path.append(cwd)
    try:
        yield
    finally:
        if packages:
            if saved is None:
                os.environ.pop(IMPORTABLE_ENV, None)
            else:
                os.environ[IMPORTABLE_ENV] = saved
        if added_path and cwd in sys.path:
            sys.path.remove(cwd)


def _guarded(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO | None, verbose: int) -> int:
    from atomtask.cli._otel import command_tracing
    from atomtask.errors import UsageError

    try:
        with command_tracing(args, err):  # `ATOMTASK_OTEL=1`: spans to the `OTEL_TRACES_EXPORTER`s, flushed at the end
            status = _dispatch(args, out, err, stdin)
        out.flush()  # inside the guard, so a closed pipe is seen here and not at exit
        return status
    except UsageError as exc:
        print(f"atomtask: error: {exc}", file=err)
        return EXIT_USAGE
    except BrokenPipeError:
        _silence(out)
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt as exc:  # a durable run's says how to resume it
        print(f"atomtask: {exc}" if exc.args else "atomtask: interrupted", file=err)
        return EXIT_INTERRUPTED
    except Exception as exc:
        if verbose >= 2:
            import traceback

            traceback.print_exc(file=err)
        hint = "" if verbose >= 2 else " (`-vv` prints the traceback)"
        print(f"atomtask: error: unexpected {type(exc).__name__}: {exc}{hint}", file=err)
        return EXIT_TASK_FAILED


def _dispatch(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO | None) -> int:
    from atomtask.cli import _commands as commands

    if args.command == "run":
        return commands.run(args, out, err, stdin)
    if args.command == "eval":
        return commands.eval_script(args, out, err, stdin)
    if args.command == "list":
        return commands.list_templates(args, out)
    if args.command == "show":
        return commands.show(args, out)
    if args.command == "workflow":
        return commands.workflow(args, out, err, stdin)
    if args.command == "cache":
        return commands.cache(args, out)
    if args.command == "batch":
        return commands.batch(args, out, err, stdin)
    if args.command == "worker":
        return commands.worker(args, err)
    if args.command == "memory":
        from atomtask.cli._memory import run_memory

        return run_memory(args, out, err)
    if args.command == "check":
        from atomtask.cli._check import run as check

        return check(args, out, err)
    if args.command == "test":
        from atomtask.cli._test import run as test

        return test(args, out, err)
    if args.command == "init":
        from atomtask.cli._init import run as init

        return init(args, out, err)
    raise AssertionError(f"unhandled command {args.command!r}")  # argparse only allows the above


def _silence(out: TextIO) -> None:
    """After a closed pipe: point stdout at /dev/null, so the interpreter's final flush stays quiet too."""
    if out is not sys.stdout:
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no file descriptor underneath: nothing will be flushed to a pipe
        pass
