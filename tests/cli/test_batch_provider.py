"""`atomtask batch --provider-batch` as a real process: kill -9 while the provider batch is pending, then collect."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.batch_helpers import ItemServer, batch_command, lines, run_batch, write_items, write_templates

pytestmark = pytest.mark.usefixtures("allow_model_requests")


def _polls(server: ItemServer) -> int:
    return sum(1 for r in server.server.requests if r.path.startswith("/v1/batches/"))


@pytest.mark.slow
def test_a_killed_process_resumes_polling_and_pays_nothing_twice(tmp_path: Path) -> None:
    """kill -9 while the batch is pending; the re-run polls the recorded batch, submits nothing, collects every item."""
    templates = write_templates(tmp_path / "templates")
    items = write_items(tmp_path / "items.jsonl", 5)
    out, db = tmp_path / "out.jsonl", tmp_path / "record.db"
    args = ["tag", "--templates", str(templates), "--input", str(items), "-o", str(out), "--db", str(db)]
    args += ["--provider-batch", "--poll-interval", "0.02", "--server", "openai"]  # the fake provider is OpenAI
    with ItemServer() as server:
        server.server.batches.in_progress_polls = 1_000_000
        env = server.env(tmp_path / "home")
        process = subprocess.Popen(
            batch_command(*args), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 30
        while _polls(server) < 3 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.02)
        assert _polls(server) >= 3, process.communicate(timeout=5)
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=10)
        assert 1 == len(server.server.batches.created)
        server.server.batches.in_progress_polls = 0
        again = run_batch(args, env)
        submitted = [r for r in server.server.requests if r.path == "/v1/batches"]
        normal_calls = [r for r in server.server.requests if r.path == "/v1/chat/completions"]
    assert 0 == again.returncode, again.stderr
    assert 1 == len(submitted)
    assert [] == normal_calls
    written = lines(out)
    assert [f"i{n}" for n in range(5)] == sorted(r["id"] for r in written)
    assert {"COMPLETE"} == {r["status"] for r in written}
    assert {"label": "label-3", "item": "item-3"} == next(r["output"] for r in written if r["id"] == "i3")


def test_a_pending_batch_stops_at_max_wait_and_says_so(tmp_path: Path) -> None:
    """`--max-wait` returns while the batch is pending: exit 1, the summary says how to collect, nothing written."""
    templates = write_templates(tmp_path / "templates")
    items = write_items(tmp_path / "items.jsonl", 2)
    out = tmp_path / "out.jsonl"
    args = ["tag", "--templates", str(templates), "--input", str(items), "-o", str(out), "--provider-batch"]
    args += ["--server", "openai"]  # the fake provider on 127.0.0.1 is OpenAI here (else a local server)
    args += ["--poll-interval", "0.01", "--max-wait", "0.05", "--db", str(tmp_path / "r.db")]
    with ItemServer() as server:
        server.server.batches.in_progress_polls = 1_000_000
        done = run_batch(args, server.env(tmp_path / "home"))
    assert 1 == done.returncode, done.stderr
    assert "2 items wait in provider batches" in done.stderr and "--resume" in done.stderr
    assert [] == lines(out)


@pytest.mark.slow
def test_ctrl_c_leaves_the_items_waiting_and_the_next_run_collects_them(tmp_path: Path) -> None:
    """SIGINT while the provider batch is pending: exit 130, the batch not cancelled; the re-run submits nothing."""
    templates = write_templates(tmp_path / "templates")
    items = write_items(tmp_path / "items.jsonl", 4)
    out, db = tmp_path / "out.jsonl", tmp_path / "record.db"
    args = ["tag", "--templates", str(templates), "--input", str(items), "-o", str(out), "--db", str(db)]
    args += ["--provider-batch", "--poll-interval", "0.02", "--server", "openai"]
    with ItemServer() as server:
        server.server.batches.in_progress_polls = 1_000_000
        env = server.env(tmp_path / "home")
        process = subprocess.Popen(
            batch_command(*args), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 30
        while _polls(server) < 2 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
        cancelled = [r for r in server.server.requests if r.path.endswith("/cancel")]
        server.server.batches.in_progress_polls = 0
        again = run_batch(args, env)
        created = list(server.server.batches.created)
    assert 130 == process.returncode, stderr
    assert "4 items wait in provider batches" in stderr
    assert [] == cancelled
    assert 0 == again.returncode, again.stderr
    assert 1 == len(created)
    assert {"COMPLETE"} == {r["status"] for r in lines(out)} and 4 == len(lines(out))
