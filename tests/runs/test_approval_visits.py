"""Approvals bound to one step visit: a second decision for a visit is refused, and never approves a later gate."""

from __future__ import annotations

import io
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from atomtask import ApprovalError, TaskStatus, TaskSystem
from atomtask.cli._main import main
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.pg_fixture import postgres_url
from tests.runs.run_helpers import Killed, child_env

__all__ = ["postgres_url"]  # the session fixture, for pytest

ATOMTASK = str(Path(sys.executable).parent / "atomtask")

FLOW = """\
name: say
params: {word: str}
instructions: "Repeat {{word}}"
---
name: gates
state:
  - {name: word, type: str}
  - {name: one, type: str}
  - {name: ok1, type: bool}
  - {name: ok2, type: bool}
steps:
  - {id: first, task: say, inputs: {word: "{{state.word}}"}, output: one}
  - {id: gate1, type: approval, message: "Gate one for {{state.one}}?", output: ok1, timeout: 1h}
  - {id: gate2, type: approval, message: "Gate two?", output: ok2, timeout: 1h}
"""


def _echo() -> FunctionModel:
    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(str(messages[-1].parts[-1].content).removeprefix("Repeat "))])  # type: ignore[union-attr]

    return FunctionModel(answer)


@pytest.fixture
def system(tmp_path: Path) -> TaskSystem:
    (tmp_path / "flows.yaml").write_text(FLOW, encoding="utf-8")
    return TaskSystem(templates=tmp_path / "flows.yaml")


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("visits") / "runs.sqlite")


def _gone_at_gate1(system: TaskSystem, run_id: str, db: str) -> None:
    """Start a run and let its "process" die as it starts waiting at `gate1` (the run stays WAITING in the store)."""

    def die(run_id: str, wait: dict[str, Any]) -> None:
        raise Killed()

    with pytest.raises(Killed):
        system.run_workflow("gates", {"word": "w"}, run_id=run_id, db=db, model=_echo(), on_waiting=die)


def _status(system: TaskSystem, run_id: str, db: str) -> tuple[str, str | None]:
    info = next((info for info in system.workflow_runs(db=db) if info.run_id == run_id), None)
    return (info.status, info.current_step) if info is not None else ("NOT STARTED", None)


def _in_thread(go: Any) -> tuple[threading.Thread, dict[str, Any]]:
    done: dict[str, Any] = {}

    def run() -> None:
        try:
            done["result"] = go()
        except BaseException as exc:  # the test reads it
            done["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, done


def _until_waiting_at(system: TaskSystem, run_id: str, db: str, step: str) -> None:
    deadline = time.monotonic() + 60
    while ("WAITING", step) != _status(system, run_id, db):
        assert time.monotonic() < deadline, f"run {run_id!r} never waited at {step!r}: {_status(system, run_id, db)}"
        time.sleep(0.05)


def test_a_second_approval_of_a_gate_whose_process_is_gone_is_refused_and_does_not_approve_the_next(
    system: TaskSystem, db: str
) -> None:
    """Approve twice while the process is gone: the second is refused; resumed, gate1 is approved and gate2 waits."""
    _gone_at_gate1(system, "twice-1", db)
    system.approve_workflow("twice-1", note="first", by="alice", db=db)
    with pytest.raises(ApprovalError) as refused:
        system.approve_workflow("twice-1", by="bob", db=db)
    assert "Run 'twice-1' at step 'gate1' was already approved by alice at " in str(refused.value)
    assert "that decision stands, and nothing more was sent" in str(refused.value)
    assert ("alice", "first", True) == tuple(refused.value.decided[k] for k in ("by", "note", "approved"))  # type: ignore[index]

    thread, done = _in_thread(lambda: system.resume_workflow("twice-1", db=db, model=_echo()))
    _until_waiting_at(system, "twice-1", db, "gate2")  # the second approval did not reach gate2
    assert ("WAITING", "gate2") == _status(system, "twice-1", db)
    system.approve_workflow("twice-1", approved=False, by="carol", db=db)
    thread.join(60)
    result = done["result"]
    assert TaskStatus.COMPLETE == result.status
    assert (True, False) == (result.state.ok1, result.state.ok2)


@pytest.mark.postgres
def test_a_second_approval_is_refused_on_postgres(system: TaskSystem, postgres_url: str) -> None:
    """PostgreSQL: the decision of a visit is recorded once there too; the second `approve` is refused."""
    run_id = f"twice-pg-{uuid.uuid4().hex[:8]}"
    _gone_at_gate1(system, run_id, postgres_url)
    system.approve_workflow(run_id, approved=False, by="alice", db=postgres_url)
    with pytest.raises(ApprovalError, match="at step 'gate1' was already rejected by alice at "):
        system.approve_workflow(run_id, by="bob", db=postgres_url)
    thread, done = _in_thread(lambda: system.resume_workflow(run_id, db=postgres_url, model=_echo()))
    _until_waiting_at(system, run_id, postgres_url, "gate2")
    system.approve_workflow(run_id, db=postgres_url)
    thread.join(60)
    assert (False, True) == (done["result"].state.ok1, done["result"].state.ok2)


def test_an_approval_after_a_rejection_of_the_same_visit_is_refused(system: TaskSystem, db: str) -> None:
    """Reject, then approve the same gate visit: refused, naming the rejection; resumed, the rejection holds."""
    _gone_at_gate1(system, "reject-then-1", db)
    system.approve_workflow("reject-then-1", approved=False, by="alice", db=db)
    with pytest.raises(ApprovalError, match="at step 'gate1' was already rejected by alice at "):
        system.approve_workflow("reject-then-1", db=db)
    thread, done = _in_thread(lambda: system.resume_workflow("reject-then-1", db=db, model=_echo()))
    _until_waiting_at(system, "reject-then-1", db, "gate2")
    system.approve_workflow("reject-then-1", db=db)
    thread.join(60)
    assert (False, True) == (done["result"].state.ok1, done["result"].state.ok2)


def test_two_approvals_at_once_of_a_live_waiting_run_decide_its_gate_once(system: TaskSystem, db: str) -> None:
    """A live run WAITING at gate1, two `approve` at once: gate1 is decided once; gate2 gets only a decision for it."""
    thread, done = _in_thread(
        lambda: system.run_workflow("gates", {"word": "w"}, run_id="live-2", db=db, model=_echo())
    )
    _until_waiting_at(system, "live-2", db, "gate1")
    start = threading.Barrier(2)
    outcomes: list[Any] = []

    def decide(by: str) -> None:
        start.wait()
        try:
            outcomes.append(system.approve_workflow("live-2", by=by, db=db).current_step)
        except ApprovalError as exc:
            outcomes.append(exc)

    deciders = [threading.Thread(target=decide, args=(by,)) for by in ("alice", "bob")]
    for decider in deciders:
        decider.start()
    for decider in deciders:
        decider.join(60)
    approved = sorted(o for o in outcomes if isinstance(o, str))
    # Either the second was refused (the same visit), or it came after gate1 was decided and was for gate2.
    assert approved in (["gate1"], ["gate1", "gate2"]), outcomes
    if approved == ["gate1"]:
        refused = next(o for o in outcomes if isinstance(o, ApprovalError))
        assert "was already approved by " in str(refused)
        _until_waiting_at(system, "live-2", db, "gate2")  # gate2 was not approved by the refused decision
        system.approve_workflow("live-2", approved=False, db=db)
    thread.join(60)
    assert (True, approved == ["gate1", "gate2"]) == (done["result"].state.ok1, done["result"].state.ok2)


@pytest.mark.slow
def test_the_operators_double_approve_after_a_kill_is_refused_and_gate2_waits(tmp_path: Path) -> None:
    """kill -9 a `workflow run` WAITING at gate1; `approve` twice: the second exits 2 naming the decision that stands;
    `resume` completes gate1 and stops WAITING at gate2 (it is not approved by the second `approve`)."""
    (tmp_path / "flows.yaml").write_text(FLOW, encoding="utf-8")
    env = child_env(tmp_path)
    where = ["--db", str(tmp_path / "runs.sqlite"), "--templates", str(tmp_path)]
    argv = [ATOMTASK, "workflow", "run", "gates", "-i", "word=w", "--run-id", "op-1", "--model", "test", *where]
    running = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in running.stderr], daemon=True).start()  # type: ignore[union-attr]
    _until(lines, "WAITING at step 'gate1'")
    os.kill(running.pid, signal.SIGKILL)
    running.wait(60)
    running.stdout.close()  # type: ignore[union-attr]

    approve = [ATOMTASK, "workflow", "approve", "op-1", *where]
    first = subprocess.run(approve, env=env, capture_output=True, text=True)
    assert 0 == first.returncode, first.stderr
    second = subprocess.run(approve, env=env, capture_output=True, text=True)
    assert 2 == second.returncode, second.stdout  # a usage error: the run is not waiting for this decision
    assert "Run 'op-1' at step 'gate1' was already approved by " in second.stderr
    rejected = subprocess.run([*approve, "--reject"], env=env, capture_output=True, text=True)
    assert (2, True) == (rejected.returncode, "was already approved by " in rejected.stderr)

    resuming = subprocess.Popen(
        [ATOMTASK, "workflow", "resume", "op-1", "--model", "test", *where],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    told: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [told.put(line) for line in resuming.stderr], daemon=True).start()  # type: ignore[union-attr]
    _until(told, "WAITING at step 'gate2'")  # gate1 approved once; gate2 waits for a decision of its own
    assert None is resuming.poll()
    last = subprocess.run([*approve, "--reject"], env=env, capture_output=True, text=True)
    assert 0 == last.returncode, last.stderr
    out, _ = resuming.communicate(timeout=60)
    assert 0 == resuming.returncode, out
    assert (True, False) == tuple(json.loads(out)[k] for k in ("ok1", "ok2")), out


def _until(lines: queue.Queue[str], text: str) -> None:
    seen: list[str] = []
    while not any(text in line for line in seen):
        seen.append(lines.get(timeout=120))


def test_a_decision_meant_for_one_gate_never_reaches_the_next(system: TaskSystem, db: str) -> None:
    """`step=` (`approve --step`): a decision for gate1 arriving once the run waits at gate2 is refused, not given.

    With a live process, a second `approve` of gate1 that comes after the first was taken finds the run at gate2:
    without `step=` it would decide gate2.
    """
    thread, done = _in_thread(lambda: system.run_workflow("gates", {"word": "w"}, run_id="guard-1", db=db,
                                                          model=_echo()))  # fmt: skip
    _until_waiting_at(system, "guard-1", db, "gate1")
    system.approve_workflow("guard-1", by="alice", db=db, step="gate1")
    _until_waiting_at(system, "guard-1", db, "gate2")
    with pytest.raises(ApprovalError) as refused:
        system.approve_workflow("guard-1", by="bob", db=db, step="gate1")
    assert ("gate2", "gate1") == (refused.value.step, refused.value.expected)
    assert "Run 'guard-1' waits at step 'gate2', not at step 'gate1'" in str(refused.value)
    assert ("WAITING", "gate2") == _status(system, "guard-1", db)  # nothing was sent: it still waits
    err = io.StringIO()
    argv = ["workflow", "approve", "guard-1", "--step", "gate1", "--db", db, "--reject"]
    assert 2 == main(argv, stderr=err, stdout=io.StringIO())
    assert "not at step 'gate1'" in err.getvalue()
    system.approve_workflow("guard-1", approved=False, by="carol", db=db, step="gate2")
    thread.join(60)
    assert (True, False) == (done["result"].state.ok1, done["result"].state.ok2)
