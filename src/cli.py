"""The `atomtask` command. `main(argv) -> int` is testable without a subprocess.

Heavy imports (pydantic-ai, and through it any provider SDK) happen inside the commands, so
`atomtask --help` stays instant.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from atomtask.system.results import TaskResult
    from atomtask.task_system import TaskSystem

__all__ = ["main"]

EXIT_OK = 0
EXIT_TASK_FAILED = 1
EXIT_USAGE = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="atomtask",
        description="Run atomic LLM tasks with typed, validated output.",
        epilog="Model: --model, else the template's, else $ATOMTASK_MODEL, else the embedded test model.",
    )
    parser.add_argument(
        "--log-format",
        choices=["auto", "console", "json"],
        default="auto",
        help="how log events are printed on stderr (default: console on a terminal)",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log events (-v, -vv)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def with_templates(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--templates",
            action="append",
            metavar="PATH",
            help="template file or folder (repeatable; default: ./templates if present, else the shipped templates)",
        )

    def with_inputs_and_model(p: argparse.ArgumentParser, what: str) -> None:
        p.add_argument(
            "-i",
            "--input",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help=f"{what}: key=text, key=@file (the file's text), or key:=json (a JSON value)",
        )
        p.add_argument("--model", help="pydantic-ai model string, e.g. openai-chat:gpt-4o-mini")
        p.add_argument("--base-url", help="OpenAI-compatible endpoint for openai-chat: models")

    run = sub.add_parser("run", help="execute a template and print its validated output as JSON")
    run.add_argument("name", help="template name")
    with_inputs_and_model(run, "an input")
    run.add_argument("--result", action="store_true", help="print the whole TaskResult as JSON")
    run.add_argument("--retries", type=int, metavar="N", help="re-ask the model up to N times on invalid output")
    run.add_argument("--no-repair", action="store_true", help="do not repair malformed output locally")
    run.add_argument("--max-requests", type=int, metavar="N", help="at most N model requests (all attempts)")
    run.add_argument("--max-tokens", type=int, metavar="N", help="at most N tokens in total (all attempts)")
    run.add_argument("--max-cost", type=float, metavar="USD", help="at most this cost where prices are known")
    with_templates(run)

    ev = sub.add_parser(
        "eval",
        help="evaluate an S-expression script and print its final value as JSON",
        description="Evaluate FILE.sexp (defatom, defschema, task calls) and print its final value as JSON. "
        "Each -i input is bound as a variable of that name in the script.",
    )
    ev.add_argument("file", metavar="FILE.sexp", help="the script to evaluate")
    with_inputs_and_model(ev, "bind a variable")
    with_templates(ev)

    lst = sub.add_parser("list", help="list the registered templates")
    with_templates(lst)

    show = sub.add_parser("show", help="print a template and its output JSON Schema as the model receives it")
    show.add_argument("name")
    show.add_argument("--model", help="the model whose schema rules apply (default: as `run` would choose)")
    with_templates(show)

    from atomtask.memory.cli import add_memory_parser

    add_memory_parser(sub)

    from atomtask.lint.cli import add_arguments as check_arguments  # argparse only: light

    check_arguments(sub.add_parser("check", help="check templates and schemas without calling any model"))
    return parser


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 1 task failed, 2 usage error)."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    args = _parser().parse_args(argv)
    _configure_logging(args.log_format, args.verbose, err)

    from atomtask.system.errors import UsageError

    try:
        if args.command == "run":
            return _run(args, out, err)
        if args.command == "eval":
            return _eval(args, out, err)
        if args.command == "list":
            return _list(args, out)
        if args.command == "show":
            return _show(args, out)
        if args.command == "memory":
            from atomtask.memory.cli import run_memory

            return run_memory(args, out, err)
        if args.command == "check":
            from atomtask.lint.cli import run as check

            return check(args, out, err)
    except UsageError as exc:
        print(f"atomtask: error: {exc}", file=err)
        return EXIT_USAGE
    raise AssertionError(f"unhandled command {args.command!r}")  # argparse only allows the above


def _system(args: argparse.Namespace) -> TaskSystem:
    from atomtask.task_system import TaskSystem, bundled_templates_path

    paths: list[str | Path] = list(args.templates or [])
    if not paths:
        local = Path("templates")
        paths = [local if local.is_dir() else bundled_templates_path()]
    return TaskSystem(model=getattr(args, "model", None), templates=paths, base_url=getattr(args, "base_url", None))


def _inputs(pairs: Sequence[str]) -> dict[str, Any]:
    from atomtask.system.errors import UsageError

    values: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.rstrip(":"):
            raise UsageError(f"Input {pair!r} is not KEY=VALUE; write it as `-i name=value`.")
        if key.endswith(":"):
            key = key[:-1]
            try:
                values[key] = json.loads(value)
            except json.JSONDecodeError as exc:
                raise UsageError(
                    f"Input {key!r}: `{value}` is not valid JSON ({exc.msg}); use `{key}=text` for text."
                ) from None
            continue
        if value.startswith("@"):
            path = Path(value[1:])
            try:
                value = path.read_text(encoding="utf-8")
            except OSError as exc:
                raise UsageError(f"Input {key!r}: cannot read {str(path)!r} ({exc.strerror}).") from None
        values[key] = value
    return values


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    system = _system(args)
    limits = {
        name: value
        for name, value in (
            ("requests", args.max_requests),
            ("total_tokens", args.max_tokens),
            ("cost", args.max_cost),
        )
        if value is not None
    }
    result = system.execute(
        args.name,
        _inputs(args.input),
        retries=args.retries,
        limits=limits or None,
        repair=False if args.no_repair else None,
    )
    if result.notes.default_model_notice:
        print(result.notes.default_model_notice, file=err)
    print(_status_line(result), file=err)
    if args.result:
        print(result.model_dump_json(indent=2), file=out)
    elif result.ok:
        print(_output_json(result.parsedContent), file=out)
    if not result.ok:
        assert result.error is not None
        print(f"atomtask: error: {result.error.reason.value}: {result.error.message}", file=err)
        return EXIT_TASK_FAILED
    return EXIT_OK


def _output_json(value: Any) -> str:
    import pydantic_core

    return pydantic_core.to_json(value, indent=2).decode()


def _status_line(result: TaskResult[Any]) -> str:
    notes = result.notes
    attempts = len(notes.attempts)
    tokens = notes.usage.total_tokens
    repaired = sum(1 for a in notes.attempts if a.repairs)
    extra = f", {repaired} repaired" if repaired else ""
    return (
        f"atomtask: {notes.template} {result.status.value} on {notes.model or '-'} "
        f"({attempts} attempt{'s' if attempts != 1 else ''}{extra}, {tokens} tokens, {notes.duration_ms / 1000:.2f}s)"
    )


def _eval(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from atomtask.sexp.errors import SexpEvalError, SexpTaskFailedError
    from atomtask.system.errors import UsageError
    from atomtask.system.results import TaskResult

    path = Path(args.file)
    try:
        source = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"Cannot read script {str(path)!r} ({exc.strerror}); pass a .sexp file.") from None
    variables = _inputs(args.input)
    system = _system(args)
    try:
        value = system.defatom(source, file=str(path), variables=variables)
    except SexpTaskFailedError as exc:
        print(exc.result.model_dump_json(indent=2), file=out)
        print(f"atomtask: error: {exc}", file=err)
        return EXIT_TASK_FAILED
    except SexpEvalError as exc:
        print(f"atomtask: error: {exc}", file=err)
        return EXIT_USAGE
    print(_value_json(value), file=out)
    if isinstance(value, TaskResult):
        if value.notes.default_model_notice:
            print(value.notes.default_model_notice, file=err)
        print(_status_line(value), file=err)
        if not value.ok:
            return EXIT_TASK_FAILED
    return EXIT_OK


def _value_json(value: Any) -> str:
    """A script's value as JSON: results and models in their JSON form, tasks by name."""
    import pydantic_core

    def fallback(obj: Any) -> Any:
        return getattr(obj, "name", None) or repr(obj)

    return pydantic_core.to_json(value, indent=2, fallback=fallback).decode()


def _list(args: argparse.Namespace, out: TextIO) -> int:
    system = _system(args)
    for name in system.templates.names():
        template = system.templates.get(name)
        print(f"{name}\t{template.description or ''}".rstrip(), file=out)
    return EXIT_OK


def _show(args: argparse.Namespace, out: TextIO) -> int:
    system = _system(args)
    compiled = system.templates.compiled(args.name)
    template = compiled.template
    document = template.model_dump(mode="json", by_alias=True, exclude_none=True)
    if compiled.output_cls is not None:
        from atomtask.handlers.output_schema import model_output_schema

        document["output_format"]["schema"] = compiled.output_cls.__name__
        choice = system.handler.choose_model(call=getattr(args, "model", None), template=template.model)
        sent = model_output_schema(compiled.output_cls, compiled.output_mode, choice)
        # Exactly what pydantic-ai sends the model (after the model profile's schema transformer).
        document["output_json_schema"] = sent.pop("json_schema")
        document["output_delivery"] = {"model": choice.label, **sent}
    print(json.dumps(document, indent=2), file=out)
    return EXIT_OK


def _configure_logging(fmt: str, verbose: int, stream: TextIO) -> None:
    import logging

    import structlog

    level = {0: logging.ERROR, 1: logging.INFO}.get(verbose, logging.DEBUG)
    use_console = fmt == "console" or (fmt == "auto" and stream.isatty())
    renderer: Any = structlog.dev.ConsoleRenderer() if use_console else structlog.processors.JSONRenderer()
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=stream),
        cache_logger_on_first_use=False,
    )


if __name__ == "__main__":
    raise SystemExit(main())
