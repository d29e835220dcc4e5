"""Redaction at storage: `redact: true` fields never reach the run store in clear; a resume asks for them again."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from atomtask import RedactedInputsError, TaskSystem
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

FLOW = """\
name: say
params: {word: str}
instructions: "Repeat {{word}}"
---
name: guarded
version: "1.0"
state:
  - {name: word, type: str}
  - {name: key, type: str, redact: true}
  - {name: token, type: str, redact: true}
  - {name: two, type: str}
steps:
  - {id: first, task: say, inputs: {word: "{{state.key}}"}, output: token}
  - {id: second, task: say, inputs: {word: "{{state.token}} {{state.word}}"}, output: two}
"""


class Killed(BaseException):
    """Stands for kill -9."""


def _model(*answers: str, crash_at: int | None = None) -> FunctionModel:
    calls: list[int] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls.append(1)
        if len(calls) == crash_at:
            raise Killed()
        return ModelResponse(parts=[TextPart(answers[len(calls) - 1])])

    return FunctionModel(answer)


def _stored(db: Path) -> bytes:
    """Every byte of the run store (the SQLite file and its write-ahead log)."""
    return b"".join(path.read_bytes() for path in db.parent.glob(db.name + "*"))


@pytest.fixture
def system(tmp_path: Path) -> TaskSystem:
    (tmp_path / "flows.yaml").write_text(FLOW, encoding="utf-8")
    return TaskSystem(templates=tmp_path / "flows.yaml")


def test_redacted_fields_never_reach_the_store_and_a_resume_asks_for_them(
    system: TaskSystem, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The run input `key` and the step-written `token` are not stored nor logged; resume needs both again."""
    caplog.set_level(logging.INFO)
    db = tmp_path / "runs.sqlite"
    with pytest.raises(Killed):
        system.run_workflow(
            "guarded", {"word": "w", "key": "s3cr3t-key"}, run_id="red-1", db=str(db), model=_model("t0k3n", crash_at=2)
        )
    with pytest.raises(RedactedInputsError, match="'key', 'token'"):
        system.resume_workflow("red-1", db=str(db), model=_model("two"))
    given = {"key": "s3cr3t-key", "token": "t0k3n"}
    result = system.resume_workflow("red-1", db=str(db), model=_model("two"), inputs=given)
    assert {"word": "w", "key": "s3cr3t-key", "token": "t0k3n", "two": "two"} == result.state.model_dump()
    stored = _stored(db)
    assert (b"s3cr3t-key" in stored, b"t0k3n" in stored, b'"two"' in stored) == (False, False, True)
    assert "s3cr3t-key" not in caplog.text and "t0k3n" not in caplog.text
    shown = next(info for info in system.workflow_runs(db=str(db)) if info.run_id == "red-1")
    first = shown.checkpoints[0]
    assert ({"word": "w"}, ("token",)) == (first.state, first.redacted)
    assert "[redacted]" == first.visits[0].result.notes.attempts[0].raw_output
