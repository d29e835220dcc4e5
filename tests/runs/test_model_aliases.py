"""A durable run started with a model alias stores the alias, and resumes through the resuming system's aliases."""

from __future__ import annotations

from pathlib import Path

import pytest
from atomtask import TaskStatus, TaskSystem
from atomtask.testing import scripted_model

from tests.runs.run_helpers import Killed, crashing_model

FLOW = """\
name: say
params: {word: str}
instructions: "Repeat {{word}}"
---
name: flow
version: "1.0"
state:
  - {name: word, type: str}
  - {name: one, type: str}
  - {name: two, type: str}
steps:
  - {id: first, task: say, inputs: {word: "{{state.word}}"}, output: one}
  - {id: second, task: say, inputs: {word: "{{state.one}}"}, output: two}
"""


def test_a_run_started_with_an_alias_resumes_with_what_the_alias_stands_for_then(tmp_path: Path) -> None:
    """`model="fast"` is stored as `fast`: the resume runs the model the resuming system's `fast` stands for."""
    (tmp_path / "flow.yaml").write_text(FLOW, encoding="utf-8")
    db = str(tmp_path / "runs.sqlite")
    dying, _ = crashing_model("one", crash_at=2)
    with pytest.raises(Killed):
        TaskSystem(templates=tmp_path, model_aliases={"fast": dying}).run_workflow(
            "flow", {"word": "w"}, run_id="alias-1", db=db, model="fast"
        )
    later = scripted_model("two", model_name="later")
    result = TaskSystem(templates=tmp_path, model_aliases={"fast": later}).resume_workflow("alias-1", db=db)
    assert TaskStatus.COMPLETE == result.status
    assert ("one", "two") == (result.state.one, result.state.two)
    second = result.visits("second")[-1]
    assert ("function:later", "fast") == (second.model, second.result.notes.model_alias)
    assert 1 == len(later.calls)
