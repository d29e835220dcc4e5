"""`TaskSystem.estimate(items=...)`: a batch estimated item by item, what `batch --dry-run` and `--max-cost` read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from atomtask import TaskSystem
from atomtask.testing import FakeProviderServer
from atomtask.testing._served import ServedAnswers

ITEMS = [
    {"id": "ada", "text": "Ada Lovelace, ada@example.com"},
    {"id": "grace", "text": "Grace Hopper, US Navy, grace@navy.mil, +1 555 0100. " * 20},
    {"text": "Alan Turing, Bletchley Park"},
]


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        fake.respond_with(ServedAnswers())
        yield fake


def test_each_item_has_its_costs_and_the_total_adds_them(templates_dir: Path) -> None:
    """Per item: its id (else its position), expected and worst cost; a longer text costs more."""
    system = TaskSystem(templates=templates_dir)
    estimate = system.estimate("extract_contact", items=ITEMS, model="openai:gpt-4o-mini")
    assert ["ada", "grace", "2"] == [item.id for item in estimate.items]
    ada, grace, _ = estimate.items
    assert ada.worst_cost is not None and grace.worst_cost is not None and ada.expected_cost is not None
    assert ada.expected_cost < ada.worst_cost < grace.worst_cost
    total = estimate.total.cost
    assert total is not None
    assert pytest.approx(sum(item.worst_cost or 0 for item in estimate.items)) == total.worst
    assert (3, 9) == (estimate.total.requests.expected, estimate.total.requests.worst)
    assert "3 items" in estimate.render()


@pytest.mark.usefixtures("allow_model_requests")
def test_a_batch_run_spends_no_more_than_the_worst_case(server: FakeProviderServer, templates_dir: Path) -> None:
    """The same items run as a batch on the fake server: expected input within ±15%, worst never below actual."""
    system = TaskSystem(templates=templates_dir)
    model = server.openai_chat_model()
    estimate = system.estimate("extract_contact", items=ITEMS, model=model)
    assert [] == server.requests
    results = system.batch_sync("extract_contact", ITEMS, model=model)
    assert all(result.ok for result in results)
    actual_in = sum(result.usage.input_tokens for result in results)
    actual_out = sum(result.usage.output_tokens for result in results)
    assert abs(estimate.total.input_tokens.expected - actual_in) <= 0.15 * actual_in
    assert estimate.total.input_tokens.worst >= actual_in
    assert estimate.total.output_tokens.worst >= actual_out


async def test_estimate_works_inside_a_running_event_loop(templates_dir: Path) -> None:
    """Called from async code (a notebook, a web handler), the estimate still builds its requests."""
    system = TaskSystem(templates=templates_dir)
    estimate = system.estimate("extract_contact", {"text": "Ada"}, model="anthropic:claude-haiku-4-5")
    assert estimate.total.input_tokens.expected > 0
    assert estimate.total.cost is not None
