"""A durable run keeps its steps' tool calls: a completed step's calls come back from its checkpoint on resume."""

from __future__ import annotations

from pathlib import Path

import pytest
from atomtask import TaskStatus, TaskSystem
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.handlers import tool_funcs
from tests.runs.run_helpers import Killed

FLOW = """\
templates:
  - name: priced
    params: {product: str}
    instructions: "Price {{product}}"
    tools: [tests.handlers.tool_funcs:lookup_price]
  - name: say
    params: {word: str}
    instructions: "Repeat {{word}}"
workflows:
  - name: priced_flow
    state:
      - {name: product, type: str}
      - {name: price, type: str}
      - {name: said, type: str}
    steps:
      - {id: price, task: priced, inputs: {product: "{{state.product}}"}, output: price}
      - {id: say, task: say, inputs: {word: "{{state.price}}"}, output: said}
"""


def _model(*, crash_on_say: bool) -> tuple[FunctionModel, list[str]]:
    """Calls `lookup_price` first in the `priced` task, then answers; `say` dies (kill -9) when asked to."""
    asked: list[str] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = str(messages[0].parts[-1].content)  # type: ignore[union-attr]
        asked.append(prompt)
        if prompt.startswith("Price") and len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("lookup_price", {"product": "grinder"})])
        if prompt.startswith("Repeat") and crash_on_say:
            raise Killed()
        return ModelResponse(parts=[TextPart("89.5 USD" if prompt.startswith("Price") else "said")])

    return FunctionModel(answer), asked


def test_a_resumed_run_keeps_the_tool_calls_of_its_completed_steps(tmp_path: Path) -> None:
    (tmp_path / "flows.yaml").write_text(FLOW, encoding="utf-8")
    db = str(tmp_path / "runs.sqlite")
    tool_funcs.CALLS.clear()
    model, _ = _model(crash_on_say=True)
    with pytest.raises(Killed):
        TaskSystem(templates=tmp_path, importable=["tests"]).run_workflow(
            "priced_flow", {"product": "grinder"}, run_id="tools-1", db=db, model=model
        )
    assert [("lookup_price", "grinder")] == tool_funcs.CALLS

    model, asked = _model(crash_on_say=False)
    result = TaskSystem(templates=tmp_path, importable=["tests"]).resume_workflow("tools-1", db=db, model=model)

    assert TaskStatus.COMPLETE == result.status, result.error
    assert ["Repeat 89.5 USD"] == asked  # the priced step was not run again, nor its tool
    assert [("lookup_price", "grinder")] == tool_funcs.CALLS
    [call] = result.steps[0].result.notes.attempts[0].tool_calls  # type: ignore[union-attr]
    assert ("lookup_price", {"product": "grinder"}, 89.5) == (call.name, call.args, call.result)
    assert call.duration_ms is not None
