"""`atomtask batch` and `atomtask worker`: their arguments, the run, its progress and the JSON line of each item.

The arguments are argparse only, so building the parser stays free; what a batch runs is imported when
it runs. The results file is rebuilt on every run: the items already in the record come first (or in
their input place with `--ordered`), then each item as it finishes, so the file holds one line per
finished item and none twice, whatever happened to the run before. The first Ctrl-C stops taking items
and lets the ones in flight finish (exit 130); a second one abandons them.

Progress goes to stderr: a `tqdm` bar on a terminal (done / total, the rate and the ETA, the failed
items, tokens and cost; `tqdm` is imported only when a bar is drawn), a plain line every few seconds
otherwise, for logs and CI, or nothing with `-q`. The bar is redrawn for every item that finishes, up
to 10 times a second (`BAR_EVERY`; never tqdm's own `miniters`, which learns from a first burst of
items read back from the record to skip dozens of redraws after it). An item the record could not
write (the file damaged or full mid-run) is still written out; a warning says so at once and the
summary counts them, even with `-q`.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from atomtask.batch._run import BatchRun
    from atomtask.batch._target import BatchHost
    from atomtask.system._options import CallOptions
    from atomtask.system._results import BatchItemResult

__all__ = [
    "BAR_EVERY",
    "BATCH_EPILOG",
    "EXIT_INTERRUPTED",
    "PLAIN_EVERY",
    "WORKER_EPILOG",
    "Progress",
    "add_batch_parser",
    "add_engine_arguments",
    "add_worker_parser",
    "at_least_one",
    "batch_id_for",
    "positive",
    "prepare",
    "progress_for",
    "run_command",
    "summary_lines",
    "unrecorded_warning",
]

WORKER_EPILOG = (
    "Start workers on any number of machines with the same --db and --templates; `atomtask batch NAME --engine "
    "dbos --db URL` puts the items on the queue and writes the results as they come. The queue's rate limit "
    "(`batch --rpm`) holds across all workers. A worker killed mid-item loses nothing: after --lease seconds "
    "without its heartbeat another worker runs its unfinished items again. Ctrl-C stops taking items and "
    "waits for the ones running."
)


def positive(text: str) -> float:
    """An argparse type: a number over 0 (`--rpm`, `--tpm`, `--max-cost`, seconds such as `--timeout`)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number over 0, not {text}")
    return value


def at_least_one(text: str) -> int:
    """An argparse type: a whole number of at least 1 (`--concurrency`, `--max-total-tokens`, `--max-tokens`)."""
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


BATCH_EPILOG = (
    "Each item is one task call (or workflow run) with `atomtask run`'s per-answer flags: `--max-tokens N` caps "
    "each answer, `--retries`, `--repair`; the batch's totals are `--max-total-tokens N` and `--max-cost USD`. "
    "Every finished item is recorded (SQLite, $ATOMTASK_HOME/batches.sqlite3) before it is written out: run the "
    "same command again, or `atomtask batch --resume BATCH_ID`, and the items already finished for the same "
    "template, model, model settings, repair mode and endpoint are not run (or paid) again. Exit status: 0 every item "
    "COMPLETE; 1 some FAILED or the batch stopped at its budget; 2 the batch could not start (a bad input line "
    "or input, unknown name, bad flag); 130 interrupted (the finished items are kept)."
)


def add_batch_parser(
    sub: Any,
    common: argparse.ArgumentParser,
    *,
    with_templates: Callable[[argparse.ArgumentParser], None],
    with_settings: Callable[[argparse.ArgumentParser], None],
    with_retries: Callable[[argparse._ArgumentGroup], None],
    with_dry_run: Callable[[argparse.ArgumentParser], None],
) -> None:
    """`atomtask batch NAME --input FILE|- [--output FILE] [--concurrency N] ...`.

    Each item's answer takes `run`'s own flags (`with_settings`: `--max-tokens`, `--temperature`, ...;
    `with_retries`: `--retries`, `--repair`); the batch's totals are `--max-total-tokens` and `--max-cost`.
    """
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
    p.add_argument(
        "--include-redacted",
        action="store_true",
        help="write the values of a workflow's `redact: true` fields to the results in clear (default: "
        "[redacted]; the batch record never holds them)",
    )
    p.add_argument("--model", help="the model for every item, over the template's own")
    p.add_argument("--base-url", help="the provider's endpoint (openai-chat:, ollama:, anthropic:, ...)")
    p.add_argument(
        "--server",
        metavar="KIND",
        help="the kind of OpenAI-compatible server at --base-url: llama-cpp-python, llama-server, ollama, vllm, "
        "lmstudio, openai or generic (default: asked of the server at the first request)",
    )
    with_settings(p)
    with_retries(p.add_argument_group("retries (of each item's task calls)"))
    pace = p.add_argument_group("pace and budget (of the whole batch)")
    pace.add_argument("--concurrency", type=at_least_one, metavar="N", help="items in flight at once (default 8)")
    pace.add_argument("--rpm", type=positive, metavar="N", help="at most N items started per minute")
    pace.add_argument("--tpm", type=positive, metavar="N", help="at most N tokens per minute (by the items' average)")
    pace.add_argument(
        "--max-cost",
        type=positive,
        metavar="USD",
        help="stop taking items once this run spent this much (needs the model's prices; without them: "
        "--max-total-tokens)",
    )
    pace.add_argument(
        "--max-total-tokens",
        type=at_least_one,
        metavar="N",
        help="the batch's total: stop taking items once this run spent N tokens across all items "
        "(`--max-tokens` is per answer)",
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
    with_dry_run(p)  # with --provider-batch: at the batch price
    provider = p.add_argument_group("provider batch")
    provider.add_argument(
        "--provider-batch",
        action="store_true",
        help="send the items' model requests through the provider's batch API (OpenAI, Anthropic, Google: about "
        "half price, answers within a day); each answer is repaired and validated as a normal call's",
    )
    provider.add_argument(
        "--reask",
        choices=("batch", "live", "none"),
        help="where an answer still invalid after local repair is asked again: the next provider batch (batch, "
        "the default), a normal call at once (live), nowhere: the item fails with its raw answers (none)",
    )
    provider.add_argument(
        "--poll-interval", type=positive, metavar="SECONDS", help="seconds between checks of the provider batches (30)"
    )
    provider.add_argument(
        "--max-wait",
        type=positive,
        metavar="SECONDS",
        help="stop waiting for the provider batches after this long (default: until every item is answered); "
        "`--resume` collects the items still waiting, without submitting them again",
    )
    provider.add_argument(
        "--batch-size", type=int, metavar="N", help="the most requests in one provider batch (default 1000)"
    )
    with_templates(p)


PLAIN_EVERY = 5.0
"""Seconds between two plain progress lines."""

BAR_EVERY = 0.1
"""Seconds at least between two redraws of the bar (one per finished item, when they come slower)."""


class Progress:
    """Nothing shown (`-q`); the base of the two that show something."""

    def __init__(self, run: BatchRun, stream: TextIO) -> None:
        self.run, self.stream = run, stream

    def update(self, result: BatchItemResult) -> None:
        """One item finished (or was read from the record)."""

    def warn(self, text: str) -> None:
        """Say something the user must know now (even with `-q`): a line of its own."""
        print(text, file=self.stream, flush=True)

    def close(self) -> None:
        """The batch ended."""


class _Bar(Progress):
    def __init__(self, run: BatchRun, stream: TextIO) -> None:
        super().__init__(run, stream)
        from tqdm import tqdm  # type: ignore[import-untyped]  # tqdm ships no stubs

        # `miniters=1`: tqdm's default (dynamic) raises its step to the largest burst seen between two redraws,
        # so items read back from the record at the start would hide the next dozens of items.
        # A terminal that reports 0 columns (a pseudo-terminal never sized) would get a bar cut to nothing.
        sized = _columns(stream) != 0
        self._bar: Any = tqdm(
            total=run.total,
            file=stream,
            unit="item",
            desc=run.target.name,
            dynamic_ncols=sized,
            ncols=None if sized else 80,
            miniters=1,
            mininterval=BAR_EVERY,
        )

    def update(self, result: BatchItemResult) -> None:
        self._bar.set_postfix_str(_figures(self.run), refresh=False)  # drawn by the update, with its count
        self._bar.update(1)

    def warn(self, text: str) -> None:
        self._bar.write(text, file=self.stream)  # above the bar, which is drawn again under it

    def close(self) -> None:
        self._bar.set_postfix_str(_figures(self.run), refresh=False)
        self._bar.close()


def _columns(stream: TextIO) -> int | None:
    """The width of the terminal `stream` writes to, as it reports it; None when it cannot say."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):  # no file descriptor (io.UnsupportedOperation is an OSError)
        return None


class _Lines(Progress):
    def __init__(self, run: BatchRun, stream: TextIO) -> None:
        super().__init__(run, stream)
        self._last = time.monotonic()

    def update(self, result: BatchItemResult) -> None:
        now = time.monotonic()
        if now - self._last >= PLAIN_EVERY:
            self._last = now
            print(f"atomtask: batch {self.run.target.name}: {_line(self.run)}", file=self.stream, flush=True)


def progress_for(run: BatchRun, stream: TextIO, *, quiet: bool) -> Progress:
    """The bar on a terminal, plain lines otherwise, nothing when `quiet`."""
    if quiet:
        return Progress(run, stream)
    isatty = getattr(stream, "isatty", None)
    if callable(isatty) and isatty():
        return _Bar(run, stream)
    return _Lines(run, stream)


def _figures(run: BatchRun) -> str:
    spent = run.spent
    cost = f", ${spent.cost:.4f}" if spent.cost is not None else ""
    return f"{run.failed} failed, {spent.total_tokens} tokens{cost}"


def _line(run: BatchRun) -> str:
    finished = run.done + run.failed
    ran = finished - run.resumed
    rate = ran / run.elapsed if run.elapsed > 0 else 0.0
    eta = f", ETA {run.not_run / rate:.0f}s" if rate > 0 else ""
    return f"{finished}/{run.total} finished ({_figures(run)}), {rate:.1f} items/s{eta}"


def summary_lines(run: BatchRun) -> list[str]:
    """The closing summary: done, failed by reason, tokens, cost, wall time, items/s, and how to go on."""
    ran = run.done + run.failed - run.resumed
    rate = ran / run.elapsed if run.elapsed > 0 else 0.0
    reasons = ", ".join(f"{reason} {count}" for reason, count in run.failed_by.most_common())
    failed = f"{run.failed} failed ({reasons})" if run.failed else "0 failed"
    reused = f"; {run.resumed} from the record, not run again" if run.resumed else ""
    spent = run.spent
    cost = f"${spent.cost:.4f}" if spent.cost is not None else "cost unknown"
    if run.budget.cost_unknown:
        cost = f"{cost} (`--max-cost` was not enforced: the model's prices are unknown)"
    lines = [
        f"atomtask: batch {run.batch_id or '-'} ({run.target.name} on {run.target.model}): "
        f"{run.done} done, {failed}{reused}",
        f"atomtask: {spent.total_tokens} tokens, {cost}, {run.elapsed:.1f}s, {rate:.1f} items/s",
    ]
    waiting = getattr(run, "waiting", 0)
    if waiting:
        lines.append(
            f"atomtask: {waiting} items wait in provider batches ({', '.join(getattr(run, 'provider_batches', []))}); "
            f"`atomtask batch --resume {run.batch_id}` collects them without submitting them again"
        )
    if run.stopped is not None:
        again = f" (or `atomtask batch --resume {run.batch_id}`)" if run.batch_id else ""
        lines.append(
            f"atomtask: stopped early ({run.stopped}): {run.not_run} items not run; "
            f"run the same command again{again} to run them"
        )
    elif run.failed and run.batch_id:
        lines.append(f"atomtask: `atomtask batch --resume {run.batch_id} --retry-failed` runs the failed items again")
    if run.unrecorded:
        lines.append(unrecorded_warning(run))
    return lines


def unrecorded_warning(run: BatchRun, *, first: bool = False) -> str:
    """The warning for finished items whose row the batch record could not write (`BatchRun.unrecorded`).

    `first`: the one said when the first such item finishes; else the summary's line, which counts them all.
    """
    where = str(run.record.path) if run.record is not None else "the batch record"
    if first:
        return (
            f"atomtask: warning: item {run.unrecorded[0]!r} could not be written to the batch record {where} "
            f"({run.record_error}); its result is in the output, but a re-run runs it (and pays for it) again. "
            "The batch goes on; the summary counts the items not recorded."
        )
    count = len(run.unrecorded)
    items = "1 finished item" if count == 1 else f"{count} finished items"
    return (
        f"atomtask: warning: {items} could not be written to the batch record {where} ({run.record_error}): "
        "they are in the output, but a re-run runs (and pays for) them again; move the record aside or pass "
        "another `--db`."
    )


EXIT_INTERRUPTED = 130
INTERRUPTED = "interrupted (Ctrl-C)"
# What `--resume BATCH_ID` takes from the record when the command line does not say it again.
_SPEC_KEYS = (
    "name",
    "input",
    "format",
    "output",
    "id_field",
    "ordered",
    "model",
    "base_url",
    "server",
    "setting",
    "temperature",
    "max_tokens",
    "top_p",
    "seed",
    "timeout",
    "retries",
    "repair",
    "concurrency",
    "rpm",
    "tpm",
    "templates",
    "provider_batch",
    "poll_interval",
    "reask",
    "batch_size",
)


def prepare(args: argparse.Namespace) -> argparse.Namespace:
    """Fill in a `--resume BATCH_ID` batch's recorded arguments; refuse a batch without a name or input."""
    from atomtask.batch._record import BatchRecord
    from atomtask.errors import UsageError

    if args.resume:
        record = BatchRecord(_record_db(args))
        try:
            spec = record.spec(args.resume)
        finally:
            record.close()
        for key in _SPEC_KEYS:
            given = getattr(args, key, None)
            # `is`, not `in (None, [], False)`: `--retries 0` or `--temperature 0` on the command line wins.
            if (given is None or given is False or given == []) and spec.get(key) is not None:
                setattr(args, key, spec[key])
        args.batch_id = args.resume
    if not args.name:
        raise UsageError("`atomtask batch` needs a template or workflow NAME (or `--resume BATCH_ID`).")
    if not args.input:
        raise UsageError("`atomtask batch` needs `--input FILE` (JSONL or CSV), or `--input -` for stdin.")
    if args.output not in (None, "-") and not Path(args.output).parent.is_dir():
        raise UsageError(f"Cannot write {args.output!r}: its folder does not exist; create it or fix `--output`.")
    if args.concurrency is not None and args.concurrency < 1:
        raise UsageError(f"`--concurrency` must be at least 1, not {args.concurrency}.")
    if getattr(args, "batch_size", None) is not None and args.batch_size < 1:
        raise UsageError(f"`--batch-size` must be at least 1, not {args.batch_size}.")
    provider_only = [flag for flag in ("reask", "batch_size", "poll_interval", "max_wait") if getattr(args, flag, None)]
    if provider_only and not getattr(args, "provider_batch", False):
        flags = ", ".join(f"`--{flag.replace('_', '-')}`" for flag in provider_only)
        raise UsageError(f"{flags} only apply with `--provider-batch`: add it, or drop them.")
    if getattr(args, "engine", "local") == "dbos":
        if args.tpm:
            raise UsageError("`--tpm` is not available with `--engine dbos` (the queue limits items: use `--rpm`).")
        if args.rpm is not None and args.rpm < 1:
            raise UsageError(
                f"`--rpm` must be at least 1 with `--engine dbos` (the queue counts whole items), not {args.rpm}."
            )
    return args


def batch_id_for(name: str, identity: str, fingerprint: str, model: str) -> str:
    """`NAME-<10 hex digits>` from what makes a re-run the same batch: the name, the input, the fingerprint, the model.

    The fingerprint (`target.resolve_target`) holds the template, the model settings and the endpoint.
    """
    digest = hashlib.sha256("\x00".join((name, identity, fingerprint, model)).encode()).hexdigest()[:10]
    return f"{name}-{digest}"


def run_command(
    system: BatchHost,
    args: argparse.Namespace,
    out: TextIO,
    err: TextIO,
    stdin: TextIO | None = None,
    *,
    options: CallOptions,
) -> int:
    """Run the batch `args` describe on `system` with the `options` its flags ask; the exit status (0, 1, 130)."""
    from atomtask.batch._items import read_items
    from atomtask.batch._pacing import Pacer, batch_budget
    from atomtask.batch._record import BatchRecord
    from atomtask.batch._run import BatchRun
    from atomtask.batch._target import check_items, resolve_target

    items, source = read_items(args.input, id_field=args.id_field, fmt=args.format, stdin=stdin)
    target = resolve_target(system, args.name, options)
    # Every item's inputs, checked before anything runs: a bad line is a usage error naming it (exit 2).
    given = ((item.line, item.inputs) for item in items)
    check_items(system, target, given, file=source.name, id_field=args.id_field or "id")
    if getattr(args, "dry_run", False):  # what it would cost; nothing is recorded, no model is called
        return _dry_run(system, args, items, options, out)
    batch_id = args.batch_id or batch_id_for(args.name, source.identity, target.fingerprint, target.model)
    record = BatchRecord(_record_db(args))
    try:
        spec = {key: getattr(args, key, None) for key in _SPEC_KEYS}
        for key in ("input", "output"):  # absolute, so `--resume` works from any folder
            if spec[key] not in (None, "-"):
                spec[key] = str(Path(str(spec[key])).resolve())
        if spec["templates"]:
            spec["templates"] = [str(Path(path).resolve()) for path in spec["templates"]]
        record.start(batch_id, args.name, spec)
        run_class: Any = BatchRun
        if getattr(args, "provider_batch", False):  # the items go through the provider's batch API
            from atomtask.batch._provider import run_class_for as provider_run_class

            run_class = provider_run_class(args)
        elif getattr(args, "engine", "local") == "dbos":  # the items run on `atomtask worker`s
            from atomtask.batch._dbos import run_class_for

            run_class = run_class_for(args, err)
        run = run_class(
            system,
            target,
            items,
            options=options,
            concurrency=args.concurrency or 8,
            pacer=Pacer(rpm=args.rpm, tpm=args.tpm),
            budget=batch_budget(max_cost=args.max_cost, max_tokens=args.max_total_tokens),
            record=record,
            batch_id=batch_id,
            retry_failed=args.retry_failed,
            id_field=args.id_field or "id",
            include_redacted=getattr(args, "include_redacted", False),
        )
        with _results_file(args.output, out) as sink:
            _drive(run, sink, err, ordered=args.ordered, quiet=args.quiet)
    finally:
        record.close()
    if not args.quiet:
        for line in summary_lines(run):
            print(line, file=err)
    elif run.unrecorded:  # `-q` hides the summary, not this
        print(unrecorded_warning(run), file=err)
    if run.stopped == INTERRUPTED:
        return EXIT_INTERRUPTED
    return 1 if run.failed or run.stopped is not None else 0


def _dry_run(system: BatchHost, args: argparse.Namespace, items: list[Any], options: CallOptions, out: TextIO) -> int:
    """`batch --dry-run`: the estimate of every item, as a table (`--json`: JSON) on stdout; exit 0."""
    import json

    from atomtask.estimate._estimate import estimate_items

    found = estimate_items(
        system,
        args.name,
        [item.inputs for item in items],
        options,
        provider_batch=getattr(args, "provider_batch", False),
        id_field=args.id_field or "id",
    )
    text = json.dumps(found.to_dict(), indent=2, ensure_ascii=False) if args.json else found.render()
    print(text, file=out)
    return 0


def _record_db(args: argparse.Namespace) -> str | None:
    """The batch record's file: `--db`, unless `--db` is the DBOS engine's store (then the default file)."""
    return None if getattr(args, "engine", "local") == "dbos" else args.db


@contextlib.contextmanager
def _results_file(output: str | None, out: TextIO) -> Iterator[TextIO]:
    if output in (None, "-"):
        yield out
        return
    try:
        sink = open(output, "w", encoding="utf-8", buffering=1)  # noqa: SIM115 - closed below; line-buffered
    except OSError as exc:
        from atomtask.errors import UsageError

        raise UsageError(f"Cannot write {output!r} ({exc.strerror}); fix `--output`.") from None
    try:
        yield sink
    finally:
        sink.close()


class _Writer:
    """Writes results as they come, or (`ordered`) each as soon as every item before it is written."""

    def __init__(self, sink: TextIO, *, ordered: bool) -> None:
        self.sink, self.ordered = sink, ordered
        self._next = 0
        self._held: dict[int, str] = {}

    def write(self, result: BatchItemResult) -> None:
        line = result.json_line()
        if not self.ordered:
            self.sink.write(line + "\n")
            return
        self._held[result.index] = line
        while self._next in self._held:
            self.sink.write(self._held.pop(self._next) + "\n")
            self._next += 1

    def close(self, total: int) -> None:
        """Write what is held behind items that never finished (a stopped batch), still in input order."""
        for index in sorted(self._held):
            self.sink.write(self._held[index] + "\n")
        self._held.clear()
        self.sink.flush()


def _drive(run: BatchRun, sink: TextIO, err: TextIO, *, ordered: bool, quiet: bool) -> None:
    import asyncio

    from atomtask.handlers._blocking import run_blocking

    writer = _Writer(sink, ordered=ordered)
    progress = progress_for(run, err, quiet=quiet)

    async def drive() -> None:
        loop = asyncio.get_running_loop()
        main = asyncio.current_task()

        def interrupted() -> None:
            if run.stopped == INTERRUPTED and main is not None:
                main.cancel()  # the second Ctrl-C: abandon the items in flight
            run.stopped = INTERRUPTED  # the first: take no more items (over a budget stop: the exit says 130)

        handled = False
        with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):  # not the main thread
            loop.add_signal_handler(signal.SIGINT, interrupted)
            handled = True
        try:
            warned = False
            async for result in run:
                writer.write(result)
                progress.update(result)
                if run.unrecorded and not warned:  # once: the summary counts them all
                    warned = True
                    progress.warn(unrecorded_warning(run, first=True))
        except asyncio.CancelledError:
            if run.stopped != INTERRUPTED:
                raise
        finally:
            if handled:
                loop.remove_signal_handler(signal.SIGINT)

    try:
        run_blocking(drive())
    except KeyboardInterrupt:  # no signal handler could be installed: the interrupt ends the run at once
        run.stop(INTERRUPTED)
    finally:
        writer.close(run.total)
        progress.close()
        if sink is sys.stdout:
            sink.flush()
