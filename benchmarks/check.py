"""How long `atomtask check` takes, and how it grows: 100, 1,000 and 10,000 templates with schemas.

Each template has its own named schema (four fields: a literal, a constrained float, an optional
string, a list) and a model string, so every check runs: reading, schema building, template
compilation, the W2xx rules and the provider compatibility transform. Measured two ways:

- the `atomtask check DIR` command in a subprocess (CPU of the child from `getrusage`, and wall time),
  which includes interpreter start-up and imports;
- `atomtask.lint.check(DIR)` in this process after a warm-up (`time.process_time` and wall), the
  check alone.

Prints seconds and the growth ratio from one size to the next (linear growth: ratio ~10).
Target: 1,000 templates under one second of CPU.

    python benchmarks/check.py [--sizes 100 1000 10000]
"""

from __future__ import annotations

import argparse
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


def time_in_process(folder: Path, select: list[str]) -> tuple[float, float, int]:
    from atomtask.lint import check

    cpu0, wall0 = time.process_time(), time.perf_counter()
    report = check([folder], select=select)
    return time.process_time() - cpu0, time.perf_counter() - wall0, len(report.findings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--select", nargs="*", default=[], help="codes to check (default: all), e.g. E")
    parser.add_argument("--share", type=int, nargs="+", default=[1, 10], help="templates per schema (default: 1 10)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as warm:
        generate(Path(warm), 5)
        time_in_process(Path(warm), args.select)  # imports and first-use caches, outside the measurements
        empty_cpu, empty_wall, _ = time_command(Path(warm), args.select)

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
                cpu, wall, findings = time_in_process(folder, args.select)
            growth = f"{cpu / previous:.1f}x" if previous else "-"
            previous = cpu
            row = f"{size:>10} {cmd_cpu:>10.3f} {cmd_wall:>11.3f} {cpu:>12.3f} {wall:>13.3f}"
            print(f"{row} {growth:>11} {findings:>9} {code:>5}")


if __name__ == "__main__":
    main()
