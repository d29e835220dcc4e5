"""The response cache never holds a `redact: true` value: a step that writes one is not cached."""

from __future__ import annotations

from pathlib import Path

from atomtask import TaskSystem
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
  - {id: second, task: say, inputs: {word: "{{state.word}}"}, output: two}
"""


def _model(*answers: str) -> FunctionModel:
    left = list(answers)

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(left.pop(0))])

    return FunctionModel(answer)


def test_a_step_that_writes_a_redacted_field_is_not_cached(tmp_path: Path) -> None:
    """Cache on: the answer that fills `token` (redact) is in neither the cache file nor its WAL; `two`'s answer is."""
    (tmp_path / "flows.yaml").write_text(FLOW, encoding="utf-8")
    cache = tmp_path / "cache.sqlite3"
    system = TaskSystem(templates=tmp_path / "flows.yaml", cache=True, cache_path=cache)
    result = system.run_workflow(
        "guarded", {"word": "plain-word", "key": "s3cr3t-key"}, model=_model("t0k3n-v4lue", "tw0-answer")
    )
    assert "t0k3n-v4lue" == result.state.token
    stored = b"".join(path.read_bytes() for path in tmp_path.glob("cache.sqlite3*"))
    assert (False, False, True) == (b"t0k3n-v4lue" in stored, b"s3cr3t-key" in stored, b"tw0-answer" in stored)
