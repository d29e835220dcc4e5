"""The `atomtask check` subcommand: arguments, output formats, exit status."""

from __future__ import annotations

import argparse
import gc
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

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
    parser.add_argument("--select", action="append", default=[], metavar="CODE", help="only these codes or prefixes")
    parser.add_argument("--ignore", action="append", default=[], metavar="CODE", help="skip these codes or prefixes")
    parser.add_argument("--strict", action="store_true", help="warnings fail the check too")
    parser.add_argument("--format", choices=["text", "json"], default="text", help="output format (default: text)")
    parser.add_argument("--explain", metavar="CODE", help="explain a code, with an example, and exit")


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run the check described by `args`; 0 when clean, 1 on errors (or warnings with --strict), 2 on bad usage."""
    from atomtask.lint.findings import RULES

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

    from atomtask.lint.engine import check

    # A check allocates many long-lived objects and almost no cyclic garbage: the collector's full
    # passes cost ~20% of the run and free next to nothing, so it pauses while the check runs.
    collecting = gc.isenabled()
    gc.disable()
    try:
        report = check(paths, python=args.python, models=args.model, select=select, ignore=ignore)
    finally:
        if collecting:
            gc.enable()
    failed = report.failed(strict=args.strict)
    if args.format == "json":
        document = {
            "findings": [f.to_json() for f in report.findings],
            "summary": {
                "files": report.files,
                "templates": report.templates,
                "schemas": report.schemas,
                "errors": report.errors,
                "warnings": report.warnings,
                "failed": failed,
            },
        }
        print(json.dumps(document, indent=2), file=out)
    else:
        for finding in report.findings:
            print(finding, file=out)
        print(_summary(report.files, report.templates, report.schemas, report.errors, report.warnings), file=out)
    return EXIT_FINDINGS if failed else EXIT_CLEAN


def _codes(values: Sequence[str]) -> list[str]:
    return [part.strip().upper() for value in values for part in value.split(",") if part.strip()]


def _summary(files: int, templates: int, schemas: int, errors: int, warnings: int) -> str:
    def n(count: int, word: str) -> str:
        return f"{count} {word}{'' if count == 1 else 's'}"

    checked = f"{n(files, 'file')}, {n(templates, 'template')}, {n(schemas, 'schema')}"
    if not errors and not warnings:
        return f"All clear: checked {checked}."
    return f"Found {n(errors, 'error')} and {n(warnings, 'warning')} in {checked}."
