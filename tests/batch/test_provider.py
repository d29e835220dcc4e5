"""`provider_batch=True` over the fake provider's batch endpoints: submit, failures, repair, restart, Anthropic."""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from atomtask import BatchInputError, ConfigurationError, TaskStatus, TaskSystem, UsageError
from atomtask.batch._provider import ProviderBatchRecord
from atomtask.testing import Reply, ServerReply, TokenUsage

from tests.batch_helpers import ItemServer, write_templates
from tests.conftest import TEMPLATES

pytestmark = pytest.mark.usefixtures("allow_model_requests")

OPENAI = "openai-chat:gpt-4o-mini"
ANTHROPIC = "anthropic:claude-haiku-4-5"


def _items(count: int) -> list[dict[str, str]]:
    return [{"id": f"i{n}", "text": f"item-{n}"} for n in range(count)]


def _paths(server: ItemServer) -> Counter[str]:
    """How many requests the server got per method-less path (batch ids folded into `{id}`)."""
    counted: Counter[str] = Counter()
    for request in server.server.requests:
        parts = request.path.strip("/").split("/")
        folded = ["{id}" if part.startswith(("batch_", "msgbatch_", "file-")) else part for part in parts]
        counted["/" + "/".join(folded)] += 1
    return counted


@pytest.fixture
def system(tmp_path: Path) -> TaskSystem:
    return TaskSystem(templates=write_templates(tmp_path / "templates"))


def _served(monkeypatch: pytest.MonkeyPatch, fault: object = None) -> ItemServer:
    served = ItemServer(fault)  # type: ignore[arg-type]
    served.__enter__()
    monkeypatch.setenv("OPENAI_BASE_URL", served.server.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", served.server.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")
    return served


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[ItemServer]:
    server = _served(monkeypatch)
    yield server
    server.__exit__()


def test_items_go_up_as_one_batch_and_come_back_validated(
    system: TaskSystem, served: ItemServer, tmp_path: Path
) -> None:
    """Six items: one file, one batch, polls until it ends, no normal call; every item COMPLETE with its answer."""
    served.server.batches.in_progress_polls = 2
    run = system.batch(
        "tag", _items(6), model=OPENAI, provider_batch=True, poll_interval=0.001, batch_id="b", db=tmp_path / "r.db"
    )
    results = {r.id: r for r in system_results(run)}
    assert {f"i{n}": {"label": f"label-{n}", "item": f"item-{n}"} for n in range(6)} == {
        key: r.output for key, r in results.items()
    }
    assert {1} == {r.attempts for r in results.values()}
    assert all(r.usage.input_tokens > 0 and r.usage.output_tokens > 0 for r in results.values())
    counted = _paths(served)
    assert 1 == counted["/v1/files"]
    assert 1 == counted["/v1/batches"]
    assert 0 == counted["/v1/chat/completions"]
    assert 6 == served.server.batches.answered
    assert 3 <= counted["/v1/batches/{id}"]  # two answers `in_progress`, then it ended
    assert 1 == len(run.provider_batches)


def system_results(run: object) -> list:  # type: ignore[type-arg]
    from atomtask.batch._api import collect
    from atomtask.handlers._blocking import run_blocking

    return run_blocking(collect(run))  # type: ignore[arg-type]


def _partial(n: int, nth: int) -> ServerReply | None:
    """Inside the batch (each item's first answer): item 1 errors, item 3 misses a field, item 4 needs a repair."""
    if nth > 1:
        return None
    if n == 1:
        return Reply.error(500, "The server had an error processing your request.")
    if n == 3:
        return Reply.tool_call(args={"label": "label-3"})
    if n == 4:
        return Reply.tool_call(args='{"label": "label-4", "item": "item-4",}')
    return None


def test_failures_are_asked_again_as_normal_calls(
    system: TaskSystem, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An errored and an expired request run as normal calls; a rejected answer is re-asked; a repairable one is not."""
    served = _served(monkeypatch, _partial)
    try:
        served.server.batches.expire = {"item-2"}
        run = system.batch(
            "tag", _items(6), model=OPENAI, provider_batch=True, poll_interval=0.001, batch_id="p", db=tmp_path / "r"
        )
        results = {r.id: r for r in system_results(run)}
        normal_calls = [r for r in served.server.requests if r.path == "/v1/chat/completions"]
    finally:
        served.__exit__()
    assert {TaskStatus.COMPLETE} == {r.status for r in results.values()}
    assert {"label": "label-3", "item": "item-3"} == results["i3"].output
    assert {"label": "label-4", "item": "item-4"} == results["i4"].output
    # The request log: items 1 and 2 asked normally once each, item 3 re-asked once; the others never.
    asked = Counter(served.asked)
    assert {0: 1, 1: 2, 2: 1, 3: 2, 4: 1, 5: 1} == dict(asked)  # item 2's batch request was never answered
    assert 3 == len(normal_calls)
    assert 2 == results["i3"].attempts
    assert 1 == results["i4"].attempts  # repaired locally, as a normal call would have been


def test_a_restart_polls_the_recorded_batch_instead_of_submitting(
    system: TaskSystem, served: ItemServer, tmp_path: Path
) -> None:
    """A run that stops while the batch is pending records its id; the next run polls it, never submits again."""
    served.server.batches.in_progress_polls = 10_000
    db = tmp_path / "r.db"
    options = {"model": OPENAI, "provider_batch": True, "poll_interval": 0.001, "batch_id": "b", "db": db}
    first = system.batch("tag", _items(4), max_wait=0.05, **options)
    assert [] == system_results(first)
    assert first.stopped is not None and "still pending" in first.stopped
    record = ProviderBatchRecord(db)
    assert served.server.batches.created == record.ids("b")
    record.close()
    served.server.batches.in_progress_polls = 0
    second = system.batch("tag", _items(4), **options)
    results = system_results(second)
    assert 4 == len(results)
    assert {TaskStatus.COMPLETE} == {r.status for r in results}
    assert 1 == len(served.server.batches.created)
    assert 1 == _paths(served)["/v1/batches"]
    assert first.provider_batches == second.provider_batches
    again = system.batch("tag", _items(4), **options)  # everything recorded: nothing submitted, all resumed
    assert [True] * 4 == [r.resumed for r in system_results(again)]
    assert 1 == len(served.server.batches.created)


def test_anthropic_message_batches(system: TaskSystem, served: ItemServer, tmp_path: Path) -> None:
    """The same batch through Anthropic's Message Batches: one batch, results read back, one item re-asked."""
    served.fault = lambda n, nth: Reply.tool_call(args={"label": "only"}) if n == 2 and nth == 1 else None
    served.server.batches.in_progress_polls = 1
    run = system.batch("tag", _items(3), model=ANTHROPIC, provider_batch=True, poll_interval=0.001)
    results = {r.id: r for r in system_results(run)}
    assert {f"i{n}": {"label": f"label-{n}", "item": f"item-{n}"} for n in range(3)} == {
        key: r.output for key, r in results.items()
    }
    counted = _paths(served)
    assert 1 == counted["/v1/messages/batches"]
    assert 1 == counted["/v1/messages/batches/{id}/results"]
    assert 1 == counted["/v1/messages"]  # item 2's re-ask
    assert 2 == results["i2"].attempts


def test_workflows_and_other_models_are_refused() -> None:
    """A workflow name, or a model without a batch API, is a usage error before anything runs."""
    system = TaskSystem(templates=TEMPLATES)
    with pytest.raises(UsageError, match="templates only"):
        system.batch("article_writer", [{"topic": "tides"}], provider_batch=True)
    with pytest.raises(ConfigurationError, match="openai-chat:NAME"):
        system.batch_sync("summarize", [{"document": "x"}], model="test", provider_batch=True)


def test_batch_answers_are_priced_at_the_batch_price(system: TaskSystem, served: ItemServer) -> None:
    """The same answer and tokens cost half through the batch (pydantic-ai's `processing: batch` price)."""
    usage = TokenUsage(input_tokens=1000, output_tokens=1000)
    served.fault = lambda n, nth: Reply.tool_call(args={"label": f"label-{n}", "item": f"item-{n}"}, usage=usage)
    batched = system.batch_sync("tag", _items(1), model=OPENAI, provider_batch=True, poll_interval=0.001)
    normal = system.batch_sync("tag", _items(1), model=OPENAI)
    assert (2000, 2000) == (batched[0].usage.total_tokens, normal[0].usage.total_tokens)
    assert batched[0].usage.cost is not None and normal[0].usage.cost is not None
    assert normal[0].usage.cost / 2 == pytest.approx(batched[0].usage.cost)


def test_an_item_with_bad_inputs_is_refused_before_anything_is_submitted(
    system: TaskSystem, served: ItemServer
) -> None:
    """An item whose inputs the template refuses stops the batch before submitting (no batch, no request)."""
    items = [{"id": "good", "text": "item-1"}, {"id": "bad", "txet": "item-0"}]
    with pytest.raises(BatchInputError, match="Item 2: missing input 'text'"):
        system.batch_sync("tag", items, model=OPENAI, provider_batch=True, poll_interval=0.001)
    assert 0 == served.server.batches.answered
    assert not served.asked


def test_provider_batch_and_the_dbos_engine_do_not_mix() -> None:
    """`--provider-batch --engine dbos` is a usage error naming both."""
    from atomtask.batch._provider import run_class_for

    with pytest.raises(UsageError, match="--engine dbos"):
        run_class_for(argparse.Namespace(engine="dbos", provider_batch=True, poll_interval=None, max_wait=None))
