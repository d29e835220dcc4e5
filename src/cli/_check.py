"""The `atomtask check` subcommand: arguments, output formats, exit status."""

from __future__ import annotations

import argparse
import gc
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from atomtask.lint._findings import CheckReport

__all__ = ["add_arguments", "run"]

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `atomtask check` (kept here so the main CLI module only wires the subcommand)."""
    parser.add_argument("paths", nargs="*", metavar="PATH", help="declaration files or folders (default: ./templates)")
    parser.add_argument(
        "--python",
        action="append",
        default=[],
        metavar="MODULE",
        help="a module (pkg.mod) or .py file whose module-level TaskSystem/Template objects are checked too",
    )
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="MODEL",
        help="check provider compatibility against MODEL for templates that name none (default: $ATOMTASK_MODEL)",
    )
    parser.add_argument(
        "--base-url",
        metavar="URL",
        help="the endpoint the models go to: a local OpenAI-compatible server's output modes are checked against "
        "what it honours (P308, P309); the kind of server is asked of it once, unless --server names it",
    )
    parser.add_argument(
        "--server",
        metavar="KIND",
        help="the kind of server at --base-url: llama-cpp-python, llama-server, ollama, vllm, lmstudio, openai or "
        "generic",
    )
    parser.add_argument("--select", action="append", default=[], metavar="CODE", help="only these codes or prefixes")
    parser.add_argument("--ignore", action="append", default=[], metavar="CODE", help="skip these codes or prefixes")
    parser.add_argument("--strict", action="store_true", help="warnings fail the check too")
    parser.add_argument("--format", choices=["text", "json"], default="text", help="output format (default: text)")
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="check every file again instead of reusing the findings of unchanged ones "
        "(cache: $ATOMTASK_CACHE_DIR, else $XDG_CACHE_HOME/atomtask or ~/.cache/atomtask)",
    )
    parser.add_argument("--explain", metavar="CODE", help="explain a code, with an example, and exit")


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run the check described by `args`; 0 when clean, 1 on errors (or warnings with --strict), 2 on bad usage.

    Bad usage: an unknown code, nothing to check, a path or `--python` file that does not exist.
    """
    from atomtask.lint._findings import RULES

    if args.explain:
        rule = RULES.get(args.explain.upper())
        if rule is None:
            print(f"atomtask: error: unknown code {args.explain!r}; codes: {', '.join(RULES)}.", file=err)
            return EXIT_USAGE
        print(f"{rule.code} {rule.name} ({rule.severity.value}): {rule.summary}\n\n{rule.explanation}", file=out)
        return EXIT_CLEAN
    select, ignore = _codes(args.select), _codes(args.ignore)
    unknown = [c for c in (*select, *ignore) if not any(code.startswith(c) for code in RULES)]
    if unknown:
        print(
            f"atomtask: error: no code starts with {', '.join(map(repr, unknown))}; codes: {', '.join(RULES)}.",
            file=err,
        )
        return EXIT_USAGE
    paths: list[str | Path] = list(args.paths)
    if not paths and not args.python:
        if not Path("templates").is_dir():
            print("atomtask: error: nothing to check; pass PATH ... or --python MODULE.", file=err)
            return EXIT_USAGE
        paths = [Path("templates")]
    missing = [str(p) for p in paths if not Path(p).exists()]
    missing += [name for name in args.python if _is_file_name(name) and not Path(name).is_file()]
    if missing:
        print(
            f"atomtask: error: no such file or folder: {', '.join(map(repr, missing))}; "
            "pass existing declaration files or folders (and `--python` modules).",
            file=err,
        )
        return EXIT_USAGE

    from atomtask.cli._model_flag import check_model_flags

    # Checked here too, so the message names what the user typed (the engine only says "the models");
    # a name without a provider prefix may be an alias the files declare: the engine checks it once read.
    for model in args.model:
        check_model_flags(model)
    if not args.model:
        check_model_flags(None)

    from atomtask.errors import ConfigurationError
    from atomtask.lint._engine import check, check_cache
    from atomtask.loading._servers import Endpoint

    try:
        endpoint = Endpoint.of(args.base_url, args.server)
    except ConfigurationError as exc:
        print(f"atomtask: error: {exc.message}", file=err)
        return EXIT_USAGE
    # What the server at --base-url is, is part of what the findings depend on: asked now (once), for the cache.
    detected = endpoint.at_url() if endpoint is not None and args.server is None else None

    # A check allocates many long-lived objects and almost no cyclic garbage: the collector's full
    # passes cost ~20% of the run and free next to nothing, so it pauses while the check runs.
    collecting = gc.isenabled()
    gc.disable()
    try:
        cache = (
            None
            if args.no_cache
            else check_cache(
                models=args.model,
                select=select,
                ignore=ignore,
                base_url=args.base_url,
                server=args.server or (detected.name if detected is not None else None),
            )
        )
        report = check(
            paths,
            python=args.python,
            models=args.model,
            select=select,
            ignore=ignore,
            cache=cache,
            helper_process=True,  # pydantic-ai is imported by a helper while this process checks
            base_url=args.base_url,
            server=args.server,
        )
    finally:
        if collecting:
            if getattr(args, "process_exits", False):
                # The process ends once the report is out: the collector's passes over what the check
                # leaves (~0.2 s for 1,000 schemas, at the next allocations and again at exit) would only
                # free memory that goes back with the process. Frozen objects are never scanned.
                gc.freeze()
            gc.enable()
    failed = report.failed(strict=args.strict)
    if args.format == "json":
        document = {
            "findings": [f.to_json() for f in report.findings],
            "summary": {
                "files": report.files,
                "templates": report.templates,
                "schemas": report.schemas,
                "workflows": report.workflows,
                "lenient": list(report.lenient),
                "errors": report.errors,
                "warnings": report.warnings,
                "failed": failed,
            },
        }
        print(json.dumps(document, indent=2), file=out)
    else:
        for finding in report.findings:
            print(finding, file=out)
        if report.lenient:
            names = ", ".join(report.lenient)
            print(f"Lenient repair (`repair: lenient`, values read toward the schema): {names}.", file=out)
        print(_summary(report, report.errors, report.warnings), file=out)
    return EXIT_FINDINGS if failed else EXIT_CLEAN


def _is_file_name(name: str) -> bool:
    """Whether `--python NAME` names a file (as `lint._session.import_python` decides), not a module."""
    return name.endswith(".py") or "/" in name or os.sep in name


def _codes(values: Sequence[str]) -> list[str]:
    return [part.strip().upper() for value in values for part in value.split(",") if part.strip()]


def _summary(report: CheckReport, errors: int, warnings: int) -> str:
    def n(count: int, word: str) -> str:
        return f"{count} {word}{'' if count == 1 else 's'}"

    checked = f"{n(report.files, 'file')}, {n(report.templates, 'template')}, {n(report.schemas, 'schema')}"
    if report.workflows:
        checked += f", {n(report.workflows, 'workflow')}"
    if not errors and not warnings:
        return f"All clear: checked {checked}."
    return f"Found {n(errors, 'error')} and {n(warnings, 'warning')} in {checked}."
