"""Corrupt a real durable-run store in many ways and check that reading it only ever ends in atomtask's typed errors.

    .venv/bin/python scripts/fuzz_runs.py --cases 3000 [--seed 1] [--kind column|flip|truncate|page]

A base store is made once with real runs (DBOS on SQLite): COMPLETE, FAILED, PENDING (killed mid-run),
WAITING (at an approval), and a FAILED run resumed in a second segment (`RUN_ID~2`). Each case copies it and
breaks the copy one way: garbage in one column of one of a run's rows in each DBOS table (`column`), random
bytes flipped in the file (`flip`), a page overwritten (`page`), the file cut short (`truncate`). Then it
reads it as a user would: `list_runs`, `show` of every run, `resume` of the broken run, `atomtask workflow
runs`. Every call must end normally, with an `AtomTaskError`, or in a CORRUPT line; anything else escaped. For
a `column` case, every run but the broken one must be listed as in the base store.

The test suite runs a small deterministic slice (`tests/runs/test_corrupt_store.py`).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import os
import random
import shutil
import signal
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

FLOWS = """\
name: say
params: {word: str}
instructions: "Repeat {{word}}"
---
name: plain
state:
  - {name: word, type: str}
  - {name: one, type: str}
  - {name: two, type: str}
steps:
  - {id: first, task: say, inputs: {word: "{{state.word}}"}, output: one}
  - {id: second, task: say, inputs: {word: "{{state.one}}"}, output: two}
---
name: reviewed
state:
  - {name: word, type: str}
  - {name: one, type: str}
  - {name: ok, type: bool}
  - {name: two, type: str, default: "-"}
steps:
  - {id: first, task: say, inputs: {word: "{{state.word}}"}, output: one}
  - {id: review, type: approval, message: "Publish {{state.one}}?", output: ok, timeout: 1s, on_timeout: reject}
  - {id: second, task: say, inputs: {word: "{{state.one}}"}, output: two, when: "state.ok"}
"""

#: The runs of the base store and their status there.
BASE_RUNS = {"done": "COMPLETE", "failed": "FAILED", "crashed": "PENDING", "waiting": "WAITING", "retried": "COMPLETE"}

#: The DBOS tables that hold a run's rows, and the column naming the run's workflow.
TABLES = {
    "workflow_status": "workflow_uuid",
    "operation_outputs": "workflow_uuid",
    "workflow_events": "workflow_uuid",
    "workflow_events_history": "workflow_uuid",
    "notifications": "destination_uuid",
}

GARBAGE: list[Any] = [
    None,
    "",
    "{",
    "null",
    "[]",
    "{}",
    '"text"',
    "not json at all",
    "\x00\x01\x02",
    b"\xff\xfe\x00garbage",
    b"\x80\x04\x95",
    12345,
    -1,
    2**62,
    1.5,
    '{"args": []}',
    '{"args": [{"workflow": 1}]}',
    '{"positionalArgs": [{"workflow": "plain", "limits": "many"}], "namedArgs": {}}',
    '{"positionalArgs": "x"}',
    '{"message": 1}',
    "gASVAAAA",
    "py_pickle",
    "portable_json",
    "custom_serializer",
    "SUCCESS",
    "ERROR",
    "PENDING",
    "x" * 5000,
    '{"step": "first"}',
    '{"status": "COMPLETE", "state": 3}',
]


class Killed(BaseException):
    """Stands for kill -9: nothing of the run's code sees it, nothing is recorded for the step."""


class Hang(Exception):
    """A call that did not end within the case's time."""


@dataclass
class Tally:
    """What the cases came to: calls by outcome, escaped exceptions by class, an example of each."""

    cases: int = 0
    calls: int = 0
    outcomes: collections.Counter[str] = field(default_factory=collections.Counter)
    escaped: collections.Counter[str] = field(default_factory=collections.Counter)
    examples: dict[str, str] = field(default_factory=dict)

    def note(self, outcome: str, case: str = "", exc: BaseException | None = None) -> None:
        self.calls += 1
        self.outcomes[outcome] += 1
        if outcome.startswith(("escaped", "wrong", "hang")) and outcome not in self.examples:
            self.examples[outcome] = (
                f"{case}: {type(exc).__name__ + ': ' if exc else ''}{str(exc)[:300] if exc else ''}"
            )
        if outcome.startswith("escaped:"):
            self.escaped[outcome.removeprefix("escaped:")] += 1

    def report(self) -> str:
        typed = sum(n for o, n in self.outcomes.items() if o.startswith("typed:"))
        lines = [
            f"cases: {self.cases}, calls: {self.calls}, typed errors: {typed}, "
            f"escaped: {sum(self.escaped.values())}, wrong listings: {self.outcomes['wrong:listing']}, "
            f"hangs: {self.outcomes['hang']}"
        ]
        lines += [f"  {outcome}: {n}" for outcome, n in sorted(self.outcomes.items())]
        lines += [f"  example {outcome}: {text}" for outcome, text in sorted(self.examples.items())]
        return "\n".join(lines)


def _echo() -> Any:
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(str(messages[-1].parts[-1].content).removeprefix("Repeat "))])  # type: ignore[union-attr]

    return FunctionModel(answer)


def _failing(at: int, *, killed: bool = False) -> Any:
    from pydantic_ai.exceptions import ModelHTTPError
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    calls: list[int] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls.append(1)
        if len(calls) >= at:
            if killed:
                raise Killed()
            raise ModelHTTPError(503, "fake", body="service unavailable")
        return ModelResponse(parts=[TextPart("one")])

    return FunctionModel(answer)


def system(folder: Path) -> Any:
    from atomtask import TaskSystem

    (folder / "flows.yaml").write_text(FLOWS, encoding="utf-8")
    return TaskSystem(templates=folder / "flows.yaml")


def build_base(folder: Path) -> Path:
    """A store with every kind of run (`BASE_RUNS`), its WAL folded in, taken from no executor (nothing recovers)."""
    from atomtask.runs import _store

    folder.mkdir(parents=True, exist_ok=True)
    tasks = system(folder)
    db = str(folder / "work.sqlite")
    tasks.run_workflow("plain", {"word": "w"}, run_id="done", db=db, model=_echo())
    tasks.run_workflow("plain", {"word": "w"}, run_id="failed", db=db, model=_failing(2))
    tasks.run_workflow("plain", {"word": "w"}, run_id="retried", db=db, model=_failing(2))
    tasks.resume_workflow("retried", db=db, model=_echo())
    with contextlib.suppress(Killed):
        tasks.run_workflow("plain", {"word": "w"}, run_id="crashed", db=db, model=_failing(2, killed=True))
    base = folder / "base.sqlite"
    waiting = threading.Event()

    def on_waiting(run_id: str, wait: dict[str, Any]) -> None:
        with contextlib.closing(sqlite3.connect(db)) as source, contextlib.closing(sqlite3.connect(base)) as copy:
            source.backup(copy)  # the store as it is while the run waits
        waiting.set()

    tasks.run_workflow("reviewed", {"word": "w"}, run_id="waiting", db=db, model=_echo(), on_waiting=on_waiting)
    assert waiting.is_set()
    _store.shutdown()
    with contextlib.closing(sqlite3.connect(base, isolation_level=None)) as connection:
        connection.execute("UPDATE workflow_status SET executor_id = 'fuzz-builder'")
        connection.execute("PRAGMA journal_mode=DELETE")  # one file: what a case breaks is all there is
    listed = {info.run_id: info.status for info in tasks.workflow_runs(db=str(base))}
    _store.shutdown()
    with contextlib.closing(sqlite3.connect(base, isolation_level=None)) as connection:
        connection.execute("PRAGMA journal_mode=DELETE")
    assert listed == BASE_RUNS, listed
    return base


@contextlib.contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    def ring(signum: int, frame: FrameType | None) -> None:
        raise Hang(f"no end within {seconds}s")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _run_rows(connection: sqlite3.Connection, table: str, column: str, run_id: str) -> list[tuple[Any, ...]]:
    return connection.execute(
        f"SELECT rowid, * FROM {table} WHERE {column} = ? OR {column} LIKE ?", [run_id, run_id + "~%"]
    ).fetchall()


def break_column(path: Path, rng: random.Random) -> tuple[str, str]:
    """Garbage in one column of one row of a run: returns (the run, what was done)."""
    run_id = rng.choice(sorted(BASE_RUNS))
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as connection:
        choices = []
        for table, key in TABLES.items():
            with contextlib.suppress(sqlite3.OperationalError):  # a table this DBOS version does not have
                rows = _run_rows(connection, table, key, run_id)
                columns = [d[1] for d in connection.execute(f"PRAGMA table_info({table})")]
                choices += [(table, row[0], column) for row in rows for column in columns]
        table, rowid, column = rng.choice(choices)
        value = rng.choice(GARBAGE)
        try:
            connection.execute(f'UPDATE {table} SET "{column}" = ? WHERE rowid = ?', [value, rowid])
        except sqlite3.IntegrityError:  # NOT NULL, a key already used: the schema stops it, no corruption
            value = "constraint"
    return run_id, f"{table}.{column}={str(value)[:30]!r}"


def break_file(path: Path, rng: random.Random, kind: str) -> tuple[None, str]:
    data = bytearray(path.read_bytes())
    if kind == "truncate":
        size = rng.randrange(0, len(data))
        path.write_bytes(bytes(data[:size]))
        return None, f"truncated to {size} of {len(data)}"
    if kind == "page":
        page = int.from_bytes(data[16:18], "big") or 65536
        start = rng.randrange(0, len(data) // page) * page
        data[start : start + page] = rng.randbytes(page)
        path.write_bytes(bytes(data))
        return None, f"page at {start} overwritten"
    flips = []
    for _ in range(rng.randint(1, 8)):
        at = rng.randrange(len(data))
        data[at] ^= rng.randint(1, 255)
        flips.append(at)
    path.write_bytes(bytes(data))
    return None, f"bytes flipped at {flips}"


def _outcome(exc: BaseException) -> str:
    from atomtask.errors import AtomTaskError

    if isinstance(exc, Hang):
        return "hang"
    if isinstance(exc, AtomTaskError):
        return f"typed:{type(exc).__name__}"
    return f"escaped:{type(exc).__name__}"


def run_case(tally: Tally, base: Path, folder: Path, rng: random.Random, kind: str, number: int) -> None:
    """Break a copy of `base` one way (`kind`), read it every way, and tally each call's outcome."""
    from atomtask.cli._main import main
    from atomtask.handlers._blocking import run_blocking
    from atomtask.runs import _durable as durable
    from atomtask.runs import _store

    path = folder / f"case-{number}.sqlite"
    shutil.copyfile(base, path)
    broken, what = break_column(path, rng) if kind == "column" else break_file(path, rng, kind)
    case = f"#{number} {kind} {broken or ''} {what}"
    tasks = system(folder)
    tally.cases += 1
    try:
        calls: list[tuple[str, Any]] = [("list", lambda: tasks.workflow_runs(db=str(path)))]
        calls += [(f"show {r}", lambda r=r: run_blocking(durable.show(r, db=str(path)))) for r in sorted(BASE_RUNS)]
        target = broken or rng.choice(sorted(BASE_RUNS))
        calls.append(("resume", lambda: tasks.resume_workflow(target, db=str(path), model=_echo())))
        for name, call in calls:
            try:
                with _deadline(60):
                    value = call()
            except Exception as exc:
                tally.note(_outcome(exc), f"{case} [{name}]", exc)
                continue
            if name == "list":
                listed = {info.run_id: info.status for info in value}
                others = {r: s for r, s in BASE_RUNS.items() if r != broken}
                if kind == "column" and {r: listed.get(r) for r in others} != others:
                    tally.note("wrong:listing", f"{case} [{name}]", ValueError(str(listed)))
                else:
                    tally.note("corrupt-listed" if "CORRUPT" in listed.values() else "ok")
            else:
                tally.note("ok")
        out, err = io.StringIO(), io.StringIO()
        with _deadline(60):
            code = main(["workflow", "runs", "--db", str(path), "--templates", str(folder)], stdout=out, stderr=err)
        if "unexpected" in err.getvalue():
            tally.note("escaped:cli", case, RuntimeError(err.getvalue().strip()))
        else:
            tally.note("ok" if code == 0 else "typed:cli")
    finally:
        _store.shutdown()
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)


def fuzz(cases: int, seed: int, kinds: list[str], folder: Path, base: Path | None = None) -> Tally:
    """Run `cases` cases (kinds in turn), reproducibly from `seed`."""
    rng = random.Random(seed)
    base = base or build_base(folder / "base")
    tally = Tally()
    for number in range(cases):
        run_case(tally, base, folder, rng, kinds[number % len(kinds)], number)
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kind", action="append", choices=["column", "flip", "page", "truncate"])
    args = parser.parse_args()
    os.environ.setdefault("ATOMTASK_HOME", tempfile.mkdtemp(prefix="fuzz-home-"))
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fuzz-runs-") as folder:
        tally = fuzz(args.cases, args.seed, args.kind or ["column", "column", "flip", "page", "truncate"], Path(folder))
    print(tally.report())
    print(f"({time.monotonic() - started:.0f}s)")


if __name__ == "__main__":
    main()
