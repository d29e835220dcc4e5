"""TaskSystem: the facade's own behaviour (lazy parts, system-wide model settings, workflows)."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any, assert_type

import pytest
from atomtask import (
    ConfigurationError,
    FailureReason,
    SchemaError,
    Step,
    TaskResult,
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

from tests.helpers import Recorder, user_text

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


# `ask` and `extract`: one call without a named template, on the same executor as a template.


class Contact(BaseModel):
    name: str
    email: str


ADA = {"name": "Ada Lovelace", "email": "ada@example.com"}


def test_ask_answers_the_class_given_with_the_instructions_and_text_sent_as_written() -> None:
    """`ask(Contact, text, instructions=...)` returns a `TaskResult[Contact]`; the instructions are the system text."""
    from atomtask.testing import scripted_model

    model = scripted_model(ADA)
    system = TaskSystem(model=model)
    result = system.ask(Contact, "Ada Lovelace, ada@example.com", instructions="Extract the contact. {{raw}}")
    assert_type(result, TaskResult[Contact])
    assert Contact(**ADA) == result.unwrap()
    assert "ask" == result.notes.template
    assert "Extract the contact. {{raw}}" == model.calls[0].instructions  # never rendered
    assert "Ada Lovelace, ada@example.com" == user_text(model.calls[0].messages)
    assert [] == system.templates.names()  # nothing registered


def test_ask_repairs_retries_and_keeps_the_ledger_like_a_template() -> None:
    """An invalid first answer is re-asked (`retries=`), and both attempts are in `notes.attempts`."""
    from atomtask.testing import scripted_model

    system = TaskSystem(model=scripted_model({"name": "Ada"}, ADA))
    result = system.ask(Contact, "Ada", retries=1)
    assert TaskStatus.COMPLETE == result.status
    assert [False, True] == [attempt.valid for attempt in result.notes.attempts]
    failed = TaskSystem(model=scripted_model({"name": "Ada"}, ADA)).ask(Contact, "Ada", retries=0)
    assert FailureReason.OUTPUT_VALIDATION_FAILURE == failed.error.reason  # type: ignore[union-attr]


def test_ask_holds_to_limits_and_serves_the_response_cache() -> None:
    """`limits=` stop the call before the model; `cache=True` serves the second identical call from the cache."""
    from atomtask.testing import scripted_model

    system = TaskSystem(model=scripted_model(ADA), cache_path=":memory:")
    over = system.ask(Contact, "Ada " * 100, limits={"input_tokens": 20})
    assert FailureReason.USAGE_LIMIT_EXCEEDED == over.error.reason  # type: ignore[union-attr]
    first = TaskSystem(model=scripted_model(ADA), cache_path=":memory:")
    assert not first.ask(Contact, "Ada", cache=True).notes.cached
    again = first.ask(Contact, "Ada", cache=True)
    assert (True, Contact(**ADA)) == (again.notes.cached, again.parsedContent)


async def test_ask_async_is_ask_awaited() -> None:
    """`await ask_async(...)` gives what `ask` gives, on the running loop."""
    from atomtask.testing import scripted_model

    result = await TaskSystem(model=scripted_model(ADA)).ask_async(Contact, "Ada", instructions="Extract.")
    assert_type(result, TaskResult[Contact])
    assert Contact(**ADA) == result.unwrap()


def test_ask_str_answers_text_and_a_schema_name_a_registered_class() -> None:
    """`ask(str, ...)` answers text; `ask("Contact", ...)` uses the registered class; a near name is suggested."""
    from atomtask.testing import scripted_model

    system = TaskSystem(model=scripted_model("Hello, Ada.", ADA))
    system.models.register(Contact)
    assert "Hello, Ada." == system.ask(str, "Greet Ada").unwrap()
    assert Contact(**ADA) == system.ask("Contact", "Ada").parsedContent
    with pytest.raises(SchemaError, match="Did you mean 'Contact'"):
        system.ask("Contct", "Ada")


@pytest.mark.parametrize(
    ("output", "said"),
    [
        (int, "not <class 'int'>; wrap other types in a model"),
        (list[Contact], "not list[tests.test_task_system.Contact]; wrap"),
        (Contact(**ADA), "pass the class `Contact`, not an instance"),
    ],
)
def test_ask_refuses_an_output_that_is_not_a_model_class(output: Any, said: str) -> None:
    """Anything but a Pydantic class, a schema name or `str` raises a SchemaError saying what to pass."""
    with pytest.raises(SchemaError) as raised:
        TaskSystem(model="test").ask(output, "text")
    assert "`ask()` answers a Pydantic model class" in raised.value.message
    assert said in raised.value.message


def test_ask_refuses_a_bad_mode_or_name_and_fails_a_bad_model_like_execute() -> None:
    """A bad `mode` or `name` raises ConfigurationError; a bad model is a FAILED `configuration_error` result."""
    system = TaskSystem(model="test")
    with pytest.raises(ConfigurationError, match="use one of `tool`, `native`, `prompted`"):
        system.ask(Contact, "text", mode="nativ")
    with pytest.raises(ConfigurationError, match="Invalid `name='a b'` for `ask\\(\\)`"):
        system.ask(Contact, "text", name="a b")
    with pytest.raises(ConfigurationError, match="applies to a structured answer"):
        system.ask(str, "text", mode="native")
    failed = system.ask(Contact, "text", model="nope:x")
    assert FailureReason.CONFIGURATION_ERROR == failed.error.reason  # type: ignore[union-attr]
    assert FailureReason.INPUT_VALIDATION_FAILURE == system.ask(Contact, 12).error.reason  # type: ignore[arg-type, union-attr]


def test_extract_runs_on_a_shared_system_with_extraction_instructions() -> None:
    """`atomtask.extract(Contact, text)` is `ask` on one shared TaskSystem, told to extract when not told otherwise."""
    import atomtask
    from atomtask._task_system import EXTRACT_INSTRUCTIONS
    from atomtask.testing import scripted_model

    model = scripted_model(ADA, ADA)
    result = atomtask.extract(Contact, "Ada Lovelace, ada@example.com", model=model)
    assert_type(result, TaskResult[Contact])
    assert (Contact(**ADA), "extract") == (result.unwrap(), result.notes.template)
    assert EXTRACT_INSTRUCTIONS == model.calls[0].instructions
    atomtask.extract(Contact, "Ada", model=model, instructions="Only the name.")
    assert "Only the name." == model.calls[1].instructions


async def test_extract_async_is_extract_awaited() -> None:
    """`await atomtask.extract_async(...)` answers as `extract` does."""
    import atomtask
    from atomtask.testing import scripted_model

    result = await atomtask.extract_async(Contact, "Ada", model=scripted_model(ADA))
    assert Contact(**ADA) == result.unwrap()


def test_extract_with_no_model_answers_on_the_embedded_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no model anywhere, `extract` answers offline on `atomtask:synthetic`, as the CLI does."""
    import atomtask

    monkeypatch.delenv("ATOMTASK_MODEL", raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", atomtask.DefaultModelWarning)
        result = atomtask.extract(Contact, "Reach Ada Lovelace at ada@example.com")
    assert ("atomtask:synthetic", "default") == (result.notes.model, result.notes.model_source)
    assert isinstance(result.unwrap(), Contact)


# `base_url` with a model that has no endpoint (issue 27, defect 8).


def test_a_base_url_with_an_embedded_model_is_refused_not_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """`TaskSystem(model="test", base_url=...)` raises; with no model at all, the task fails `configuration_error`."""
    monkeypatch.delenv("ATOMTASK_MODEL", raising=False)
    with pytest.raises(ConfigurationError, match="has no endpoint"):
        TaskSystem(model="test", base_url="http://127.0.0.1:9/v1")
    system = TaskSystem(base_url="http://127.0.0.1:9/v1")
    failed = system.ask(Contact, "Ada")
    assert FailureReason.CONFIGURATION_ERROR == failed.error.reason  # type: ignore[union-attr]
    assert failed.error.message.startswith("No model is configured, so 'atomtask:synthetic'")  # type: ignore[union-attr]


# `large_prompt=`: a warning for a prompt larger than expected (issue 27, defect 10).


def test_a_large_prompt_runs_with_a_warning_in_the_log_and_the_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """Over `large_prompt` characters the task still runs, logs `large_prompt` and says so in `notes.warnings`."""
    import structlog

    monkeypatch.delenv("ATOMTASK_LARGE_PROMPT", raising=False)
    system = TaskSystem(model="test", large_prompt=1000)
    with structlog.testing.capture_logs() as logs:
        big = system.ask(str, "x" * 1200)
        small = system.ask(str, "x" * 900)
    assert TaskStatus.COMPLETE == big.status
    assert 1 == len(big.notes.warnings)
    assert "is 1,200 characters long, over the 1,000 at which atomtask warns" in big.notes.warnings[0]
    assert [] == small.notes.warnings
    assert [("ask", 1200, 1000)] == [
        (e["template"], e["characters"], e["limit"]) for e in logs if e["event"] == "large_prompt"
    ]


def test_the_large_prompt_size_comes_from_the_environment_and_zero_turns_it_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`ATOMTASK_LARGE_PROMPT` sets the size when `large_prompt=` is not given; 0 never warns; junk is refused."""
    monkeypatch.setenv("ATOMTASK_LARGE_PROMPT", "10")
    assert TaskSystem(model="test").ask(str, "x" * 20).notes.warnings
    assert not TaskSystem(model="test", large_prompt=0).ask(str, "x" * 20).notes.warnings
    monkeypatch.setenv("ATOMTASK_LARGE_PROMPT", "1MB")
    with pytest.raises(ConfigurationError, match="Invalid `ATOMTASK_LARGE_PROMPT`: '1MB'"):
        TaskSystem(model="test")
    with pytest.raises(ConfigurationError, match="Invalid `large_prompt=`: -1"):
        TaskSystem(model="test", large_prompt=-1)
