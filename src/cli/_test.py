"""`atomtask test [PATH] [-k PATTERN] [--junit FILE] [--record [--overwrite] --model M]`: the arguments and the command.

Exit status, the CLI's one rule: 0 every case passed; 1 a case failed (or `--record` refused to write one);
2 the command could not run (a bad cases file, an unknown template, inputs that do not fit, no cases found).
Every cases file is read and checked before any case runs. Only argparse is imported at module level.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from atomtask._task_system import TaskSystem
    from atomtask.template_tests._cases import CaseFile
    from atomtask.template_tests._replay import PreparedCase

__all__ = ["add_arguments", "run"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

DESCRIPTION = (
    "Replay the recorded model answers of template cases (NAME.cases.yaml, kept in a `tests/` folder inside "
    "the templates folder) through the real validation, repair and retry path, offline, and check each "
    "case's expectation. A case whose recorded answers the current schema rejects or reads differently "
    "says so: `answer 2 now rejected: ...`, `now read differently: field `x` was 1, now 2`."
)
EPILOG = (
    "Exit status: 0 every case passed; 1 a case failed (or `--record` refused to write one: a run whose failure "
    "its answers do not reproduce); 2 the command could not run (a bad cases file, "
    "an unknown template, inputs that do not fit the template, no cases found)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `atomtask test` (kept here so the main CLI module only wires the subcommand)."""
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="cases files or folders searched for *.cases.yaml (default: ./templates)",
    )
    parser.add_argument(
        "-k",
        dest="pattern",
        metavar="PATTERN",
        help="only the cases whose template or name contains PATTERN (or matches it as a glob)",
    )
    parser.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report to FILE")
    parser.add_argument(
        "--record",
        action="store_true",
        help="call --model for each selected case without answers and write its answers into the cases file",
    )
    parser.add_argument(
        "--overwrite",
        "--rerecord",
        dest="overwrite",
        action="store_true",
        help="with --record: re-record the selected cases that already have answers (default: only cases without "
        "answers are recorded); hand-written expectations are never rewritten",
    )
    parser.add_argument("--model", help="the model to record with (`--record` only), e.g. openai-chat:gpt-4o-mini")
    parser.add_argument("--base-url", help="the provider's endpoint for `--record` (a local server)")
    parser.add_argument(
        "--templates", metavar="PATH", help="the templates to test against (default: each cases file's `templates:`)"
    )


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run `atomtask test`; usage errors propagate to the CLI's handler (exit 2)."""
    from atomtask.errors import UsageError
    from atomtask.template_tests._cases import case_files
    from atomtask.template_tests._replay import write_junit, write_text

    _check_flags(args)
    paths: list[str | Path] = list(args.paths) or [Path("templates")]
    files = case_files(paths)
    if not files:
        shown = ", ".join(str(p) for p in paths)
        raise UsageError(
            f"No cases files (NAME.cases.yaml) under {shown}; write one in a `tests/` folder inside the "
            "templates folder."
        )
    systems: dict[Path, TaskSystem] = {}
    prepared = _selected(_prepare_all(files, systems, args), args.pattern)
    if not prepared:
        raise UsageError(f"No case matches `-k {args.pattern}`; the cases are named in `name:` in the cases files.")
    refused = 0
    if args.record:
        refused = _record(prepared, systems, args, err)
        prepared = _selected(_prepare_all(files, systems, args), args.pattern)
    from atomtask.template_tests._replay import replay

    outcomes = [replay(case, systems[case.file.templates]) for case in prepared]
    write_text(outcomes, len({p.file.path for p in prepared}), out, quiet=bool(getattr(args, "quiet", False)))
    if args.junit:
        try:
            write_junit(outcomes, Path(args.junit))
        except OSError as exc:
            raise UsageError(f"Cannot write {args.junit!r} ({exc.strerror}); fix `--junit`.") from None
    return EXIT_OK if all(o.passed for o in outcomes) and not refused else EXIT_FAILED


def _check_flags(args: argparse.Namespace) -> None:
    from atomtask.cli._model_flag import check_model_flags
    from atomtask.errors import UsageError

    if args.record and not args.model:
        raise UsageError(
            "`--record` calls a real model: name it with `--model` (e.g. `--model openai-chat:gpt-4o-mini`)."
        )
    if getattr(args, "overwrite", False) and not args.record:
        raise UsageError("`--overwrite` re-records answers: give it with `--record --model MODEL`.")
    if args.model and not args.record:
        raise UsageError("`--model` is for `--record`; a replay answers with the recorded answers, offline.")
    if args.model:
        check_model_flags(args.model)  # an alias is checked once the templates are loaded (`_record`)
    if args.junit and not Path(args.junit).parent.is_dir():
        raise UsageError(f"Cannot write {args.junit!r}: its folder does not exist; create it or fix `--junit`.")


def _prepare_all(files: list[Path], systems: dict[Path, TaskSystem], args: argparse.Namespace) -> list[PreparedCase]:
    from atomtask.template_tests._cases import read_case_file
    from atomtask.template_tests._replay import prepare

    prepared: list[PreparedCase] = []
    for path in files:
        file = read_case_file(path)
        if args.templates:
            import attrs

            file = attrs.evolve(file, templates=Path(args.templates))
        prepared.extend(prepare(file, _system(file, systems, args)))
    return prepared


def _system(file: CaseFile, systems: dict[Path, TaskSystem], args: argparse.Namespace) -> TaskSystem:
    """The task system holding `file`'s templates (one per templates folder)."""
    from atomtask._task_system import TaskSystem
    from atomtask.errors import CasesFileError

    if file.templates not in systems:
        if not file.templates.exists():
            raise CasesFileError(
                f"The templates of {str(file.path)!r} are looked for in {str(file.templates)!r}, which does not "
                "exist; keep the cases file in a `tests/` folder inside the templates folder, or set `templates:`.",
                location=file.template_location,
            )
        systems[file.templates] = TaskSystem(
            templates=file.templates, base_url=args.base_url, instrument=getattr(args, "instrument", None)
        )
    return systems[file.templates]


def _selected(prepared: list[PreparedCase], pattern: str | None) -> list[PreparedCase]:
    """The cases whose template or name contains `pattern` (case-insensitively), or matches it as a glob."""
    if not pattern:
        return prepared
    from fnmatch import fnmatchcase

    folded = pattern.lower()
    chosen = []
    for item in prepared:
        names = (item.case.name.lower(), item.case.template.lower(), f"{item.case.template}::{item.case.name}".lower())
        if any(folded in name or fnmatchcase(name, folded) for name in names):
            chosen.append(item)
    return chosen


def _record(
    prepared: list[PreparedCase], systems: dict[Path, TaskSystem], args: argparse.Namespace, err: TextIO
) -> int:
    """Record the selected cases on `--model` and write their answers into their files; returns how many were refused.

    Without `--overwrite` only the cases that have no recorded answers yet are recorded. A failed run is
    written with `expect_failure: <reason>` (when the case expects nothing else), or refused when its answers
    do not reproduce it (`Recording.refused`).
    """
    from atomtask.cli._model_flag import check_model_flags
    from atomtask.errors import CasesFileError
    from atomtask.schemas._sources import read_source
    from atomtask.template_tests._recording import record_case, rewrite_cases

    overwrite = bool(getattr(args, "overwrite", False))
    chosen = [item for item in prepared if overwrite or not item.case.answers]
    for item in chosen:  # `--model` may be an alias the templates declare
        check_model_flags(args.model, systems[item.file.templates].model_aliases)
    kept = len(prepared) - len(chosen)
    if kept and not getattr(args, "quiet", False):
        print(
            f"kept the recorded answers of {kept} case(s); `--record --overwrite` re-records them "
            "(their expectations stay as written)",
            file=err,
        )
    by_file: dict[Path, list[Any]] = {}
    refused = 0
    for item in chosen:
        recording = record_case(item, systems[item.file.templates], args.model, None)
        result = recording.result
        label = f"{item.file.path}::{item.case.name}"
        if recording.refused is not None:
            # Said even with `-q`: the case is left without what was asked for.
            print(
                f"atomtask: not recorded {label}: {recording.refused}. The case is left as it was: fix the cause "
                "and record again.",
                file=err,
            )
            refused += 1
            continue
        by_file.setdefault(item.file.path, []).append(recording)
        status = result.status.value if result.error is None else f"{result.status.value} ({result.error.reason.value})"
        written = f"; wrote `expect_failure: {recording.expect_failure}`" if recording.expect_failure else ""
        if not getattr(args, "quiet", False):
            print(f"recorded {label}: {len(recording.answers)} answer(s), {status}{written}", file=err)
    for path, recordings in by_file.items():
        text = read_source(path, error=CasesFileError)
        path.write_text(rewrite_cases(text, path, recordings), encoding="utf-8")
    return refused
