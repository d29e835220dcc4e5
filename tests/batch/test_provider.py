"""`provider_batch=True` on pydantic-ai's `BatchModelRequests`, over the fake provider's batch endpoints.

Each item runs through the normal task path; its requests go up in provider batches; local repair
first; re-asks by policy; a stop or a new run resumes from the recorded messages, never submitting again.
"""

from __future__ import annotations

import argparse
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from atomtask import BatchInputError, ConfigurationError, TaskStatus, TaskSystem, UsageError
from atomtask.testing import Reply, ServerReply, TokenUsage

from tests.batch_helpers import ItemServer, write_templates

pytestmark = pytest.mark.usefixtures("allow_model_requests")

OPENAI = "openai:gpt-4o-mini"
OPENAI_CHAT = "openai-chat:gpt-4o-mini"
ANTHROPIC = "anthropic:claude-haiku-4-5"
FAST = {"provider_batch": True, "poll_interval": 0.001}


def _items(count: int) -> list[dict[str, str]]:
    return [{"id": f"i{n}", "text": f"item-{n}"} for n in range(count)]


def _paths(server: ItemServer) -> Counter[str]:
    """How many HTTP requests the server got per path (batch and file ids folded into `{id}`)."""
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


def _mixed(n: int, nth: int) -> ServerReply | None:
    """Item 3's first answer lacks a field (a re-ask); item 4's has a trailing comma (repaired locally)."""
    if nth == 1 and n == 3:
        return Reply.tool_call(args={"label": "label-3"})
    if nth == 1 and n == 4:
        return Reply.tool_call(args='{"label": "label-4", "item": "item-4",}')
    return None


def test_items_go_up_as_one_provider_batch_and_come_back_validated(
    system: TaskSystem, served: ItemServer, tmp_path: Path
) -> None:
    """Six items: one provider batch of six requests on the Responses API, polled until it ends; no live call."""
    served.server.batches.in_progress_polls = 2
    run = system.batch("tag", _items(6), model=OPENAI, batch_id="b", db=tmp_path / "r.db", **FAST)
    results = {r.id: r for r in system_results(run)}
    assert {f"i{n}": {"label": f"label-{n}", "item": f"item-{n}"} for n in range(6)} == {
        key: r.output for key, r in results.items()
    }
    assert {1} == {r.attempts for r in results.values()}
    assert all(r.usage.input_tokens > 0 and r.usage.output_tokens > 0 for r in results.values())
    assert [6] == [len(batch.custom_ids) for batch in served.server.batches.log]
    assert {"responses"} == {batch.wire for batch in served.server.batches.log}
    counted = _paths(served)
    assert (1, 1, 0) == (counted["/v1/files"], counted["/v1/batches"], counted["/v1/responses"])
    assert 3 <= counted["/v1/batches/{id}"]  # answered in progress twice, then ended
    assert run.provider_batches == served.server.batches.created
    assert 0 == run.waiting


def test_local_repair_first_and_the_residue_re_asked_in_the_next_provider_batch(
    system: TaskSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A repairable answer is accepted at once; a wrong one is re-asked in a second provider batch, not live."""
    served = _served(monkeypatch, _mixed)
    try:
        results = {r.id: r for r in system.batch_sync("tag", _items(6), model=OPENAI, **FAST)}
        log = served.server.batches.log
        live = [r for r in served.server.requests if r.path == "/v1/responses"]
    finally:
        served.__exit__()
    assert {TaskStatus.COMPLETE} == {r.status for r in results.values()}
    assert {"label": "label-4", "item": "item-4"} == results["i4"].output
    assert 1 == results["i4"].attempts  # repaired: no re-ask
    assert 2 == results["i3"].attempts  # its first answer is kept in the ledger with its errors
    assert [6, 1] == [len(batch.custom_ids) for batch in log]
    assert not live
    assert 2 == served.asked[3] and 1 == served.asked[4]


def test_reask_live_sends_the_residue_as_a_normal_call(system: TaskSystem, monkeypatch: pytest.MonkeyPatch) -> None:
    """`reask="live"`: one provider batch; the wrong answer's re-ask is a live `/v1/responses` request."""
    served = _served(monkeypatch, _mixed)
    try:
        results = {r.id: r for r in system.batch_sync("tag", _items(6), model=OPENAI, reask="live", **FAST)}
        live = [r for r in served.server.requests if r.path == "/v1/responses"]
        batches = len(served.server.batches.log)
    finally:
        served.__exit__()
    assert {TaskStatus.COMPLETE} == {r.status for r in results.values()}
    assert 1 == batches
    assert 1 == len(live) and "item-3" in str(live[0].body)
    assert 2 == results["i3"].attempts


def test_reask_none_fails_the_item_with_its_raw_answer_kept(
    system: TaskSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`reask="none"`: no second batch, no live call; the wrong answer's item FAILS, its raw answer kept."""
    served = _served(monkeypatch, _mixed)
    try:
        results = {r.id: r for r in system.batch_sync("tag", _items(6), model=OPENAI, reask="none", **FAST)}
        batches = len(served.server.batches.log)
    finally:
        served.__exit__()
    assert 1 == batches
    failed = results["i3"]
    assert TaskStatus.FAILED == failed.status
    assert failed.error is not None and "validation" in failed.error.reason.value
    assert 1 == len(failed.raw_answers) and "label-3" in failed.raw_answers[0]
    assert TaskStatus.COMPLETE == results["i4"].status  # repair needs no re-ask


def test_a_stopped_run_resumes_from_the_recorded_messages_without_submitting_again(
    system: TaskSystem, served: ItemServer, tmp_path: Path
) -> None:
    """`max_wait` passes with the batch in progress: the items stay recorded waiting; the next run collects them."""
    served.server.batches.in_progress_polls = 10_000
    db = tmp_path / "r.db"
    options = {"model": OPENAI, "batch_id": "b", "db": db, **FAST}
    first = system.batch("tag", _items(4), max_wait=0.05, **options)
    assert [] == system_results(first)
    assert first.stopped is not None and "--max-wait" in first.stopped
    assert 4 == first.waiting
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT item_id, provider_batch FROM waiting WHERE batch_id = 'b'").fetchall()
    assert {(f"i{n}", served.server.batches.created[0]) for n in range(4)} == set(rows)
    served.server.batches.in_progress_polls = 0
    second = system.batch("tag", _items(4), **options)
    results = system_results(second)
    assert {TaskStatus.COMPLETE} == {r.status for r in results} and 4 == len(results)
    assert 1 == len(served.server.batches.created)  # collected, never submitted again
    assert [] == second.provider_batches
    with sqlite3.connect(db) as conn:
        assert [] == conn.execute("SELECT * FROM waiting").fetchall()
    again = system.batch("tag", _items(4), **options)  # everything recorded: nothing submitted, all resumed
    assert [True] * 4 == [r.resumed for r in system_results(again)]
    assert 1 == len(served.server.batches.created)


def test_an_expired_request_is_submitted_again_in_a_new_batch(system: TaskSystem, served: ItemServer) -> None:
    """pydantic-ai resubmits a request its batch reports expired: the item completes from the second batch."""
    served.server.batches.expire = lambda request: request.submission == 1 and "item-2" in str(request.body)
    results = {r.id: r for r in system.batch_sync("tag", _items(3), model=OPENAI, **FAST)}
    assert {TaskStatus.COMPLETE} == {r.status for r in results.values()}
    assert [3, 1] == [len(batch.custom_ids) for batch in served.server.batches.log]


def test_a_per_request_error_fails_only_its_item(system: TaskSystem, monkeypatch: pytest.MonkeyPatch) -> None:
    """A request the provider answers with a 400 inside the batch: that item FAILS as a provider error."""
    served = _served(monkeypatch, lambda n, nth: Reply.error(400, "Bad request for this item.") if n == 1 else None)
    try:
        results = {r.id: r for r in system.batch_sync("tag", _items(3), model=OPENAI, **FAST)}
    finally:
        served.__exit__()
    assert TaskStatus.FAILED == results["i1"].status
    assert results["i1"].error is not None and "Bad request for this item" in results["i1"].error.message
    assert {TaskStatus.COMPLETE} == {results["i0"].status, results["i2"].status}


def test_anthropic_message_batches(system: TaskSystem, served: ItemServer) -> None:
    """The same through Anthropic's Message Batches: one batch, its results read back, one item re-asked in a second."""
    served.fault = lambda n, nth: Reply.tool_call(args={"label": "only"}) if n == 2 and nth == 1 else None
    served.server.batches.in_progress_polls = 1
    results = {r.id: r for r in system.batch_sync("tag", _items(3), model=ANTHROPIC, **FAST)}
    assert {f"i{n}": {"label": f"label-{n}", "item": f"item-{n}"} for n in range(3)} == {
        key: r.output for key, r in results.items()
    }
    counted = _paths(served)
    assert 2 == counted["/v1/messages/batches"]
    assert 0 == counted["/v1/messages"]
    assert 2 == results["i2"].attempts


def test_an_openai_chat_template_is_batched_on_the_responses_api(tmp_path: Path, served: ItemServer) -> None:
    """`openai-chat:` is the same model on OpenAI's Responses API in a provider batch (pydantic-ai's OpenAI batches).

    The fake provider listens on 127.0.0.1, which atomtask takes for a local server unless told it is OpenAI.
    """
    system = TaskSystem(templates=write_templates(tmp_path / "templates"), server="openai")
    results = system.batch_sync("tag", _items(2), model=OPENAI_CHAT, **FAST)
    assert {TaskStatus.COMPLETE} == {r.status for r in results}
    assert {"responses"} == {batch.wire for batch in served.server.batches.log}
    assert 0 == _paths(served)["/v1/chat/completions"]


def test_a_model_without_a_batch_api_is_refused_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local server's model (Ollama, `openai-chat:` at a local base URL) has no batch API: refused, with the fix."""
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    templates = write_templates(tmp_path / "templates")
    for system, model in (
        (TaskSystem(templates=templates), "ollama:llama3"),
        (TaskSystem(templates=templates, base_url="http://127.0.0.1:9/v1", server="llama-cpp-python"), "openai-chat:m"),
    ):
        with pytest.raises(ConfigurationError, match=r"cannot batch model .*no batch API.*drop `--provider-batch`"):
            system.batch("tag", _items(1), model=model, provider_batch=True)


def test_workflow_steps_go_through_provider_batches(tmp_path: Path, served: ItemServer) -> None:
    """A workflow's items: each step's requests are batched (two steps: two provider batches of three)."""
    folder = write_templates(tmp_path / "templates")
    (folder / "flow.yaml").write_text(
        "workflows:\n"
        "  - name: twice\n"
        "    state:\n"
        "      fields:\n"
        "        - {name: text, type: str}\n"
        "        - {name: first, type: Tag?}\n"
        "        - {name: second, type: Tag?}\n"
        "    steps:\n"
        "      - {id: one, task: tag, inputs: {text: '{{state.text}}'}, output: first}\n"
        "      - {id: two, task: tag, inputs: {text: 'again {{state.text}}'}, output: second}\n",
        encoding="utf-8",
    )
    system = TaskSystem(templates=folder)
    results = {r.id: r for r in system.batch_sync("twice", _items(3), model=OPENAI, **FAST)}
    assert {TaskStatus.COMPLETE} == {r.status for r in results.values()}, [r.error for r in results.values()]
    assert [3, 3] == [len(batch.custom_ids) for batch in served.server.batches.log]


def test_batch_answers_are_priced_at_the_batch_price(system: TaskSystem, served: ItemServer) -> None:
    """The same answer and tokens cost half through the batch (pydantic-ai's `processing: batch` price)."""
    usage = TokenUsage(input_tokens=1000, output_tokens=1000)
    served.fault = lambda n, nth: Reply.tool_call(args={"label": f"label-{n}", "item": f"item-{n}"}, usage=usage)
    batched = system.batch_sync("tag", _items(1), model=OPENAI, **FAST)
    normal = system.batch_sync("tag", _items(1), model=OPENAI)
    assert (2000, 2000) == (batched[0].usage.total_tokens, normal[0].usage.total_tokens)
    assert batched[0].usage.cost is not None and normal[0].usage.cost is not None
    assert normal[0].usage.cost / 2 == pytest.approx(batched[0].usage.cost)


def test_max_cost_never_overshoots_by_more_than_one_items_worst_case(system: TaskSystem, served: ItemServer) -> None:
    """A budget of 2.5 items: items are taken while spent + in-flight worst cases stay under it, then it stops."""
    from atomtask.estimate._estimate import estimate_items
    from atomtask.system._options import CallOptions

    for options in ({}, FAST):
        estimate = estimate_items(system, "tag", _items(1), CallOptions(model=OPENAI), provider_batch=bool(options))
        worst = estimate.items[0].worst_cost
        one = system.batch_sync("tag", _items(1), model=OPENAI, **options)[0].usage.cost
        assert worst is not None and one is not None and one <= worst
        budget = 2.5 * one
        run = system.batch("tag", _items(20), model=OPENAI, max_cost=budget, concurrency=8, **options)
        results = system_results(run)
        assert run.stopped is not None and "--max-cost" in run.stopped
        assert 2 <= len(results) < 20
        assert run.spent.cost is not None and budget <= run.spent.cost <= budget + worst


def test_an_item_with_bad_inputs_is_refused_before_anything_is_submitted(
    system: TaskSystem, served: ItemServer
) -> None:
    """An item whose inputs the template refuses stops the batch before submitting (no batch, no request)."""
    items = [{"id": "good", "text": "item-1"}, {"id": "bad", "txet": "item-0"}]
    with pytest.raises(BatchInputError, match="Item 2: missing input 'text'"):
        system.batch_sync("tag", items, model=OPENAI, **FAST)
    assert [] == served.server.batches.log
    assert not served.asked


def test_provider_batch_and_the_dbos_engine_do_not_mix() -> None:
    """`--provider-batch --engine dbos` is a usage error naming both."""
    from atomtask.batch._provider import run_class_for

    with pytest.raises(UsageError, match="--engine dbos"):
        run_class_for(argparse.Namespace(engine="dbos", provider_batch=True, poll_interval=None, max_wait=None))


def test_an_unknown_reask_policy_is_refused(system: TaskSystem) -> None:
    with pytest.raises(UsageError, match="batch, live, none"):
        system.batch("tag", _items(1), model=OPENAI, reask="later", **FAST)


def system_results(run: object) -> list:  # type: ignore[type-arg]
    from atomtask.batch._api import collect
    from atomtask.handlers._blocking import run_blocking

    return run_blocking(collect(run))  # type: ignore[arg-type]


def test_batch_dry_run_prices_every_item_at_the_batch_price_and_sends_nothing(
    tmp_path: Path, served: ItemServer
) -> None:
    """`atomtask batch --dry-run`: every item checked and estimated; `--provider-batch` halves the price; no request."""
    import io
    import json

    from atomtask.cli import main

    from tests.batch_helpers import write_items

    templates = write_templates(tmp_path / "templates")
    items = write_items(tmp_path / "items.jsonl", 4)
    args = ["batch", "tag", "--templates", str(templates), "--input", str(items), "--model", OPENAI, "--dry-run"]
    costs = []
    for extra in ([], ["--provider-batch"]):
        out = io.StringIO()
        assert 0 == main([*args, *extra, "--json"], stdout=out, stderr=io.StringIO())
        figures = json.loads(out.getvalue())
        assert 4 == len(figures["items"])
        costs.append(figures["total"]["cost"]["expected"])
    assert costs[1] == pytest.approx(costs[0] / 2)
    assert [] == served.server.requests
    assert [] == served.server.batches.log
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "txet": "item-1"}\n', encoding="utf-8")
    assert 2 == main([*args[:5], str(bad), *args[6:]], stdout=io.StringIO(), stderr=io.StringIO())


def test_a_fallback_model_waits_in_its_own_provider_batch_and_keeps_the_first_models_ledger(
    tmp_path: Path, served: ItemServer
) -> None:
    """OpenAI refuses the request (400) in its batch; the fallback's (Anthropic) request waits, resumes, answers.

    The resumed call goes on with the fallback, and its ledger still holds the first model's failed attempt.
    """
    from atomtask.testing import RecordedRequest

    folder = write_templates(tmp_path / "templates")
    (folder / "tag.yaml").write_text(
        (folder / "tag.yaml").read_text(encoding="utf-8") + f"model: {OPENAI}\nfallbacks: [{ANTHROPIC}]\n",
        encoding="utf-8",
    )

    def answer(request: RecordedRequest) -> ServerReply:
        if request.path == "/v1/responses":
            return Reply.error(400, "This model does not take this request.")
        return Reply.tool_call(args={"label": "from-anthropic", "item": "item-0"})

    served.server.respond_with(answer)
    served.server.batches.in_progress_polls = 1
    system = TaskSystem(templates=folder)
    [result] = system.batch_sync("tag", _items(1), batch_id="f", db=tmp_path / "r.db", **FAST)
    assert TaskStatus.COMPLETE == result.status, result.error
    assert {"label": "from-anthropic", "item": "item-0"} == result.output
    assert 2 == result.attempts  # the OpenAI fault, then the Anthropic answer
    assert ["responses", "anthropic"] == [batch.wire for batch in served.server.batches.log]


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--batch-size", "0", "--provider-batch"], "`--batch-size` must be at least 1, not 0."),
        (["--reask", "live", "--max-wait", "5"], "`--reask`, `--max-wait` only apply with `--provider-batch`"),
    ],
)
def test_provider_batch_flags_are_checked_before_anything_runs(tmp_path: Path, flags: list[str], said: str) -> None:
    """A batch size under 1, or provider-batch flags without `--provider-batch`: exit 2, the message says the fix."""
    import io

    from atomtask.cli import main

    from tests.batch_helpers import write_items

    templates = write_templates(tmp_path / "templates")
    items = write_items(tmp_path / "items.jsonl", 1)
    err = io.StringIO()
    args = ["batch", "tag", "--templates", str(templates), "--input", str(items), "--model", OPENAI, *flags]
    assert 2 == main(args, stdout=io.StringIO(), stderr=err)
    assert said in err.getvalue()


def test_a_damaged_waiting_row_is_a_configuration_error_naming_the_record(
    system: TaskSystem, served: ItemServer, tmp_path: Path
) -> None:
    """An item recorded waiting whose messages cannot be read: a typed error naming the item, the file and the fix."""
    served.server.batches.in_progress_polls = 10_000
    db = tmp_path / "r.db"
    options = {"model": OPENAI, "batch_id": "b", "db": db, **FAST}
    assert [] == system_results(system.batch("tag", _items(2), max_wait=0.05, **options))
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE waiting SET messages = ? WHERE item_id = 'i1'", (b'{"messages": "not a history"}',))
    said = r"Item 'i1' of batch 'b' .*r\.db.*cannot be read.*Move the record aside"
    with pytest.raises(ConfigurationError, match=said):
        system_results(system.batch("tag", _items(2), **options))
    assert 1 == len(served.server.batches.created)  # nothing submitted again
