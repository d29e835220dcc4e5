"""A DBOS batch's submitter watches the workers' heartbeats: with items waiting and no live worker, it says so.

`WorkerSightings` decides on the submitter's clock; the end-to-end test runs a real submitter
(`python -m atomtask.cli batch --engine dbos`) on a SQLite store with no worker, then starts one.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.batch_helpers import ItemServer, batch_command, lines, write_items, write_templates

pytestmark = pytest.mark.usefixtures("allow_model_requests")


def test_a_silence_is_told_once_and_a_return_once() -> None:
    """No counter moving for `after` seconds is told once however long it lasts; the first move after it, once."""
    from atomtask.batch._dbos import WorkerSightings

    sightings = WorkerSightings(10.0, now=100.0)
    told = [sightings.read({}, now) for now in (101.0, 109.0, 110.0, 111.0, 200.0)]
    assert [None, None, "silent", None, None] == told
    told = [sightings.read({"w1": 5}, 201.0), sightings.read({"w1": 6}, 202.0), sightings.read({"w1": 6}, 211.0)]
    assert ["back", None, None] == told
    assert "silent" == sightings.read({"w1": 6}, 212.0)  # a second episode is told again


def test_a_counter_that_stands_still_is_no_live_worker() -> None:
    """A worker's row whose counter does not move (a stopped worker) does not keep the submitter quiet."""
    from atomtask.batch._dbos import WorkerSightings

    sightings = WorkerSightings(10.0, now=0.0)
    assert sightings.read({"gone": 40}, 1.0) is None  # first seen: it may be alive
    assert sightings.read({"gone": 40}, 5.0) is None
    assert "silent" == sightings.read({"gone": 40}, 11.0)
    assert sightings.read({"gone": 40, "new": 1}, 12.0) == "back"  # a new worker's first beat
    assert sightings.read({"new": 2}, 21.0) is None  # the stopped worker's row was taken away: no change


def test_the_start_command_names_the_store_queue_and_templates(tmp_path: Path) -> None:
    """The command the notice shows runs a worker on the submitter's store, queue and templates (no password)."""
    from atomtask.batch._dbos import DEFAULT_QUEUE, worker_command_line

    url = "postgresql://me:secret@db.example:5432/jobs"
    assert "atomtask worker --db 'postgresql://me:***@db.example:5432/jobs'" == worker_command_line(url, DEFAULT_QUEUE)
    templates = tmp_path / "my templates"
    found = worker_command_line(f"sqlite:///{tmp_path}/q.sqlite", "night", [str(templates)])
    assert f"atomtask worker --db {tmp_path}/q.sqlite --queue night --templates '{templates}'" == found


def test_a_bad_threshold_in_the_environment_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`$ATOMTASK_NO_WORKER_AFTER` that is no positive number is refused, naming the variable and the default."""
    from atomtask.batch._dbos import NO_WORKER_AFTER_ENV, run_class_for
    from atomtask.errors import UsageError

    args = argparse.Namespace(
        db=str(tmp_path / "q.sqlite"), queue=None, rpm=None, base_url=None, concurrency=None, templates=None
    )
    monkeypatch.setenv(NO_WORKER_AFTER_ENV, "soon")
    with pytest.raises(UsageError, match=r"ATOMTASK_NO_WORKER_AFTER.*'soon'.*default 15"):
        run_class_for(args)
    monkeypatch.setenv(NO_WORKER_AFTER_ENV, "2.5")
    assert 2.5 == run_class_for(args).keywords["no_worker_after"]


def _wait_for(text: str, log: Path, process: subprocess.Popen[str], timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while text not in log.read_text() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    found = log.read_text()
    assert text in found, found
    return found


@pytest.mark.slow
def test_a_submitter_with_no_live_worker_says_how_to_start_one_and_keeps_waiting(tmp_path: Path) -> None:
    """No worker on the store: the submitter warns once with the start command, waits, and ends once one runs."""
    templates = write_templates(tmp_path / "templates")
    items = write_items(tmp_path / "items.jsonl", 5)
    db = tmp_path / "queue.sqlite"
    out = tmp_path / "out.jsonl"
    submitter_log, worker_log = tmp_path / "submitter.log", tmp_path / "worker.log"
    worker: subprocess.Popen[str] | None = None
    with ItemServer() as server:
        env = dict(server.env(tmp_path / "home"), ATOMTASK_NO_WORKER_AFTER="3")
        argv = ["tag", "--input", str(items), "-o", str(out), "--engine", "dbos", "--db", str(db)]
        with submitter_log.open("w") as sink:
            submitter = subprocess.Popen(
                batch_command(*argv, "--templates", str(templates)), env=env, stderr=sink, text=True
            )
        try:
            said = _wait_for("no live worker", submitter_log, submitter)
            start = f"`atomtask worker --db {db} --templates {templates}`"
            told = re.search(
                r"no live worker on queue 'atomtask-batch' for (\d+) s: 5 items wait\. Start one: (`[^`]*`)", said
            )
            assert told is not None, said
            assert 3 <= int(told.group(1))
            assert start == told.group(2)
            time.sleep(2)  # it keeps waiting, and does not say it again
            assert submitter.poll() is None, submitter_log.read_text()
            assert 1 == submitter_log.read_text().count("no live worker")
            assert not out.exists() or [] == lines(out)  # nothing ran
            argv = [sys.executable, "-m", "atomtask.cli", "worker", "--db", str(db), "--templates", str(templates)]
            with worker_log.open("w") as sink:
                worker = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=sink, text=True)
            assert 0 == submitter.wait(timeout=120), submitter_log.read_text()
        finally:
            for process in (submitter, worker):
                if process is not None and process.poll() is None:
                    process.send_signal(signal.SIGTERM)
                    process.wait(timeout=60)
    said = submitter_log.read_text()
    assert 1 == said.count("no live worker")
    assert "a worker runs queue 'atomtask-batch' again: 5 items wait" in said
    assert {f"i{n}" for n in range(5)} == {line["id"] for line in lines(out)}
    assert {"COMPLETE"} == {line["status"] for line in lines(out)}


@pytest.mark.slow
def test_a_quiet_submitter_says_nothing_of_the_missing_worker(tmp_path: Path) -> None:
    """`-q`: no notice on stderr, though no worker runs (the batch is stopped by SIGINT here)."""
    templates = write_templates(tmp_path / "templates")
    items = write_items(tmp_path / "items.jsonl", 2)
    log = tmp_path / "submitter.log"
    env = dict(os.environ, ATOMTASK_HOME=str(tmp_path / "home"), OPENAI_API_KEY="sk-test-not-a-real-key")
    env["ATOMTASK_NO_WORKER_AFTER"] = "1"
    argv = ["tag", "--input", str(items), "--engine", "dbos", "--db", str(tmp_path / "q.sqlite"), "-q"]
    with log.open("w") as sink:
        submitter = subprocess.Popen(
            batch_command(*argv, "--templates", str(templates)), env=env, stdout=subprocess.DEVNULL, stderr=sink
        )
    time.sleep(6)
    assert submitter.poll() is None, log.read_text()
    submitter.send_signal(signal.SIGINT)
    assert 130 == submitter.wait(timeout=60), log.read_text()
    assert "no live worker" not in log.read_text()
