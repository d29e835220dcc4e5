"""The arguments of `atomtask batch`; argparse only, so building the parser stays free (`cli_args` calls it)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from atomtask.batch.dbos_arguments import add_engine_arguments, add_worker_parser, at_least_one, positive

__all__ = ["BATCH_EPILOG", "add_batch_parser", "add_worker_parser", "at_least_one", "positive"]

BATCH_EPILOG = (
    "Every finished item is recorded (SQLite, $ATOMTASK_HOME/batches.sqlite3) before it is written out: run the "
    "same command again, or `atomtask batch --resume BATCH_ID`, and the items already finished for the same "
    "template, model, model settings and endpoint are not run (or paid) again. Exit status: 0 every item "
    "COMPLETE; 1 some FAILED or the batch stopped at its budget; 2 the batch could not start (a bad input line "
    "or input, unknown name, bad flag); 130 interrupted (the finished items are kept)."
)


def add_batch_parser(
    sub: Any, common: argparse.ArgumentParser, *, with_templates: Callable[[argparse.ArgumentParser], None]
) -> None:
    """`atomtask batch NAME --input FILE|- [--output FILE] [--concurrency N] ...`."""
    p = sub.add_parser(
        "batch",
        parents=[common],
        help="run a template or workflow over every item of a JSONL or CSV file; one JSON line per item",
        epilog=BATCH_EPILOG,
    )
    p.add_argument("name", nargs="?", help="template or workflow name (optional with --resume)")
    p.add_argument("--input", metavar="FILE|-", help="items: a JSONL file (one JSON object per line), a .csv, or -")
    p.add_argument("--format", choices=("jsonl", "csv"), help="the input's format (default: by suffix; stdin: sniffed)")
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="the results, one JSON line per item (default: stdout); rebuilt on resume",
    )
    p.add_argument("--id-field", metavar="NAME", help="the field naming each item (default: id; else a hash)")
    p.add_argument("--ordered", action="store_true", help="write results in input order (default: as they finish)")
    p.add_argument("--model", help="the model for every item, over the template's own")
    p.add_argument("--base-url", help="the provider's endpoint (openai-chat:, ollama:, anthropic:, ...)")
    p.add_argument(
        "--setting", action="append", default=[], metavar="KEY=VALUE", help="a pydantic-ai model setting (repeatable)"
    )
    p.add_argument("--timeout", type=positive, metavar="SECONDS", help="timeout of each model request")
    pace = p.add_argument_group("pace and budget")
    pace.add_argument("--concurrency", type=at_least_one, metavar="N", help="items in flight at once (default 8)")
    pace.add_argument("--rpm", type=positive, metavar="N", help="at most N items started per minute")
    pace.add_argument("--tpm", type=positive, metavar="N", help="at most N tokens per minute (by the items' average)")
    pace.add_argument(
        "--max-cost",
        type=positive,
        metavar="USD",
        help="stop taking items once this run spent this much (needs the model's prices; without them: --max-tokens)",
    )
    pace.add_argument(
        "--max-tokens",
        dest="batch_max_tokens",
        type=at_least_one,
        metavar="N",
        help="stop taking items once this run spent N tokens",
    )
    resume = p.add_argument_group("resume")
    resume.add_argument("--batch-id", metavar="ID", help="name the batch (default: from NAME, the input and model)")
    resume.add_argument("--resume", metavar="BATCH_ID", help="run a recorded batch again with its own arguments")
    resume.add_argument("--retry-failed", action="store_true", help="run the items recorded as FAILED again")
    resume.add_argument(
        "--db",
        metavar="FILE|URL",
        help="the batch record (default: $ATOMTASK_HOME/batches.sqlite3); with `--engine dbos`: the queue's store",
    )
    add_engine_arguments(p)
    provider = p.add_argument_group("provider batch")
    provider.add_argument(
        "--provider-batch",
        action="store_true",
        help="send a template's items through the provider's batch API (OpenAI, Anthropic: half price, within "
        "a day); each answer is validated and repaired as a normal call's, failures are asked again normally",
    )
    provider.add_argument(
        "--poll-interval", type=positive, metavar="SECONDS", help="seconds between checks of the provider batch (30)"
    )
    provider.add_argument(
        "--max-wait",
        type=positive,
        metavar="SECONDS",
        help="stop waiting for the provider batch after this long (default: until it ends); run again to collect",
    )
    with_templates(p)
