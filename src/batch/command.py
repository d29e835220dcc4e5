"""`atomtask batch`: read the items, run them through `BatchRun`, write one JSON line per item, sum it up.

The results file is rebuilt on every run: the items already in the record come first (or in their
input place with `--ordered`), then each item as it finishes, so the file holds one line per finished
item and none twice, whatever happened to the run before. The first Ctrl-C stops taking items and
lets the ones in flight finish (exit 130); a second one abandons them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import signal
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

from atomtask.batch.engine import BatchRun
from atomtask.batch.items import read_items
from atomtask.batch.pacing import Budget, Pacer
from atomtask.batch.progress import progress_for, summary_lines
from atomtask.batch.record import BatchRecord
from atomtask.batch.target import BatchHost, check_items, resolve_target
from atomtask.system.batch_results import BatchItemResult
from atomtask.system.errors import UsageError

__all__ = ["EXIT_INTERRUPTED", "batch_id_for", "prepare", "run_command"]

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
    "setting",
    "timeout",
    "concurrency",
    "rpm",
    "tpm",
    "templates",
    "provider_batch",
    "poll_interval",
)


def prepare(args: argparse.Namespace) -> argparse.Namespace:
    """Fill in a `--resume BATCH_ID` batch's recorded arguments; refuse a batch without a name or input."""
    if args.resume:
        record = BatchRecord(_record_db(args))
        try:
            spec = record.spec(args.resume)
        finally:
            record.close()
        for key in _SPEC_KEYS:
            if getattr(args, key, None) in (None, [], False) and spec.get(key) is not None:
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
    model_settings: Mapping[str, Any] | None = None,
) -> int:
    """Run the batch `args` describe on `system`; the exit status (0, 1, 130)."""
    items, source = read_items(args.input, id_field=args.id_field, fmt=args.format, stdin=stdin)
    target = resolve_target(system, args.name, args.model, model_settings=model_settings)
    # Every item's inputs, checked before anything runs: a bad line is a usage error naming it (exit 2).
    given = ((item.line, item.inputs) for item in items)
    check_items(system, target, given, file=source.name, id_field=args.id_field or "id")
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
        options: dict[str, Any] = {"model": args.model, "model_settings": model_settings}
        run_class: Any = BatchRun
        if getattr(args, "provider_batch", False):  # the items go through the provider's batch API
            from atomtask.batch.provider_run import run_class_for as provider_run_class

            run_class = provider_run_class(args)
        elif getattr(args, "engine", "local") == "dbos":  # the items run on `atomtask worker`s
            from atomtask.batch.dbos_queue import run_class_for

            run_class = run_class_for(args)
        run = run_class(
            system,
            target,
            items,
            options=options,
            concurrency=args.concurrency or 8,
            pacer=Pacer(rpm=args.rpm, tpm=args.tpm),
            budget=Budget(max_cost=args.max_cost, max_tokens=args.batch_max_tokens),
            record=record,
            batch_id=batch_id,
            retry_failed=args.retry_failed,
            id_field=args.id_field or "id",
        )
        with _results_file(args.output, out) as sink:
            _drive(run, sink, err, ordered=args.ordered, quiet=args.quiet)
    finally:
        record.close()
    if not args.quiet:
        for line in summary_lines(run):
            print(line, file=err)
    if run.stopped == INTERRUPTED:
        return EXIT_INTERRUPTED
    return 1 if run.failed or run.stopped is not None else 0


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
    from atomtask.handlers.blocking import run_blocking

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
            async for result in run:
                writer.write(result)
                progress.update(result)
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
