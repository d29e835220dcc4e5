"""Approval steps in durable runs: WAITING with the message, approve from another process, reject, timeout."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from atomtask import ApprovalError, TaskStatus, TaskSystem
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

FLOW = """\
name: say
params: {word: str}
instructions: "Repeat {{word}}"
---
name: reviewed
version: "1.0"
state:
  - {name: word, type: str}
  - {name: one, type: str}
  - {name: ok, type: bool}
  - {name: two, type: str, default: "-"}
steps:
  - {id: first, task: say, inputs: {word: "{{state.word}}"}, output: one}
  - {id: review, type: approval, message: "Publish {{state.one}}?", output: ok, TIMEOUT}
  - {id: second, task: say, inputs: {word: "{{state.one}}"}, output: two, when: "state.ok"}
"""

ATOMTASK = str(Path(sys.executable).parent / "atomtask")


def _echo() -> FunctionModel:
    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(str(messages[-1].parts[-1].content).removeprefix("Repeat "))])  # type: ignore[union-attr]

    return FunctionModel(answer)


def _system(tmp_path: Path, timeout: str = "timeout: 1h") -> TaskSystem:
    (tmp_path / "flows.yaml").write_text(FLOW.replace("TIMEOUT", timeout), encoding="utf-8")
    return TaskSystem(templates=tmp_path / "flows.yaml")


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("approvals") / "runs.sqlite")


def _start(system: TaskSystem, run_id: str, db: str) -> tuple[threading.Thread, dict[str, Any]]:
    """Run the workflow on a thread (it blocks at the approval); the result lands in the dict."""
    done: dict[str, Any] = {}

    def go() -> None:
        done["result"] = system.run_workflow("reviewed", {"word": "w"}, run_id=run_id, db=db, model=_echo())

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread, done


def _waiting(system: TaskSystem, run_id: str, db: str) -> Any:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = next((info for info in system.workflow_runs(db=db) if info.run_id == run_id), None)
        if found is not None and found.status == "WAITING":
            return found
        time.sleep(0.1)
    raise AssertionError(f"run {run_id!r} never reached WAITING")


def test_a_run_waits_and_an_approval_from_another_process_continues_it(tmp_path: Path, db: str) -> None:
    """WAITING at `review` with the message built from state; `atomtask workflow approve` elsewhere; it goes on."""
    system = _system(tmp_path)
    thread, done = _start(system, "approve-1", db)
    info = _waiting(system, "approve-1", db)
    assert ("review", "Publish w?") == (info.current_step, info.waiting["message"])
    approved = subprocess.run(
        [ATOMTASK, "workflow", "approve", "approve-1", "--note", "fine", "--db", db, "--templates", str(tmp_path)],
        env={**os.environ},
        capture_output=True,
        text=True,
    )
    assert 0 == approved.returncode, approved.stderr
    assert "atomtask: run approve-1: approved step 'review' of reviewed" in approved.stdout
    thread.join(60)
    result = done["result"]
    assert TaskStatus.COMPLETE == result.status
    assert {"word": "w", "one": "w", "ok": True, "two": "w"} == result.state.model_dump()


def test_a_rejection_is_written_to_the_output_field(tmp_path: Path, db: str) -> None:
    """`approved=False`: `state.ok` is false, so the step after (`when: state.ok`) is skipped."""
    system = _system(tmp_path)
    thread, done = _start(system, "reject-1", db)
    _waiting(system, "reject-1", db)
    system.approve_workflow("reject-1", approved=False, note="not yet", db=db)
    thread.join(60)
    assert {"word": "w", "one": "w", "ok": False, "two": "-"} == done["result"].state.model_dump()


def test_a_timeout_decides_as_on_timeout_says(tmp_path: Path, db: str) -> None:
    """`timeout: 1s, on_timeout: approve`: without a decision the run goes on approved."""
    system = _system(tmp_path, "timeout: 1s, on_timeout: approve")
    result = system.run_workflow("reviewed", {"word": "w"}, run_id="timeout-1", db=db, model=_echo())
    assert (True, "w") == (result.state.ok, result.state.two)


def test_approving_a_run_that_is_not_waiting_is_refused(tmp_path: Path, db: str) -> None:
    """A finished run cannot be approved: `ApprovalError` naming its status; nothing is sent."""
    system = _system(tmp_path, "timeout: 1s")
    system.run_workflow("reviewed", {"word": "w"}, run_id="finished-1", db=db, model=_echo())
    with pytest.raises(ApprovalError, match="COMPLETE"):
        system.approve_workflow("finished-1", db=db)


def test_an_approval_step_outside_a_durable_run_fails_saying_why(tmp_path: Path) -> None:
    """Without a run id nothing can wait for a person: the step fails and names `run_id=`."""
    result = _system(tmp_path).run_workflow("reviewed", {"word": "w"}, model=_echo())
    assert result.error is not None
    assert ("review", True) == (result.error.step, "run_id=" in result.error.message)


@pytest.mark.slow
def test_a_waiting_run_says_how_to_decide_and_a_gone_process_is_left_to_approve_and_resume(tmp_path: Path) -> None:
    """The CLI prints the WAITING line (no DBOS log lines); its process gone, approve says to resume; resume ends it."""
    _system(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "ATOMTASK_MODEL"))}
    env.update(ATOMTASK_HOME=str(tmp_path / "home"), PYDANTIC_AI_NO_BANNER="1")
    where = ["--db", str(tmp_path / "runs.sqlite"), "--templates", str(tmp_path)]
    argv = [ATOMTASK, "workflow", "run", "reviewed", "-i", "word=w", "--run-id", "ctl-1", *where]
    running = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in running.stderr], daemon=True).start()  # type: ignore[union-attr]
    seen: list[str] = []
    while not any("WAITING" in line for line in seen):
        seen.append(lines.get(timeout=60))
    assert "atomtask: run ctl-1 WAITING at step 'review': Publish " in seen[-1]
    assert (
        "Approve from anywhere with `atomtask workflow approve ctl-1` (or --reject); Ctrl-C leaves it waiting: "
        in seen[-1]
    )
    assert not [line for line in seen if "WARNING" in line or "dbos" in line], seen
    running.send_signal(signal.SIGKILL)  # the process is gone; the run stays WAITING in the store
    running.wait(60)
    running.stdout.close()  # type: ignore[union-attr]

    approved = subprocess.run(
        [ATOMTASK, "workflow", "approve", "ctl-1", *where], env=env, capture_output=True, text=True
    )
    assert 0 == approved.returncode, approved.stderr
    assert "no process runs it now: continue it with `atomtask workflow resume ctl-1`" in approved.stdout
    resumed = subprocess.run([ATOMTASK, "workflow", "resume", "ctl-1", *where], env=env, capture_output=True, text=True)
    assert 0 == resumed.returncode, resumed.stderr
    assert True is json.loads(resumed.stdout)["ok"]


def test_on_waiting_is_told_the_step_and_message(tmp_path: Path, db: str) -> None:
    """`run_workflow(on_waiting=)` gets the run id and the wait (step, message) when the run stops at an approval."""
    system = _system(tmp_path)
    told: list[tuple[str, str, str]] = []
    done: dict[str, Any] = {}

    def go() -> None:
        done["result"] = system.run_workflow(
            "reviewed",
            {"word": "w"},
            run_id="told-1",
            db=db,
            model=_echo(),
            on_waiting=lambda run_id, wait: told.append((run_id, wait["step"], wait["message"])),
        )

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    _waiting(system, "told-1", db)
    system.approve_workflow("told-1", db=db)
    thread.join(60)
    assert [("told-1", "review", "Publish w?")] == told
    assert TaskStatus.COMPLETE == done["result"].status


LOOP = """\
name: say
params: {word: str}
instructions: "Repeat {{word}}"
---
name: looped
state:
  - {name: word, type: str}
  - {name: one, type: str}
  - {name: ok, type: bool}
  - {name: two, type: str, default: "-"}
steps:
  - {id: first, task: say, inputs: {word: "{{state.word}}"}, output: one}
  - id: review
    type: approval
    message: "Publish {{state.word}}?"
    output: ok
    route: [{when: "not state.ok", to: first}, {to: second}]
    max_visits: 3
  - {id: second, task: say, inputs: {word: "{{state.one}}"}, output: two}
"""


def _until(lines: queue.Queue[str], seen: list[str], text: str) -> None:
    while not any(text in line for line in seen):
        seen.append(lines.get(timeout=60))


@pytest.mark.slow
def test_a_run_resumed_after_a_rejection_says_what_it_was_waiting_for_and_waits_again(tmp_path: Path) -> None:
    """Rejected while its process was gone, a resumed run says it was WAITING, goes on, and prints WAITING again."""
    (tmp_path / "flows.yaml").write_text(LOOP, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "ATOMTASK_MODEL"))}
    env.update(ATOMTASK_HOME=str(tmp_path / "home"), PYDANTIC_AI_NO_BANNER="1")
    where = ["--db", str(tmp_path / "runs.sqlite"), "--templates", str(tmp_path)]
    argv = [ATOMTASK, "workflow", "run", "looped", "-i", "word=w", "--run-id", "rej-1", "--model", "test", *where]
    running = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in running.stderr], daemon=True).start()  # type: ignore[union-attr]
    _until(lines, [], "WAITING")
    running.send_signal(signal.SIGKILL)
    running.wait(60)
    running.stdout.close()  # type: ignore[union-attr]
    rejected = subprocess.run(
        [ATOMTASK, "workflow", "approve", "rej-1", "--reject", *where], env=env, capture_output=True, text=True
    )
    assert 0 == rejected.returncode, rejected.stderr

    resuming = subprocess.Popen(
        [ATOMTASK, "workflow", "resume", "rej-1", "--model", "test", *where],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    told: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [told.put(line) for line in resuming.stderr], daemon=True).start()  # type: ignore[union-attr]
    seen: list[str] = []
    _until(told, seen, "WAITING at step 'review': Publish w?")
    approved = subprocess.run(
        [ATOMTASK, "workflow", "approve", "rej-1", *where], env=env, capture_output=True, text=True
    )
    assert 0 == approved.returncode, approved.stderr
    assert 0 == resuming.wait(60)
    resuming.stdout.close()  # type: ignore[union-attr]
    steps = [line.split(":")[1].strip() for line in seen if line.startswith("atomtask: ") and " #" in line]
    assert ["first #1", "review #1", "first #2"] == steps[:3], seen
    said = "atomtask: run rej-1 was WAITING at step 'review' when it stopped (Publish w?): it goes on now"
    assert said in seen[2], seen  # after `first #1`, replayed; before `review #1`, decided
    assert 1 == sum("run rej-1 WAITING at step 'review'" in line for line in seen), seen
    assert seen[-1].startswith("atomtask: run rej-1 WAITING at step 'review': Publish w? Approve from anywhere")
