"""Tools in a task: the model's calls reach the functions, results go back, and the ledger keeps every call."""

from __future__ import annotations

import json
from typing import Any

import pytest
from atomtask import CachePolicy, FailureReason, TaskStatus, TaskSystem, Template
from atomtask.testing import ToolCallReply, scripted_model
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo

from tests.handlers import tool_funcs
from tests.handlers.tool_funcs import Quote

FUNCS = "tests.handlers.tool_funcs"


def _system(model: Any, **template: Any) -> TaskSystem:
    system = TaskSystem(model=model, importable=["tests"])
    system.models.register(Quote)
    fields: dict[str, Any] = {
        "name": "quote",
        "params": {"product": "str"},
        "instructions": "Quote {{product}} in EUR.",
        "tools": [f"{FUNCS}:lookup_price"],
        "output_format": {"type": "json", "schema": "Quote"},
    }
    system.register(Template(**(fields | template)))
    return system


def _returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [
        part
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]


@pytest.fixture(autouse=True)
def _calls() -> None:
    tool_funcs.CALLS.clear()


def test_the_models_call_reaches_the_function_and_its_result_goes_back() -> None:
    model = scripted_model(
        ToolCallReply({"product": "grinder"}, name="lookup_price"),
        ToolCallReply({"product": "grinder", "price_eur": 82.34}, name="final_result"),
    )
    result = _system(model).execute("quote", {"product": "grinder"})

    assert TaskStatus.COMPLETE == result.status, result.error
    assert Quote(product="grinder", price_eur=82.34) == result.parsedContent
    assert [("lookup_price", "grinder")] == tool_funcs.CALLS
    # The model saw the tool and received its result with the call's id.
    assert ["lookup_price"] == [tool.name for tool in model.calls[0].info.function_tools]
    returned = [p for p in _returns(model.calls[1].messages) if p.tool_name == "lookup_price"]
    assert [89.5] == [p.content for p in returned]
    first, second = result.notes.attempts
    [call] = first.tool_calls
    assert ("lookup_price", {"product": "grinder"}, 89.5, None) == (call.name, call.args, call.result, call.error)
    assert call.call_id == returned[0].tool_call_id
    assert call.duration_ms is not None and call.duration_ms >= 0
    assert first.raw_output is None  # a turn that only called tools gave no answer
    assert [] == second.tool_calls
    assert json.loads(second.raw_output or "") == {"product": "grinder", "price_eur": 82.34}
    assert 2 == result.notes.usage.requests


def test_an_async_tool_and_several_calls_in_one_answer_are_recorded_in_order() -> None:
    def both(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(
            parts=[
                ToolCallPart("lookup_price", {"product": "descaler"}, tool_call_id="c1"),
                ToolCallPart("stock", {"product": "descaler", "warehouse": 2}, tool_call_id="c2"),
            ]
        )

    model = scripted_model(both, ToolCallReply({"product": "descaler", "price_eur": 11.0}, name="final_result"))
    result = _system(model, tools=[f"{FUNCS}:lookup_price", f"{FUNCS}:stock"]).execute("quote", {"product": "x"})

    assert TaskStatus.COMPLETE == result.status, result.error
    calls = result.notes.attempts[0].tool_calls
    assert ["lookup_price", "stock"] == [c.name for c in calls]
    assert ["c1", "c2"] == [c.call_id for c in calls]
    assert [12.0, {"product": "descaler", "warehouse": 2, "units": 3}] == [c.result for c in calls]


def test_a_model_retry_from_the_tool_goes_back_to_the_model_and_is_recorded() -> None:
    model = scripted_model(
        ToolCallReply({"product": "grindr"}, name="lookup_price"),
        ToolCallReply({"product": "grinder"}, name="lookup_price"),
        ToolCallReply({"product": "grinder", "price_eur": 82.0}, name="final_result"),
    )
    result = _system(model).execute("quote", {"product": "grinder"})

    assert TaskStatus.COMPLETE == result.status, result.error
    failed, succeeded = (a.tool_calls[0] for a in result.notes.attempts[:2])
    assert failed.retried and failed.error is not None and "No product 'grindr'" in failed.error
    assert failed.result is None
    assert not succeeded.retried and 89.5 == succeeded.result
    # The message reached the model; a tool's retry is not an error of the model's answer.
    assert any("No product 'grindr'" in str(p.content) for p in _returns(model.calls[1].messages))
    assert result.notes.attempts[0].errors is None


def test_arguments_that_do_not_validate_are_sent_back_and_recorded_without_running_the_tool() -> None:
    model = scripted_model(
        ToolCallReply({"item": "grinder"}, name="lookup_price"),
        ToolCallReply({"product": "grinder", "price_eur": 82.0}, name="final_result"),
    )
    result = _system(model).execute("quote", {"product": "grinder"})

    assert TaskStatus.COMPLETE == result.status
    [call] = result.notes.attempts[0].tool_calls
    assert call.retried and call.error is not None and "product" in call.error
    assert call.duration_ms is None  # never ran
    assert [] == tool_funcs.CALLS


def test_a_tool_that_raises_fails_the_task_as_tool_error_keeping_every_call_and_answer() -> None:
    model = scripted_model(ToolCallReply({"product": "grinder"}, name="broken"))
    result = _system(model, tools=[f"{FUNCS}:broken"]).execute("quote", {"product": "grinder"})

    assert TaskStatus.FAILED == result.status
    assert result.error is not None and FailureReason.TOOL_ERROR == result.error.reason
    assert "Tool 'broken' raised KeyError" in result.error.message
    assert {"tool": "broken", "error_type": "KeyError", "args": {"product": "grinder"}} == result.error.details
    [attempt] = result.notes.attempts
    [call] = attempt.tool_calls
    assert "KeyError: 'grinder'" == call.error and not call.retried
    assert 1 == result.notes.usage.requests  # what was paid for is kept


def test_tool_calls_bounds_the_calls_across_the_task() -> None:
    model = scripted_model(*[ToolCallReply({"product": "grinder"}, name="lookup_price")] * 3)
    result = _system(model, tool_calls=2).execute("quote", {"product": "grinder"})

    assert TaskStatus.FAILED == result.status
    assert result.error is not None and FailureReason.USAGE_LIMIT_EXCEEDED == result.error.reason
    assert "`tool_calls` (2)" in result.error.message
    assert 2 == len(tool_funcs.CALLS)
    calls = [c for a in result.notes.attempts for c in a.tool_calls]
    assert [True, True, False] == [c.duration_ms is not None for c in calls]  # the third was asked for, refused


def test_what_is_left_of_tool_calls_goes_to_the_next_models_run() -> None:
    """A fallback model gets the bound less the calls made before it; calls that never ran do not count."""
    from atomtask import Attempt, ToolCall
    from atomtask.handlers._tools import tool_limit
    from pydantic_ai.usage import UsageLimits

    ran = ToolCall(name="lookup_price", duration_ms=1.0)
    refused = ToolCall(name="lookup_price", error="product: field required", retried=True)
    attempts = [Attempt(index=1, tool_calls=[ran, refused]), Attempt(index=2, tool_calls=[ran])]
    assert 3 == tool_limit(None, 5, attempts).tool_calls_limit
    assert 0 == tool_limit(None, 1, attempts).tool_calls_limit
    budget = tool_limit(UsageLimits(request_limit=4, output_tokens_limit=100), 5, attempts)
    assert (4, 100, 3) == (budget.request_limit, budget.output_tokens_limit, budget.tool_calls_limit)


def test_a_function_given_in_python_is_a_tool_too() -> None:
    model = scripted_model(
        ToolCallReply({"product": "grinder"}, name="price"),
        ToolCallReply({"product": "grinder", "price_eur": 1.0}, name="final_result"),
    )
    system = _system(model, tools=[{"function": tool_funcs.lookup_price, "name": "price"}])
    result = system.execute("quote", {"product": "grinder"})

    assert TaskStatus.COMPLETE == result.status, result.error
    assert ["price"] == [t.name for t in model.calls[0].info.function_tools]
    assert "Look up a product's list price in USD." == model.calls[0].info.function_tools[0].description


def test_a_template_with_tools_is_not_served_from_a_cache_it_did_not_ask_for() -> None:
    def replies() -> list[Any]:
        return [
            ToolCallReply({"product": "grinder"}, name="lookup_price"),
            ToolCallReply({"product": "grinder", "price_eur": 1.0}, name="final_result"),
        ]

    model = scripted_model(*replies(), *replies())
    system = TaskSystem(model=model, importable=["tests"], cache=True, cache_path=":memory:")
    system.models.register(Quote)
    system.register(
        Template(
            name="quote",
            params={"product": "str"},
            instructions="Quote {{product}}.",
            tools=[f"{FUNCS}:lookup_price"],
            output_format={"type": "json", "schema": "Quote"},
        )
    )
    first = system.execute("quote", {"product": "grinder"})
    second = system.execute("quote", {"product": "grinder"})
    assert not first.notes.cached and not second.notes.cached
    assert 2 == len(tool_funcs.CALLS)  # the tool ran again: its side effects happen each time

    cached = TaskSystem(model=scripted_model(*replies()), importable=["tests"], cache_path=":memory:")
    cached.models.register(Quote)
    cached.register(system.templates.get("quote").model_copy(update={"cache": CachePolicy()}))
    assert not cached.execute("quote", {"product": "grinder"}).notes.cached
    assert cached.execute("quote", {"product": "grinder"}).notes.cached  # asked for explicitly


def test_the_synthetic_model_answers_directly_calls_no_tool_and_says_so() -> None:
    system = _system("atomtask:synthetic", tools=[f"{FUNCS}:lookup_price", {"mcp": {"command": "no-such-server"}}])
    with structlog_capture() as events:
        result = system.execute("quote", {"product": "grinder"})
    assert TaskStatus.COMPLETE == result.status, result.error
    assert [] == tool_funcs.CALLS
    [notice] = [e for e in events if e["event"] == "synthetic_calls_no_tools"]
    assert ["lookup_price", "no-such-server"] == notice["tools"]
    [warning] = result.notes.warnings  # what the CLI shows without `-v`
    assert warning.startswith("template 'quote': atomtask:synthetic answers the final output directly")


def structlog_capture() -> Any:
    import structlog.testing

    return structlog.testing.capture_logs()


def test_an_mcp_server_that_does_not_start_fails_the_task_before_any_model_call() -> None:
    model = scripted_model(ToolCallReply({"product": "x", "price_eur": 1.0}, name="final_result"))
    system = _system(model, tools=[{"mcp": {"command": "/nonexistent/mcp-server", "args": ["--stdio"]}, "timeout": 5}])
    result = system.execute("quote", {"product": "grinder"})

    assert TaskStatus.FAILED == result.status
    assert result.error is not None and FailureReason.TOOL_ERROR == result.error.reason
    assert "/nonexistent/mcp-server --stdio" in result.error.message
    assert 1 == model.pending  # no model was asked
    assert [] == result.notes.attempts


def test_a_scripted_answer_may_call_several_tools_at_once() -> None:
    from atomtask.testing import Reply

    model = scripted_model(
        Reply.tool_calls(("lookup_price", {"product": "grinder"}), ("stock", {"product": "grinder"})),
        ToolCallReply({"product": "grinder", "price_eur": 1.0}, name="final_result"),
    )
    result = _system(model, tools=[f"{FUNCS}:lookup_price", f"{FUNCS}:stock"]).execute("quote", {"product": "g"})
    assert TaskStatus.COMPLETE == result.status, result.error
    assert ["lookup_price", "stock"] == [c.name for c in result.notes.attempts[0].tool_calls]
    assert {("lookup_price", "grinder"), ("stock", "grinder")} == set(tool_funcs.CALLS)


def test_a_system_with_the_cache_off_keeps_it_off_for_a_template_with_tools() -> None:
    replies = [
        ToolCallReply({"product": "grinder"}, name="lookup_price"),
        ToolCallReply({"product": "grinder", "price_eur": 1.0}, name="final_result"),
    ]
    model = scripted_model(*replies, *replies)
    system = TaskSystem(model=model, importable=["tests"], cache=False, cache_path=":memory:")
    system.models.register(Quote)
    system.register(
        Template(
            name="quote",
            params={"product": "str"},
            instructions="Quote {{product}}.",
            tools=[f"{FUNCS}:lookup_price"],
            output_format={"type": "json", "schema": "Quote"},
            cache=True,
        )
    )
    assert not system.execute("quote", {"product": "grinder"}).notes.cached
    assert not system.execute("quote", {"product": "grinder"}).notes.cached  # `--no-cache` always asks
    assert 2 == len(tool_funcs.CALLS)
