"""Workflows that real flows fit: run inputs that steps update, steps that only compute or fail, loops that end."""

from __future__ import annotations

from typing import Any

import pytest
from atomtask import FailureReason, StepStatus, TaskStatus, TaskSystem, Workflow
from atomtask.workflows._graph import dataflow_summary, mermaid
from pydantic import BaseModel, Field, ValidationError

from tests.workflow_fixtures import TaskAnswers, make_system


def _errors(system: TaskSystem, doc: dict[str, Any]) -> list[tuple[str, str | None, str]]:
    checked = system.workflows.check(Workflow.model_validate(doc))
    return [(e.code, e.step, e.message) for e in checked.errors]


def _pingpong(*, declared: bool = True) -> dict[str, Any]:
    """`current = input; loop: current = shout(current)`, three times, then end."""
    current: dict[str, Any] = {"name": "current", "type": "str"}
    if declared:
        current["input"] = True
    return {
        "name": "pingpong",
        "state": [current],
        "steps": [
            {"id": "peer", "task": "shout", "inputs": {"word": "{{state.current}}"}, "output": "current",
             "max_visits": 3, "on_max_visits": "end", "route": [{"to": "peer"}]},
        ],
    }  # fmt: skip


# 1. A run input that steps update


def test_a_field_declared_input_is_given_by_the_caller_and_updated_by_steps() -> None:
    answers = TaskAnswers(shout=[lambda prompt: prompt.rsplit("word=", 1)[1] + "!"])
    system = make_system(answers.model)
    system.register_workflow(Workflow.model_validate(_pingpong()))
    assert ("current",) == system.workflows.compiled("pingpong").required_inputs
    result = system.run_workflow("pingpong", {"current": "ping"})
    assert TaskStatus.COMPLETE == result.status, result.error
    assert "ping!!!" == result.state.current
    assert ["word=ping", "word=ping!", "word=ping!!"] == [p.rsplit(" ", 1)[1] for _, p in answers.calls]


def test_without_input_true_the_refusal_names_the_fix() -> None:
    system = make_system(TaskAnswers(shout=["x"]).model)
    doc = _pingpong(declared=False)
    doc["state"].append({"name": "seed", "type": "str", "default": ""})
    doc["steps"][0]["inputs"] = {"word": "{{state.seed}}"}
    system.register_workflow(Workflow.model_validate(doc))
    result = system.run_workflow("pingpong", {"current": "ping"})
    assert FailureReason.INPUT_VALIDATION_FAILURE == result.error.reason
    assert "'current' is written by step(s) 'peer', not a run input" in result.error.message
    assert "declare the state field `input: true`" in result.error.message


def test_a_declared_input_is_readable_at_the_start_for_the_data_flow_check() -> None:
    """Without `input: true` the first read of `current` is E116 (no step wrote it yet); with it, none."""
    system = make_system()
    assert [] == _errors(system, _pingpong())
    assert ["E116"] == [code for code, _, _ in _errors(system, _pingpong(declared=False))]


def test_a_named_state_class_declares_an_input_with_json_schema_extra() -> None:
    class Loop(BaseModel):
        current: str = Field(json_schema_extra={"input": True})

    system = make_system(TaskAnswers(shout=["loud"]).model)
    system.models.register(Loop)
    doc = _pingpong()
    doc["state"] = "Loop"
    system.register_workflow(Workflow.model_validate(doc))
    assert "loud" == system.run_workflow("pingpong", {"current": "a"}).unwrap().current


def test_a_non_boolean_input_flag_is_a_declaration_error() -> None:
    doc = _pingpong()
    doc["state"][0]["input"] = "yes"
    found = _errors(make_system(), doc)
    assert ("E110", None) == found[0][:2]
    assert "`input` of state field 'current' in workflow 'pingpong' is true or false, not 'yes'." == found[0][2]


def test_the_summary_shows_an_input_that_steps_also_write() -> None:
    system = make_system()
    system.register_workflow(Workflow.model_validate(_pingpong()))
    summary = dataflow_summary(system.workflows.compiled("pingpong"))
    assert "current: str  (run input, required; written by peer)" in summary
    assert "max visits: 3, then end" in summary


# 2. Steps that only compute, and a deliberate failed end


def _counter_flow(*steps: dict[str, Any]) -> dict[str, Any]:
    state = [
        {"name": "text", "type": "str"},
        {"name": "count", "type": "int"},
        {"name": "total", "type": "int"},
        {"name": "label", "type": "str", "default": ""},
    ]
    return {"name": "counter", "state": state, "steps": list(steps)}


def test_a_set_only_step_assigns_in_order_and_costs_no_request() -> None:
    answers = TaskAnswers(classify=[{"label": "ok"}])
    system = make_system(answers.model)
    init = {"id": "init", "set": {"count": "len(state.text)", "total": "state.count * 2"}}
    classify = {
        "id": "classify",
        "task": "classify",
        "inputs": {"text": "{{state.text}}"},
        "outputs": {"label": "label"},
    }
    system.register_workflow(Workflow.model_validate(_counter_flow(init, classify)))
    result = system.run_workflow("counter", {"text": "abc"})
    assert {"text": "abc", "count": 3, "total": 6, "label": "ok"} == result.unwrap().model_dump()
    visit = result.visits("init")[0]
    assert (StepStatus.COMPLETE, None, None) == (visit.status, visit.task, visit.result)
    assert 1 == result.usage.requests


def test_a_set_only_step_is_typed_like_any_set() -> None:
    bad = {"id": "init", "set": {"count": "state.text", "total": "0"}}
    found = _errors(make_system(), _counter_flow(bad))
    assert [("E114", "init")] == [(c, s) for c, s, _ in found]
    assert "sets `state.count` (int)" in found[0][2]


def test_a_set_reading_a_field_set_later_in_the_same_step_is_a_data_flow_error() -> None:
    bad = {"id": "init", "set": {"total": "state.count * 2", "count": "1"}}
    assert [("E116", "init")] == [(c, s) for c, s, _ in _errors(make_system(), _counter_flow(bad))]


@pytest.mark.parametrize(
    ("step", "said"),
    [
        ({"id": "s", "set": {"count": "1"}, "model": "test"}, "`model` does not apply to a step that only computes"),
        ({"id": "s", "set": {"count": "1"}, "on_failure": {"retry_with": "test"}}, "cannot `retry_with`"),
        ({"id": "s", "fail": "nope", "task": "classify"}, "a step with `fail` ends the run; it has no `task`"),
        ({"id": "s", "fail": "nope", "route": [{"to": "end"}]}, "`route` does not apply to a step with `fail`"),
        ({"id": "s", "fail": {"reason": "not a name"}}, "`fail.reason` is a name"),
        ({"id": "s"}, "a step that only computes has just `set`"),
        ({"id": "s", "task": "classify", "on_max_visits": "end"}, "give the step `max_visits: N` too"),
        ({"id": "s", "task": "classify", "max_visits": 2, "on_max_visits": "stop"}, "`on_max_visits` is `fail`"),
    ],
)
def test_wrong_compute_fail_and_bound_declarations_say_what_to_write(step: dict[str, Any], said: str) -> None:
    with pytest.raises(ValidationError, match=said.replace("`", ".").replace("(", ".").replace(")", ".")):
        Workflow.model_validate(_counter_flow(step))


def _guarded(**fail: Any) -> dict[str, Any]:
    guard = {"id": "guard", "when": "len(state.text) == 0", "fail": fail}
    init = {"id": "init", "set": {"count": "len(state.text)", "total": "0"}}
    return _counter_flow(guard, init)


def test_a_fail_step_ends_the_run_failed_with_its_reason_and_rendered_message() -> None:
    system = make_system()
    system.register_workflow(
        Workflow.model_validate(_guarded(reason="empty", message="Nothing to count in {{state.text}}!"))
    )
    result = system.run_workflow("counter", {"text": ""})
    assert TaskStatus.FAILED == result.status
    error = result.error
    assert (FailureReason.FAILED_BY_STEP, "guard", {"name": "empty"}) == (error.reason, error.step, error.details)
    assert "Nothing to count in !" == error.message
    assert [("guard", StepStatus.FAILED)] == [(v.step, v.status) for v in result.steps]


def test_a_fail_step_whose_when_is_false_is_skipped() -> None:
    system = make_system()
    system.register_workflow(Workflow.model_validate(_guarded(reason="empty")))
    result = system.run_workflow("counter", {"text": "abcd"})
    assert 4 == result.unwrap().count
    assert StepStatus.SKIPPED == result.visits("guard")[0].status


def test_a_fail_step_without_a_message_says_which_step_and_reason() -> None:
    system = make_system()
    system.register_workflow(Workflow.model_validate(_guarded(reason="empty")))
    assert "Step 'guard' ended the run: empty." == system.run_workflow("counter", {"text": ""}).error.message


def test_a_fail_steps_message_is_checked_like_a_placeholder() -> None:
    found = _errors(make_system(), _guarded(reason="empty", message="no {{state.txt}}"))
    assert [("E113", "guard")] == [(c, s) for c, s, _ in found]
    assert "Did you mean `state.text`?" in found[0][2]


def test_a_step_after_an_unconditional_fail_is_unreachable() -> None:
    doc = _counter_flow({"id": "stop", "fail": "always"}, {"id": "init", "set": {"count": "1", "total": "1"}})
    assert [("E117", "init")] == [(c, s) for c, s, _ in _errors(make_system(), doc)]


# 3. Loops that end at their bound


def _loop(on_max_visits: Any, *, after: bool = True) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [
        {"id": "start", "set": {"count": "0", "total": "0"}},
        {"id": "again", "set": {"count": "state.count + 1"}, "max_visits": 3, "on_max_visits": on_max_visits,
         "route": [{"to": "again"}]},
    ]  # fmt: skip
    if after:
        steps.append({"id": "after", "set": {"label": '"done"'}})
    return _counter_flow(*steps)


def test_on_max_visits_end_ends_the_run_normally_at_the_bound() -> None:
    system = make_system()
    system.register_workflow(Workflow.model_validate(_loop("end", after=False)))
    result = system.run_workflow("counter", {"text": "x"})
    assert 3 == result.unwrap().count
    assert [StepStatus.COMPLETE] * 3 + [StepStatus.SKIPPED] == [v.status for v in result.visits("again")]


def test_on_max_visits_to_goes_on_after_the_loop() -> None:
    system = make_system()
    system.register_workflow(Workflow.model_validate(_loop({"to": "after"})))
    state = system.run_workflow("counter", {"text": "x"}).unwrap()
    assert (3, "done") == (state.count, state.label)


def test_on_max_visits_fail_is_the_default_and_names_the_options() -> None:
    doc = _loop("fail", after=False)
    del doc["steps"][1]["on_max_visits"]
    system = make_system()
    system.register_workflow(Workflow.model_validate(doc))
    result = system.run_workflow("counter", {"text": "x"})
    assert FailureReason.MAX_VISITS_EXCEEDED == result.error.reason
    assert "`on_max_visits: end`" in result.error.message


def test_on_max_visits_to_an_unknown_step_is_a_route_error() -> None:
    found = _errors(make_system(), _loop({"to": "aftr"}))
    assert [("E117", "again")] == [(c, s) for c, s, _ in found]
    assert "Did you mean 'after'?" in found[0][2]


def test_on_max_visits_back_into_the_loop_is_a_cycle_error() -> None:
    doc = _loop({"to": "again"}, after=False)
    found = _errors(make_system(), doc)
    assert [("E118", "again")] == [(c, s) for c, s, _ in found]
    assert "inside the loop the bound ends" in found[0][2]


def test_the_bound_edge_counts_for_the_data_flow_check() -> None:
    """`after` reads `label`, written only by a step the bound skips: E116 through the bound's edge."""
    doc = _loop({"to": "after"})
    doc["steps"][1]["set"] = {"count": "state.count + 1", "label": '"x"'}
    doc["steps"][2]["set"] = {"total": "len(state.label)"}
    doc["state"][3] = {"name": "label", "type": "str"}
    # on every path to `after` `again` ran at least once, so `label` is written: no error
    assert [] == _errors(make_system(), doc)


def test_the_graph_draws_the_bound_and_the_failed_end() -> None:
    system = make_system()
    system.register_workflow(Workflow.model_validate(_loop({"to": "after"})))
    system.register_workflow(Workflow.model_validate({**_guarded(reason="empty"), "name": "guarded"}))
    assert 's_again -.->|"after 3 visits"| s_after' in mermaid(system.workflows.compiled("counter"))
    drawn = mermaid(system.workflows.compiled("guarded"))
    assert "s_guard --> failed((failed))" in drawn
    assert "fail: empty" in drawn


def test_the_bound_edge_of_a_step_that_may_be_skipped_carries_none_of_its_writes() -> None:
    doc = _loop({"to": "after"})
    doc["steps"][1]["set"] = {"count": "state.count + 1", "label": '"x"'}
    doc["steps"][1]["when"] = "state.total == 0"
    doc["steps"][2]["set"] = {"total": "len(state.label)"}
    doc["state"][3] = {"name": "label", "type": "str"}
    found = _errors(make_system(), doc)
    assert [("E116", "after")] == [(c, s) for c, s, _ in found]
    assert "start -> again (skipped) -> after" in found[0][2]


def test_defworkflow_declares_inputs_compute_fail_and_bound_steps() -> None:
    answers = TaskAnswers(shout=[lambda prompt: prompt.rsplit("word=", 1)[1] + "!"])
    system = make_system(answers.model)
    system.defatom(
        """
        (defworkflow echo
          (state (current str (input true)) (rounds int))
          (steps
            (step guard (when "len(state.current) > 10") (fail (reason too_long) (message "{{state.current}} is long")))
            (step init (set (rounds "0")))
            (step peer (task shout) (inputs (word "{{state.current}}")) (output current)
                  (set (rounds "state.rounds + 1"))
                  (route peer) (max_visits 2) (on_max_visits end))))
        """
    )
    state = system.run_workflow("echo", {"current": "hi"}).unwrap()
    assert ("hi!!", 2) == (state.current, state.rounds)
    failed = system.run_workflow("echo", {"current": "a" * 11})
    assert (FailureReason.FAILED_BY_STEP, {"name": "too_long"}) == (failed.error.reason, failed.error.details)
    assert "aaaaaaaaaaa is long" == failed.error.message


def test_an_expression_that_fails_on_a_value_gets_no_advice_about_missing_values() -> None:
    """`int('abc')` is not fixed by giving a field a value; a read of a field no step wrote is."""
    system = make_system()
    doc = _counter_flow(
        {"id": "parse", "when": "int(state.text) > 0", "set": {"count": "1", "total": "1"}},
    )
    system.register_workflow(Workflow.model_validate(doc))
    error = system.run_workflow("counter", {"text": "abc"}).error
    assert (FailureReason.EXPRESSION_ERROR, "parse") == (error.reason, error.step)
    assert "invalid literal for int()" in error.message
    assert "Give the fields it reads a value first" not in error.message


def test_an_expression_that_reads_a_missing_value_says_to_give_it_one() -> None:
    doc = _counter_flow({"id": "read", "when": "state.extra.size > 1", "set": {"count": "1", "total": "1"}})
    doc["state"].append({"name": "extra", "type": "any", "default": None})
    system = make_system()
    system.register_workflow(Workflow.model_validate(doc))
    error = system.run_workflow("counter", {"text": "abc"}).error
    assert FailureReason.EXPRESSION_ERROR == error.reason
    assert "`state.extra` is null, so `size` cannot be read from it" in error.message
    assert error.message.endswith("Give the fields it reads a value first (or a default).")
