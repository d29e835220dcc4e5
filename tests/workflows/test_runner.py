"""Running workflows: routes, loops, skips, for_each, parallel groups, escalation, sub-workflows, limits, state."""

from __future__ import annotations

import copy
from typing import Any, assert_type

import pytest
from atomtask import ConfigurationError, FailureReason, StepStatus, TaskStatus, WorkflowResult
from atomtask.workflows import WorkflowRunner
from pydantic import BaseModel
from pydantic_ai.models.function import FunctionModel
from structlog.testing import capture_logs

from tests.workflow_fixtures import Article, TaskAnswers, article_writer, make_system, register, runner, triage


def _run(answers: TaskAnswers, *docs: dict[str, Any], inputs: dict[str, Any], **options: Any) -> WorkflowResult[Any]:
    system = make_system(answers.model)
    register(system, *docs)
    return system.run_workflow(docs[-1]["name"], inputs, **options)


def _article_answers(*scores: int) -> TaskAnswers:
    return TaskAnswers(
        research_topic=[{"summary": "the moon pulls the sea"}],
        write_article=[{"title": "Tides", "body": "draft"}],
        review_article=[{"score": s} for s in scores],
        revise_article=[{"title": "Tides", "body": "better"}],
    )


def _steps(result: WorkflowResult[Any]) -> list[tuple[str, str]]:
    return [(v.step, v.status.value) for v in result.steps]


def test_the_article_writer_revises_until_the_review_passes() -> None:
    """research -> write -> review (5) -> revise -> review (8) -> end, with typed state throughout."""
    answers = _article_answers(5, 8)
    result = _run(answers, article_writer(), inputs={"topic": "tides"})
    assert TaskStatus.COMPLETE == result.status
    assert ["research_topic", "write_article", "review_article", "revise_article", "review_article"] == answers.tasks()
    assert Article(title="Tides", body="better") == result.state.article
    assert (8, 1, "the moon pulls the sea") == (result.state.score, result.state.rounds, result.state.research)
    assert "Use these notes: the moon pulls the sea" in answers.calls[1][1]
    assert "score=5" in answers.calls[3][1]
    assert [1, 2] == [v.visit for v in result.visits("review")]
    assert 5 == result.usage.requests


def test_the_article_writer_stops_revising_after_two_rounds() -> None:
    """The route's `state.rounds < 2` ends the loop although the score never passes."""
    result = _run(_article_answers(3), article_writer(), inputs={"topic": "tides"})
    assert TaskStatus.COMPLETE == result.status
    assert (2, 3) == (result.state.rounds, len(result.visits("review")))


def test_max_visits_stops_a_loop_at_run_time_keeping_what_was_paid() -> None:
    """A loop whose exit never comes fails with max_visits_exceeded; state and visits are kept."""
    doc = article_writer()
    doc["steps"][2]["route"][0]["when"] = "state.score < 7"
    doc["steps"][3]["max_visits"] = 2
    result = _run(_article_answers(3), doc, inputs={"topic": "tides"})
    assert TaskStatus.FAILED == result.status
    assert (FailureReason.MAX_VISITS_EXCEEDED, "revise") == (result.error.reason, result.error.step)
    assert "over its `max_visits: 2`" in result.error.message
    assert 2 == result.state.rounds
    assert 7 == result.usage.requests


@pytest.mark.parametrize(
    ("label", "handler"), [("billing", "billing"), ("technical", "technical"), ("other", "general")]
)
def test_the_triage_router_takes_one_handler_then_replies(label: str, handler: str) -> None:
    """classify routes on the label to exactly one handler, then every path joins at `reply`."""
    answers = TaskAnswers(
        classify=[{"label": label}],
        billing=["refund issued"],
        technical=["restart it"],
        general=["thanks"],
        reply=[lambda prompt: "Reply: " + prompt.split("draft=")[1]],
    )
    result = _run(answers, triage(), inputs={"text": "help"})
    assert ["classify", handler, "reply"] == answers.tasks()
    assert result.state.answer.startswith("Reply: ")
    assert label == result.state.label


def test_a_false_when_skips_the_step_without_a_call() -> None:
    """`when` false: the visit is SKIPPED, no model is called, the route still applies."""
    doc = article_writer()
    doc["steps"][0]["when"] = "len(state.topic) > 100"
    answers = _article_answers(9)
    result = _run(answers, doc, inputs={"topic": "tides"})
    assert ("research", "SKIPPED") == _steps(result)[0]
    assert "research_topic" not in answers.tasks()
    assert "" == result.state.research


def _for_each(concurrency: int = 1) -> dict[str, Any]:
    return {
        "name": "shouter",
        "state": [{"name": "words", "type": "list[str]"}, {"name": "loud", "type": "list[str]"}],
        "steps": [
            {
                "id": "shout",
                "task": "shout",
                "for_each": "{{state.words}}",
                "as": "word",
                "concurrency": concurrency,
                "inputs": {"word": "{{word}}"},
                "collect": "loud",
            }
        ],
    }


@pytest.mark.parametrize("concurrency", [1, 3])
def test_for_each_runs_once_per_element_and_collects_in_order(concurrency: int) -> None:
    """Each element gets its own call; the answers are collected in the list's order."""
    answers = TaskAnswers(shout=[lambda prompt: prompt.split("word=")[1].upper()])
    result = _run(answers, _for_each(concurrency), inputs={"words": ["a", "b", "c"]})
    assert ["A", "B", "C"] == result.state.loud
    assert [0, 1, 2] == [v.item for v in result.steps]


def _counting(on_failure: str, concurrency: int = 1) -> dict[str, Any]:
    return {
        "name": "counter",
        "state": [{"name": "ns", "type": "list[int]"}, {"name": "scores", "type": "list[Review]", "default": []}],
        "steps": [
            {
                "id": "count",
                "task": "count",
                "for_each": "{{state.ns}}",
                "concurrency": concurrency,
                "inputs": {"n": "{{item}}"},
                "collect": "scores",
                "retries": 0,
                "on_failure": on_failure,
            }
        ],
    }


def _count_answers() -> TaskAnswers:
    return TaskAnswers(count=[lambda prompt: {"bad": 1} if "n=2" in prompt else {"score": int(prompt[-1])}])


def test_for_each_with_stop_starts_no_element_after_one_failed() -> None:
    """`stop`: once element 2 failed, element 3 is never called; the step fails at element 2."""
    answers = _count_answers()
    result = _run(answers, _counting("stop"), inputs={"ns": [1, 2, 3]})
    assert (TaskStatus.FAILED, "count") == (result.status, result.error.step)
    assert ["n=1", "n=2"] == [prompt[-3:] for _, prompt in answers.calls]
    assert [(0, "COMPLETE"), (1, "FAILED")] == [(v.item, v.status.value) for v in result.steps]
    assert [] == result.state.scores


def test_for_each_with_continue_collects_the_elements_that_succeeded() -> None:
    """`continue`: every element runs; `collect` keeps the successful answers in order, the failed one left out."""
    answers = _count_answers()
    result = _run(answers, _counting("continue", concurrency=3), inputs={"ns": [1, 2, 3]})
    assert TaskStatus.COMPLETE == result.status
    assert [1, 3] == [review.score for review in result.state.scores]
    assert [(0, "COMPLETE"), (1, "FAILED"), (2, "COMPLETE")] == [(v.item, v.status.value) for v in result.steps]


def test_a_parallel_group_runs_every_member_and_joins() -> None:
    """Both members run on the same state; their writes are joined before the next step."""
    doc = {
        "name": "fan_out",
        "state": [{"name": "text", "type": "str"}, {"name": "a", "type": "str"}, {"name": "b", "type": "str"}],
        "steps": [
            {
                "id": "both",
                "parallel": [
                    {"id": "one", "task": "billing", "inputs": {"text": "{{state.text}}"}, "output": "a"},
                    {"id": "two", "task": "technical", "inputs": {"text": "{{state.text}}"}, "output": "b"},
                ],
            },
            {"id": "join", "task": "reply", "inputs": {"draft": "{{state.a}} + {{state.b}}"}, "output": "a"},
        ],
    }
    answers = TaskAnswers(billing=["A"], technical=["B"], reply=[lambda p: p.split("draft=")[1]])
    result = _run(answers, doc, inputs={"text": "t"})
    assert "A + B" == result.state.a
    assert [("one", "COMPLETE"), ("two", "COMPLETE"), ("join", "COMPLETE")] == _steps(result)


def _failing_research(on_failure: Any) -> dict[str, Any]:
    doc = article_writer()
    doc["steps"][0].update(retries=0, on_failure=on_failure)
    return doc


def test_a_failed_step_stops_the_run_by_default_keeping_its_result() -> None:
    """`stop`: the run is FAILED at that step; the failed TaskResult and its usage are in the result."""
    answers = _article_answers(9)
    answers.queues["research_topic"] = [{"wrong": 1}]
    result = _run(answers, _failing_research("stop"), inputs={"topic": "tides"})
    assert (FailureReason.STEP_FAILED, "research") == (result.error.reason, result.error.step)
    assert "output_validation_failure" == result.error.details["task_reason"]
    assert TaskStatus.FAILED == result.steps[0].result.status
    assert 1 == result.usage.requests
    assert "tides" == result.state.topic


def test_on_failure_continue_goes_on_without_the_writes() -> None:
    """`continue`: the failed visit is recorded and the next step runs on the unchanged state."""
    answers = _article_answers(9)
    answers.queues["research_topic"] = [{"wrong": 1}]
    result = _run(answers, _failing_research("continue"), inputs={"topic": "tides"})
    assert TaskStatus.COMPLETE == result.status
    assert ("research", "FAILED") == _steps(result)[0]
    assert "" == result.state.research


def test_on_failure_to_jumps_to_the_named_step() -> None:
    """`{to: STEP}`: control goes to that step after the failure."""
    answers = _article_answers(9)
    answers.queues["research_topic"] = [{"wrong": 1}]
    doc = _failing_research({"to": "review"})
    doc["state"]["fields"][2].update(type="Article", default={"title": "old", "body": "old"})
    result = _run(answers, doc, inputs={"topic": "tides"})
    assert ["research_topic", "review_article"] == answers.tasks()
    assert TaskStatus.COMPLETE == result.status


def test_retry_with_escalates_to_another_model() -> None:
    """`{retry_with: test}`: the step runs again on that model, and its answer is used."""
    answers = _article_answers(9)
    answers.queues["research_topic"] = [{"wrong": 1}]
    result = _run(answers, _failing_research({"retry_with": "test"}), inputs={"topic": "tides"})
    research = result.visits("research")
    assert [(0, "FAILED"), (1, "COMPLETE")] == [(v.attempt, v.status.value) for v in research]
    assert "test" == research[1].model
    assert TaskStatus.COMPLETE == result.status


def test_a_write_that_breaks_the_state_fails_the_step_naming_field_and_value() -> None:
    """A score of 11 against `le: 10` fails `review` with state_validation_failure; the state keeps 0."""
    result = _run(_article_answers(11), article_writer(), inputs={"topic": "tides"})
    error = result.error
    assert (FailureReason.STATE_VALIDATION_FAILURE, "review") == (error.reason, error.step)
    assert ("score", 11) == (error.details["field"], error.details["value"])
    assert "Step 'review' wrote 11 to `state.score`" in error.message
    assert 0 == result.state.score
    assert TaskStatus.COMPLETE == result.steps[-1].result.status


def test_limits_hold_across_steps() -> None:
    """`limits: {requests: 2}` stops the run before the third call, with no call made for it."""
    doc = article_writer()
    doc["limits"] = {"requests": 2}
    answers = _article_answers(9)
    result = _run(answers, doc, inputs={"topic": "tides"})
    assert (FailureReason.USAGE_LIMIT_EXCEEDED, "review") == (result.error.reason, result.error.step)
    assert "requests: 2" in result.error.message
    assert 2 == len(answers.calls)


def test_run_limits_tighten_the_workflow_limits() -> None:
    """`limits=` on the run tighten the declared ones."""
    result = _run(_article_answers(9), article_writer(), inputs={"topic": "tides"}, limits={"requests": 1})
    assert ("write", 1) == (result.error.step, result.usage.requests)


def _child() -> dict[str, Any]:
    return {
        "name": "researcher",
        "state": [{"name": "subject", "type": "str"}, {"name": "notes", "type": "str"}],
        "steps": [
            {
                "id": "look",
                "task": "research_topic",
                "inputs": {"topic": "{{state.subject}}"},
                "outputs": {"notes": "summary"},
            }
        ],
    }


def test_a_sub_workflow_runs_with_its_own_state() -> None:
    """`workflow:` passes explicit inputs, returns explicit outputs, and keeps its visits nested."""
    doc = article_writer()
    doc["steps"][0] = {
        "id": "research",
        "workflow": "researcher",
        "inputs": {"subject": "{{state.topic}}"},
        "outputs": {"research": "notes"},
    }
    result = _run(_article_answers(9), _child(), doc, inputs={"topic": "tides"})
    assert "the moon pulls the sea" == result.state.research
    nested = result.steps[0].subworkflow
    assert ("researcher", "tides") == (nested.workflow, nested.state.subject)
    assert "subject" not in type(result.state).model_fields
    assert 3 == result.usage.requests


def test_run_inputs_are_validated_before_any_call() -> None:
    """Missing, unknown and step-written inputs fail the run with input_validation_failure."""
    answers = _article_answers(9)
    result = _run(answers, article_writer(), inputs={"topc": "x", "score": 3})
    assert FailureReason.INPUT_VALIDATION_FAILURE == result.error.reason
    message = result.error.message
    assert "unknown input 'topc'. Did you mean 'topic'?" in message
    assert "'score' is written by step(s) 'review', not a run input" in message
    assert "missing required input 'topic'" in message
    assert ([], None) == (answers.calls, result.state)


def test_an_unknown_run_input_message_reads_as_one_sentence() -> None:
    """A message ending with "Did you mean ...?" gets no stray `.` before the list of run inputs."""
    doc = article_writer()
    doc["state"]["fields"][0]["default"] = "tides"
    result = _run(_article_answers(9), doc, inputs={"topc": "x"})
    assert (
        "Invalid inputs for workflow 'article_writer': unknown input 'topc'. Did you mean 'topic'? "
        "Run inputs: topic." == result.error.message
    )


def test_the_run_model_overrides_the_workflow_model() -> None:
    """`model=` on the run wins over the workflow's `model:`, which wins over the system default."""
    doc = article_writer()
    doc["model"] = "test"
    answers = _article_answers(9)
    system = make_system(answers.model)
    compiled = register(system, doc).compiled("article_writer")
    declared = runner(system).run(compiled, {"topic": "tides"})
    assert {"test"} == {v.model for v in declared.steps}
    overridden = system.run_workflow("article_writer", {"topic": "tides"}, model=FunctionModel(answers._respond))
    assert {"function"} == {v.model.split(":")[0] for v in overridden.steps}


def test_step_retries_override_the_workflow_retries() -> None:
    """`retries: 1` on a step gives its task a second try although the workflow says 0."""
    doc = article_writer()
    doc["retries"] = 0
    doc["steps"][0]["retries"] = 1
    answers = _article_answers(9)
    answers.queues["research_topic"] = [{"wrong": 1}, {"summary": "ok"}]
    result = _run(answers, doc, inputs={"topic": "tides"})
    assert ("ok", 2) == (result.state.research, answers.tasks().count("research_topic"))


def test_a_null_read_at_run_time_fails_with_an_expression_error() -> None:
    """`state.extra.title` while `extra` (an `any`, unchecked at load) is null fails the run at that step."""
    doc = article_writer()
    doc["state"]["fields"].append({"name": "extra", "type": "any", "default": None})
    doc["steps"][0]["when"] = "state.extra.title == 'x'"
    result = _run(_article_answers(9), doc, inputs={"topic": "tides"})
    assert (FailureReason.EXPRESSION_ERROR, "research") == (result.error.reason, result.error.step)
    assert "`state.extra` is null" in result.error.message


def test_the_run_logs_its_events() -> None:
    """workflow_started, step_started/completed/failed and workflow_completed, in order."""
    answers = _article_answers(9)
    answers.queues["research_topic"] = [{"wrong": 1}]
    with capture_logs() as logs:
        _run(answers, _failing_research("continue"), inputs={"topic": "tides"})
    events = [e["event"] for e in logs if e["event"].startswith(("workflow_", "step_"))]
    assert ["workflow_started", "step_started", "step_failed", "step_started", "step_completed"] == events[:5]
    assert "workflow_completed" == events[-1]


def test_the_state_is_never_changed_in_place() -> None:
    """Every write makes a new state: the run's first state object still holds only the inputs."""
    system = make_system(_article_answers(9).model)
    compiled = register(system, article_writer()).compiled("article_writer")
    from atomtask.workflows._state import initial_state, write_state

    first = initial_state(compiled, {"topic": "tides"})
    before = copy.deepcopy(first.model_dump())
    second = write_state(first, {"score": 4})
    assert (before, 4) == (first.model_dump(), second.score)


async def test_run_inside_an_event_loop_runs_on_a_worker_thread() -> None:
    """The sync wrapper works inside a running loop (as `execute` does), and so does `run_async`."""
    system = make_system(_article_answers(9).model)
    compiled = register(system, article_writer()).compiled("article_writer")
    blocking = WorkflowRunner(system.executor).run(compiled, {"topic": "tides"})
    assert [StepStatus.COMPLETE] * 3 == [v.status for v in blocking.steps]
    result = await WorkflowRunner(system.executor).run_async(compiled, {"topic": "tides"})
    assert [StepStatus.COMPLETE] * 3 == [v.status for v in result.steps]


def test_bad_run_limits_raise_a_configuration_error_before_any_call() -> None:
    """`limits={"requests": 0}` is refused with the limit named, and no model is called."""
    answers = _article_answers(9)
    system = make_system(answers.model)
    register(system, article_writer())
    with pytest.raises(ConfigurationError, match="requests"):
        system.run_workflow("article_writer", {"topic": "tides"}, limits={"requests": 0})
    assert [] == answers.calls


def test_run_model_settings_reach_every_call_on_top_of_the_step_and_workflow() -> None:
    """The run's settings win over a step's, which win over the workflow's; each call gets the merged settings."""
    seen: list[dict[str, Any]] = []
    answers = _article_answers(9)

    def respond(messages: Any, info: Any) -> Any:
        seen.append(dict(info.model_settings or {}))
        return answers._respond(messages, info)

    doc = article_writer()
    doc["model_settings"] = {"temperature": 0.1, "seed": 1}
    doc["steps"][0]["model_settings"] = {"temperature": 0.5, "max_tokens": 50}
    system = make_system(FunctionModel(respond))
    register(system, doc)
    result = system.run_workflow("article_writer", {"topic": "tides"}, model_settings={"seed": 7})
    assert TaskStatus.COMPLETE == result.status
    first, second = seen[0], seen[1]
    assert (0.5, 50, 7) == (first["temperature"], first["max_tokens"], first["seed"])
    assert (0.1, 7) == (second["temperature"], second["seed"])
    assert "max_tokens" not in second


def test_bad_run_model_settings_raise_before_any_call() -> None:
    """An unknown setting key is a `ConfigurationError` with "did you mean", and nothing runs."""
    answers = _article_answers(9)
    system = make_system(answers.model)
    register(system, article_writer())
    with pytest.raises(ConfigurationError, match="temperature"):
        system.run_workflow("article_writer", {"topic": "tides"}, model_settings={"temprature": 0})
    assert [] == answers.calls


def test_on_visit_per_run_sees_each_top_level_visit_as_it_ends() -> None:
    """`on_visit=` on one run is called once per top-level visit, in order."""
    system = make_system(_article_answers(9).model)
    compiled = register(system, article_writer()).compiled("article_writer")
    seen: list[str] = []
    runner(system).run(compiled, {"topic": "tides"}, on_visit=lambda visit: seen.append(visit.step))
    assert ["research", "write", "review"] == seen


class Counter(BaseModel):
    n: int
    total: int = 0


async def test_a_named_schema_state_types_the_result_with_expect() -> None:
    """`state: Name` uses a registered class; `expect=` types the result as `WorkflowResult[Name]`."""
    answers = TaskAnswers(count=[{"score": 4}])
    system = make_system(answers.model)
    system.models.register(Counter)
    doc = {
        "name": "counting",
        "state": "Counter",
        "steps": [{"id": "c", "task": "count", "inputs": {"n": "{{state.n}}"}, "outputs": {"total": "score"}}],
    }
    compiled = register(system, doc).compiled("counting")
    result = await WorkflowRunner(system.executor).run_async(compiled, {"n": 2}, expect=Counter)
    assert_type(result, WorkflowResult[Counter])
    assert Counter(n=2, total=4) == result.unwrap()
    with pytest.raises(ConfigurationError, match="has state Counter, but the caller expects Article"):
        await WorkflowRunner(system.executor).run_async(compiled, {"n": 2}, expect=Article)


def test_a_failed_member_with_continue_lets_the_group_join() -> None:
    """In a `parallel` group, a member that fails with `continue` does not fail the group; the other writes."""
    doc = {
        "name": "fan_out",
        "state": [
            {"name": "n", "type": "int"},
            {"name": "a", "type": "int", "default": -1},
            {"name": "b", "type": "int"},
        ],
        "steps": [
            {
                "id": "both",
                "parallel": [
                    {
                        "id": "one",
                        "task": "count",
                        "inputs": {"n": "{{state.n}}"},
                        "outputs": {"a": "score"},
                        "retries": 0,
                        "on_failure": "continue",
                    },
                    {"id": "two", "task": "count", "inputs": {"n": 5}, "outputs": {"b": "score"}},
                ],
            }
        ],
    }
    answers = TaskAnswers(count=[lambda prompt: {"bad": 1} if "n=1" in prompt else {"score": 2}])
    result = _run(answers, doc, inputs={"n": 1})
    assert TaskStatus.COMPLETE == result.status
    assert (-1, 2) == (result.state.a, result.state.b)
    assert [("one", "FAILED"), ("two", "COMPLETE")] == _steps(result)


def test_a_failed_sub_workflow_fails_its_step_keeping_the_nested_run() -> None:
    """The child's FAILED result rides in the parent's visit; its usage counts in the parent's total."""
    doc = article_writer()
    doc["steps"][0] = {
        "id": "research",
        "workflow": "researcher",
        "inputs": {"subject": "{{state.topic}}"},
        "outputs": {"research": "notes"},
    }
    answers = _article_answers(9)
    answers.queues["research_topic"] = [{"wrong": 1}]
    child = _child()
    child["steps"][0]["retries"] = 0
    result = _run(answers, child, doc, inputs={"topic": "tides"})
    assert (FailureReason.STEP_FAILED, "research") == (result.error.reason, result.error.step)
    assert "workflow 'researcher' failed (step_failed at step 'look'" in result.error.message
    nested = result.steps[0].subworkflow
    assert (TaskStatus.FAILED, 1, 1) == (nested.status, nested.usage.requests, result.usage.requests)


def test_for_each_over_a_sub_workflow_collects_each_final_state() -> None:
    """A `for_each` sub-workflow step runs the child once per element; `collect` keeps each child state."""
    child = _child()
    doc = {
        "name": "many",
        "state": [{"name": "topics", "type": "list[str]"}, {"name": "found", "type": "list[any]"}],
        "steps": [
            {
                "id": "each",
                "workflow": "researcher",
                "for_each": "state.topics",
                "as": "topic",
                "inputs": {"subject": "{{topic}}"},
                "collect": "found",
            }
        ],
    }
    answers = TaskAnswers(research_topic=[lambda prompt: {"summary": "on " + prompt.split("topic=")[1]}])
    result = _run(answers, child, doc, inputs={"topics": ["sun", "moon"]})
    assert ["on sun", "on moon"] == [state.notes for state in result.state.found]
