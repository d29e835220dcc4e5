"""LLMInteractionManager: every pydantic-ai outcome mapped, logs per task and attempt."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from atomtask import (
    FailureReason,
    OutputFormat,
    OutputMode,
    ProviderRetries,
    TaskSystem,
    Template,
    TemplateLimits,
)
from atomtask.handlers import BaseHandler, LLMInteractionManager, ModelChoice
from atomtask.handlers._llm import ModelCall, run_settings
from atomtask.testing import FakeProviderServer, Reply
from pydantic import BaseModel
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.helpers import Recorder


class Item(BaseModel):
    name: str
    qty: int


def system_for(model: object, mode: OutputMode = OutputMode.TOOL) -> TaskSystem:
    system = TaskSystem(model=model)  # type: ignore[arg-type]  # FunctionModel is a Model
    system.models.register(Item)
    system.register(
        Template(
            name="item",
            instructions="give an item",
            system="sys",
            output_format=OutputFormat(type="json", schema="Item", mode=mode),
        )
    )
    return system


def test_prompted_mode_parses_text_json() -> None:
    """In prompted mode the schema goes in the instructions and the text answer is parsed."""
    rec = Recorder('{"name": "apple", "qty": 3}')
    result = system_for(rec.model, OutputMode.PROMPTED).execute("item")
    assert Item(name="apple", qty=3) == result.parsedContent
    _, info = rec.calls[0]
    assert [] == info.output_tools
    assert info.instructions is not None and "sys" in info.instructions
    assert "prompted" == result.notes.output_mode


def test_native_mode_asks_for_native_structured_output() -> None:
    """In native mode the request carries the JSON schema as the native output object."""
    rec = Recorder('{"name": "pear", "qty": 1}')
    result = system_for(rec.model, OutputMode.NATIVE).execute("item")
    assert Item(name="pear", qty=1) == result.parsedContent
    params = rec.calls[0][1].model_request_parameters
    assert "native" == params.output_mode
    assert params.output_object is not None
    assert {"name", "qty"} == set(params.output_object.json_schema["properties"])


def test_tool_mode_offers_the_schema_as_an_output_tool() -> None:
    """In tool mode the schema is the parameters of the output tool."""
    rec = Recorder({"name": "fig", "qty": 2})
    system_for(rec.model).execute("item")
    tools = rec.calls[0][1].output_tools
    assert 1 == len(tools)
    assert {"name", "qty"} == set(tools[0].parameters_json_schema["properties"])


def test_unexpected_exception_in_model_is_a_failed_result() -> None:
    """An exception inside the model call becomes FAILED unexpected_error, not a raise."""

    def boom(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RuntimeError("kaboom")

    result = system_for(FunctionModel(boom)).execute("item")
    assert result.error is not None
    assert FailureReason.UNEXPECTED_ERROR == result.error.reason
    assert "RuntimeError" in result.error.message


def test_missing_api_key_is_a_configuration_error_naming_the_variable() -> None:
    """A real provider without its key fails as configuration_error naming the env variable."""
    system = system_for("openai-chat:gpt-4o-mini")
    result = system.execute("item")
    assert result.error is not None
    assert FailureReason.CONFIGURATION_ERROR == result.error.reason
    assert "OPENAI_API_KEY" in result.error.message


def test_logs_one_event_per_task_and_attempt() -> None:
    """structlog events: task_started, one task_attempt per model call, task_completed."""
    rec = Recorder({"name": "x"}, {"name": "x", "qty": 1})
    system = system_for(rec.model)
    with structlog.testing.capture_logs() as logs:
        system.execute("item")
    events = [entry["event"] for entry in logs]
    assert ["task_started", "task_attempt", "task_attempt", "task_completed"] == events
    attempts = [entry for entry in logs if entry["event"] == "task_attempt"]
    assert [False, True] == [entry["valid"] for entry in attempts]
    assert all(entry["template"] == "item" for entry in logs)


def test_missing_provider_package_says_what_to_install() -> None:
    """A provider SDK that is not installed is a configuration_error naming the extra to install."""
    from atomtask.handlers import ModelChoice
    from atomtask.handlers._llm import configuration_error

    choice = ModelChoice(spec="anthropic:claude-haiku-4-5", label="anthropic:claude-haiku-4-5", source="call")
    error = configuration_error(choice, ImportError("Please install the `anthropic` package"))
    assert FailureReason.CONFIGURATION_ERROR == error.reason
    assert "install it with `pip install 'atomtask[anthropic]'`" in error.message


def test_fallback_model_answers_after_the_first_exhausts_its_retries() -> None:
    """Validation failures on the first model move on to the next; the ledger shows who answered."""
    rec = Recorder({"name": "apple"}, {"name": "apple"})
    system = system_for(rec.model)
    system.register(
        Template(
            name="fallback",
            instructions="give an item",
            output_format=OutputFormat(type="json", schema="Item"),
            fallbacks=["test"],
            retries=1,
        )
    )
    result = system.execute("fallback")
    assert result.ok, result.error
    assert ["function:recorder", "function:recorder", "test"] == [a.model for a in result.notes.attempts]
    assert "test" == result.notes.model
    assert ["function:recorder", "test"] == result.notes.models_tried
    assert [1, 2, 3] == [a.index for a in result.notes.attempts]


def test_per_call_retries_override_the_template() -> None:
    """`retries=` on the call sets how many times the model is re-asked."""
    rec = Recorder({"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"})
    result = system_for(rec.model).execute("item", retries=3)
    assert result.error is not None
    assert FailureReason.OUTPUT_VALIDATION_FAILURE == result.error.reason
    assert 4 == len(result.notes.attempts)
    assert all(a.errors for a in result.notes.attempts)


def test_request_limit_holds_across_fallbacks() -> None:
    """Limits cover all attempts of all models: the fallback is not started when the budget is spent."""
    rec = Recorder({"name": "a"}, {"name": "b"})
    system = system_for(rec.model)
    system.register(
        Template(
            name="budget",
            instructions="give an item",
            output_format=OutputFormat(type="json", schema="Item"),
            fallbacks=["test"],
            retries=1,
            limits=TemplateLimits(requests=2),
        )
    )
    result = system.execute("budget")
    assert result.error is not None
    assert FailureReason.USAGE_LIMIT_EXCEEDED == result.error.reason
    assert "`requests` limit of 2" in result.error.message
    assert "next attempt (model 'test')" in result.error.message
    assert 2 == len(result.notes.attempts)
    assert ["function:recorder"] == result.notes.models_tried


def test_per_call_limits_tighten_the_template() -> None:
    """`limits=` on the call applies with the template's, the stricter of each winning."""
    rec = Recorder({"name": "a"}, {"name": "b"}, {"name": "c"})
    result = system_for(rec.model).execute("item", retries=5, limits={"requests": 2})
    assert result.error is not None
    assert FailureReason.USAGE_LIMIT_EXCEEDED == result.error.reason
    assert 2 == len(result.notes.attempts)


def test_invalid_per_call_limits_are_a_configuration_error() -> None:
    """A negative or unknown limit on the call fails before any model call, naming the fix."""
    rec = Recorder()
    result = system_for(rec.model).execute("item", limits={"requests": 0})
    assert result.error is not None
    assert FailureReason.CONFIGURATION_ERROR == result.error.reason
    assert "limits=" in result.error.message
    assert [] == rec.calls


async def test_async_run_repairs_and_falls_back_like_the_sync_one() -> None:
    """`execute_async` shares the fallback loop and the repair: same ledger as `execute`."""
    rec = Recorder(("args", "{'name': 'apple', 'qty': 'x'}"), {"name": "apple"})
    system = system_for(rec.model)
    system.register(
        Template(
            name="fallback",
            instructions="give an item",
            output_format=OutputFormat(type="json", schema="Item"),
            fallbacks=["test"],
            retries=1,
        )
    )
    result = await system.execute_async("fallback")
    assert result.ok, result.error
    assert ["function:recorder", "function:recorder", "test"] == [a.model for a in result.notes.attempts]
    assert result.notes.attempts[0].parse_error is not None
    assert "qty" in str(result.notes.attempts[0].errors)


# -- model settings: system < template < call, as the provider receives them -----------------------------


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


def settings_system(server: FakeProviderServer, **template_settings: Any) -> TaskSystem:
    system = TaskSystem(model=server.openai_chat_model())
    system.register(Template(name="say", instructions="Say hi.", model_settings=template_settings or None))
    return system


def sent(server: FakeProviderServer) -> dict[str, Any]:
    """The sampling fields of the last OpenAI chat request."""
    body = server.requests[-1].body
    keys = ("temperature", "max_completion_tokens", "seed", "top_p", "stop")
    return {key: body[key] for key in keys if key in body}


@pytest.mark.usefixtures("allow_model_requests")
def test_template_model_settings_reach_the_provider_request(server: FakeProviderServer) -> None:
    """A template's `model_settings` are in the OpenAI chat request body."""
    system = settings_system(server, temperature=0, max_tokens=50, seed=7, top_p=0.9, stop_sequences=["END"])
    server.script(Reply.text("hi"))
    assert system.execute("say").ok
    assert {"temperature": 0.0, "max_completion_tokens": 50, "seed": 7, "top_p": 0.9, "stop": ["END"]} == sent(server)


@pytest.mark.usefixtures("allow_model_requests")
def test_call_model_settings_reach_the_provider_request(server: FakeProviderServer) -> None:
    """`execute(..., model_settings=)` is in the request body of a template that sets none."""
    system = settings_system(server)
    server.script(Reply.text("hi"))
    assert system.execute("say", model_settings={"temperature": 0.2, "seed": 1, "max_tokens": 9}).ok
    assert {"temperature": 0.2, "seed": 1, "max_completion_tokens": 9} == sent(server)


@pytest.mark.usefixtures("allow_model_requests")
async def test_call_settings_override_the_template_key_by_key(server: FakeProviderServer) -> None:
    """The call's `temperature` wins; the template's other keys and the TaskSystem's stay (async path too)."""
    system = TaskSystem(model=server.openai_chat_model(), model_settings={"seed": 3, "temperature": 1.0})
    system.register(Template(name="say", instructions="Say hi.", model_settings={"temperature": 0.7, "max_tokens": 50}))
    server.script(Reply.text("hi"), Reply.text("hi"))
    assert (await system.execute_async("say", model_settings={"temperature": 0})).ok
    assert {"temperature": 0.0, "max_completion_tokens": 50, "seed": 3} == sent(server)
    assert system.execute("say").ok
    assert {"temperature": 0.7, "max_completion_tokens": 50, "seed": 3} == sent(server)


@pytest.mark.usefixtures("allow_model_requests")
def test_a_template_max_retries_setting_still_overrides_atomtasks_sdk_retries_off(server: FakeProviderServer) -> None:
    """The SDK's own retries stay off by default, but `max_retries` in the settings turns them back on."""
    system = TaskSystem(base_url=server.openai_base_url, provider_retries=ProviderRetries(attempts=0))
    system.register(
        Template(name="say", instructions="Say hi.", model="openai-chat:gpt-4o-mini", model_settings={"max_retries": 1})
    )
    server.script(Reply.error(500, "down", {"retry-after-ms": "1"}), Reply.text("hi"))
    result = system.execute("say")
    assert result.ok, result.error
    assert 2 == len(server.requests)  # the SDK retried once, inside one atomtask attempt


def test_run_settings_merge_the_systems_under_the_calls() -> None:
    """`run_settings`: the call's keys win, the system's others stay; nothing at all is None."""
    assert {"seed": 1, "temperature": 0} == run_settings({"seed": 1, "temperature": 1}, {"temperature": 0})
    assert run_settings(None, None) is None
    assert run_settings({}, {}) is None


# -- sync calls where an event loop is running -----------------------------------------------------------


def test_manager_run_sync_works_inside_a_running_loop() -> None:
    """`LLMInteractionManager.run_sync` called by synchronous code inside a running loop does not raise."""
    manager = LLMInteractionManager(BaseHandler())
    rec = Recorder({"name": "fig", "qty": 2})
    call = ModelCall(
        template="item",
        model=ModelChoice(spec=rec.model, label="function:recorder", source="call"),
        system=None,
        prompt="give an item",
        output_cls=Item,
    )

    async def caller() -> Any:
        return manager.run_sync(call)  # blocking on purpose, as a notebook cell would

    outcome = asyncio.run(caller())
    assert outcome.error is None
    assert Item(name="fig", qty=2) == outcome.output


def test_an_answer_valid_on_arrival_is_not_repaired(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the first answer validates, the repair code does not run at all."""

    def no_repair(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("repair ran on a valid answer")

    monkeypatch.setattr("atomtask.handlers._repair.repair_output", no_repair)
    result = system_for(Recorder({"name": "fig", "qty": 2}).model).execute("item")
    assert Item(name="fig", qty=2) == result.parsedContent
    assert [[]] == [attempt.repairs for attempt in result.notes.attempts]


def test_an_atomtask_agent_holds_no_more_capabilities_than_a_bare_one() -> None:
    """Repair and provider retries take the place of pydantic-ai's default `ToolSearch`: no per-run fee."""
    from pydantic_ai import Agent

    manager = LLMInteractionManager(BaseHandler())
    rec = Recorder({"name": "fig", "qty": 2})
    call = ModelCall(
        template="item",
        model=ModelChoice(spec=rec.model, label="function:recorder", source="call"),
        system=None,
        prompt="give an item",
        output_cls=Item,
    )
    assert manager.run_sync(call).error is None
    (agent,) = [agent for agent, _ in manager._agents.values()]
    bare: Agent[None, Item] = Agent(rec.model, output_type=Item)
    # Private, on purpose: a pydantic-ai upgrade that adds our capability beside its default must fail here.
    ours = [type(c).__name__ for c in agent._root_capability._dispatch]
    assert len(bare._root_capability._dispatch) == len(ours)
    assert "_Reliability" in ours


def test_the_validation_failure_counts_every_attempt_and_ends_each_sentence_once() -> None:
    """Three unreadable answers are "all 3 attempts" (the last one's parse error counted too), with no `..`."""
    args = ("args", '{"name": "a"')  # JSON cut off: no repair makes it an `Item`
    system = system_for(Recorder(args, args, args).model)
    result = system.execute("item", retries=2)
    error = result.error
    assert error is not None
    assert FailureReason.OUTPUT_VALIDATION_FAILURE == error.reason
    assert 3 == len(result.notes.attempts) == error.details["attempts"]
    assert "failed validation on all 3 attempts for template 'item'" in error.message
    assert "matches the schema. Raise `retries`" in error.message
    assert ".." not in error.message
    assert all(attempt.errors for attempt in result.notes.attempts)  # the last one's too, from the exception


def test_a_single_failed_attempt_reads_as_its_only_attempt() -> None:
    """With `retries=0` the message says "its only attempt", not "all 1 attempt(s)"."""
    result = system_for(Recorder({"name": "a"}).model).execute("item", retries=0)
    assert "failed validation on its only attempt for template 'item'" in result.error.message  # type: ignore[union-attr]
