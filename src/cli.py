"""The `atomtask` command. `main(argv) -> int` is testable without a subprocess.

This module is the entry point: it parses the arguments (`cli_args`), configures log output
(`cli_logging`), dispatches to the commands (`cli_commands`, which runs `workflow_cli/` too,
`memory/cli.py`, `lint/cli.py`, `template_tests/cli.py`) and
turns whatever goes wrong into one line on stderr and an exit status, never a traceback:

- 0 success; 1 the task (or workflow) ran and FAILED; 2 the command could not run (usage errors,
  argparse's own);
- a reader that closes stdout early (`atomtask run ... | head -1`) ends the command quietly (141,
  as a process killed by SIGPIPE would);
- Ctrl-C is 130; an unexpected exception is one line (the traceback with `-vv`) and 1.

Heavy imports (pydantic-ai, and through it any provider SDK) happen inside the commands, so
`atomtask --help` and `atomtask --version` stay instant.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from atomtask.cli_args import build_parser, log_options

__all__ = ["main"]

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

    from atomtask.cli_logging import configure_logging

    undo = configure_logging(verbose=verbose, quiet=quiet, fmt=log_format, stream=err)
    try:
        return _guarded(args, out, err, stdin, verbose)
    finally:
        undo()


def _guarded(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO | None, verbose: int) -> int:
    from atomtask.system.errors import UsageError

    try:
        status = _dispatch(args, out, err, stdin)
        out.flush()  # inside the guard, so a closed pipe is seen here and not at exit
        return status
    except UsageError as exc:
        print(f"atomtask: error: {exc}", file=err)
        return EXIT_USAGE
    except BrokenPipeError:
        _silence(out)
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        print("atomtask: interrupted", file=err)
        return EXIT_INTERRUPTED
    except Exception as exc:
        if verbose >= 2:
            import traceback

            traceback.print_exc(file=err)
        hint = "" if verbose >= 2 else " (`-vv` prints the traceback)"
        print(f"atomtask: error: unexpected {type(exc).__name__}: {exc}{hint}", file=err)
        return EXIT_TASK_FAILED


def _dispatch(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO | None) -> int:
    from atomtask import cli_commands

    if args.command == "run":
        return cli_commands.run(args, out, err, stdin)
    if args.command == "eval":
        return cli_commands.eval_script(args, out, err, stdin)
    if args.command == "list":
        return cli_commands.list_templates(args, out)
    if args.command == "show":
        return cli_commands.show(args, out)
    if args.command == "workflow":
        return cli_commands.workflow(args, out, err, stdin)
    if args.command == "cache":
        return cli_commands.cache(args, out)
    if args.command == "batch":
        return cli_commands.batch(args, out, err, stdin)
    if args.command == "worker":
        return cli_commands.worker(args, err)
    if args.command == "memory":
        from atomtask.memory.cli import run_memory

        return run_memory(args, out, err)
    if args.command == "check":
        from atomtask.lint.cli import run as check

        return check(args, out, err)
    if args.command == "test":
        from atomtask.template_tests.cli import run as test

        return test(args, out, err)
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


if __name__ == "__main__":
    raise SystemExit(main())
