"""How long `atomtask check` takes, and how it grows: 100, 1,000 and 10,000 templates with schemas.

Every template names a model and a schema (five fields: reasoning, a literal, a constrained float,
an optional string, a list), so every check runs: reading, schema building, template compilation,
the W2xx rules and the provider compatibility transforms. Two layouts: a schema of its own for every
template (worst case: one Pydantic class and one JSON Schema per template), and one schema shared by
ten templates. Measured two ways:

- the `atomtask check DIR` command in a subprocess (CPU of the child from `getrusage`, and wall time),
  which includes interpreter start-up and imports (~1 s, mostly importing pydantic-ai, whose model
  profiles the provider checks read);
- `atomtask.lint.check(DIR)` alone, after a warm-up, in a fresh interpreter per size
  (`time.process_time` and wall).

Prints seconds and the growth ratio from one size to the next (linear growth: ratio ~10).
Target: 1,000 templates under one second of CPU.

    python benchmarks/check.py [--sizes 100 1000 10000] [--share 1 10] [--select E]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TEMPLATE = """\
templates:
  - name: task_{i}
    description: Classify ticket {i}.
    params:
      text: {{type: str, description: The ticket}}
      locale: {{type: str, default: en}}
    system: You classify support tickets (locale {{{{locale}}}}).
    instructions: |
      Classify this ticket:
      {{{{text}}}}
    output_format: {{type: json, schema: Verdict{s}, mode: tool}}
    model: openai-chat:gpt-4o-mini
"""

SCHEMA = """\
schemas:
  - name: Verdict{s}
    description: A verdict.
    fields:
      - name: reasoning
        type: str
        description: Why, first.
      - name: label
        type: literal["billing", "bug", "other"]
        description: The category.
      - name: confidence
        type: float
        ge: 0
        le: 1
        description: How sure.
      - name: note
        type: str?
        description: Anything else.
      - name: tags
        type: list[str]
        description: Tags.
"""


def generate(folder: Path, count: int, share: int = 1) -> None:
    """`count` templates, one file each; every `share` templates use one schema (declared in the first's file)."""
    for i in range(count):
        text = TEMPLATE.format(i=i, s=i // share)
        if i % share == 0:
            text += SCHEMA.format(s=i // share)
        (folder / f"task_{i:05d}.yaml").write_text(text, encoding="utf-8")


def time_command(folder: Path, select: list[str]) -> tuple[float, float, int]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "atomtask.cli",
            "check",
            str(folder),
            "--format",
            "json",
            *(f"--select={c}" for c in select),
        ],
        capture_output=True,
        check=False,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, done.returncode


_IN_PROCESS = """
import json, sys, time
from atomtask.lint import check
check([sys.argv[1]], select=sys.argv[3:])  # warm-up: imports and first-use caches
cpu, wall = time.process_time(), time.perf_counter()
report = check([sys.argv[2]], select=sys.argv[3:])
print(json.dumps([time.process_time() - cpu, time.perf_counter() - wall, len(report.findings)]))
"""


def time_in_process(warm: Path, folder: Path, select: list[str]) -> tuple[float, float, int]:
    """`check()` alone, after a warm-up, in a fresh interpreter (so sizes do not share a heap)."""
    done = subprocess.run(
        [sys.executable, "-c", _IN_PROCESS, str(warm), str(folder), *select], capture_output=True, text=True, check=True
    )
    cpu, wall, findings = json.loads(done.stdout)
    return cpu, wall, findings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--select", nargs="*", default=[], help="codes to check (default: all), e.g. E")
    parser.add_argument("--share", type=int, nargs="+", default=[1, 10], help="templates per schema (default: 1 10)")
    args = parser.parse_args()

    warm = Path(tempfile.mkdtemp())
    generate(warm, 5)
    empty_cpu, empty_wall, _ = time_command(warm, args.select)

    print(f"start-up: `atomtask check` on 5 templates: {empty_cpu:.3f} s CPU, {empty_wall:.3f} s wall")
    for share in args.share:
        print(f"\n{'one schema per template' if share == 1 else f'one schema per {share} templates'}:")
        header = f"{'templates':>10} {'cmd CPU s':>10} {'cmd wall s':>11} {'check CPU s':>12} {'check wall s':>13}"
        print(header + f" {'CPU growth':>11} {'findings':>9} {'exit':>5}")
        previous: float | None = None
        for size in args.sizes:
            with tempfile.TemporaryDirectory() as tmp:
                folder = Path(tmp)
                generate(folder, size, share)
                cmd_cpu, cmd_wall, code = time_command(folder, args.select)
                cpu, wall, findings = time_in_process(warm, folder, args.select)
            growth = f"{cpu / previous:.1f}x" if previous else "-"
            previous = cpu
            row = f"{size:>10} {cmd_cpu:>10.3f} {cmd_wall:>11.3f} {cpu:>12.3f} {wall:>13.3f}"
            print(f"{row} {growth:>11} {findings:>9} {code:>5}")


if __name__ == "__main__":
    main()
