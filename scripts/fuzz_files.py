"""Fuzz the files atomtask reads back: damage real ones and count how each attempt to use them ends.

    python scripts/fuzz_files.py                    # 2,000 trials of each kind, seed 0
    python scripts/fuzz_files.py --kind cache --trials 500 --seed 7

Each kind starts from a real file: a response cache (`cache.sqlite3`) filled by real cached calls, a memory
store (`memory.sqlite3`) of documents, the shipped cases files (`templates/tests/*.cases.yaml`), and the
shipped template and workflow YAML files. A trial flips bits, truncates, overwrites a span with random
bytes, zeroes a page or inserts a control character (NUL, DEL, ...), then uses the damaged copy as a user
would: a `TaskSystem(cache=True, ...)` and a cached call, then `atomtask cache stats`; the store's reads and a
write; `read_case_file` and the cases' checks against their templates; `TaskSystem(templates=[...])`.

Each trial ends as one of: `ok` (it worked: a hit or a miss, the documents read, the file read), `typed
<Class>` (an atomtask error, or a FAILED result with its reason), or `escaped <Class>` (anything else: a
defect). The counts print as a table, and `escaped` ones with an example each; the exit status is 1 when
any trial escaped. The same trials run for a given seed, so `tests/` runs a small slice as a test.
"""

from __future__ import annotations

import argparse
import collections
import functools
import io
import random
import shutil
import sqlite3
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "templates"
KINDS = ("cache", "memory", "cases", "yaml")
CONTROL = ("\x00", "\x01", "\x07", "\x1b", "\x7f", "\x85", "\ufeff", "\ufffe", "\udcff")

#: Outcomes of one kind: "ok", "typed <Class>", "escaped <Class>" -> count, and one example per escaped class.
Tally = collections.Counter[str]


def mutate(data: bytes, rng: random.Random, *, text: bool) -> bytes:
    """`data` damaged one way, chosen by `rng`: bits flipped, cut short, a span garbled, a page zeroed, a control
    character (text files) inserted."""
    ways = ["flip", "truncate", "garble", "zero_page"] + (["control", "control"] if text else [])
    way = rng.choice(ways)
    out = bytearray(data)
    if way == "flip":
        for _ in range(rng.randint(1, 8)):
            at = rng.randrange(len(out))
            out[at] ^= 1 << rng.randrange(8)
    elif way == "truncate":
        del out[rng.randrange(len(out)) :]
    elif way == "garble":
        at = rng.randrange(len(out))
        size = rng.randint(1, 64)
        out[at : at + size] = rng.randbytes(size)
    elif way == "zero_page":
        page = 4096 if not text else 64
        at = rng.randrange(max(1, len(out) // page)) * page
        out[at : at + page] = bytes(len(out[at : at + page]))
    else:
        at = rng.randrange(len(out) + 1)
        char = rng.choice(CONTROL).encode("utf-8", "surrogatepass")
        out[at:at] = char
    return bytes(out)


def _outcome(run: Callable[[], Any]) -> tuple[str, str | None]:
    """How `run()` ended: ("ok" | "typed X" | "escaped X", the traceback of an escaped exception)."""
    from atomtask.errors import AtomTaskError

    try:
        said = run()
    except AtomTaskError as exc:
        return f"typed {type(exc).__name__}", None
    except Exception as exc:  # counting what escapes is the point
        return f"escaped {type(exc).__name__}", traceback.format_exc(limit=-4)
    return (said if isinstance(said, str) else "ok"), None


# --- the response cache ------------------------------------------------------------------------------------


def _contact_system(model: Any, cache_path: Path) -> Any:
    from atomtask import OutputFormat, ParamSpec, TaskSystem, Template
    from pydantic import BaseModel

    class Contact(BaseModel):
        name: str
        email: str | None = None

    system = TaskSystem(model=model, cache=True, cache_path=cache_path)
    system.models.register(Contact)
    system.register(
        Template(
            name="extract",
            params={"text": ParamSpec(type="str")},
            instructions="Extract: {{text}}",
            output_format=OutputFormat(type="json", schema="Contact"),
        )
    )
    return system


def _answer_model() -> Any:
    import json

    from pydantic_ai.messages import ModelResponse, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    def respond(messages: Any, info: Any) -> ModelResponse:
        return ModelResponse(
            parts=[ToolCallPart(info.output_tools[0].name, json.dumps({"name": "Ada", "email": "a@x"}))]
        )

    return FunctionModel(respond, model_name="fuzz")


INPUTS = [f"person number {n}" for n in range(12)]


def cache_seed(folder: Path) -> bytes:
    """A real cache file: a dozen answers stored by cached calls, checkpointed into the main file."""
    path = folder / "seed-cache.sqlite3"
    system = _contact_system(_answer_model(), path)
    for text in INPUTS:
        system.execute("extract", {"text": text}).unwrap()
    system._cache.store.close()  # the script needs the file whole, its WAL merged
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.execute("PRAGMA journal_mode=DELETE")
    return path.read_bytes()


def cache_trial(damaged: bytes, folder: Path, rng: random.Random) -> Iterator[Callable[[], Any]]:
    path = folder / "cache.sqlite3"
    for stale in folder.glob("cache.sqlite3*"):
        stale.unlink()
    path.write_bytes(damaged)
    text = rng.choice(INPUTS)

    def call() -> str:
        system = _contact_system(_answer_model(), path)
        result = system.execute("extract", {"text": text})
        try:
            if not result.ok:
                return f"typed FAILED {result.error.reason.value if result.error else '?'}"
            return "ok"
        finally:
            system._cache.store.close()

    def stats() -> str:
        from atomtask.cli import main

        out, err = io.StringIO(), io.StringIO()
        old = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = out, err
        try:
            status = main(["cache", "stats", "--db", str(path)])
        finally:
            sys.stdout, sys.stderr = old
        if "unexpected" in err.getvalue():
            line = err.getvalue().strip().splitlines()[0]
            raise RuntimeError(f"atomtask cache stats: {line}")
        return "ok" if status == 0 else f"typed exit {status}"

    yield call
    yield stats


# --- the memory store --------------------------------------------------------------------------------------

WORDS = ("refund", "invoice", "shipping", "parcel", "delay", "warranty", "contract", "signature", "address")


def memory_seed(folder: Path) -> bytes:
    from atomtask.memory import DocumentStore

    path = folder / "seed-memory.sqlite3"
    rng = random.Random(1)
    store = DocumentStore(path)
    store.add_many(
        (f"doc-{n}", " ".join(rng.choice(WORDS) for _ in range(40)), {"n": n, "tags": ["a", "b"]}) for n in range(30)
    )
    store.close()
    return path.read_bytes()


def memory_trial(damaged: bytes, folder: Path, rng: random.Random) -> Iterator[Callable[[], Any]]:
    from atomtask.memory import DocumentStore

    path = folder / "memory.sqlite3"
    for stale in folder.glob("memory.sqlite3*"):
        stale.unlink()
    path.write_bytes(damaged)
    word = rng.choice(WORDS)

    def use() -> None:
        store = DocumentStore(path)
        try:
            len(store)
            store.ids()
            store.get(f"doc-{rng.randrange(30)}")
            store.search(word)
            list(store)
            store.add("new", f"a new {word} document")
            store.remove("doc-3")
        finally:
            store.close()

    yield use


# --- cases files and declaration YAML ----------------------------------------------------------------------


@functools.cache
def _cases_system() -> Any:
    """The shipped templates, which the damaged cases are checked against (loaded once)."""
    from atomtask import TaskSystem

    return TaskSystem(templates=[TEMPLATES])


def cases_trial(damaged: bytes, folder: Path, rng: random.Random) -> Iterator[Callable[[], Any]]:
    from atomtask.template_tests._cases import read_case_file
    from atomtask.template_tests._replay import prepare

    path = folder / "tests" / "fuzzed.cases.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(damaged)

    def read() -> None:
        import attrs

        file = read_case_file(path)
        prepare(attrs.evolve(file, templates=TEMPLATES), _cases_system())

    yield read


def yaml_trial(damaged: bytes, folder: Path, rng: random.Random, name: str) -> Iterator[Callable[[], Any]]:
    from atomtask import TaskSystem

    target = folder / "decl"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir()
    shutil.copy(TEMPLATES / "schemas.yaml", target / "schemas.yaml")
    shutil.copy(TEMPLATES / "Event.json", target / "Event.json")
    (target / name).write_bytes(damaged)

    def load() -> None:
        TaskSystem(templates=[target])

    yield load


YAML_FILES = ("extract_contact.yaml", "support_triage.yaml", "article_writer.yaml", "classify_ticket.yaml")


def fuzz(kind: str, trials: int, seed: int) -> tuple[Tally, dict[str, str]]:
    """Run `trials` damaged copies of `kind`'s files; the outcomes counted, and one traceback per escaped class."""
    import logging
    import warnings

    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    rng = random.Random(seed)
    tally: Tally = collections.Counter()
    examples: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix=f"fuzz-{kind}-") as tmp:
        folder = Path(tmp)
        seeds: list[tuple[str, bytes]]
        if kind == "cache":
            seeds = [("cache", cache_seed(folder))]
        elif kind == "memory":
            seeds = [("memory", memory_seed(folder))]
        elif kind == "cases":
            seeds = [(p.name, p.read_bytes()) for p in sorted((TEMPLATES / "tests").glob("*.cases.yaml"))]
        else:
            seeds = [(name, (TEMPLATES / name).read_bytes()) for name in YAML_FILES]
        for _ in range(trials):
            name, original = rng.choice(seeds)
            damaged = mutate(original, rng, text=kind in ("cases", "yaml"))
            if kind == "cache":
                runs = cache_trial(damaged, folder, rng)
            elif kind == "memory":
                runs = memory_trial(damaged, folder, rng)
            elif kind == "cases":
                runs = cases_trial(damaged, folder, rng)
            else:
                runs = yaml_trial(damaged, folder, rng, name)
            for run in runs:
                said, trace = _outcome(run)
                tally[said] += 1
                if trace is not None:
                    examples.setdefault(said, trace)
    logging.disable(logging.NOTSET)
    return tally, examples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--kind", choices=(*KINDS, "all"), default="all")
    parser.add_argument("--trials", type=int, default=2000, help="damaged copies per kind (default 2000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-q", "--quiet", action="store_true", help="no example tracebacks")
    args = parser.parse_args(argv)
    escaped = 0
    for kind in KINDS if args.kind == "all" else (args.kind,):
        tally, examples = fuzz(kind, args.trials, args.seed)
        print(f"{kind}: {args.trials} damaged files, {sum(tally.values())} uses")
        for said, count in sorted(tally.items(), key=lambda item: (-item[1], item[0])):
            print(f"  {count:6d}  {said}")
        escaped += sum(n for said, n in tally.items() if said.startswith("escaped"))
        if not args.quiet:
            for said, trace in examples.items():
                print(f"--- {kind}: {said}\n{trace}")
    print(f"escaped: {escaped}")
    return 1 if escaped else 0


if __name__ == "__main__":
    sys.exit(main())
