"""LLMInteractionManager: every pydantic-ai outcome mapped, logs per task and attempt."""

from __future__ import annotations

import structlog
from atomtask import FailureReason, OutputFormat, OutputMode, TaskSystem, Template, TemplateLimits
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
    from atomtask.handlers.base import ModelChoice
    from atomtask.handlers.calls import configuration_error

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
