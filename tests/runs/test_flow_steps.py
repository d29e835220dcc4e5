"""Durable runs with steps that only compute, fail on purpose, or end a loop at its bound."""

from __future__ import annotations

from pathlib import Path

import pytest
from atomtask import FailureReason, StepStatus, TaskStatus, TaskSystem

from tests.runs.run_helpers import Killed, crashing_model

FLOWS = """\
name: say
params: {word: str}
instructions: "Repeat {{word}}"
---
name: echo
state:
  - {name: current, type: str, input: true}
  - {name: rounds, type: int}
steps:
  - {id: guard, when: "state.current == 'stop'", fail: {reason: stopped, message: "asked to stop"}}
  - {id: init, set: {rounds: "0"}}
  - id: peer
    task: say
    inputs: {word: "{{state.current}}"}
    output: current
    set: {rounds: "state.rounds + 1"}
    route: [peer]
    max_visits: 3
    on_max_visits: end
"""


@pytest.fixture
def system(tmp_path: Path) -> TaskSystem:
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "flows.yaml").write_text(FLOWS, encoding="utf-8")
    return TaskSystem(templates=tmp_path / "flows")


def test_a_loop_that_ends_at_its_bound_resumes_after_a_crash_without_paying_twice(
    system: TaskSystem, tmp_path: Path
) -> None:
    """Killed in the loop's third call; resumed: the two recorded calls are not asked again, the run ends COMPLETE."""
    db = str(tmp_path / "runs.sqlite")
    model, asked = crashing_model("a", "b", crash_at=3)
    with pytest.raises(Killed):
        system.run_workflow("echo", {"current": "x"}, run_id="loop", db=db, model=model)
    assert ["Repeat x", "Repeat a", "Repeat b"] == asked
    model, asked = crashing_model("c")
    result = system.resume_workflow("loop", db=db, model=model)
    assert TaskStatus.COMPLETE == result.status, result.error
    assert ["Repeat b"] == asked
    assert ("c", 3) == (result.state.current, result.state.rounds)
    assert [StepStatus.COMPLETE] * 3 + [StepStatus.SKIPPED] == [v.status for v in result.visits("peer")]
    assert 3 == result.usage.requests


def test_a_durable_run_failed_on_purpose_keeps_its_reason(system: TaskSystem, tmp_path: Path) -> None:
    model, asked = crashing_model()
    result = system.run_workflow("echo", {"current": "stop"}, run_id="stop", db=str(tmp_path / "r.sqlite"), model=model)
    assert (FailureReason.FAILED_BY_STEP, "guard", "asked to stop") == (
        result.error.reason,
        result.error.step,
        result.error.message,
    )
    assert [] == asked
