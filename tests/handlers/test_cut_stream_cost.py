"""A request billed but never finished (a stream cut mid-answer, an empty answer) is priced and budgeted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from atomtask import FailureReason, OutputFormat, ProviderRetries, TaskResult, TaskSystem, Template, TemplateLimits
from atomtask.handlers._budget import Budget
from atomtask.system._results import UsageNotes
from atomtask.testing import FakeProviderServer, Reply, TokenUsage
from genai_prices import Usage, calc_price
from pydantic import BaseModel

pytestmark = pytest.mark.usefixtures("allow_model_requests")

ITEM = {"name": "apple", "qty": 3}
NO_WAIT = ProviderRetries(attempts=2, backoff=0, max_backoff=0)


class Item(BaseModel):
    name: str
    qty: int


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


def system_for() -> TaskSystem:
    system = TaskSystem(provider_retries=NO_WAIT)
    system.models.register(Item)
    system.register(
        Template(name="item", instructions="give an item", output_format=OutputFormat(type="json", schema="Item"))
    )
    return system


def price(usage: UsageNotes, model: str, provider: str) -> float:
    """What genai-prices charges for `usage`'s tokens on `model` (as pydantic-ai prices a whole answer)."""
    tokens = Usage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)
    return float(calc_price(tokens, model, provider_id=provider).total_price)


async def cut_then_answered(server: FakeProviderServer, **limits: Any) -> TaskResult[Any]:
    """A streamed `item` over Anthropic's wire (`claude-haiku-4-5`, priced): cut mid-answer, then answered."""
    server.script(Reply.truncated_stream(json.dumps(ITEM)), Reply.tool_call(args=ITEM))
    stream = system_for().execute_stream(
        "item", model=server.anthropic_model(), debounce_by=None, limits=limits or None
    )
    return await stream.get_result()


async def test_a_stream_cut_mid_answer_is_priced_and_counted(server: FakeProviderServer) -> None:
    """The cut attempt carries the price of the tokens it used, and `notes.usage.cost` adds it in."""
    result = await cut_then_answered(server)
    assert result.ok, result.error
    cut, answered = result.notes.attempts
    assert cut.fault is not None and "broke off mid-answer" in cut.fault
    assert cut.usage.input_tokens > 0
    assert cut.usage.cost is not None
    assert price(cut.usage, "claude-haiku-4-5", "anthropic") == pytest.approx(cut.usage.cost)
    assert answered.usage.cost is not None
    assert cut.usage.cost + answered.usage.cost == pytest.approx(result.notes.usage.cost)


async def test_a_cost_limit_the_cut_stream_used_up_stops_the_resumed_request(server: FakeProviderServer) -> None:
    """`limits={"cost": ...}` (`--max-cost`) met by the cut stream alone: no second request, usage_limit_exceeded."""
    first = await cut_then_answered(server)
    cut_cost = price(first.notes.attempts[0].usage, "claude-haiku-4-5", "anthropic")
    sent = len(server.requests)
    result = await cut_then_answered(server, cost=cut_cost * 0.9)
    assert result.error is not None
    assert FailureReason.USAGE_LIMIT_EXCEEDED == result.error.reason, result.error
    assert "`cost` limit" in result.error.message
    assert sent + 1 == len(server.requests)  # the cut stream only: it was not resumed
    (cut,) = result.notes.attempts
    assert cut.fault is not None and cut.usage.cost == pytest.approx(cut_cost)


async def test_a_budget_charged_with_the_result_counts_the_cut_stream(server: FakeProviderServer) -> None:
    """A batch's or workflow's budget spends `notes.usage`: the cut stream's price is what makes it reach the limit."""
    result = await cut_then_answered(server)
    cut, answered = result.notes.attempts
    assert answered.usage.cost is not None
    limit = answered.usage.cost + price(cut.usage, "claude-haiku-4-5", "anthropic") / 2
    budget = Budget(limits=TemplateLimits(cost=limit))
    budget.spend(result.notes.usage)
    assert "cost" == budget.exhausted()


@pytest.mark.parametrize(
    ("wire", "streamed"), [("anthropic", False), ("anthropic", True), ("openai", True)], ids=lambda v: str(v)
)
async def test_an_empty_answer_with_usage_is_priced(server: FakeProviderServer, wire: str, streamed: bool) -> None:
    """An answer that held nothing but reported its tokens (a retried fault) is priced like any answer."""
    model = server.anthropic_model() if wire == "anthropic" else server.openai_chat_model("gpt-4o")
    name, provider = ("claude-haiku-4-5", "anthropic") if wire == "anthropic" else ("gpt-4o", "openai")
    server.script(Reply.empty(usage=TokenUsage(input_tokens=1000, output_tokens=0)), Reply.tool_call(args=ITEM))
    system = system_for()
    if streamed:
        result = await system.execute_stream("item", model=model, debounce_by=None).get_result()
    else:
        result = await system.execute_async("item", model=model)
    assert result.ok, result.error
    empty, answered = result.notes.attempts
    assert empty.fault is not None and empty.fault.startswith("EmptyAnswerError")
    assert 1000 == empty.usage.input_tokens
    assert empty.usage.cost == pytest.approx(price(empty.usage, name, provider))
    assert answered.usage.cost is not None
    assert empty.usage.cost + answered.usage.cost == pytest.approx(result.notes.usage.cost)
