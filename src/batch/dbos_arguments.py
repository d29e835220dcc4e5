"""The arguments of the DBOS engine (`batch --engine dbos`, `atomtask worker`) and number checks; argparse only."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

__all__ = ["WORKER_EPILOG", "add_engine_arguments", "add_worker_parser", "at_least_one", "positive"]

WORKER_EPILOG = (
    "Start workers on any number of machines with the same --db and --templates; `atomtask batch NAME --engine "
    "dbos --db URL` puts the items on the queue and writes the results as they come. The queue's rate limit "
    "(`batch --rpm`) holds across all workers. A worker killed mid-item loses nothing: after --lease seconds "
    "without its heartbeat another worker runs its unfinished items again. Ctrl-C stops taking items and "
    "waits for the ones running."
)


def positive(text: str) -> float:
    """An argparse type: a number over 0 (`--rpm`, `--tpm`, `--max-cost`, seconds)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number over 0, not {text}")
    return value


def at_least_one(text: str) -> int:
    """An argparse type: a whole number of at least 1 (`--concurrency`, `--max-tokens`)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {text}")
    return value


def add_engine_arguments(p: argparse.ArgumentParser) -> None:
    """`--engine local|dbos` and `--queue NAME` of `atomtask batch`."""
    group = p.add_argument_group("many machines")
    group.add_argument(
        "--engine",
        choices=("local", "dbos"),
        default="local",
        help="local: run the items in this process (default); dbos: put them on a durable queue in --db "
        "(a postgresql:// URL, or a SQLite file) for `atomtask worker`s to run",
    )
    group.add_argument("--queue", metavar="NAME", help="the DBOS queue (default: atomtask-batch)")


def add_worker_parser(
    sub: Any, common: argparse.ArgumentParser, *, with_templates: Callable[[argparse.ArgumentParser], None]
) -> None:
    """`atomtask worker --db URL [--concurrency N] [--queue NAME] [--templates DIR]`."""
    p = sub.add_parser(
        "worker",
        parents=[common],
        help="run the items `atomtask batch --engine dbos` puts on a durable queue (on any number of machines)",
        epilog=WORKER_EPILOG,
    )
    p.add_argument("--db", required=True, metavar="URL", help="the queue's store: a postgresql:// URL or a SQLite file")
    p.add_argument(
        "--concurrency",
        type=at_least_one,
        default=8,
        metavar="N",
        help="items each worker runs at once (the queue's per-worker limit, shared by its workers; default 8)",
    )
    p.add_argument("--queue", metavar="NAME", help="the DBOS queue (default: atomtask-batch)")
    p.add_argument(
        "--lease",
        type=positive,
        default=10.0,
        metavar="SECONDS",
        help="how long a worker's heartbeat may stand still before its items are run elsewhere (default 10)",
    )
    with_templates(p)
