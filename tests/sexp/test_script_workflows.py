"""Scripts call registered workflows by name, with named arguments, and get their `WorkflowResult`."""

from __future__ import annotations

import pytest
from atomtask import (
    FailureReason,
    SexpEvalError,
    SexpWorkflowFailedError,
    TaskResult,
    TaskStatus,
    TaskSystem,
    Workflow,
    WorkflowResult,
)

from tests.helpers import Recorder
from tests.workflow_fixtures import TaskAnswers, make_system

LOUD = """\
(defatom say (params word) (instructions "Say {{word}}"))
(defworkflow loud
  (state (word str) (said str (default "")))
  (steps (step speak (task say) (inputs (word "{{state.word}}")) (output said))))
"""


def test_a_workflow_call_runs_it_with_named_evaluated_arguments() -> None:
    """`(loud (word expr))` runs the workflow on those run inputs and gives its WorkflowResult."""
    rec = Recorder("HELLO")
    system = TaskSystem(model=rec.model)
    result = system.defatom(f'{LOUD} (loud (word (concat "hel" "lo")))')
    assert isinstance(result, WorkflowResult)
    assert TaskStatus.COMPLETE == result.status
    assert {"word": "hello", "said": "HELLO"} == result.state.model_dump()
    assert ["speak"] == [visit.step for visit in result.steps]


def test_unwrap_and_get_field_read_a_workflow_result() -> None:
    """`unwrap` gives the final state; `get-field` walks the result like any model."""
    system = TaskSystem(model=Recorder("HELLO").model)
    source = f'{LOUD} (let ((r (loud (word "hello")))) (list (get-field (unwrap r) "said") (get-field r "status")))'
    assert ["HELLO", "COMPLETE"] == system.defatom(source)


def test_a_scripts_model_and_settings_apply_to_workflow_calls() -> None:
    """`defatom(..., model=, model_settings=)` reaches every task a called workflow runs."""
    rec = Recorder("HELLO")
    system = TaskSystem()  # no default model: the run only works on the script's
    result = system.defatom(f'{LOUD} (loud (word "hi"))', model=rec.model, model_settings={"temperature": 0.3})
    assert TaskStatus.COMPLETE == result.status
    assert [0.3] == [(info.model_settings or {})["temperature"] for _, info in rec.calls]


def test_unwrap_of_a_failed_run_stops_the_script_with_the_result() -> None:
    """`(unwrap r)` on a FAILED run raises SexpWorkflowFailedError carrying the whole result."""
    system = TaskSystem(model=Recorder("unused").model)
    with pytest.raises(SexpWorkflowFailedError) as info:
        system.defatom(f"{LOUD}\n(unwrap (loud (wrd 1)))")
    assert FailureReason.INPUT_VALIDATION_FAILURE == info.value.result.error.reason
    assert "Workflow 'loud' failed (input_validation_failure" in info.value.message
    assert (6, 1) == (info.value.location.line, info.value.location.column)


def test_python_registered_workflows_are_callable_and_suggested() -> None:
    """A workflow registered from Python is callable by name; a typo suggests it."""
    answers = TaskAnswers(shout=["HEY"])
    system = make_system(answers.model)
    workflow = {
        "name": "shouter",
        "state": {"fields": [{"name": "word", "type": "str"}, {"name": "loud", "type": "str", "default": ""}]},
        "steps": [{"id": "s", "task": "shout", "inputs": {"word": "{{state.word}}"}, "output": "loud"}],
    }
    system.register_workflow(Workflow.model_validate(workflow))
    assert "HEY" == system.defatom('(get-field (unwrap (shouter (word "hey"))) "loud")')
    with pytest.raises(SexpEvalError, match="Did you mean 'shouter'"):
        system.defatom('(shoutr (word "hey"))')


def test_a_name_both_template_and_workflow_calls_the_template() -> None:
    """A workflow named like a template does not hide it: the task runs."""
    answers = TaskAnswers(shout=["HEY"])
    system = make_system(answers.model)
    workflow = {
        "name": "shout",
        "state": {"fields": [{"name": "word", "type": "str"}, {"name": "loud", "type": "str", "default": ""}]},
        "steps": [{"id": "s", "task": "shout", "inputs": {"word": "{{state.word}}"}, "output": "loud"}],
    }
    system.register_workflow(Workflow.model_validate(workflow))
    assert isinstance(system.defatom('(shout (word "hey"))'), TaskResult)


def test_positional_arguments_to_a_workflow_are_an_error() -> None:
    """A workflow's arguments are named, like a task's; the message says so."""
    system = TaskSystem(model=Recorder("x").model)
    with pytest.raises(
        SexpEvalError, match=r"Arguments to workflow 'loud' are named: `\(loud \(param value\) \.\.\.\)`"
    ):
        system.defatom(f'{LOUD} (loud "hi")')
