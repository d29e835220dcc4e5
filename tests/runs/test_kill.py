"""Durable runs in real processes: kill -9 a `workflow run` in a step, resume it, compare with a clean run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from atomtask.testing import FakeProviderServer, Reply

from tests.pg_fixture import postgres_url
from tests.runs.run_helpers import child_env

__all__ = ["postgres_url"]  # the session fixture, for pytest

FLOW = """\
name: say
params: {word: str}
instructions: "Repeat {{word}}"
---
name: three
version: "1.0"
state:
  - {name: word, type: str}
  - {name: one, type: str}
  - {name: two, type: str}
  - {name: three, type: str}
steps:
  - {id: first, task: say, inputs: {word: "{{state.word}}"}, output: one}
  - {id: second, task: say, inputs: {word: "{{state.one}}"}, output: two}
  - {id: third, task: say, inputs: {word: "{{state.two}}"}, output: three}
"""

ATOMTASK = str(Path(sys.executable).parent / "atomtask")


@pytest.fixture
def folder(tmp_path: Path) -> str:
    (tmp_path / "flows.yaml").write_text(FLOW, encoding="utf-8")
    return str(tmp_path / "flows.yaml")


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


def _argv(action: str, *rest: str, server: FakeProviderServer, folder: str, db: str) -> list[str]:
    endpoint = ["--base-url", server.openai_base_url] if action in ("run", "resume") else []
    return [ATOMTASK, "workflow", action, *rest, *endpoint, "--templates", folder, "--db", db]


def _asked(server: FakeProviderServer) -> list[str]:
    """The text each request asked the model to repeat, in order."""
    return [str(r.body["messages"][-1]["content"]).removeprefix("Repeat ") for r in server.requests]


def _kill_in_second_step_and_resume(server: FakeProviderServer, folder: str, db: str, tmp_path: Path) -> None:
    env = child_env(tmp_path)
    model = ["--model", "openai-chat:fake"]
    server.script(Reply.text("one"), Reply.delay(600, Reply.text("never sent")))
    argv = _argv("run", "three", "-i", "word=w", "--run-id", "r1", *model, server=server, folder=folder, db=db)
    running = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while len(server.requests) < 2 and running.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert 2 == len(server.requests), running.stderr.read() if running.poll() is not None else "no second request"
    os.kill(running.pid, signal.SIGKILL)  # in the middle of step `second`: its answer is still delayed
    running.wait()
    running.stdout.close()  # type: ignore[union-attr]
    running.stderr.close()  # type: ignore[union-attr]

    listed = subprocess.run(_argv("runs", server=server, folder=folder, db=db), env=env, capture_output=True, text=True)
    row = next(line.split() for line in listed.stdout.splitlines() if line.startswith("r1 "))
    assert ["r1", "three", "1.0", "PENDING", "first"] == row[:5], listed.stdout + listed.stderr

    server.script(Reply.text("two"), Reply.text("three"))
    resumed = subprocess.run(
        _argv("resume", "r1", server=server, folder=folder, db=db), env=env, capture_output=True, text=True
    )
    assert 0 == resumed.returncode, resumed.stderr
    # `first` was asked once; `second` was in flight, so it is asked again; `third` once.
    assert ["w", "one", "one", "two"] == _asked(server)

    server.script(Reply.text("one"), Reply.text("two"), Reply.text("three"))
    clean = subprocess.run(
        _argv("run", "three", "-i", "word=w", "--run-id", "r2", *model, server=server, folder=folder, db=db),
        env=env,
        capture_output=True,
        text=True,
    )
    assert 0 == clean.returncode, clean.stderr
    assert json.loads(clean.stdout) == json.loads(resumed.stdout)
    assert {"word": "w", "one": "one", "two": "two", "three": "three"} == json.loads(resumed.stdout)

    shown = subprocess.run(
        _argv("show", "r1", "--json", server=server, folder=folder, db=db), env=env, capture_output=True, text=True
    )
    document = json.loads(shown.stdout)
    assert ("COMPLETE", ["first", "second", "third"]) == (document["status"], [s["step"] for s in document["steps"]])
    assert {"word": "w", "one": "one"} == document["steps"][0]["state"]
    assert 3 == document["requests"]  # the ledgers of the three completed steps: the killed attempt is not one


@pytest.mark.slow
@pytest.mark.usefixtures("allow_model_requests")
def test_a_run_killed_in_a_step_resumes_without_asking_completed_steps_again(
    server: FakeProviderServer, folder: str, tmp_path: Path
) -> None:
    """SQLite: kill -9 during step 2, resume: step 1 is not asked again, the final state is a clean run's."""
    _kill_in_second_step_and_resume(server, folder, str(tmp_path / "runs.sqlite"), tmp_path)


@pytest.mark.postgres
@pytest.mark.usefixtures("allow_model_requests")
def test_a_run_killed_in_a_step_resumes_on_postgres(
    server: FakeProviderServer, folder: str, tmp_path: Path, postgres_url: str
) -> None:
    """PostgreSQL: the same kill -9 and resume against a throwaway server."""
    _kill_in_second_step_and_resume(server, folder, postgres_url, tmp_path)
