"""TaskSystem: the facade's own behaviour (lazy parts, system-wide model settings, workflows)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, assert_type

import pytest
from atomtask import (
    ConfigurationError,
    FailureReason,
    Step,
    TaskStatus,
    TaskSystem,
    Template,
    Workflow,
    WorkflowFailedError,
    WorkflowNotFoundError,
    WorkflowResult,
    bundled_templates_path,
)
from pydantic import BaseModel

from tests.helpers import Recorder

LIST_TEMPLATES = """
import sys
from atomtask import TaskSystem, bundled_templates_path
system = TaskSystem(templates=[bundled_templates_path()])
assert system.templates.names()
print(sorted(m for m in ("pydantic_ai", "openai", "anthropic") if m in sys.modules))
"""


def test_loading_and_listing_templates_does_not_import_pydantic_ai() -> None:
    """Constructing a system, loading the shipped templates and listing them leaves pydantic-ai unimported."""
    listed = subprocess.run([sys.executable, "-c", LIST_TEMPLATES], capture_output=True, text=True, check=True)
    assert "[]" == listed.stdout.strip()


def test_the_executor_and_manager_are_built_once_on_first_use() -> None:
    """`system.executor` and `system.manager` are built when first needed and the same afterwards."""
    rec = Recorder("hi")
    system = TaskSystem(model=rec.model, templates=[bundled_templates_path()])
    system.register(Template(name="say", instructions="Say hi."))
    assert system.executor is system.executor
    assert system.manager is system.executor.manager
    assert system.handler is system.manager.handler
    assert "hi" == system.execute("say").unwrap()


def test_system_model_settings_are_checked_at_construction() -> None:
    """`TaskSystem(model_settings=...)` with an unknown key raises a ConfigurationError suggesting the key."""
    with pytest.raises(ConfigurationError) as info:
        TaskSystem(model_settings={"max_token": 10})  # type: ignore[typeddict-unknown-key]  # the mistake under test
    assert "Unknown model setting 'max_token' in the TaskSystem (`model_settings=`)" in info.value.message
    assert "Did you mean 'max_tokens'?" in info.value.message


FLOW = """\
name: Rating
fields:
  - {name: score, type: int}
---
name: rate
params: {text: str}
instructions: "Rate {{text}}"
output_format: {type: json, schema: Rating}
---
name: rate_it
state:
  - {name: text, type: str}
  - {name: score, type: int, default: 0}
  - {name: rounds, type: int, default: 0}
steps:
  - id: rate
    task: rate
    inputs: {text: "{{state.text}}"}
    outputs: {score: score}
    set: {rounds: "state.rounds + 1"}
    route:
      - {when: "state.score < 5", to: rate}
      - {to: end}
    max_visits: 3
"""


class RateState(BaseModel):
    text: str
    score: int = 0
    rounds: int = 0


class Score(BaseModel):
    score: int


def _rating_system(tmp_path: Path, *scores: int, settings: list[dict[str, Any]] | None = None) -> TaskSystem:
    def reply(messages: Any, info: Any) -> dict[str, int]:
        if settings is not None:
            settings.append(dict(info.model_settings or {}))
        return {"score": scores[min(len(rec.calls), len(scores)) - 1]}

    rec = Recorder(*[reply] * 10)
    (tmp_path / "flow.yaml").write_text(FLOW, encoding="utf-8")
    return TaskSystem(model=rec.model, templates=tmp_path)


def test_load_registers_the_workflows_of_the_files_after_their_templates(tmp_path: Path) -> None:
    """`load` reads templates, schemas and workflows from one folder; `run_workflow` runs by name."""
    system = _rating_system(tmp_path, 3, 8)
    assert ["rate_it"] == system.workflows.names()
    result = system.run_workflow("rate_it", {"text": "tides"})
    assert (TaskStatus.COMPLETE, 8, 2) == (result.status, result.state.score, result.state.rounds)
    assert [("rate", 1), ("rate", 2)] == [(v.step, v.visit) for v in result.steps]
    assert 2 == result.usage.requests


def test_expect_types_the_result_of_a_run(tmp_path: Path) -> None:
    """`expect=Cls` types the result as `WorkflowResult[Cls]`; a state class that is not a `Cls` is refused."""
    system = TaskSystem(model=Recorder({"score": 9}).model)
    system.models.register(RateState)
    system.models.register(Score)
    system.register(Template(name="rate", params={"text": "str"}, instructions="Rate {{text}}",
                             output_format={"type": "json", "schema": "Score"}))  # fmt: skip
    flow = Workflow(
        name="typed",
        state="RateState",
        steps=[Step(id="rate", task="rate", inputs={"text": "{{state.text}}"}, outputs={"score": "score"})],
    )
    assert flow is system.register_workflow(flow)
    result = system.run_workflow("typed", {"text": "x"}, expect=RateState)
    assert_type(result, WorkflowResult[RateState])
    assert RateState(text="x", score=9) == result.unwrap()
    with pytest.raises(ConfigurationError, match="expects Template"):
        system.run_workflow("typed", {"text": "x"}, expect=Template)


def test_an_unknown_workflow_or_model_raises_before_any_call(tmp_path: Path) -> None:
    """A misspelt workflow name or a bad model string is a usage error, with the fix; nothing is called."""
    system = _rating_system(tmp_path, 9)
    with pytest.raises(WorkflowNotFoundError, match="Did you mean 'rate_it'"):
        system.run_workflow("rate_ti", {"text": "x"})
    with pytest.raises(ConfigurationError, match="opanai"):
        system.run_workflow("rate_it", {"text": "x"}, model="opanai:gpt-4o")


def test_run_inputs_that_do_not_fit_are_a_failed_result(tmp_path: Path) -> None:
    """Inputs that do not fit the state are a FAILED result (input_validation_failure), not an exception."""
    result = _rating_system(tmp_path, 9).run_workflow("rate_it", {"txt": "x"})
    assert (TaskStatus.FAILED, FailureReason.INPUT_VALIDATION_FAILURE) == (result.status, result.error.reason)
    with pytest.raises(WorkflowFailedError, match="input_validation_failure"):
        result.unwrap()


def test_run_model_settings_reach_the_model_on_top_of_the_workflow(tmp_path: Path) -> None:
    """`run_workflow(model_settings=...)` reaches every call, on top of the workflow's own settings."""
    seen: list[dict[str, Any]] = []
    system = _rating_system(tmp_path, 9, settings=seen)
    flow = system.workflows.get("rate_it").model_copy(update={"name": "warm", "model_settings": {"temperature": 0.9}})
    system.register_workflow(flow)
    assert system.run_workflow("warm", {"text": "x"}, model_settings={"max_tokens": 20}).ok
    assert [{"temperature": 0.9, "max_tokens": 20}] == seen


async def test_the_sync_form_works_inside_a_running_loop_and_the_async_form_too(tmp_path: Path) -> None:
    """`run_workflow` inside a running event loop runs on a worker thread (as `execute` does); `_async` awaits."""
    system = _rating_system(tmp_path, 9)
    assert 9 == system.run_workflow("rate_it", {"text": "x"}).unwrap().score
    assert 9 == (await system.run_workflow_async("rate_it", {"text": "x"})).unwrap().score


def test_on_visit_sees_each_visit_as_it_ends(tmp_path: Path) -> None:
    """`on_visit=` gets each top-level visit, in order, before the run returns."""
    seen: list[tuple[str, int]] = []
    _rating_system(tmp_path, 1, 2, 9).run_workflow(
        "rate_it", {"text": "x"}, on_visit=lambda visit: seen.append((visit.step, visit.visit))
    )
    assert [("rate", 1), ("rate", 2), ("rate", 3)] == seen


def test_loading_workflows_does_not_import_pydantic_ai(tmp_path: Path) -> None:
    """Loading a folder with a workflow and listing it leaves pydantic-ai unimported."""
    (tmp_path / "flow.yaml").write_text(FLOW, encoding="utf-8")
    code = LIST_TEMPLATES.replace("[bundled_templates_path()]", repr(str(tmp_path))).replace(
        "system.templates.names()", "system.workflows.names() == ['rate_it']"
    )
    assert (
        "[]" == subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    )
