"""Part 2 of `provider_batch.py`: kill -9 of `atomtask batch --provider-batch` at random instants, then `--resume`.

The fake provider runs in this process (its batches answered in progress for a few status checks, so
the child spends time waiting); the CLI is a real child process. The kills are spread over groups of
`KILLS_PER_GROUP`, each group one batch id on its own fresh server: the first run of the group starts
the batch, each later run is `--resume BATCH_ID`, and each is killed at an instant drawn (seeded) over
the length of an uninterrupted run, measured first; a run that ends before its instant ends the group
(that kill is not counted), and the last run of a group always goes to completion.

Per group it checks: the output holds every item exactly once, COMPLETE; no request body was held by
two provider batches (`server.batches.resubmitted()`), except bodies whose first batch no process ever
checked (created, then the process was killed before the record learnt the batch's id: the honest
residue `src/batch/_provider.py` documents); and the tokens the server billed equal the sum of the
items' recorded usage (an orphaned batch is never checked, so never run nor billed).
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs
from atomtask.testing import FakeProviderServer
from provider_batch import MODEL, Plan, Responder, Verdicts, prompt

KILLS_PER_GROUP = 5
ITEMS = 120
BATCH_SIZE = 25
POLL = 0.02
IN_PROGRESS_POLLS = 3

SCHEMAS = """\
schemas:
  - name: Review
    fields:
      - {name: item, type: str}
      - {name: sentiment, type: str}
      - {name: score, type: int}
"""
TEMPLATE = """\
name: review
params:
  text: {type: str}
instructions: "Rate this product review: {{text}}"
output_format: {type: json, schema: Review, mode: tool}
"""


@attrs.define
class Group:
    """One batch id, killed and resumed: its numbers."""

    kills: int = 0
    runs: int = 0
    starts: int = 0  # runs that started the batch (the first, and any after a kill before the record held it)
    seconds: float = 0.0
    items_out: int = 0
    duplicates: int = 0
    missing: int = 0
    not_complete: int = 0
    provider_batches: int = 0
    resubmitted: int = 0
    residue: int = 0  # resubmitted bodies whose first batch was never checked (created at a kill)
    orphan_batches: int = 0
    paid_tokens: int = 0
    recorded_tokens: int = 0
    reasks: int = 0
    instants: list[float] = attrs.field(factory=list)  # when each kill came, seconds into its run
    last_exit: int | None = None
    stderr: str = ""


def _write(folder: Path) -> tuple[Path, Path]:
    templates = folder / "templates"
    templates.mkdir(parents=True)
    (templates / "schemas.yaml").write_text(SCHEMAS, encoding="utf-8")
    (templates / "review.yaml").write_text(TEMPLATE, encoding="utf-8")
    items = folder / "items.jsonl"
    items.write_text("".join(json.dumps({"id": f"i{n}", "text": prompt(n)}) + "\n" for n in range(ITEMS)))
    return templates, items


def _env(server: FakeProviderServer, home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        OPENAI_BASE_URL=server.openai_base_url,
        OPENAI_API_KEY="sk-test-not-a-real-key",
        ATOMTASK_HOME=str(home),
        PYDANTIC_AI_NO_BANNER="1",
    )
    return env


def _command(folder: Path, templates: Path, items: Path, batch_id: str, *, resume: bool) -> list[str]:
    base = [sys.executable, "-m", "atomtask.cli", "batch"]
    if resume:
        return [*base, "--resume", batch_id, "--db", str(folder / "record.db"), "-q"]
    return [
        *base,
        "review",
        "--templates",
        str(templates),
        "--input",
        str(items),
        "-o",
        str(folder / "out.jsonl"),
        "--db",
        str(folder / "record.db"),
        "--batch-id",
        batch_id,
        "--provider-batch",
        "--poll-interval",
        str(POLL),
        "--batch-size",
        str(BATCH_SIZE),
        "--model",
        MODEL,
        "-q",
    ]


def _run(command: list[str], env: dict[str, str], kill_at: float | None) -> tuple[bool, int | None, str, float]:
    """Run `command`; SIGKILL it `kill_at` seconds in (None: to the end). (killed, exit code, stderr, seconds)."""
    start = time.monotonic()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        process.wait(timeout=kill_at if kill_at is not None else 600)
    except subprocess.TimeoutExpired:
        if kill_at is None:
            raise
        process.send_signal(signal.SIGKILL)
        _, err = process.communicate(timeout=30)
        return True, None, err, time.monotonic() - start
    _, err = process.communicate(timeout=30)
    return False, process.returncode, err, time.monotonic() - start


def _recorded(folder: Path, batch_id: str) -> bool:
    """Whether the batch record holds `batch_id` (written when the batch starts, before any item runs)."""
    db = folder / "record.db"
    if not db.exists():
        return False
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT 1 FROM batches WHERE batch_id = ?", (batch_id,)).fetchone() is not None
    except sqlite3.Error:  # no table yet: killed while the record was being created
        return False


def _checked(server: FakeProviderServer) -> set[str]:
    """The provider batches some process checked (`GET /v1/batches/{id}`)."""
    return {
        r.path.rsplit("/", 1)[1] for r in server.requests if r.method == "GET" and r.path.startswith("/v1/batches/")
    }


def _group(folder: Path, batch_id: str, rng: random.Random, kills: int, span: tuple[float, float], plan: Plan) -> Group:
    templates, items = _write(folder)
    responder = Responder(plan)
    group = Group()
    with FakeProviderServer(keep_alive=True) as server:
        server.respond_with(responder)
        server.batches.in_progress_polls = IN_PROGRESS_POLLS
        env = _env(server, folder / "home")
        while True:
            kill_at = rng.uniform(*span) if group.kills < kills else None
            # `--resume` once the record knows the batch (a kill during start-up leaves nothing to resume).
            resume = _recorded(folder, batch_id)
            group.starts += not resume
            command = _command(folder, templates, items, batch_id, resume=resume)
            killed, code, err, seconds = _run(command, env, kill_at)
            group.runs += 1
            group.seconds += seconds
            if killed:
                group.kills += 1
                group.instants.append(round(kill_at or 0.0, 2))
                continue
            group.last_exit, group.stderr = code, err
            break
        log = server.batches.log
        checked = _checked(server)
        resubmitted = server.batches.resubmitted()
        paid = server.batches.paid.total
    out = folder / "out.jsonl"
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line] if out.exists() else []
    ids = [row["id"] for row in rows]
    group.items_out = len(set(ids))
    group.duplicates = len(ids) - len(set(ids))
    group.missing = ITEMS - len(set(ids) & {f"i{n}" for n in range(ITEMS)})
    group.not_complete = sum(1 for row in rows if row.get("status") != "COMPLETE")
    group.provider_batches = len(log)
    group.orphan_batches = sum(1 for batch in log if batch.id not in checked)
    group.resubmitted = len(resubmitted)
    group.residue = sum(1 for ids_ in resubmitted.values() if ids_[0] not in checked)
    group.paid_tokens = paid.input_tokens + paid.output_tokens
    group.recorded_tokens = sum(_tokens(row) for row in rows)
    group.reasks = sum(responder.reasks.values())
    return group


def _tokens(row: dict[str, Any]) -> int:
    usage = row.get("usage") or {}
    return int(usage.get("input_tokens") or 0) + int(usage.get("output_tokens") or 0)


def part_kill(kills: int, seed: int, verdicts: Verdicts, *, quick: bool = False) -> None:
    groups_needed = -(-kills // KILLS_PER_GROUP)
    print(
        f"\n== 2. kill -9 at {kills} random instants, then --resume: {groups_needed} batch(es) of {ITEMS} items, "
        f"provider batches of {BATCH_SIZE}, {IN_PROGRESS_POLLS} checks in progress each, 15% malformed first answers"
    )
    rng = random.Random(seed)
    plan = Plan.draw(ITEMS, 0.15, seed)
    with tempfile.TemporaryDirectory() as tmp:
        calibration = _group(Path(tmp) / "calibration", "calibration", rng, 0, (0, 0), plan)
        print(
            f"  uninterrupted run: {calibration.seconds:.2f} s, {calibration.provider_batches} provider batches, "
            f"{calibration.reasks} re-asks, exit {calibration.last_exit}"
        )
        span = (0.3, max(0.6, calibration.seconds))
        groups: list[Group] = []
        done = 0
        attempt = 0
        while done < kills and attempt < groups_needed * 4:
            want = min(KILLS_PER_GROUP, kills - done)
            group = _group(Path(tmp) / f"g{attempt}", f"kill-{attempt}", rng, want, span, plan)
            attempt += 1
            groups.append(group)
            done += group.kills
    print(
        f"  {'group':<6}{'kills':>6}{'runs':>6}{'starts':>7}{'s':>7}{'items':>7}{'dup':>5}{'missing':>8}{'!COMPL':>7}"
        f"{'batches':>8}{'orphan':>7}{'resub':>6}{'residue':>8}{'paid tok':>10}{'recorded':>10}{'exit':>5}"
    )
    for number, g in enumerate(groups):
        print(
            f"  {number:<6}{g.kills:>6}{g.runs:>6}{g.starts:>7}{g.seconds:>7.1f}{g.items_out:>7}{g.duplicates:>5}"
            f"{g.missing:>8}{g.not_complete:>7}{g.provider_batches:>8}{g.orphan_batches:>7}{g.resubmitted:>6}{g.residue:>8}"
            f"{g.paid_tokens:>10}{g.recorded_tokens:>10}{g.last_exit!s:>5}"
        )
        print(f"    kill instants (s into each run): {g.instants}")
        if g.last_exit != 0:
            print(f"    last run's stderr: {g.stderr.strip()[-800:]}")
    total = sum(g.kills for g in groups)
    residue = sum(g.residue for g in groups)
    verdicts.check("kill: kills made", total >= kills, f"{total} of {kills}")
    verdicts.check(
        "kill: every item in the output exactly once, COMPLETE",
        all(g.duplicates == 0 and g.missing == 0 and g.not_complete == 0 and g.last_exit == 0 for g in groups),
        f"{sum(g.items_out for g in groups)} items out of {ITEMS * len(groups)}, "
        f"{sum(g.duplicates for g in groups)} duplicated, {sum(g.missing for g in groups)} missing, "
        f"{sum(g.not_complete for g in groups)} not COMPLETE",
    )
    verdicts.check(
        "kill: no request body submitted twice (beyond the creation-at-kill residue)",
        all(g.resubmitted == g.residue for g in groups),
        f"{sum(g.resubmitted for g in groups)} resubmitted bodies, {residue} of them the residue "
        f"(their first batch created at a kill, never checked: {sum(g.orphan_batches for g in groups)} orphan batches)",
    )
    verdicts.check(
        "kill: billed tokens == the items' recorded tokens",
        all(g.paid_tokens == g.recorded_tokens for g in groups),
        f"{sum(g.paid_tokens for g in groups)} billed, {sum(g.recorded_tokens for g in groups)} recorded",
    )
