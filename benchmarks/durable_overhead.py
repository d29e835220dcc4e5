"""What durability costs one `atomtask workflow run` command: the same run durable (DBOS) and plain (`--no-durable`).

Each command is a fresh process on the embedded `test` model (no network), so the difference is
what a user waits for: importing DBOS, launching it on the SQLite run store, and one checkpoint per
step. The two kinds are interleaved so both see the same machine noise. Prints the median wall time of
each, the difference (the target: at most 0.3 s) and the ratio.

    python benchmarks/durable_overhead.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FLOW = """\
name: say
params: {word: str}
instructions: "Repeat {{word}}"
---
name: echo_twice
state:
  - {name: word, type: str}
  - {name: said, type: str}
  - {name: again, type: str}
steps:
  - {id: say, task: say, inputs: {word: "{{state.word}}"}, output: said}
  - {id: again, task: say, inputs: {word: "{{state.said}}"}, output: again}
"""

ATOMTASK = str(Path(sys.executable).parent / "atomtask")


def _timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="commands of each kind (default 7)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "flows.yaml").write_text(FLOW, encoding="utf-8")
        env = {**os.environ, "ATOMTASK_HOME": str(Path(folder) / "home"), "PYDANTIC_AI_NO_BANNER": "1"}
        env.pop("ATOMTASK_DURABLE", None)
        argv = [ATOMTASK, "workflow", "run", "echo_twice", "-i", "word=w", "--model", "test", "--templates", folder]
        _timed([*argv, "--no-durable"], env)  # warm the file cache and bytecode
        durable: list[float] = []
        plain: list[float] = []
        for _ in range(args.runs):
            durable.append(_timed([*argv, "--durable"], env))
            plain.append(_timed([*argv, "--no-durable"], env))
    d, p = statistics.median(durable), statistics.median(plain)
    print(f"durable (DBOS, SQLite store): {d:.2f} s per command (median of {args.runs})")
    print(f"plain (--no-durable):         {p:.2f} s per command")
    print(f"durability costs {d - p:+.2f} s per command (target <= 0.30 s; ratio {d / p:.2f}x)")


if __name__ == "__main__":
    main()
