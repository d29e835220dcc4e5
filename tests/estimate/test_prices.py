"""A dry run's USD: genai-prices' for known models (half at batch rates), said unknown otherwise, never 0."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from atomtask import TaskSystem
from atomtask.testing import FakeProviderServer

TEXT = "Grace Hopper, US Navy, grace@navy.mil"


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


def test_a_real_model_string_is_priced_without_an_api_key(templates_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`openai:gpt-4o-mini` with no OPENAI_API_KEY set: priced from genai-prices, expected below worst."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    system = TaskSystem(templates=templates_dir)
    estimate = system.estimate("extract_contact", {"text": TEXT}, model="openai:gpt-4o-mini")
    cost = estimate.total.cost
    assert cost is not None
    assert 0 < cost.expected < cost.worst
    assert () == estimate.unknown_prices
    # gpt-4o-mini: $0.15 per million input tokens, $0.60 per million output tokens.
    row = estimate.rows[0]
    assert pytest.approx(row.input_tokens.expected * 0.15e-6 + row.output_tokens.expected * 0.6e-6) == cost.expected


def test_provider_batch_prices_are_half(templates_dir: Path) -> None:
    """`provider_batch=True` prices the same tokens at OpenAI's batch rates: half."""
    system = TaskSystem(templates=templates_dir)
    live = system.estimate("extract_contact", {"text": TEXT}, model="openai:gpt-4o-mini")
    batch = system.estimate("extract_contact", {"text": TEXT}, model="openai:gpt-4o-mini", provider_batch=True)
    assert live.total.cost is not None and batch.total.cost is not None
    assert live.total.input_tokens == batch.total.input_tokens
    assert pytest.approx(live.total.cost.expected / 2) == batch.total.cost.expected
    assert pytest.approx(live.total.cost.worst / 2) == batch.total.cost.worst
    assert "provider batch" in batch.render()


def test_an_unknown_price_is_said_never_zero(server: FakeProviderServer, templates_dir: Path) -> None:
    """The fake server's `fake-model`: cost None, named in `unknown_prices`, "price unknown" in the table."""
    system = TaskSystem(templates=templates_dir)
    estimate = system.estimate("extract_contact", {"text": TEXT}, model=server.openai_chat_model("fake-model"))
    assert None is estimate.rows[0].cost
    assert None is estimate.total.cost
    assert ("openai:fake-model",) == estimate.unknown_prices  # the model instance's label
    text = estimate.render()
    assert "price unknown" in text
    assert "$0.000000" not in text
    assert None is estimate.to_dict()["total"]["cost"]


def test_the_synthetic_model_has_no_price(templates_dir: Path) -> None:
    """The default model (no model configured) is local: its price is unknown, its tokens still counted."""
    system = TaskSystem(templates=templates_dir)
    estimate = system.estimate("extract_contact", {"text": TEXT})
    assert ("atomtask:synthetic",) == estimate.unknown_prices
    assert estimate.total.input_tokens.expected > 0
