"""`atomtask init [DIR] [--force]`: write a small runnable project, then say what to run next.

The project is the package data under `_scaffold/` (shipped in the wheel): a `README.md` and a
`templates/` folder with a schema, a template, a workflow and a cases file, which pass `atomtask check`
and `atomtask test` as written and run offline on the synthetic model. Nothing is overwritten unless
`--force` is given: the files that exist are named in a `ScaffoldConflictError` (exit 2) and none is
written. Only argparse is imported at module level.
"""

from __future__ import annotations

import argparse
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path, PurePosixPath
from typing import TextIO

__all__ = ["add_arguments", "run", "scaffold_files"]

EXIT_OK = 0

DESCRIPTION = (
    "Write a small runnable project into DIR (default: the current folder): templates/ with a schema, a "
    "template, a workflow and a cases file, and a README with the next commands. It passes `atomtask check` "
    "and `atomtask test` as written, and runs offline on the synthetic model."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `atomtask init` (kept here so the main CLI module only wires the subcommand)."""
    parser.add_argument("directory", nargs="?", default=".", metavar="DIR", help="where to write (created if missing)")
    parser.add_argument("--force", action="store_true", help="overwrite the scaffold's files where they exist")


def scaffold_files() -> dict[PurePosixPath, str]:
    """The scaffold's files by their path in the project, with their text, in a stable order."""
    found: dict[PurePosixPath, str] = {}

    def walk(node: Traversable, at: PurePosixPath) -> None:
        for child in sorted(node.iterdir(), key=lambda c: (c.is_dir(), c.name)):
            if child.is_dir():
                walk(child, at / child.name)
            elif not child.name.startswith(".") and not child.name.endswith(".pyc"):
                found[at / child.name] = child.read_text(encoding="utf-8")

    walk(files("atomtask.cli") / "_scaffold", PurePosixPath())
    return found


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Write the scaffold into `args.directory`; a file in the way or a folder that can't be written raises."""
    from atomtask.errors import ScaffoldConflictError, UsageError

    root = Path(args.directory)
    scaffold = scaffold_files()
    if root.exists() and not root.is_dir():
        raise UsageError(f"{str(root)!r} is a file, not a folder; give `atomtask init` a folder to write into.")
    existing = [str(root / path) for path in scaffold if (root / path).exists()]
    if existing and not args.force:
        raise ScaffoldConflictError(existing)
    try:
        for path, text in scaffold.items():
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"Cannot write {exc.filename!r} ({exc.strerror}); choose a folder you can write to.") from None
    _next_steps(root, list(scaffold), len(existing), out)
    return EXIT_OK


def _next_steps(root: Path, written: list[PurePosixPath], overwritten: int, out: TextIO) -> None:
    where = "the current folder" if root == Path(".") else f"{str(root)!r}"
    note = f", {overwritten} of them overwritten" if overwritten else ""
    lines = [f"Wrote {len(written)} files into {where}{note}:"]
    lines += [f"  {path}" for path in written]
    lines += ["", "Next:"]
    if root != Path("."):
        lines.append(f"  cd {_shell_word(str(root))}")
    lines += [
        "  atomtask check        # the templates, schema and workflow, before any model is called",
        "  atomtask test         # replay the recorded cases offline",
        '  atomtask run classify_feedback -i message="The export button does nothing since Monday."',
        '  atomtask workflow run answer_feedback -i message="The export button does nothing since Monday."',
        "Those run on the embedded synthetic model; add `--model openai-chat:gpt-4o-mini` (with OPENAI_API_KEY) "
        "for a real one. README.md says more.",
    ]
    print("\n".join(lines), file=out)


def _shell_word(text: str) -> str:
    import shlex

    return shlex.quote(text)
