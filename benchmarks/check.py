"""How long `atomtask check` takes, and how it grows: 250, 500 and 1,000 templates with schemas.

Every template names a model and a schema (five fields: reasoning, a literal, a constrained float,
an optional string, a list), so every check runs: reading, schema building, template compilation,
the W2xx rules and the provider compatibility transforms. Two layouts: a schema of its own for every
template (worst case: one Pydantic class and one JSON Schema per template), and one schema shared by
ten templates. Measured two ways:

- the `atomtask check DIR` command in a subprocess (CPU from `getrusage` of the child and of the
  helper process it starts, and wall time), which includes interpreter start-up and imports. The
  command imports pydantic-ai (~1 s, for the model profiles the P3xx rules read) in that helper,
  while it reads and builds (`atomtask.lint._compat`), so the wall time is less than the CPU
  on two cores; a fully warm check starts no helper and imports neither pydantic-ai nor the checking
  code;
- `atomtask.lint.check(DIR)` alone, after a warm-up, in a fresh interpreter per size
  (`time.process_time` and wall), with a full collection before each run so that no run reuses
  the classes an earlier one built. In-process there is no helper (pydantic-ai is imported by the
  warm-up), so this CPU is all of the check's work.

Each is measured without the cache (`--no-cache`), cold (an empty cache, which the check fills)
and warm (every file unchanged), and in-process also after editing one template file. Prints
seconds and the growth ratio from one size to the next (linear growth: the ratio of the sizes).
Targets for 1,000 templates: cold under 2 s, warm under 0.5 s.

Every figure is the median of `--repeat` runs (CPU time: the machine may be shared).

    python benchmarks/check.py [--sizes 250 500 1000] [--share 1 10] [--select E] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
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


def time_command(folder: Path, select: list[str], cache: Path | None) -> tuple[float, float, int]:
    """The command's CPU and wall time; `cache` is its cache folder (None: `--no-cache`)."""
    env = {**os.environ, "ATOMTASK_CACHE_DIR": str(cache)} if cache is not None else None
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
            *(["--no-cache"] if cache is None else []),
            *(f"--select={c}" for c in select),
        ],
        capture_output=True,
        check=False,
        env=env,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, done.returncode


_IN_PROCESS = """
import gc, json, sys, tempfile, time
from pathlib import Path
from atomtask.lint.engine import check, check_cache
warm, folder, select = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
check([warm], select=select)  # warm-up: imports and first-use caches
cache_dir = Path(tempfile.mkdtemp())
def timed(**kw):
    gc.collect()  # frees the previous run's classes, which the schema builder would otherwise reuse
    cpu, wall = time.process_time(), time.perf_counter()
    report = check([folder], select=select, **kw)
    return [time.process_time() - cpu, time.perf_counter() - wall, len(report.findings)]
rows = {"none": timed()}
rows["cold"] = timed(cache=check_cache(cache_dir, select=select))
rows["warm"] = timed(cache=check_cache(cache_dir, select=select))
first = sorted(folder.glob("*.yaml"))[0]
first.write_text(first.read_text() + "# edited\\n")
edited = check_cache(cache_dir, select=select)
rows["edited"] = timed(cache=edited) + [len(edited.stats.checked)]
print(json.dumps(rows))
"""


def time_in_process(warm: Path, folder: Path, select: list[str]) -> dict[str, list[float]]:
    """`check()` alone, after a warm-up, in a fresh interpreter (so sizes do not share a heap): no cache, cold, warm."""
    done = subprocess.run(
        [sys.executable, "-c", _IN_PROCESS, str(warm), str(folder), *select], capture_output=True, text=True, check=True
    )
    rows: dict[str, list[float]] = json.loads(done.stdout)
    return rows


def _median_rows(runs: list[dict[str, list[float]]]) -> dict[str, list[float]]:
    """Each mode's median over the runs, cell by cell."""
    return {
        mode: [statistics.median(run[mode][i] for run in runs) for i in range(len(runs[0][mode]))] for mode in runs[0]
    }


def _median_command(runs: list[tuple[float, float, int]]) -> tuple[float, float, int]:
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs), runs[-1][2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000])
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure; the median is printed (default: 3)")
    parser.add_argument("--select", nargs="*", default=[], help="codes to check (default: all), e.g. E")
    parser.add_argument("--share", type=int, nargs="+", default=[1, 10], help="templates per schema (default: 1 10)")
    args = parser.parse_args()

    warm = Path(tempfile.mkdtemp())
    generate(warm, 5)
    empty_cpu, empty_wall, _ = _median_command([time_command(warm, args.select, None) for _ in range(args.repeat)])

    print(f"start-up: `atomtask check --no-cache` on 5 templates: {empty_cpu:.3f} s CPU, {empty_wall:.3f} s wall")
    for share in args.share:
        print(f"\n{'one schema per template' if share == 1 else f'one schema per {share} templates'}:")
        print("  in-process `check()`, CPU s (growth from the previous size):")
        print(f"{'templates':>10} {'no cache':>14} {'cold':>14} {'warm':>14} {'one edited':>11} {'rechecked':>10}")
        previous: dict[str, float] = {}
        commands = []
        for size in args.sizes:
            runs, commands_run = [], []
            for _ in range(args.repeat):
                with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as cache:
                    folder = Path(tmp)
                    generate(folder, size, share)
                    commands_run.append(
                        [
                            time_command(folder, args.select, None),
                            time_command(folder, args.select, Path(cache)),
                            time_command(folder, args.select, Path(cache)),
                        ]
                    )
                    runs.append(time_in_process(warm, folder, args.select))
            command = [_median_command([run[i] for run in commands_run]) for i in range(3)]
            rows = _median_rows(runs)
            cells = []
            for mode in ("none", "cold", "warm"):
                cpu = rows[mode][0]
                growth = f"({cpu / previous[mode]:.1f}x)" if mode in previous else ""
                previous[mode] = cpu
                cells.append(f"{cpu:>7.3f} {growth:>6}")
            print(f"{size:>10} {' '.join(cells)} {rows['edited'][0]:>11.3f} {int(rows['edited'][3]):>10}")
            commands.append((size, command))
        print("  the `atomtask check` command, CPU s / wall s (interpreter start-up and imports included):")
        print(f"{'templates':>10} {'no cache':>15} {'cold':>15} {'warm':>15} {'exit':>5}")
        for size, ((n_cpu, n_wall, code), (c_cpu, c_wall, _), (w_cpu, w_wall, _)) in commands:
            cells = " ".join(
                f"{cpu:>7.3f}/{wall:<7.3f}" for cpu, wall in ((n_cpu, n_wall), (c_cpu, c_wall), (w_cpu, w_wall))
            )
            print(f"{size:>10} {cells} {code:>5}")


if __name__ == "__main__":
    main()
