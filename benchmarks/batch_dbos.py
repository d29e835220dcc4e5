"""The DBOS batch engine's items/s with 1 and 2 `atomtask worker` processes, against the local engine, same server.

A fake provider (in its own process) answers every request after `--delay` seconds. Each round runs
`atomtask batch tag --engine dbos --db URL` as a process while 1 (then 2) `atomtask worker`
processes of `--concurrency N` each run the items; the local engine (`atomtask batch` without
`--engine`, same `--concurrency N`) runs the same items as the baseline. The figure is the batch's own
items/s (from its summary: from the first item queued to the last result read, no process start-up).
Also printed: each process's CPU per item (workers from `/proc`, the submitter's from `getrusage`,
start-up included; Linux only), which shows where a shared machine's cores go: with 2 workers on 2
cores, the submitter and the fake server share the cores the workers need. The fake server keeps
connections alive, as a real provider does. A shared machine's noise moves one round's figures by
10-20%: `--repeat N` rounds of 1 and 2 workers (alternating which goes first) give the median ratio.

    python benchmarks/batch_dbos.py --db postgresql://postgres@127.0.0.1:5432/postgres [--items 5000]
    [--concurrency 50] [--delay 0.05] [--repeat 3]   (without --db: a SQLite file, one machine only)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from batch import start_server  # the fake provider process of benchmarks/batch.py

TEMPLATE = """\
name: tag
params:
  text: {type: str}
instructions: "Tag this: {{text}}"
output_format: {type: json, schema: Tag, mode: tool}
"""
SCHEMAS = "schemas:\n  - name: Tag\n    fields:\n      - {name: label, type: str}\n      - {name: item, type: str}\n"
RATE = re.compile(r"([0-9.]+) items/s")
CLI = [sys.executable, "-m", "atomtask.cli"]


def _workers(count: int, db: str, templates: Path, concurrency: int, env: dict[str, str], folder: Path) -> list[Any]:
    started = []
    for n in range(count):
        log = folder / f"worker-{uuid.uuid4().hex[:6]}-{n}.log"
        argv = [*CLI, "worker", "--db", db, "--templates", str(templates), "--concurrency", str(concurrency)]
        with log.open("w") as sink:
            started.append((subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=sink), log))
    for process, log in started:
        while "atomtask: worker" not in log.read_text():
            if process.poll() is not None:
                raise SystemExit(f"a worker ended: {log.read_text()}")
            time.sleep(0.05)
    return [process for process, _ in started]


def _cpu(pid: int) -> float:
    """Seconds of CPU process `pid` has used (user + system), from `/proc` (0 where there is none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _batch(extra: list[str], items: Path, templates: Path, env: dict[str, str], folder: Path) -> tuple[float, float]:
    """(the batch's own items/s, wall seconds of the whole command)."""
    out = folder / f"out-{uuid.uuid4().hex[:6]}.jsonl"
    argv = [*CLI, "batch", "tag", "--input", str(items), "-o", str(out), "--templates", str(templates)]
    argv += ["--model", "openai-chat:gpt-4o-mini", "--batch-id", f"bench-{uuid.uuid4().hex[:8]}", *extra]
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"the batch failed ({done.returncode}): {done.stderr[-2000:]}")
    found = RATE.findall(done.stderr)
    return float(found[-1]), wall


def _dbos_round(
    count: int,
    db: str,
    items: Path,
    templates: Path,
    concurrency: int,
    env: dict[str, str],
    folder: Path,
    server: subprocess.Popen[str],
) -> dict[str, Any]:
    """One batch through the DBOS queue with `count` workers: its items/s, wall time and CPU per item per process."""
    per_item = 1000 / sum(1 for _ in items.open())  # seconds of CPU -> ms per item
    workers = _workers(count, db, templates, concurrency, env, folder)
    try:
        started = [_cpu(w.pid) for w in workers], _children_cpu(), _cpu(server.pid)
        rate, wall = _batch(["--engine", "dbos", "--db", db], items, templates, env, folder)
        spent = [_cpu(w.pid) - s for w, s in zip(workers, started[0], strict=True)]
        cpu = {
            "workers": [round(seconds * per_item, 2) for seconds in spent],
            "submitter": round((_children_cpu() - started[1]) * per_item, 2),
            "fake_server": round((_cpu(server.pid) - started[2]) * per_item, 2),
        }
    finally:
        for process in workers:
            process.terminate()
        for process in workers:
            process.wait(timeout=60)
    return {f"{count}_items_per_s": rate, f"{count}_wall_s": round(wall, 2), f"{count}_cpu_ms_per_item": cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", help="the DBOS store (a postgresql:// URL; default: a SQLite file)")
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=50, help="items at once per worker (and local engine)")
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--repeat", type=int, default=3, help="rounds of 1 and 2 workers (the median is reported)")
    args = parser.parse_args()
    server, base_url = start_server(args.delay)
    report: dict[str, Any] = {"items": args.items, "concurrency_per_worker": args.concurrency, "delay_s": args.delay}
    try:
        with tempfile.TemporaryDirectory() as name:
            folder = Path(name)
            templates = folder / "templates"
            templates.mkdir()
            (templates / "tag.yaml").write_text(TEMPLATE)
            (templates / "schemas.yaml").write_text(SCHEMAS)
            items = folder / "items.jsonl"
            items.write_text(
                "".join(json.dumps({"id": f"i{n}", "text": f"item-{n}"}) + "\n" for n in range(args.items))
            )
            report["store"] = "postgresql" if args.db else "sqlite"
            env = dict(os.environ, OPENAI_BASE_URL=base_url, OPENAI_API_KEY="sk-bench", PYDANTIC_AI_NO_BANNER="1")
            env["ATOMTASK_HOME"] = str(folder / "home")
            per_item = 1000 / args.items  # seconds of CPU -> ms per item
            before = _children_cpu()
            local, local_wall = _batch(["--concurrency", str(args.concurrency)], items, templates, env, folder)
            report["local_items_per_s"] = local
            report["local_wall_s"] = round(local_wall, 2)
            report["local_cpu_ms_per_item"] = round((_children_cpu() - before) * per_item, 2)
            rounds: list[dict[str, Any]] = []
            for repetition in range(args.repeat):
                # Alternate which goes first, so neither always runs on a store the other has just grown.
                counts = (1, 2) if repetition % 2 == 0 else (2, 1)
                figures: dict[str, Any] = {}
                for count in counts:
                    # SQLite: a new store each round, so no round runs on a store earlier rounds have grown.
                    store = args.db or str(folder / f"queue-{repetition}-{count}.sqlite")
                    figures.update(_dbos_round(count, store, items, templates, args.concurrency, env, folder, server))
                figures["2_to_1"] = round(figures["2_items_per_s"] / figures["1_items_per_s"], 2)
                rounds.append(figures)
            report["dbos_rounds"] = rounds
            for count in (1, 2):
                rates = [figures[f"{count}_items_per_s"] for figures in rounds]
                report[f"dbos_{count}_worker_items_per_s"] = statistics.median(rates)
            report["dbos_2_to_1_workers"] = statistics.median(r["2_to_1"] for r in rounds)
            report["dbos_1_worker_to_local"] = round(report["dbos_1_worker_items_per_s"] / local, 3)
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=10)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
