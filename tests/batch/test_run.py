"""`TaskSystem.batch` / `batch_sync` and the engine under them: results, the record, fingerprints, workflows, 429s."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from atomtask import (
    BatchInputError,
    BatchItemResult,
    ConfigurationError,
    FailureReason,
    TaskStatus,
    TaskSystem,
    TemplateNotFoundError,
)
from atomtask.handlers._blocking import run_blocking
from atomtask.testing import Reply
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.batch_helpers import ItemServer, write_templates
from tests.conftest import TEMPLATES

MARKER = re.compile(r"item-(\d+)")


class Counting:
    """A FunctionModel answering each item by its marker and counting the calls per item."""

    def __init__(self) -> None:
        self.calls: Counter[int] = Counter()
        self.model = FunctionModel(self.reply)

    def reply(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        n = int(MARKER.findall(str(messages))[-1])
        self.calls[n] += 1
        args = json.dumps({"label": f"label-{n}", "item": f"item-{n}"})
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, args)])


@pytest.fixture
def counting() -> Counting:
    return Counting()


@pytest.fixture
def system(tmp_path: Path, counting: Counting) -> TaskSystem:
    return TaskSystem(model=counting.model, templates=write_templates(tmp_path / "templates"))


def _items(count: int) -> list[dict[str, str]]:
    return [{"id": f"i{n}", "text": f"item-{n}"} for n in range(count)]


async def test_batch_yields_every_item_with_its_output_and_index(system: TaskSystem) -> None:
    """The async iterator yields one result per item: COMPLETE, the output in JSON form, its position."""
    run = system.batch("tag", _items(30), concurrency=5)
    results = [result async for result in run]
    assert 30 == len(results)
    by_id = {r.id: r for r in results}
    assert {"label": "label-4", "item": "item-4"} == by_id["i4"].output
    assert 4 == by_id["i4"].index
    assert 1 == by_id["i4"].attempts
    assert (30, 0, 0) == (run.done, run.failed, run.not_run)
    assert by_id["i4"].usage.total_tokens > 0


def test_a_failed_item_keeps_the_tasks_whole_error_in_its_json_line(tmp_path: Path) -> None:
    """A FAILED item's `error` is the task's `TaskError`: reason, message and `details` (nothing dropped)."""

    def invalid(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"label": 3})])

    system = TaskSystem(model=FunctionModel(invalid), templates=write_templates(tmp_path / "templates"))
    [item] = system.batch_sync("tag", _items(1))
    assert item.error is not None
    assert FailureReason.OUTPUT_VALIDATION_FAILURE == item.error.reason
    assert {"model": "function:invalid:", "attempts": 2} == item.error.details
    assert item.error.details == json.loads(item.json_line())["error"]["details"]


def test_batch_sync_returns_every_result(system: TaskSystem) -> None:
    """`batch_sync` is the sync form: a list of every result."""
    results = system.batch_sync("tag", _items(7), concurrency=3)
    assert [f"i{n}" for n in range(7)] == sorted((r.id for r in results), key=lambda i: int(i[1:]))
    assert all(isinstance(r, BatchItemResult) and r.ok for r in results)


def test_a_recorded_batch_runs_nothing_twice(system: TaskSystem, counting: Counting, tmp_path: Path) -> None:
    """With a `batch_id` a second run yields the recorded items (`resumed`) and calls no model for them."""
    db = tmp_path / "batches.sqlite3"
    first = system.batch_sync("tag", _items(5), batch_id="b", db=db)
    calls = Counter(counting.calls)
    second = system.batch_sync("tag", _items(8), batch_id="b", db=db)
    assert calls == Counter({n: 1 for n in range(5)})
    assert Counter({n: 1 for n in range(8)}) == counting.calls
    assert {r.id for r in first} == {r.id for r in second if r.resumed}
    assert [r.output for r in sorted(first, key=lambda r: r.index)] == [
        r.output for r in sorted(second, key=lambda r: r.index)[:5]
    ]


def test_a_changed_template_or_another_model_runs_items_again(
    system: TaskSystem, counting: Counting, tmp_path: Path
) -> None:
    """The record is per template fingerprint and model: an edited template or a new model pays again."""
    db = tmp_path / "batches.sqlite3"
    system.batch_sync("tag", _items(3), batch_id="b", db=db)
    template = system.templates.get("tag").model_copy(update={"instructions": "Label this: {{text}}"})
    system.register(template, replace=True)
    system.batch_sync("tag", _items(3), batch_id="b", db=db)
    assert Counter({0: 2, 1: 2, 2: 2}) == counting.calls
    again = system.batch_sync("tag", _items(3), batch_id="b", db=db)
    assert all(r.resumed for r in again)
    other = system.batch_sync("tag", _items(3), batch_id="b", db=db, model="test")  # pydantic-ai's TestModel
    assert [False, False, False] == [r.resumed for r in other]


def test_model_settings_and_the_endpoint_are_part_of_the_record_key(
    system: TaskSystem, counting: Counting, tmp_path: Path
) -> None:
    """Other model settings or another `base_url` run the items again; the same ones reuse the record."""
    db = tmp_path / "batches.sqlite3"
    system.batch_sync("tag", _items(2), batch_id="b", db=db)
    hot = system.batch_sync("tag", _items(2), batch_id="b", db=db, model_settings={"temperature": 0.9})
    assert [False, False] == [r.resumed for r in hot]
    again = system.batch_sync("tag", _items(2), batch_id="b", db=db, model_settings={"temperature": 0.9})
    assert [True, True] == [r.resumed for r in again]
    elsewhere = TaskSystem(model=counting.model, templates=tmp_path / "templates", base_url="http://other:1/v1")
    moved = elsewhere.batch_sync("tag", _items(2), batch_id="b", db=db)
    assert [False, False] == [r.resumed for r in moved]
    assert Counter({0: 3, 1: 3}) == counting.calls


def test_the_repair_mode_is_part_of_the_fingerprint_and_retries_are_not(system: TaskSystem) -> None:
    """A repair mode decides how an answer is read (a new key); retries only whether an item fails (the same key)."""
    from atomtask.batch._target import resolve_target
    from atomtask.system._options import NO_OPTIONS, CallOptions
    from atomtask.system._templates import RepairMode

    plain = resolve_target(system, "tag", NO_OPTIONS).fingerprint
    assert plain != resolve_target(system, "tag", CallOptions(repair=RepairMode.OFF)).fingerprint
    assert plain == resolve_target(system, "tag", CallOptions(retries=3)).fingerprint


@pytest.mark.parametrize(
    ("item", "said"),
    [
        ({"txt": "b"}, "Item 2: missing input 'text' (str); unknown input 'txt'. Did you mean 'text'?"),
        ({"text": 5}, "Item 2: input 'text': Input should be a valid string (got 5)."),
    ],
)
def test_a_missing_unknown_or_mistyped_input_raises_before_anything_runs(
    system: TaskSystem, counting: Counting, item: dict[str, object], said: str
) -> None:
    """Every item's inputs are validated first: the bad one is named with the fix; no model is called."""
    with pytest.raises(BatchInputError) as caught:
        system.batch("tag", [{"id": "ok", "text": "item-1"}, item])
    assert 2 == caught.value.line
    assert str(caught.value).startswith(f"<items>:2: {said}")
    assert "Give every item the inputs of template 'tag': text (str)." in str(caught.value)
    assert not counting.calls


def test_a_workflow_batch_names_the_models_it_uses() -> None:
    """A workflow target's model is the one its steps use (the TaskSystem's default here), never `-`."""
    from atomtask.batch._target import resolve_target
    from atomtask.system._options import NO_OPTIONS, CallOptions

    system = TaskSystem(templates=TEMPLATES)
    target = resolve_target(system, "article_writer", NO_OPTIONS)
    assert system.handler.choose_model().label in target.model.split(", ")
    assert "openai:gpt-4o" == resolve_target(system, "article_writer", CallOptions(model="openai:gpt-4o")).model


def test_a_workflow_item_with_a_wrong_run_input_raises_before_anything_runs() -> None:
    """A workflow's items are checked against its run inputs: the bad item is named with the fix."""
    system = TaskSystem(templates=TEMPLATES)
    with pytest.raises(BatchInputError, match=r"Item 1: unknown input 'topc'\. Did you mean 'topic'\?"):
        system.batch("article_writer", [{"topc": "tides"}])


def test_a_workflow_runs_once_per_item() -> None:
    """A workflow's name batches its runs: each item's output is the run's final state."""
    system = TaskSystem(templates=TEMPLATES)  # the embedded synthetic model: offline
    results = system.batch_sync("article_writer", [{"id": "a", "topic": "tides"}, {"topic": "moons"}])
    assert {TaskStatus.COMPLETE} == {r.status for r in results}
    assert all("topic" in r.output for r in results)
    ids = sorted(r.id for r in results)
    assert "a" == ids[0]
    assert ids[1].startswith("item-")
    assert all(r.attempts >= 1 for r in results)


def test_a_workflow_with_a_code_step_batches_like_any_workflow() -> None:
    """Each item runs the model step and the code step; the code step's answer is in every item's output."""
    from atomtask import Workflow

    from tests.workflow_fixtures import TaskAnswers, make_system

    answers = TaskAnswers(shout=[lambda prompt: prompt.split("word=", 1)[1].split()[0]])  # repeats the word
    system = make_system(answers.model, importable=("tests",))
    state = [{"name": "word", "type": "str"}, {"name": "heard", "type": "str"}, {"name": "loud", "type": "str"}]
    steps = [
        {"id": "hear", "task": "shout", "inputs": {"word": "{{state.word}}"}, "output": "heard"},
        {"id": "loud", "call": "tests.workflows.code_steps_funcs:shout", "inputs": {"word": "{{state.heard}}"},
         "output": "loud"},
    ]  # fmt: skip
    system.register_workflow(Workflow.model_validate({"name": "hear_loud", "state": state, "steps": steps}))
    results = system.batch_sync("hear_loud", [{"id": "a", "word": "tide"}, {"id": "b", "word": "moon"}])
    assert {"a": "TIDE", "b": "MOON"} == {r.id: r.output["loud"] for r in results}
    assert {TaskStatus.COMPLETE} == {r.status for r in results}


def test_usage_mistakes_raise_before_anything_runs(system: TaskSystem, counting: Counting) -> None:
    """An unknown name, an item that is no mapping, a repeated id and `concurrency=0` raise at once."""
    with pytest.raises(TemplateNotFoundError, match="Did you mean 'tag'"):
        system.batch("tga", _items(1))
    with pytest.raises(BatchInputError, match="Item 2 is a str"):
        system.batch("tag", [{"text": "item-1"}, "item-2"])  # type: ignore[list-item]
    with pytest.raises(BatchInputError, match="repeats the id 'x'"):
        system.batch("tag", [{"id": "x", "text": "item-1"}, {"id": "x", "text": "item-2"}])
    with pytest.raises(ConfigurationError, match="at least 1"):
        system.batch("tag", _items(1), concurrency=0)
    assert not counting.calls


@pytest.mark.usefixtures("allow_model_requests")
def test_a_429_pauses_every_worker_for_its_retry_after(tmp_path: Path) -> None:
    """After one item's 429 (retry-after-ms 400) no other item's request reaches the provider during the pause."""

    def fault(n: int, nth: int) -> object:
        return Reply.error(429, "Rate limit reached", {"retry-after-ms": "400"}) if n == 3 and nth == 1 else None

    with ItemServer(fault) as served:  # type: ignore[arg-type]
        system = TaskSystem(model=served.server.openai_chat_model(), templates=write_templates(tmp_path / "templates"))
        run = system.batch("tag", _items(24), concurrency=4)

        async def collect() -> list[BatchItemResult]:
            return [r async for r in run]

        results = run_blocking(collect())
    assert 24 == len(results)
    assert all(r.ok for r in results)
    limited = next(when for when, n, nth in served.times if n == 3 and nth == 1)
    # Requests already on their way may still arrive just after the 429; none is started during the pause.
    during = [n for when, n, _ in served.times if limited + 0.1 < when < limited + 0.38]
    assert [] == during
    assert 1 == run.pacer.rate_limited


def test_an_items_tool_calls_are_in_its_json_line_and_its_record(tmp_path: Path) -> None:
    """A template with a tool: each item's calls (name, arguments, result) are kept in its line and in the record."""
    from atomtask import Template

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("lookup_price", {"product": "grinder"})])
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"label": "priced", "item": "x"})])

    system = TaskSystem(
        model=FunctionModel(answer), templates=write_templates(tmp_path / "templates"), importable=["tests"]
    )
    template = system.templates.get("tag")
    system.register(
        Template(
            name="priced_tag",
            params=template.params,
            instructions=template.instructions,
            output_format=template.output_format,
            tools=["tests.handlers.tool_funcs:lookup_price"],
        )
    )
    db = tmp_path / "batches.sqlite3"
    [item] = system.batch_sync("priced_tag", _items(1), batch_id="t", db=db)
    [call] = json.loads(item.json_line())["tool_calls"]
    assert ("lookup_price", {"product": "grinder"}, 89.5) == (call["name"], call["args"], call["result"])
    [again] = system.batch_sync("priced_tag", _items(1), batch_id="t", db=db)
    assert again.resumed and item.tool_calls == again.tool_calls  # read back from the record
    [plain] = system.batch_sync("tag", _items(1))
    assert "tool_calls" not in json.loads(plain.json_line())  # only when there are some


def test_the_python_batch_takes_a_total_by_its_own_name_and_each_items_retries(tmp_path: Path) -> None:
    """`max_total_tokens=` is the batch's total; `max_tokens=` (an answer's limit elsewhere) is refused; `retries=`
    and `repair=` reach each item's call."""
    calls: list[int] = []

    def invalid(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls.append(1)
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"label": 3})])

    system = TaskSystem(model=FunctionModel(invalid), templates=write_templates(tmp_path / "templates"))
    with pytest.raises(ConfigurationError, match="`max_total_tokens=`"):
        system.batch_sync("tag", _items(1), max_tokens=10)  # type: ignore[call-arg]
    [item] = system.batch_sync("tag", _items(1), retries=0, repair="off")
    assert 1 == len(calls)  # no re-ask
    assert FailureReason.OUTPUT_VALIDATION_FAILURE == item.error.reason
    run = system.batch("tag", _items(5), max_total_tokens=1, concurrency=1, retries=0)
    run_blocking(_drain(run))
    assert run.stopped and run.not_run > 0  # the total was spent by the first item: the rest never ran


async def _drain(run: object) -> None:
    async for _ in run:  # type: ignore[attr-defined]
        pass
