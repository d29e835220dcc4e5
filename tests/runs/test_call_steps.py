"""Durable runs with a code step: a completed code step is checkpointed like any step and never runs again."""

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
from atomtask import FailureReason, TaskStatus, TaskSystem
from atomtask.testing import FakeProviderServer, Reply

from tests.conftest import REPO  # the child processes import `tests.workflows.code_steps_funcs` from there
from tests.runs.run_helpers import Killed, child_env, crashing_model

FLOWS = """\
name: say
params: {word: str}
instructions: "Repeat {{word}}"
---
name: marked
version: "1.0"
state:
  - {name: word, type: str}
  - {name: marker, type: str}
  - {name: failures, type: int, default: 0}
  - {name: one, type: str}
  - {name: loud, type: str}
  - {name: three, type: str}
steps:
  - {id: first, task: say, inputs: {word: "{{state.word}}"}, output: one}
  - id: mark
    call: "tests.workflows.code_steps_funcs:mark"
    inputs: {path: "{{state.marker}}", text: "{{state.one}}", failures: "{{state.failures}}"}
    output: loud
  - {id: third, task: say, inputs: {word: "{{state.loud}}"}, output: three}
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "flows.yaml").write_text(FLOWS, encoding="utf-8")
    return tmp_path / "flows"


def _system(folder: Path) -> TaskSystem:
    return TaskSystem(templates=folder, importable=["tests"])


def test_a_completed_code_step_is_replayed_from_its_checkpoint_on_resume(folder: Path, tmp_path: Path) -> None:
    """A crash in the step after the code step: on resume the function does not run again; its answer is used."""
    db, marker = str(tmp_path / "runs.sqlite"), tmp_path / "marker.txt"
    model, asked = crashing_model("one", crash_at=2)
    with pytest.raises(Killed):
        _system(folder).run_workflow("marked", {"word": "w", "marker": str(marker)}, run_id="c1", db=db, model=model)
    assert ["one"] == marker.read_text().splitlines()
    model, asked = crashing_model("three")
    result = _system(folder).resume_workflow("c1", db=db, model=model)
    assert TaskStatus.COMPLETE == result.status, result.error
    assert ["one"] == marker.read_text().splitlines()
    assert ["Repeat ONE"] == asked
    assert ("ONE", "three") == (result.state.loud, result.state.three)
    replayed = result.visits("mark")[0]
    assert ("tests.workflows.code_steps_funcs:mark", "COMPLETE") == (replayed.call, replayed.status.value)


def test_a_failed_code_step_is_recorded_with_its_exception_and_runs_again_on_resume(
    folder: Path, tmp_path: Path
) -> None:
    """FAILED at the code step (`code_error`, with the exception's type); resumed, the function runs again."""
    db, marker = str(tmp_path / "runs.sqlite"), tmp_path / "marker.txt"
    model, _ = crashing_model("one")
    inputs = {"word": "w", "marker": str(marker), "failures": 1}
    failed = _system(folder).run_workflow("marked", inputs, run_id="c2", db=db, model=model)
    assert failed.error is not None
    assert (FailureReason.CODE_ERROR, "mark", "OSError") == (
        failed.error.reason,
        failed.error.step,
        failed.error.details["exception"],
    )
    info = next(i for i in _system(folder).workflow_runs(db=db) if i.run_id == "c2")
    assert "FAILED" == info.status
    model, asked = crashing_model("three")
    result = _system(folder).resume_workflow("c2", db=db, model=model)
    assert TaskStatus.COMPLETE == result.status, result.error
    assert ["one", "one"] == marker.read_text().splitlines()  # the failed run, and the one after the resume
    assert ["Repeat ONE"] == asked  # `first` came back from its checkpoint


# -- kill -9, real processes -------------------------------------------------------------------------------------

DRIVER = """\
import json, sys
from atomtask import TaskSystem

folder, db, base_url, action, marker = sys.argv[1:6]
system = TaskSystem(templates=folder, importable=["tests"], base_url=base_url, model="openai-chat:fake")
if action == "run":
    result = system.run_workflow("marked", {"word": "w", "marker": marker}, run_id="k1", db=db)
else:
    result = system.resume_workflow("k1", db=db)
print(json.dumps(result.state.model_dump()) if result.ok else result.error.model_dump_json())
"""


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


@pytest.mark.slow
@pytest.mark.usefixtures("allow_model_requests")
def test_a_run_killed_after_its_code_step_resumes_without_running_the_function_again(
    server: FakeProviderServer, folder: Path, tmp_path: Path
) -> None:
    """kill -9 while the model step after the code step waits: resumed, the function has still run exactly once."""
    db, marker = str(tmp_path / "runs.sqlite"), tmp_path / "marker.txt"
    argv = [sys.executable, "-c", DRIVER, str(folder), db, server.openai_base_url]
    env = child_env(tmp_path)
    server.script(Reply.text("one"), Reply.delay(600, Reply.text("never sent")))
    running = subprocess.Popen(
        [*argv, "run", str(marker)], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 120
    while len(server.requests) < 2 and running.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert 2 == len(server.requests), running.stderr.read() if running.poll() is not None else "no second request"
    os.kill(running.pid, signal.SIGKILL)  # step `third` is in flight: `mark` has completed and been checkpointed
    running.wait()
    running.stdout.close()  # type: ignore[union-attr]
    running.stderr.close()  # type: ignore[union-attr]
    assert ["one"] == marker.read_text().splitlines()

    server.script(Reply.text("three"))
    resumed = subprocess.run([*argv, "resume", str(marker)], cwd=REPO, env=env, capture_output=True, text=True)
    assert 0 == resumed.returncode, resumed.stderr
    state = json.loads(resumed.stdout)
    assert ("ONE", "three") == (state.get("loud"), state.get("three")), resumed.stdout
    assert ["one"] == marker.read_text().splitlines()  # the code step ran once across the kill and the resume
    asked = [str(r.body["messages"][-1]["content"]) for r in server.requests]
    assert ["Repeat w", "Repeat ONE", "Repeat ONE"] == asked  # `third` was in flight: asked again
