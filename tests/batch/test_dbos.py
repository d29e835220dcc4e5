"""`atomtask batch --engine dbos` and `atomtask worker`: items on a durable DBOS queue, run by worker processes.

Real processes over the fake provider: workers (`python -m atomtask.cli worker`) and a submitter
(`python -m atomtask.cli batch --engine dbos`), on a SQLite store (default suite) and on a throwaway
PostgreSQL (`postgres`, run by .ci/run), where one of two workers is killed with `kill -9` mid-run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from tests.batch_helpers import ItemServer, batch_command, lines, write_items, write_templates
from tests.pg_fixture import postgres_url

__all__ = ["postgres_url"]  # the session fixture, for pytest

pytestmark = pytest.mark.usefixtures("allow_model_requests")


def _worker(db: str, templates: Path, env: Mapping[str, str], log: Path, *extra: str) -> subprocess.Popen[str]:
    """A worker process; its stderr goes to `log`, so it never blocks on a full pipe."""
    argv = [sys.executable, "-m", "atomtask.cli", "worker", "--db", db, "--templates", str(templates), *extra]
    with log.open("w") as sink:
        return subprocess.Popen(argv, env=dict(env), stdout=subprocess.DEVNULL, stderr=sink, text=True)


def _wait_ready(process: subprocess.Popen[str], log: Path, timeout: float = 60) -> None:
    """Wait for the worker's first line (DBOS launched, the queue declared)."""
    deadline = time.monotonic() + timeout
    while "atomtask: worker" not in log.read_text() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "atomtask: worker" in log.read_text(), log.read_text()


@pytest.fixture
def workers() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in started:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _submit(db: str, templates: Path, items: Path, out: Path, env: Mapping[str, str], *extra: str) -> list[str]:
    args = ["tag", "--input", str(items), "-o", str(out), "--engine", "dbos", "--db", db, "--templates", str(templates)]
    return batch_command(*args, *extra)


_TRAVEL = """
import json, sys
from atomtask import TaskSystem
from atomtask.batch import _dbos
from atomtask.batch._items import BatchItem
from atomtask.batch._target import resolve_target
from atomtask.loading._providers import check_options

system = TaskSystem(templates=[sys.argv[1]])
asked = {"retries": 0, "repair": "off", "model_settings": {"max_tokens": 5, "temperature": 0}}
options = check_options(model="openai-chat:gpt-4o-mini", where="this batch", **asked)
target = resolve_target(system, "tag", options)
item = BatchItem(index=0, line=1, id="a", inputs={"text": "item-1"})
run = _dbos.DbosBatchRun(system, target, [item], url="sqlite:///unused", options=options, batch_id="b")
spec = json.loads(json.dumps(run._spec(item)))  # as the queue stores it: JSON
_dbos.serve(lambda base_url: system)
_, on_worker = _dbos._host_and_target(spec)
print(json.dumps({"same_options": _dbos.item_options(spec) == options, "fingerprints": [target.fingerprint,
    on_worker.fingerprint], "spec": {key: spec[key] for key in ("retries", "repair", "model_settings")}}))
"""


def test_the_per_answer_options_travel_to_the_worker(tmp_path: Path) -> None:
    """An item on the queue carries `--retries`, `--repair` and the model settings; the worker runs it with them."""
    templates = write_templates(tmp_path / "templates")
    env = dict(os.environ, ATOMTASK_HOME=str(tmp_path / "home"), OPENAI_API_KEY="sk-test-not-a-real-key")
    argv = [sys.executable, "-c", _TRAVEL, str(templates)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert 0 == done.returncode, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert {"retries": 0, "repair": "off", "model_settings": {"max_tokens": 5, "temperature": 0}} == found["spec"]
    assert found["same_options"]
    assert found["fingerprints"][0] == found["fingerprints"][1]  # the worker runs it: no "another version" failure


@pytest.mark.slow
def test_a_worker_runs_the_items_a_submitter_queues_on_sqlite(
    tmp_path: Path, workers: list[subprocess.Popen[str]]
) -> None:
    """One worker on a SQLite store runs every queued item once; the submitter writes one line per item."""
    templates = write_templates(tmp_path / "templates")
    items = write_items(tmp_path / "items.jsonl", 20)
    db = str(tmp_path / "queue.sqlite")
    out = tmp_path / "out.jsonl"
    with ItemServer(delay=0.02) as server:
        env = server.env(tmp_path / "home")
        workers.append(_worker(db, templates, env, tmp_path / "worker.log", "--concurrency", "4"))
        done = subprocess.run(
            _submit(db, templates, items, out, env), env=env, capture_output=True, text=True, timeout=120, check=False
        )
        assert 0 == done.returncode, done.stderr
        assert [f"i{n}" for n in range(20)] == sorted((line["id"] for line in lines(out)), key=lambda s: int(s[1:]))
        assert {"COMPLETE"} == {line["status"] for line in lines(out)}
        assert {n: 1 for n in range(20)} == dict(server.asked)
        again = subprocess.run(
            _submit(db, templates, items, out, env), env=env, capture_output=True, text=True, timeout=120, check=False
        )
        assert 0 == again.returncode, again.stderr
        assert 20 == len(lines(out))
        assert {n: 1 for n in range(20)} == dict(server.asked)  # a re-run reads every result back: nothing asked again
        assert "20 from the record" in again.stderr


@pytest.mark.slow
def test_a_budget_stop_cancels_the_queued_items_and_a_rerun_runs_them(
    tmp_path: Path, workers: list[subprocess.Popen[str]]
) -> None:
    """`--max-total-tokens` stops the batch: the queued items are cancelled, not run; the same command runs them."""
    templates = write_templates(tmp_path / "templates")
    items = write_items(tmp_path / "items.jsonl", 30)
    db = str(tmp_path / "queue.sqlite")
    out = tmp_path / "out.jsonl"
    # 0.3 s an answer, two at a time: the 30 items take ~4.5 s, several of the submitter's polls (at most 1 s
    # apart), so the budget stop is seen while items are still queued even when the worker starts late.
    with ItemServer(delay=0.3) as server:
        env = server.env(tmp_path / "home")
        workers.append(_worker(db, templates, env, tmp_path / "worker.log", "--concurrency", "2"))
        argv = _submit(db, templates, items, out, env)
        stopped = subprocess.run(
            [*argv, "--max-total-tokens", "300"], env=env, capture_output=True, text=True, timeout=120, check=False
        )
        assert 1 == stopped.returncode, stopped.stderr
        assert "stopped early (budget" in stopped.stderr
        first = {line["id"] for line in lines(out)}
        assert 0 < len(first) < 30
        again = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
        assert 0 == again.returncode, again.stderr
    assert {f"i{n}": 1 for n in range(30)} == dict(Counter(line["id"] for line in lines(out)))
    assert set(range(30)) == set(server.asked)
    assert all(asked == 1 for asked in server.asked.values())  # a cancelled item was never asked before its re-run


@pytest.mark.postgres
def test_two_workers_one_killed_run_every_item_exactly_once_on_postgres(
    tmp_path: Path, workers: list[subprocess.Popen[str]], postgres_url: str
) -> None:
    """Two workers, one killed with kill -9 mid-run: every item written once; only its items in flight asked again."""
    count = 60
    templates = write_templates(tmp_path / "templates")
    items = write_items(tmp_path / "items.jsonl", count)
    out = tmp_path / "out.jsonl"
    with ItemServer(delay=0.3) as server:
        env = server.env(tmp_path / "home")
        logs = [tmp_path / "worker-0.log", tmp_path / "worker-1.log"]
        for log in logs:
            workers.append(_worker(postgres_url, templates, env, log, "--concurrency", "4", "--lease", "3"))
        for worker, log in zip(workers, logs, strict=True):  # each runs before the items come
            _wait_ready(worker, log)
        submitter = subprocess.Popen(
            _submit(postgres_url, templates, items, out, env),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        doomed = _executor_id(logs[0])
        while (sum(server.asked.values()) < 16 or not _running(postgres_url, doomed)) and time.monotonic() < deadline:
            time.sleep(0.05)  # killed with items of its own in flight (a loaded machine may have left it idle)
        workers[0].send_signal(signal.SIGKILL)
        workers[0].wait()
        asked_at_kill = Counter(server.asked)
        _, stderr = submitter.communicate(timeout=120)
        assert 0 == submitter.returncode, stderr
    written = Counter(line["id"] for line in lines(out))
    assert {f"i{n}": 1 for n in range(count)} == dict(written)
    assert {"COMPLETE"} == {line["status"] for line in lines(out)}
    assert set(range(count)) == set(server.asked)
    twice = {n for n, asked in server.asked.items() if asked > 1}
    assert twice  # the dead worker's items in flight were run again by the other
    assert twice <= set(asked_at_kill)  # asked again: only items the dead worker had started
    assert len(twice) <= 4  # at most the dead worker's items in flight
    assert all(asked <= 2 for asked in server.asked.values())


def _executor_id(log: Path) -> str:
    """The worker's DBOS executor id, from its first line (`atomtask: worker ID on ...`)."""
    return log.read_text().split("atomtask: worker ", 1)[1].split(" ", 1)[0]


def _running(url: str, executor_id: str) -> int:
    """How many items the worker `executor_id` runs now (its PENDING workflows in DBOS's tables)."""
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as db:
        query = "SELECT count(*) FROM dbos.workflow_status WHERE executor_id = %s AND status = 'PENDING'"
        row = db.execute(query, (executor_id,)).fetchone()
    return int(row[0]) if row is not None else 0


def test_a_worker_whose_heartbeat_stands_still_is_recovered_once(tmp_path: Path) -> None:
    """A watcher recovers the worker whose beat stood still for the lease, once, and never a live one."""
    from atomtask.batch._worker import Watch
    from atomtask.runs._store import store_url

    url = store_url(tmp_path / "store.sqlite")
    dead, alive, watcher = (Watch(url, name, "q", lease=0.3) for name in ("dead", "alive", "watcher"))
    recovered: list[list[str]] = []

    def recover(executor_ids: list[str]) -> int:
        recovered.append(sorted(executor_ids))
        return 2

    try:
        dead.tick(recover)
        deadline = time.monotonic() + 10
        while not recovered and time.monotonic() < deadline:
            alive.tick(recover)
            watcher.tick(recover)
            time.sleep(0.05)
        for _ in range(10):  # the dead worker's row is gone: it is not recovered twice
            alive.tick(recover)
            watcher.tick(recover)
            time.sleep(0.05)
    finally:
        for watch in (dead, alive, watcher):
            watch.close()
    assert [["dead"]] == recovered
    assert 2 == alive.recovered + watcher.recovered
