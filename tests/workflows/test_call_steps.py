"""Code steps (`call: package.module:function`): checked like task steps from the annotations, run, retried, bounded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from atomtask import (
    FailureReason,
    StepStatus,
    TaskStatus,
    TaskSystem,
    Workflow,
    WorkflowBindingError,
    WorkflowCallDeclarationError,
    WorkflowCallFunctionError,
    WorkflowCallModuleError,
    WorkflowCallSignatureError,
    WorkflowDataFlowError,
    WorkflowError,
    WorkflowTypeError,
)

from tests.workflow_fixtures import TaskAnswers, make_system
from tests.workflows.code_steps_funcs import REF, TextStats


def _system(answers: TaskAnswers | None = None) -> TaskSystem:
    system = make_system(answers.model if answers is not None else "test", importable=("tests",))
    system.models.register(TextStats)
    return system


def _flow(*steps: dict[str, Any], state: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    fields = state or [
        {"name": "topic", "type": "str"},
        {"name": "research", "type": "str"},
        {"name": "stats", "type": "TextStats"},
        {"name": "score", "type": "int", "default": 0},
    ]
    return {"name": "coded", "state": fields, "steps": list(steps)}


def _research() -> dict[str, Any]:
    return {"id": "research", "task": "research_topic", "inputs": {"topic": "{{state.topic}}"},
            "outputs": {"research": "summary"}}  # fmt: skip


def _measure(function: str = "measure", **more: Any) -> dict[str, Any]:
    return {"id": "measure", "call": f"{REF}:{function}", "inputs": {"text": "{{state.research}}"}, "output": "stats",
            **more}  # fmt: skip


def _count() -> dict[str, Any]:
    return {"id": "count", "task": "count", "inputs": {"n": "{{state.stats.words}}"}, "outputs": {"score": "score"}}


def _answers() -> TaskAnswers:
    return TaskAnswers(research_topic=[{"summary": "the moon pulls the sea"}], count=[{"score": 7}])


def _errors(system: TaskSystem, doc: dict[str, Any]) -> list[tuple[str, str | None, str]]:
    """(code, step, message) of every problem the checks find in `doc`."""
    checked = system.workflows.check(Workflow.model_validate(doc))
    return [(e.code, e.step, e.message) for e in checked.errors]


@pytest.mark.parametrize("function", ["measure", "measure_async"])
def test_a_model_code_model_workflow_passes_typed_values_across_the_code_step(function: str) -> None:
    """research (model) -> measure (a sync or async function) -> count (model, bound to the function's answer)."""
    answers = _answers()
    system = _system(answers)
    system.register_workflow(Workflow.model_validate(_flow(_research(), _measure(function), _count())))
    result = system.run_workflow("coded", {"topic": "tides"})
    assert TaskStatus.COMPLETE == result.status, result.error
    assert ["research_topic", "count"] == answers.tasks()
    assert TextStats(words=5, longest="pulls") == result.state.stats
    assert "n=5" in answers.calls[1][1]
    assert 7 == result.state.score
    code = result.visits("measure")[0]
    assert (StepStatus.COMPLETE, f"{REF}:{function}", None, None) == (code.status, code.call, code.task, code.result)
    assert 2 == result.usage.requests  # the code step costs no request


def test_outputs_map_fields_of_the_returned_class_and_a_returned_dict_is_validated_into_it() -> None:
    """`outputs: {words: words}` reads a field of the answer; a dict returned for `-> TextStats` becomes one."""
    state = [{"name": "text", "type": "str"}, {"name": "words", "type": "int"}, {"name": "longest", "type": "str"}]
    step = {"id": "m", "call": f"{REF}:measure_as_dict", "inputs": {"text": "{{state.text}}"},
            "outputs": {"words": "words", "longest": "longest"}}  # fmt: skip
    system = _system()
    system.register_workflow(Workflow.model_validate(_flow(step, state=state)))
    result = system.run_workflow("coded", {"text": "a b c"})
    assert {"text": "a b c", "words": 3, "longest": "?"} == result.unwrap().model_dump()


def test_a_return_type_that_cannot_fill_its_field_is_an_error_before_running() -> None:
    """`-> str` stored in an `int` field is E114 at registration, naming the function: nothing runs."""
    state = [{"name": "word", "type": "str"}, {"name": "n", "type": "int"}]
    step = {"id": "loud", "call": f"{REF}:shout", "inputs": {"word": "{{state.word}}"}, "output": "n"}
    system = _system()
    with pytest.raises(WorkflowTypeError, match=rf"function '{REF}:shout' \(str\) in `state.n` \(int\)") as caught:
        system.register_workflow(Workflow.model_validate(_flow(step, state=state)))
    assert ("E114", "loud") == (caught.value.code, caught.value.step)


def test_the_checks_read_parameters_and_data_flow_across_a_code_step() -> None:
    """A str bound to an `int` parameter (E114), an unknown and a missing parameter (E115), an unwritten read (E116)."""
    state = [{"name": "text", "type": "str"}, {"name": "n", "type": "int"}, {"name": "m", "type": "int"}]
    steps = [
        {"id": "bad_type", "call": f"{REF}:double", "inputs": {"n": "{{state.text}}"}, "output": "n",
         "when": "state.text != ''"},
        {"id": "bad_name", "call": f"{REF}:double", "inputs": {"count": 2}, "output": "m"},
        {"id": "reads", "call": f"{REF}:double", "inputs": {"n": "{{state.n}}"}, "output": "m"},
    ]  # fmt: skip
    found = _errors(_system(), _flow(*steps, state=state))
    codes = [(code, step) for code, step, _ in found]
    assert [("E115", "bad_name"), ("E115", "bad_name"), ("E116", "reads"), ("E114", "bad_type")] == codes, found
    assert f"binds 'count', which is not a parameter of function '{REF}:double'." in found[0][2]
    assert "does not bind the required parameter(s) 'n'" in found[1][2]
    assert "bad_type (skipped) -> bad_name -> reads" in found[2][2]
    assert "to parameter 'n' (int)" in found[3][2]
    assert {WorkflowBindingError, WorkflowDataFlowError, WorkflowTypeError} <= {
        type(e) for e in _system().workflows.check(Workflow.model_validate(_flow(*steps, state=state))).errors
    }


@pytest.mark.parametrize(
    ("step", "kind", "message"),
    [
        ({"call": f"{REF}:shout", "task": "shout"}, WorkflowCallDeclarationError, "has `call` and `task`"),
        ({"call": f"{REF}:shout", "model": "test"}, WorkflowCallDeclarationError, "`model` applies only to a step"),
        ({"call": f"{REF}:shout", "on_failure": {"retry_with": "test"}}, WorkflowCallDeclarationError, "retries: N"),
        ({"call": "tests.workflows.code_steps_funcs"}, WorkflowCallDeclarationError, "`package.module:function`"),
        ({"call": "myshop.orders:fetch"}, WorkflowCallModuleError, r"not in the importable packages \('tests'\)"),
        ({"call": "tests.workflows.no_such_module:f"}, WorkflowCallModuleError, "Cannot import module"),
        ({"call": f"{REF}:shuot"}, WorkflowCallFunctionError, "has no function 'shuot'.* Did you mean 'shout'"),
        ({"call": f"{REF}:NOT_A_FUNCTION"}, WorkflowCallFunctionError, "not callable"),
        ({"call": f"{REF}:untyped"}, WorkflowCallSignatureError, "no type annotation on parameter 'text', the return"),
        ({"call": f"{REF}:no_return"}, WorkflowCallSignatureError, "no type annotation on the return value"),
        ({"call": f"{REF}:star_args"}, WorkflowCallSignatureError, r"'texts' cannot be bound by name \(`\*args`"),
    ],
)
def test_a_bad_code_step_declaration_is_a_typed_error_with_its_code(
    step: dict[str, Any], kind: type[WorkflowError], message: str
) -> None:
    """Each mistake only a code step can make has its own class and code (E121-E124), raised at registration."""
    state = [{"name": "word", "type": "str"}, {"name": "out", "type": "str"}]
    doc = _flow({"id": "s", "inputs": {"word": "{{state.word}}"}, "output": "out", **step}, state=state)
    system = _system()
    with pytest.raises(kind, match=message) as caught:
        system.register_workflow(Workflow.model_validate(doc))
    assert ("s", kind.code) == (caught.value.step, caught.value.code)


def test_a_code_step_without_importable_packages_says_how_to_allow_its_module() -> None:
    """A TaskSystem that may import nothing refuses every function, naming `importable=`."""
    doc = _flow(_research(), _measure(), _count())
    with pytest.raises(WorkflowCallModuleError, match=r"TaskSystem\(importable=\['tests'\]\)"):
        system = make_system("test")
        system.models.register(TextStats)
        system.register_workflow(Workflow.model_validate(doc))


def test_an_exception_fails_the_step_with_its_type_and_message() -> None:
    """`lookup` raises: the run FAILED as `code_error`, the exception's type, message and place in the record."""
    lookup = {**_measure("lookup"), "inputs": {"order_id": "{{state.research}}"}}
    doc = _flow(_research(), lookup, _count())
    system = _system(_answers())
    system.register_workflow(Workflow.model_validate(doc))
    result = system.run_workflow("coded", {"topic": "tides"})
    assert TaskStatus.FAILED == result.status
    error = result.error
    assert error is not None
    assert (FailureReason.CODE_ERROR, "measure") == (error.reason, error.step)
    assert f"{REF}:lookup raised OrderNotFoundError: no order 'the moon pulls the sea'" in error.message
    assert f"{REF}.OrderNotFoundError" == error.details["exception"]
    assert "no order 'the moon pulls the sea'" == error.details["error"]
    assert error.details["raised_at"].endswith(" in lookup")
    assert [("research", "COMPLETE"), ("measure", "FAILED")] == [(v.step, v.status.value) for v in result.steps]
    assert error == result.visits("measure")[0].error


def test_on_failure_continue_and_to_apply_to_a_code_step() -> None:
    """A failed code step with `continue` goes on without its writes; `{to: ...}` jumps."""
    state = [{"name": "word", "type": "str"}, {"name": "stats", "type": "TextStats?"}, {"name": "out", "type": "str"}]
    failing = {"id": "look", "call": f"{REF}:lookup", "inputs": {"order_id": "{{state.word}}"}, "output": "stats"}
    loud = {"id": "loud", "call": f"{REF}:shout", "inputs": {"word": "{{state.word}}"}, "output": "out"}
    system = _system()
    system.register_workflow(Workflow.model_validate(_flow({**failing, "on_failure": "continue"}, loud, state=state)))
    result = system.run_workflow("coded", {"word": "hey"})
    assert (TaskStatus.COMPLETE, None, "HEY") == (result.status, result.state.stats, result.state.out)
    jump = {**failing, "on_failure": {"to": "loud"}, "route": [{"to": "end"}]}
    doc = {**_flow(jump, loud, state=state), "name": "jumps"}
    system.register_workflow(Workflow.model_validate(doc))
    assert "HEY" == system.run_workflow("jumps", {"word": "hey"}).unwrap().out


def test_retries_run_the_function_again_after_an_exception(tmp_path: Path) -> None:
    """`retries: 2` with two failures: three runs, each a visit, the last COMPLETE."""
    log = tmp_path / "runs.log"
    state = [{"name": "log", "type": "str"}, {"name": "runs", "type": "int"}]
    step = {"id": "flaky", "call": f"{REF}:flaky", "inputs": {"log": "{{state.log}}", "failures": 2}, "output": "runs"}
    system = _system()
    system.register_workflow(Workflow.model_validate(_flow({**step, "retries": 2}, state=state)))
    result = system.run_workflow("coded", {"log": str(log)})
    assert 3 == result.unwrap().runs
    assert [(0, "FAILED"), (1, "FAILED"), (2, "COMPLETE")] == [(v.attempt, v.status.value) for v in result.steps]
    assert "ConnectionError" == result.steps[0].error.details["exception"]  # type: ignore[union-attr]


def test_when_every_retry_fails_the_step_fails_with_the_last_exception(tmp_path: Path) -> None:
    """`retries: 1` with three failures to come: two runs, the failure says which run it was."""
    log = tmp_path / "runs.log"
    state = [{"name": "log", "type": "str"}, {"name": "runs", "type": "int"}]
    step = {"id": "flaky", "call": f"{REF}:flaky", "inputs": {"log": "{{state.log}}", "failures": 3}, "output": "runs",
            "retries": 1}  # fmt: skip
    system = _system()
    system.register_workflow(Workflow.model_validate(_flow(step, state=state)))
    result = system.run_workflow("coded", {"log": str(log)})
    assert result.error is not None
    assert (FailureReason.CODE_ERROR, 2) == (result.error.reason, len(log.read_text().splitlines()))
    assert result.error.message.endswith("raised ConnectionError: run 2 failed (run 2 of 2)")


@pytest.mark.parametrize(("function", "timeout"), [("sleep_async", "30s"), ("sleep_sync", 0.05)])
def test_timeout_bounds_each_run_of_the_function(function: str, timeout: Any) -> None:
    """An async function is cancelled, a sync one (in a worker thread) left behind: the step fails as a timeout."""
    seconds = 60 if function == "sleep_async" else 1
    state = [{"name": "seconds", "type": "float"}, {"name": "out", "type": "str"}]
    step = {"id": "nap", "call": f"{REF}:{function}", "inputs": {"seconds": "{{state.seconds}}"}, "output": "out",
            "timeout": timeout}  # fmt: skip
    system = _system()
    workflow = Workflow.model_validate(_flow(step, state=state))
    if function == "sleep_async":  # `30s` is read as a duration; the run is bounded tighter to keep the test short
        assert 30.0 == workflow.steps[0].timeout
        workflow = workflow.model_copy(update={"steps": [workflow.steps[0].model_copy(update={"timeout": 0.05})]})
    system.register_workflow(workflow)
    result = system.run_workflow("coded", {"seconds": seconds})
    assert result.error is not None
    assert (FailureReason.CODE_ERROR, "TimeoutError", 0.05) == (
        result.error.reason,
        result.error.details["exception"],
        result.error.details["timeout"],
    )
    assert f"{REF}:{function} did not return within 0.05s (`timeout`)" in result.error.message


def test_a_returned_value_that_does_not_fit_the_return_type_fails_the_step() -> None:
    """`-> TextStats` returning `{"words": "many"}`: `output_validation_failure`, not retried."""
    doc = _flow(_research(), _measure("measure_wrongly", retries=3), _count())
    system = _system(_answers())
    system.register_workflow(Workflow.model_validate(doc))
    result = system.run_workflow("coded", {"topic": "tides"})
    assert result.error is not None
    assert (FailureReason.OUTPUT_VALIDATION_FAILURE, 1) == (result.error.reason, len(result.visits("measure")))
    assert "does not fit its return type" in result.error.message


def test_an_input_that_does_not_validate_into_its_parameter_fails_the_step() -> None:
    """A `list[any]` element bound to an `int` parameter passes the checks; the run validates it and fails."""
    state = [{"name": "values", "type": "list[any]"}, {"name": "doubled", "type": "list[int]"}]
    step = {"id": "d", "call": f"{REF}:double", "for_each": "state.values", "inputs": {"n": "{{item}}"},
            "collect": "doubled"}  # fmt: skip
    system = _system()
    system.register_workflow(Workflow.model_validate(_flow(step, state=state)))
    assert [2, 4, 6] == system.run_workflow("coded", {"values": [1, "2", 3]}).unwrap().doubled
    result = system.run_workflow("coded", {"values": [1, "two"]})
    assert result.error is not None
    assert (FailureReason.INPUT_VALIDATION_FAILURE, "n") == (result.error.reason, result.error.details["parameter"])


def test_code_steps_run_in_parallel_groups() -> None:
    """Two code steps of a `parallel` group run on the same state and join."""
    state = [{"name": "word", "type": "str"}, {"name": "loud", "type": "str"}, {"name": "n", "type": "int"}]
    group = {"id": "both", "parallel": [
        {"id": "a", "call": f"{REF}:shout", "inputs": {"word": "{{state.word}}"}, "output": "loud"},
        {"id": "b", "call": f"{REF}:double", "inputs": {"n": 21}, "output": "n"},
    ]}  # fmt: skip
    system = _system()
    system.register_workflow(Workflow.model_validate(_flow(group, state=state)))
    assert {"word": "hi", "loud": "HI", "n": 42} == system.run_workflow("coded", {"word": "hi"}).unwrap().model_dump()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"task": "shout", "timeout": "30s"}, r"`timeout` only applies to an approval .* or a code step \(`call`\)"),
        ({"call": f"{REF}:shout", "on_timeout": "approve"}, "`on_timeout` only applies to an approval step"),
        ({"call": f"{REF}:shout", "type": "approval"}, "an approval step waits for a person; it has no `call`"),
    ],
)
def test_timeout_belongs_to_code_and_approval_steps(extra: dict[str, Any], message: str) -> None:
    """A task step with `timeout`, a code step with `on_timeout`, an approval step with `call`: refused as declared."""
    with pytest.raises(ValueError, match=message):
        Workflow.model_validate(_flow({"id": "s", "output": "out", **extra}))
