"""The arguments of the durable-run actions of `atomtask workflow`: `--run-id`/`--db`, `resume`, `approve`, `runs`.

argparse only, so building the parser stays free; `cli_args` calls `add_durable_arguments` while it
builds `atomtask workflow`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

__all__ = ["add_db", "add_durable_arguments"]


def add_db(p: argparse.ArgumentParser) -> None:
    """`--db PATH|URL`: the run store."""
    p.add_argument(
        "--db",
        metavar="PATH|URL",
        help="the run store: a SQLite file or a postgresql:// URL (default: $ATOMTASK_HOME/runs.sqlite, "
        "$ATOMTASK_HOME defaulting to ~/.local/share/atomtask)",
    )


def add_durable_arguments(
    actions: Any,
    common: argparse.ArgumentParser,
    run: argparse.ArgumentParser,
    *,
    epilog: str,
    with_output: Callable[[argparse.ArgumentParser], None],
    with_templates: Callable[[argparse.ArgumentParser], None],
) -> None:
    """`--run-id` and `--db` on `run`; the `resume RUN_ID`, `approve RUN_ID` and `runs` actions."""
    run.add_argument("--run-id", metavar="ID", help="the durable run's id (default: a new one, printed)")
    add_db(run)
    resume = actions.add_parser(
        "resume",
        parents=[common],
        help="resume an interrupted or FAILED run from its last completed step",
        epilog=epilog,
    )
    resume.add_argument("run_id", metavar="RUN_ID", help="the run's id (see `atomtask workflow runs`)")
    resume.add_argument(
        "-i",
        "--input",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a `redact: true` field's value again (never stored): key=text, key=@file, key=@-, key:=json",
    )
    resume.add_argument("--model", help="the model for every step still to run (default: the run's own)")
    resume.add_argument("--base-url", help="the provider's endpoint, as for `run`")
    resume.add_argument("--result", action="store_true", help="print the whole WorkflowResult (every step) as JSON")
    with_output(resume)
    with_templates(resume)
    add_db(resume)
    approve = actions.add_parser("approve", parents=[common], help="approve (or reject) a run WAITING at an approval")
    approve.add_argument("run_id", metavar="RUN_ID", help="the waiting run's id (see `atomtask workflow runs`)")
    approve.add_argument("--reject", action="store_true", help="reject instead of approving")
    approve.add_argument("--note", metavar="TEXT", help="a note kept with the decision")
    with_templates(approve)
    add_db(approve)
    runs = actions.add_parser("runs", parents=[common], help="list the durable runs: id, workflow, status, step")
    with_templates(runs)
    add_db(runs)
