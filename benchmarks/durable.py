"""What durable recording costs per step: a workflow run with and without checkpoints, against bare pydantic-ai.

Four ways to run the same STEPS text steps on a FunctionModel (microseconds per answer, so this is
the floor of a step's own cost; a real provider takes hundreds of milliseconds), interleaved so all
see the same machine noise:

- `bare`: STEPS sequential `Agent.run_sync` calls, no workflow at all;
- `plain`: `TaskSystem.run_workflow` without a run id (nothing recorded);
- `sqlite`: the same with a run id: one DBOS checkpoint per step in a SQLite file;
- `postgres`: the same in PostgreSQL, with `--postgres URL` (e.g. the server of tests/pg_fixture.py).

It prints the median time of each, the overhead of recording per step (durable - plain, divided by
STEPS) and the ratios, then the one-time cost a durable CLI command pays: importing DBOS and
launching it (in a fresh interpreter).

    python benchmarks/durable.py [--runs 30] [--steps 5] [--postgres postgresql://...]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import structlog
from atomtask import TaskSystem
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

SAY = 'name: say\nparams: {word: str}\ninstructions: "Repeat {{word}}"\n'


def flow(steps: int) -> str:
    fields = "\n".join(f"  - {{name: s{i}, type: str}}" for i in range(steps))
    lines = [
        f'  - {{id: step{i}, task: say, inputs: {{word: "{{{{state.s{i - 1}}}}}"}}, output: s{i}}}'
        for i in range(1, steps)
    ]
    first = '  - {id: step0, task: say, inputs: {word: "{{state.word}}"}, output: s0}'
    return f"name: chain\nstate:\n  - {{name: word, type: str}}\n{fields}\nsteps:\n{first}\n" + "\n".join(lines) + "\n"


def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart("echo")])


def timed(fn: Callable[[], object], results: list[float]) -> None:
    start = time.perf_counter()
    fn()
    results.append((time.perf_counter() - start) * 1000)


def startup_ms() -> tuple[float, float]:
    """(import dbos, launch DBOS on a new SQLite file) in a fresh interpreter, in ms."""
    code = (
        "import time, tempfile, sys\n"
        "t = time.perf_counter()\n"
        "from atomtask.runs import _durable as durable, _store as engine\n"
        "i = time.perf_counter()\n"
        "engine.launch(engine.store_url(tempfile.mkdtemp() + '/runs.sqlite'))\n"
        "print((i - t) * 1000, (time.perf_counter() - i) * 1000)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--postgres", metavar="URL", help="also measure a PostgreSQL run store")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    structlog.configure(logger_factory=structlog.ReturnLoggerFactory())

    folder = Path(tempfile.mkdtemp())
    (folder / "flows.yaml").write_text(SAY + "---\n" + flow(args.steps), encoding="utf-8")
    model = FunctionModel(answer)
    system = TaskSystem(model=model, templates=folder / "flows.yaml")
    agent = Agent(model)
    sqlite = str(folder / "runs.sqlite")

    def bare() -> None:
        for _ in range(args.steps):
            agent.run_sync("Repeat echo")

    def plain() -> None:
        assert system.run_workflow("chain", {"word": "w"}).ok

    def durable(db: str) -> Callable[[], None]:
        def run() -> None:
            assert system.run_workflow("chain", {"word": "w"}, run_id=uuid.uuid4().hex, db=db).ok

        return run

    stores = {"sqlite": sqlite, **({"postgres": args.postgres} if args.postgres else {})}
    times: dict[str, list[float]] = {name: [] for name in ("bare", "plain", *stores)}
    for store, db in stores.items():  # one store at a time: DBOS runs on one store per process
        ways = {"bare": bare, "plain": plain, store: durable(db)}
        for fn in ways.values():  # warm up: agents built, DBOS launched, tables created
            fn()
        for _ in range(args.runs):
            for name, fn in ways.items():
                timed(fn, times[name])
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(f"{args.steps} steps, {args.runs} runs each, median ms per run:")
    for name, value in medians.items():
        print(f"  {name:9} {value:9.2f} ms   ({value / args.steps:.2f} ms per step)")
    for store in ("sqlite", "postgres"):
        if store in medians:
            per_step = (medians[store] - medians["plain"]) / args.steps
            print(
                f"  {store}: recording costs {per_step:.2f} ms per step; durable/plain = "
                f"{medians[store] / medians['plain']:.2f}x, durable/bare = {medians[store] / medians['bare']:.2f}x"
            )
    print(f"  plain/bare = {medians['plain'] / medians['bare']:.2f}x")
    imported, launched = startup_ms()
    print(f"one-time cost of a durable command: import DBOS {imported:.0f} ms, launch {launched:.0f} ms")


if __name__ == "__main__":
    main()
