"""AtomicTaskExecutor: the path of one task, driven by pydantic-ai's FunctionModel."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import warnings
from typing import Any, assert_type

import pytest
from atomtask import (
    FailureReason,
    OutputFormat,
    ParamSpec,
    RepairMode,
    SubtaskRequest,
    TaskFailedError,
    TaskResult,
    TaskStatus,
    TaskSystem,
    Template,
    TemplateLimits,
)
from atomtask.executors._atomic import resolve_options
from atomtask.system._options import NO_OPTIONS, CallOptions
from pydantic import BaseModel, Field
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.helpers import Recorder, user_text


class Contact(BaseModel):
    name: str
    email: str | None = None


class Scored(BaseModel):
    label: str
    score: float = Field(ge=0, le=1)


def make_system(recorder: Recorder, **template_kw: Any) -> TaskSystem:
    system = TaskSystem(model=recorder.model)
    system.models.register(Contact)
    system.models.register(Scored)
    fields: dict[str, Any] = {
        "name": "extract",
        "params": {"text": ParamSpec(type="str"), "locale": ParamSpec(type="str", default="en")},
        "system": "You are a careful clerk.",
        "instructions": "Extract ({{locale}}): {{text}}",
        "output_format": OutputFormat(type="json", schema="Contact"),
    }
    fields.update(template_kw)
    system.register(Template(**fields))
    return system


def test_parsed_content_is_an_instance_of_the_declared_class() -> None:
    """A valid answer comes back as a Contact instance, with the raw JSON in `content`."""
    rec = Recorder({"name": "Ada Lovelace", "email": "ada@example.com"})
    result = make_system(rec).execute("extract", {"text": "Ada Lovelace <ada@example.com>"})
    assert TaskStatus.COMPLETE == result.status
    assert isinstance(result.parsedContent, Contact)
    assert Contact(name="Ada Lovelace", email="ada@example.com") == result.parsedContent
    assert {"name": "Ada Lovelace", "email": "ada@example.com"} == __import__("json").loads(result.content or "")


def test_system_text_and_instructions_reach_the_model() -> None:
    """The template's system text arrives as instructions and the rendered prompt as the user message."""
    rec = Recorder({"name": "Bo"})
    make_system(rec).execute("extract", {"text": "Bo called", "locale": "fr"})
    messages, info = rec.calls[0]
    assert "You are a careful clerk." == info.instructions
    assert "Extract (fr): Bo called" == user_text(messages)


def test_values_are_inserted_once_and_never_rendered_again() -> None:
    """Braces inside a value are data: `{{locale}}` in the text stays literally in the prompt."""
    rec = Recorder({"name": "X"})
    make_system(rec).execute("extract", {"text": "literally {{locale}}"})
    assert "Extract (en): literally {{locale}}" == user_text(rec.calls[0][0])


def test_non_string_values_render_as_json() -> None:
    """A list or model value is rendered as JSON, not as a Python repr."""
    rec = Recorder("ok")
    system = TaskSystem(model=rec.model)
    system.models.register(Contact)
    system.register(
        Template(
            name="t",
            params={"items": "list[int]", "who": "Contact", "flag": "bool"},
            instructions="{{items}} {{who}} {{who.name}} {{flag}}",
        )
    )
    result = system.execute("t", {"items": [1, 2], "who": {"name": "Ann"}, "flag": True})
    assert result.ok
    assert '[1,2] {"name":"Ann","email":null} Ann true' == user_text(rec.calls[0][0])


def test_missing_required_input_fails_naming_the_param() -> None:
    """A missing required parameter is an input_validation_failure naming it; no model call is made."""
    rec = Recorder()
    result = make_system(rec).execute("extract", {})
    assert TaskStatus.FAILED == result.status
    assert result.error is not None
    assert FailureReason.INPUT_VALIDATION_FAILURE == result.error.reason
    assert "missing required parameter 'text'" in result.error.message
    assert ["text"] == result.error.details["params"]
    assert [] == rec.calls


def test_unknown_input_is_rejected_with_a_suggestion() -> None:
    """An unknown parameter name is rejected, with the near declared name suggested."""
    result = make_system(Recorder()).execute("extract", {"text": "a", "localee": "fr"})
    assert result.error is not None
    assert FailureReason.INPUT_VALIDATION_FAILURE == result.error.reason
    assert "unknown parameter 'localee'. Did you mean 'locale'?" in result.error.message


def test_inputs_are_coerced_as_pydantic_does() -> None:
    """A numeric string for an int parameter is coerced; a non-number fails naming the parameter."""
    rec = Recorder("fine", "unused")
    system = TaskSystem(model=rec.model)
    system.register(Template(name="n", params={"count": "int"}, instructions="{{count}}"))
    assert system.execute("n", {"count": "3"}).ok
    assert "3" == user_text(rec.calls[0][0])
    bad = system.execute("n", {"count": "three"})
    assert bad.error is not None
    assert "parameter 'count'" in bad.error.message


def test_inputs_of_plain_types_render_exactly_as_validated_inputs_do() -> None:
    """Values of exactly their parameter's type are used as given; any other value still goes through validation."""
    rec = Recorder(*["ok"] * 4)
    system = TaskSystem(model=rec.model)
    params = {"n": "int", "x": "float", "b": "bool", "s": ParamSpec(type="str", default="d")}
    system.register(Template(name="p", params=params, instructions="{{n}} {{x}} {{b}} {{s}}"))
    inputs: dict[str, Any] = {"n": 2, "x": 0.5, "b": False}
    assert system.execute("p", inputs).ok
    assert {"n": 2, "x": 0.5, "b": False} == inputs  # the caller's dict is left as it was (the default not added)
    # `True` for an int, `1` for a float and for a bool: converted by the validator, as before.
    assert system.execute("p", {"n": True, "x": 1, "b": 1, "s": "e"}).ok
    assert ["2 0.5 false d", "1 1.0 true e"] == [user_text(messages) for messages, _ in rec.calls]
    wrong = system.execute("p", {"n": 2, "x": 0.5, "b": True, "s": 3})
    assert wrong.error is not None
    assert FailureReason.INPUT_VALIDATION_FAILURE == wrong.error.reason
    assert ["s"] == wrong.error.details["params"]
    assert system.templates.compiled("p").plain_inputs is not None
    system.register(Template(name="q", params={"items": "list[int]", "s": "str"}, instructions="{{items}} {{s}}"))
    assert system.templates.compiled("q").plain_inputs is None  # a parameter that is not plain: always validated


def test_template_not_found_suggests_near_names() -> None:
    """An unknown template name is a FAILED template_not_found with near names."""
    result = make_system(Recorder()).execute("extrct", {})
    assert result.error is not None
    assert FailureReason.TEMPLATE_NOT_FOUND == result.error.reason
    assert "Did you mean 'extract'?" in result.error.message
    assert ["extract"] == result.error.details["suggestions"]


def test_invalid_answer_is_retried_with_feedback_and_the_ledger_keeps_both() -> None:
    """An answer that fails validation is sent back; the ledger holds the bad raw output and its errors."""
    rec = Recorder(("args", '{"email": "x@y.z"}'), {"name": "Ann"})
    result = make_system(rec).execute("extract", {"text": "Ann"})
    assert result.ok
    assert 2 == len(result.notes.attempts)
    first, second = result.notes.attempts
    assert '{"email": "x@y.z"}' == first.raw_output
    assert first.errors is not None
    assert ["name"] == first.errors[0]["loc"]
    assert second.valid
    assert 2 == result.notes.usage.requests


def test_exhausted_retries_fail_with_every_raw_output_kept() -> None:
    """After the last retry the task is FAILED output_validation_failure and every raw answer survives."""
    rec = Recorder(("args", '{"label": "a", "score": 3}'), ("args", '{"label": "a", "score": -1}'))
    system = make_system(
        rec,
        name="score",
        params={},
        instructions="go",
        retries=1,
        output_format=OutputFormat(type="json", schema="Scored"),
    )
    result = system.execute("score")
    assert result.error is not None
    assert FailureReason.OUTPUT_VALIDATION_FAILURE == result.error.reason
    assert ['{"label": "a", "score": 3}', '{"label": "a", "score": -1}'] == [
        a.raw_output for a in result.notes.attempts
    ]
    assert all(a.errors for a in result.notes.attempts)
    assert "score" in result.error.message
    assert 2 == result.notes.usage.requests
    assert result.notes.usage.input_tokens > 0
    with pytest.raises(TaskFailedError) as raised:
        result.unwrap()
    assert raised.value.result is result


def test_template_retries_set_how_many_times_the_model_is_re_asked() -> None:
    """`retries: 3` allows four model calls before failing."""
    rec = Recorder(*[("args", "{}")] * 4)
    result = make_system(rec, retries=3).execute("extract", {"text": "t"})
    assert result.error is not None
    assert 4 == len(rec.calls)


def test_text_templates_return_the_text() -> None:
    """A template without a schema returns the model's text as both content and parsedContent."""
    rec = Recorder("Hello, Ann!")
    system = TaskSystem(model=rec.model)
    system.register(Template(name="greet", params={"who": "str"}, instructions="Greet {{who}}"))
    result = system.execute("greet", {"who": "Ann"})
    assert "Hello, Ann!" == result.unwrap()
    assert "Hello, Ann!" == result.content
    assert "text" == result.notes.output_mode


def test_agents_are_cached_across_calls() -> None:
    """Repeated calls of the same template on the same model reuse one Agent."""
    rec = Recorder({"name": "a"}, {"name": "b"}, {"name": "c"})
    system = make_system(rec)
    for _ in range(3):
        assert system.execute("extract", {"text": "x"}).ok
    assert 1 == system.manager.agent_count()


def test_each_template_sends_its_own_system_text_fixed_or_rendered() -> None:
    """A fixed system text rides on its own cached Agent, a rendered one on each run; none leaks into another."""
    rec = Recorder(*[{"name": "x"}] * 5)
    system = make_system(rec, name="a", system="You are clerk A.")
    system.register(
        Template(
            name="b",
            params={"text": "str"},
            system="You are clerk B.",
            instructions="{{text}}",
            output_format=OutputFormat(type="json", schema="Contact"),
        )
    )
    system.register(
        Template(
            name="c",
            params={"text": "str", "who": "str"},
            system="You are {{who}}.",
            instructions="{{text}}",
            output_format=OutputFormat(type="json", schema="Contact"),
        )
    )
    assert system.execute("a", {"text": "1"}).ok and system.execute("b", {"text": "2"}).ok
    assert system.execute("c", {"text": "3", "who": "clerk C"}).ok
    assert system.execute("c", {"text": "4", "who": "clerk D"}).ok and system.execute("a", {"text": "5"}).ok
    sent = [info.instructions for _, info in rec.calls]
    assert ["You are clerk A.", "You are clerk B.", "You are clerk C.", "You are clerk D.", "You are clerk A."] == sent
    assert 3 == system.manager.agent_count()  # one per fixed text, one for the rendered ones


def test_subtask_request_runs_like_a_name_and_inputs() -> None:
    """A SubtaskRequest carries the name and inputs of a task."""
    rec = Recorder({"name": "Zed"})
    result = make_system(rec).execute(SubtaskRequest(name="extract", inputs={"text": "Zed"}))
    assert Contact(name="Zed") == result.unwrap()


def test_expect_types_the_result_and_checks_the_declared_class() -> None:
    """`expect=Contact` gives a TaskResult[Contact]; a mismatched class fails as configuration_error."""
    rec = Recorder({"name": "Typed"})
    system = make_system(rec)
    result = system.execute("extract", {"text": "x"}, expect=Contact)
    assert_type(result, TaskResult[Contact])
    assert "Typed" == result.unwrap().name
    wrong = system.execute("extract", {"text": "x"}, expect=Scored)
    assert wrong.error is not None
    assert FailureReason.CONFIGURATION_ERROR == wrong.error.reason
    assert "answers Contact" in wrong.error.message


def test_execute_async_uses_the_same_path() -> None:
    """`execute_async` returns the same validated instance as `execute`."""
    rec = Recorder({"name": "Async"})
    system = make_system(rec)
    result = asyncio.run(system.execute_async("extract", {"text": "x"}))
    assert Contact(name="Async") == result.unwrap()


def test_usage_limit_exceeded_keeps_the_ledger() -> None:
    """A request limit ends the task FAILED usage_limit_exceeded, with the answers so far."""
    rec = Recorder(("args", "{}"), ("args", "{}"), ("args", "{}"))
    system = make_system(rec, retries=5, limits={"requests": 2})
    result = system.execute("extract", {"text": "t"})
    assert result.error is not None
    assert FailureReason.USAGE_LIMIT_EXCEEDED == result.error.reason
    assert 2 == len(result.notes.attempts)


def test_notes_record_template_model_and_duration() -> None:
    """Notes name the template, the model and where the model choice came from."""
    rec = Recorder({"name": "n"})
    result = make_system(rec).execute("extract", {"text": "x"})
    assert "extract" == result.notes.template
    assert "function:recorder" == result.notes.model
    assert "system" == result.notes.model_source
    assert "tool" == result.notes.output_mode
    assert result.notes.duration_ms > 0


# -- the call's model and model settings ------------------------------------------------------------------


def test_a_call_model_wins_over_the_templates_model_and_its_fallbacks() -> None:
    """`model=` replaces the template's choice: neither its `model` nor its `fallbacks` run."""
    rec = Recorder({"email": "no name"})  # never valid: the template's fallback would answer
    system = make_system(rec, model="test", fallbacks=["test"], retries=0)
    result = system.execute("extract", {"text": "x"}, model=rec.model)
    assert result.error is not None
    assert FailureReason.OUTPUT_VALIDATION_FAILURE == result.error.reason
    assert ["function:recorder"] == result.notes.models_tried
    assert "call" == result.notes.model_source


def test_model_settings_merge_system_template_and_call_key_by_key() -> None:
    """The model receives the TaskSystem's settings, the template's on top, the call's on top of both."""
    rec = Recorder({"name": "a"})
    system = TaskSystem(model=rec.model, model_settings={"seed": 7, "temperature": 1.0, "top_p": 0.5})
    system.models.register(Contact)
    system.register(
        Template(
            name="extract",
            instructions="x",
            output_format=OutputFormat(type="json", schema="Contact"),
            model_settings={"temperature": 0.5, "max_tokens": 50, "top_p": 0.9},
        )
    )
    assert system.execute("extract", model_settings={"temperature": 0}).ok
    received = rec.calls[0][1].model_settings or {}
    assert {"seed": 7, "temperature": 0.0, "max_tokens": 50, "top_p": 0.9} == {
        k: v for k, v in received.items() if k != "max_retries"
    }


def test_invalid_call_model_settings_fail_as_configuration_error_before_any_call() -> None:
    """An unknown or mistyped setting on the call is a FAILED configuration_error naming the fix, like `limits=`."""
    rec = Recorder()
    system = make_system(rec)
    unknown = system.execute("extract", {"text": "x"}, model_settings={"temprature": 0})
    assert unknown.error is not None
    assert FailureReason.CONFIGURATION_ERROR == unknown.error.reason
    assert "Unknown model setting 'temprature'" in unknown.error.message
    assert "Did you mean 'temperature'?" in unknown.error.message
    mistyped = system.execute("extract", {"text": "x"}, model_settings={"max_tokens": "many"})
    assert mistyped.error is not None
    assert "Model setting 'max_tokens' of this call (`model_settings=`) must be int, got str 'many'" in (
        mistyped.error.message
    )
    assert [] == rec.calls


def test_resolve_options_takes_the_templates_own_when_the_call_asks_nothing() -> None:
    """`NO_OPTIONS`: the template's retries, limits, repair, a copy of its settings, and its fallbacks."""
    rec = Recorder()
    system = make_system(
        rec,
        model="test",
        fallbacks=["openai-chat:gpt-4o-mini"],
        retries=3,
        limits={"requests": 4},
        repair="lenient",
        model_settings={"temperature": 0.2},
    )
    compiled = system.templates.compiled("extract")
    resolved = resolve_options(NO_OPTIONS, compiled, system.handler, system.executor.cache)
    assert ("test", "template") == (resolved.model.label, resolved.model.source)
    assert ["openai-chat:gpt-4o-mini"] == [choice.label for choice in resolved.fallbacks]
    assert (3, TemplateLimits(requests=4), RepairMode.LENIENT) == (resolved.retries, resolved.limits, resolved.repair)
    assert {"temperature": 0.2} == resolved.model_settings
    assert resolved.model_settings is not compiled.model_settings
    assert resolved.cache is None


def test_resolve_options_puts_the_call_over_the_template() -> None:
    """The call's model drops the fallbacks, its limits tighten the template's, its settings go on top."""
    rec = Recorder()
    system = make_system(
        rec, model="test", fallbacks=["test"], limits={"requests": 4, "input_tokens": 100}, model_settings={"seed": 1}
    )
    asked = CallOptions(
        model=rec.model,
        retries=0,
        limits=TemplateLimits(requests=2),
        repair=RepairMode.OFF,
        model_settings={"seed": 2, "temperature": 0},
        cache=True,
    )
    resolved = resolve_options(asked, system.templates.compiled("extract"), system.handler, system.executor.cache)
    assert ("call", ()) == (resolved.model.source, resolved.fallbacks)
    assert resolved.limits is not None
    assert (0, 2, 100, RepairMode.OFF) == (
        resolved.retries,
        resolved.limits.requests,
        resolved.limits.input_tokens,
        resolved.repair,
    )
    assert {"seed": 2, "temperature": 0} == resolved.model_settings
    assert resolved.cache is not None


def test_bad_call_options_fail_the_call_without_reaching_the_model() -> None:
    """A bad keyword is a FAILED configuration_error through the facade, nothing raised, no model called."""
    rec = Recorder()
    system = make_system(rec)
    for keywords in ({"repair": "loose"}, {"limits": {"requests": 0}}, {"retries": -2}, {"cache": "yes"}):
        result = system.execute("extract", {"text": "x"}, **keywords)  # type: ignore[arg-type]  # bad on purpose
        assert result.error is not None
        assert FailureReason.CONFIGURATION_ERROR == result.error.reason
        assert "extract" == result.notes.template
    assert [] == rec.calls


# -- the sync call where an event loop is already running ---------------------------------------------------


def thread_reporting_system(threads: list[str]) -> TaskSystem:
    """A system whose model records the thread it runs on (an async function runs on the loop's thread)."""

    async def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        threads.append(threading.current_thread().name)
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"name": "Loop"})])

    system = TaskSystem(model=FunctionModel(reply))
    system.models.register(Contact)
    system.register(
        Template(name="extract", instructions="x", output_format=OutputFormat(type="json", schema="Contact"))
    )
    return system


async def test_sync_execute_inside_an_async_function_runs_on_a_worker_thread() -> None:
    """`execute` (sync) from an `async def` answers instead of "This event loop is already running"."""
    threads: list[str] = []
    result = thread_reporting_system(threads).execute("extract")
    assert Contact(name="Loop") == result.unwrap()
    assert 1 == len(threads)
    assert threads[0].startswith("atomtask-sync")


def test_sync_execute_from_a_callback_of_a_running_loop_keeps_context_variables() -> None:
    """Synchronous code run by a running loop (a notebook cell, a callback) gets the result and its contextvars."""
    request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="unset")
    seen: list[str] = []

    def reply(messages: Any, info: Any) -> dict[str, str]:
        seen.append(request_id.get())
        return {"name": "Callback"}

    system = make_system(Recorder(reply))

    async def main() -> TaskResult[Any]:
        done: asyncio.Future[TaskResult[Any]] = asyncio.get_running_loop().create_future()

        def callback() -> None:
            request_id.set("r-42")
            done.set_result(system.execute("extract", {"text": "x"}))

        asyncio.get_running_loop().call_soon(callback)
        return await done

    result = asyncio.run(main())
    assert Contact(name="Callback") == result.unwrap()
    assert ["r-42"] == seen


def test_sync_execute_outside_a_loop_runs_on_the_callers_thread() -> None:
    """Without a running loop, `execute` runs its loop in the calling thread, as pydantic-ai's `run_sync` does."""
    threads: list[str] = []
    assert thread_reporting_system(threads).execute("extract").ok
    assert [threading.current_thread().name] == threads


def test_the_default_model_notice_reaches_python_users_once_as_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no model configured, the first task in the process warns (`DefaultModelWarning`) at the caller's line."""
    from atomtask import DefaultModelWarning
    from atomtask.executors import _atomic

    monkeypatch.delenv("ATOMTASK_MODEL", raising=False)
    monkeypatch.setattr(_atomic, "_default_model_warned", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):  # two systems, two calls each: one warning
            system = TaskSystem()
            system.register(Template(name="say", instructions="Say hi."))
            system.execute("say")
            system.execute("say")
    notices = [w for w in caught if issubclass(w.category, DefaultModelWarning)]
    assert 1 == len(notices)
    assert str(notices[0].message).startswith("atomtask: no model configured")
    assert __file__ == notices[0].filename  # the user's line, not atomtask's


def test_a_configured_model_raises_no_default_model_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    """A model named anywhere (here `ATOMTASK_MODEL`) means no notice at all."""
    from atomtask.executors import _atomic

    monkeypatch.setenv("ATOMTASK_MODEL", "test")
    monkeypatch.setattr(_atomic, "_default_model_warned", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        system = TaskSystem()
        system.register(Template(name="say", instructions="Say hi."))
        assert "test" == system.execute("say").notes.model
    assert [] == [w for w in caught if "no model configured" in str(w.message)]
