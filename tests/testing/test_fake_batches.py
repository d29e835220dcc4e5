"""Tests for the fake provider's batch endpoints, driven by pydantic-ai's `BatchModelRequests` over real HTTP."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Iterator
from datetime import timedelta
from typing import Any, Literal, TypeVar

import pytest
from atomtask.testing import FakeProviderServer, RecordedRequest, Reply, ServerReply, TokenUsage
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.capabilities import BatchModelRequests
from pydantic_ai.exceptions import ModelAPIError, ModelHTTPError
from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelRequest
from pydantic_ai.models import Model, ModelRequestParameters, override_allow_model_requests
from pydantic_ai.models.batch import BatchRequest
from pydantic_ai.output import PendingModelResponse
from pydantic_ai.settings import ModelSettings

T = TypeVar("T")
Wire = Literal["openai", "anthropic"]
WIRES: list[Wire] = ["openai", "anthropic"]
NAMES = ["Ada", "Bob", "Cy", "Di"]


class Person(BaseModel):
    name: str


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as server, override_allow_model_requests(True):
        yield server


def model_for(server: FakeProviderServer, wire: Wire) -> Model:
    if wire == "openai":
        return server.openai_responses_model()
    return server.anthropic_model(settings=ModelSettings(max_tokens=1024))


def batching(**options: Any) -> BatchModelRequests:
    return BatchModelRequests(
        max_wait=None,
        poll_interval=timedelta(milliseconds=10),
        max_poll_interval=timedelta(milliseconds=50),
        **options,
    )


def name_in(request: RecordedRequest) -> str:
    """The name a request asks about, from its prompt."""
    return next(name for name in NAMES if f"Who is {name}?" in str(request.body))


def by_name(request: RecordedRequest) -> ServerReply:
    """Answers each request with the person its prompt names, whatever order the batch holds them in."""
    return Reply.tool_call(args={"name": name_in(request)})


async def flushing(capability: BatchModelRequests, *runs: Awaitable[T]) -> list[T | BaseException]:
    """Run `runs` together, flushing the capability's queue until all have ended (re-asks and resubmissions too)."""
    tasks = [asyncio.ensure_future(run) for run in runs]
    while not all(task.done() for task in tasks):
        await capability.flush()
        await asyncio.wait(tasks, timeout=0.01)
    return await asyncio.gather(*tasks, return_exceptions=True)


def batch_paths(server: FakeProviderServer) -> list[str]:
    """The batch endpoints called, without the ids that vary (`POST /v1/batches`, `GET /v1/batches/{id}`, ...)."""
    paths = []
    for request in server.requests:
        parts = request.path.strip("/").split("/")
        paths.append("/".join("{id}" if part.startswith(("batch_", "msgbatch_", "file-")) else part for part in parts))
    return paths


# --- Batches shared, polled, ended ------------------------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
async def test_many_runs_share_one_batch(server: FakeProviderServer, wire: Wire) -> None:
    """Runs through one capability share one batch: one create, each request answered by content, usage paid once."""
    server.respond_with(by_name)
    capability = batching(max_requests=3)
    agent = Agent(model_for(server, wire), output_type=Person, capabilities=[capability])
    results = await asyncio.gather(*(agent.run(f"Who is {name}?") for name in NAMES[:3]))
    assert [Person(name=name) for name in NAMES[:3]] == [result.output for result in results]
    [submitted] = server.batches.log
    assert ("responses" if wire == "openai" else "anthropic") == submitted.wire
    assert 3 == len(set(submitted.custom_ids)) == len(set(submitted.body_hashes))
    assert 3 == server.batches.answered
    paid = server.batches.paid
    assert (3, 0) == (paid.batch_requests, paid.live_requests)
    run_tokens = [(result.usage.input_tokens, result.usage.output_tokens) for result in results]
    assert (paid.batch.input_tokens, paid.batch.output_tokens) == tuple(map(sum, zip(*run_tokens, strict=True)))
    assert [] == [request for request in server.requests if request.path in ("/v1/responses", "/v1/messages")]
    assert {custom_id: "succeeded" for custom_id in submitted.custom_ids} == server.batches.outcomes(submitted.id)


async def test_openai_batch_calls_what_pydantic_ai_calls(server: FakeProviderServer) -> None:
    """An OpenAI batch: the input file uploaded, the batch created, checked, its output read, its input file deleted."""
    server.respond_with(by_name)
    server.batches.in_progress_polls = 3
    capability = batching(max_requests=1)
    agent = Agent(server.openai_responses_model(), output_type=Person, capabilities=[capability])
    assert Person(name="Ada") == (await agent.run("Who is Ada?")).output
    expected = [
        "v1/files",
        "v1/batches",
        *["v1/batches/{id}"] * 4,  # three checks in progress, the fourth ends it
        "v1/files/{id}/content",
        "v1/files/{id}",  # DELETE of the input file: every request ran
    ]
    assert expected == batch_paths(server)
    uploaded = server.requests[0]
    assert ("POST", "DELETE") == (uploaded.method, server.requests[-1].method)
    assert [server.requests[-1].path.rsplit("/", 1)[1]] == server.batches.deleted_files


async def test_anthropic_batch_calls_what_pydantic_ai_calls(server: FakeProviderServer) -> None:
    """An Anthropic batch: created, checked in progress, then its results read from its `results_url`."""
    server.respond_with(by_name)
    server.batches.in_progress_polls = 2
    agent = Agent(model_for(server, "anthropic"), output_type=Person, capabilities=[batching(max_requests=1)])
    assert Person(name="Bob") == (await agent.run("Who is Bob?")).output
    checks = ["v1/messages/batches/{id}"] * 4  # two in progress, one ending it, one by the SDK before the results
    assert ["v1/messages/batches", *checks, "v1/messages/batches/{id}/results"] == batch_paths(server)
    assert ["POST", *["GET"] * 5] == [request.method for request in server.requests]


@pytest.mark.parametrize("wire", WIRES)
async def test_batch_request_is_recorded_for_the_responder(server: FakeProviderServer, wire: Wire) -> None:
    """The responder sees a batch request with its line's path, body, batch id, custom id and submission."""
    seen: list[RecordedRequest] = []

    def respond(request: RecordedRequest) -> ServerReply:
        seen.append(request)
        return by_name(request)

    server.respond_with(respond)
    agent = Agent(model_for(server, wire), output_type=Person, capabilities=[batching(max_requests=1)])
    await agent.run("Who is Cy?")
    [request] = seen
    [submitted] = server.batches.log
    path = "/v1/responses" if wire == "openai" else "/v1/messages"
    assert (path, submitted.id, submitted.custom_ids[0], 1) == (
        request.path,
        request.batch_id,
        request.custom_id,
        request.submission,
    )
    assert ["final_result"] == request.tool_names


# --- Expiry, errors, malformed answers ----------------------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
async def test_expired_request_is_resubmitted_in_a_new_batch(server: FakeProviderServer, wire: Wire) -> None:
    """A request expired at its first submission is resubmitted by pydantic-ai; the log shows it in two batches."""
    server.respond_with(by_name)
    server.batches.expire = lambda request: request.submission == 1 and name_in(request) == "Bob"
    capability = batching()
    agent = Agent(model_for(server, wire), output_type=Person, capabilities=[capability])
    results = await flushing(capability, agent.run("Who is Ada?"), agent.run("Who is Bob?"))
    assert [Person(name="Ada"), Person(name="Bob")] == [getattr(result, "output", result) for result in results]
    first, second = server.batches.log
    [(digest, holders)] = server.batches.resubmitted().items()
    assert [first.id, second.id] == holders
    assert (digest,) == second.body_hashes
    assert [first.id, second.id] == server.batches.submissions(second.custom_ids[0])
    assert "expired" == server.batches.outcomes(first.id)[second.custom_ids[0]]
    assert 2 == server.batches.paid.batch_requests  # the expired submission was never paid


@pytest.mark.parametrize("wire", WIRES)
async def test_expire_by_custom_id_expires_every_submission(server: FakeProviderServer, wire: Wire) -> None:
    """A custom id in `expire` expires at every submission, so pydantic-ai gives up after its resubmissions."""
    server.respond_with(by_name)
    capability = batching(max_resubmissions=1)
    agent = Agent(model_for(server, wire), output_type=Person, capabilities=[capability])
    await flushing_one(capability, agent.run("Who is Di?"))
    [custom_id] = server.batches.log[0].custom_ids  # derived from the body: the same request gets it again
    server.batches.expire = {custom_id}
    with pytest.raises(ModelAPIError, match="expired"):
        await flushing_one(capability, agent.run("Who is Di?"))
    assert 3 == len(server.batches.submissions(custom_id))
    assert 1 == server.batches.answered


async def flushing_one(capability: BatchModelRequests, run: Awaitable[T]) -> T:
    [result] = await flushing(capability, run)
    if isinstance(result, BaseException):
        raise result
    return result


@pytest.mark.parametrize("wire", WIRES)
async def test_request_error_reaches_the_run(server: FakeProviderServer, wire: Wire) -> None:
    """An `ErrorReply` for one request of a batch fails that run with its status; the others succeed."""
    server.respond_with(
        lambda request: Reply.error(400, "Bad prompt.") if name_in(request) == "Bob" else by_name(request)
    )
    capability = batching(max_requests=2)
    agent = Agent(model_for(server, wire), output_type=Person, capabilities=[capability])
    ada, bob = await asyncio.gather(agent.run("Who is Ada?"), agent.run("Who is Bob?"), return_exceptions=True)
    assert Person(name="Ada") == getattr(ada, "output", ada)
    assert isinstance(bob, ModelHTTPError)
    assert 400 == bob.status_code
    assert "Bad prompt." in str(bob.body)
    [batch_id] = server.batches.created
    assert ["errored", "succeeded"] == sorted(server.batches.outcomes(batch_id).values())
    assert 1 == server.batches.paid.batch_requests


@pytest.mark.parametrize("wire", WIRES)
async def test_transient_request_error_is_resubmitted(server: FakeProviderServer, wire: Wire) -> None:
    """A 429 for a batch request is resubmitted by pydantic-ai in a new batch, which answers it."""
    answered: list[int | None] = []

    def respond(request: RecordedRequest) -> ServerReply:
        answered.append(request.submission)
        return Reply.error(429, "Slow down.") if request.submission == 1 else by_name(request)

    server.respond_with(respond)
    capability = batching()
    agent = Agent(model_for(server, wire), output_type=Person, capabilities=[capability])
    assert Person(name="Ada") == (await flushing_one(capability, agent.run("Who is Ada?"))).output
    assert [1, 2] == answered
    assert 2 == len(server.batches.created) == len(next(iter(server.batches.resubmitted().values())))


@pytest.mark.parametrize("wire", WIRES)
async def test_malformed_answer_is_reasked_in_a_second_batch(server: FakeProviderServer, wire: Wire) -> None:
    """Broken JSON from the responder is a malformed answer: pydantic-ai re-asks it in a second batch and succeeds."""

    def respond(request: RecordedRequest) -> ServerReply:
        if name_in(request) == "Bob" and not request.tool_results:
            return Reply.tool_call(args='{"name": "Bob"')  # cut-off JSON
        return by_name(request)

    server.respond_with(respond)
    capability = batching()
    agent = Agent(model_for(server, wire), output_type=Person, capabilities=[capability])
    results = await flushing(capability, agent.run("Who is Ada?"), agent.run("Who is Bob?"))
    assert [Person(name="Ada"), Person(name="Bob")] == [getattr(result, "output", result) for result in results]
    first, second = server.batches.log
    assert (2, 1) == (len(first.custom_ids), len(second.custom_ids))
    assert {} == server.batches.resubmitted()  # the re-ask is a new request, not the same one again
    assert 3 == server.batches.paid.batch_requests  # the malformed answer was paid too


# --- Whole batches ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
async def test_expired_batch_is_resubmitted(server: FakeProviderServer, wire: Wire) -> None:
    """A whole batch ending expired runs none of its requests; pydantic-ai resubmits them together."""
    server.respond_with(by_name)
    server.batches.end_next("expired")
    capability = batching(max_requests=2)
    agent = Agent(model_for(server, wire), output_type=Person, capabilities=[capability])
    results = await asyncio.gather(agent.run("Who is Ada?"), agent.run("Who is Bob?"))
    assert [Person(name="Ada"), Person(name="Bob")] == [result.output for result in results]
    first, second = server.batches.log
    assert {"expired"} == set(server.batches.outcomes(first.id).values())
    assert sorted(first.body_hashes) == sorted(second.body_hashes)
    assert 2 == server.batches.answered


@pytest.mark.parametrize("wire", WIRES)
async def test_failed_batch_fails_its_runs(server: FakeProviderServer, wire: Wire) -> None:
    """A failed batch (OpenAI `failed` with `errors`; Anthropic every request errored) fails each run with a 400."""
    server.respond_with(by_name)
    server.batches.end_next("failed")
    agent = Agent(model_for(server, wire), output_type=Person, capabilities=[batching(max_requests=1)])
    with pytest.raises(ModelHTTPError) as raised:
        await agent.run("Who is Ada?")
    assert 400 == raised.value.status_code
    assert 0 == server.batches.answered
    [batch_id] = server.batches.created
    assert ["errored"] == list(server.batches.outcomes(batch_id).values())


@pytest.mark.parametrize("wire", WIRES)
async def test_refused_creation_reaches_the_run(server: FakeProviderServer, wire: Wire) -> None:
    """`refuse_create` answers the next creation with its error: nothing is created and the run gets the error."""
    server.respond_with(by_name)
    server.batches.refuse_create(Reply.error(403, "Batches are not enabled for this project."))
    agent = Agent(model_for(server, wire), output_type=Person, capabilities=[batching(max_requests=1)])
    with pytest.raises(ModelHTTPError) as raised:
        await agent.run("Who is Ada?")
    assert 403 == raised.value.status_code
    assert [] == server.batches.created
    assert Person(name="Bob") == (await agent.run("Who is Bob?")).output  # only the next creation was refused
    assert 1 == len(server.batches.created)


@pytest.mark.parametrize("wire", WIRES)
async def test_cancelled_batch_reports_its_requests_canceled(server: FakeProviderServer, wire: Wire) -> None:
    """Cancel: `cancelling` first, `cancelled` (ended) at the next check, every unrun request canceled."""
    server.respond_with(by_name)
    model = model_for(server, wire)
    prompt = ModelRequest.user_text_prompt("Who is Ada?")
    request = BatchRequest(custom_id="ada", messages=[prompt], model_request_parameters=ModelRequestParameters())
    created = await model.batch_create([await model.batch_encode(request)])
    cancelling = await model.batch_cancel(created)
    assert ("in_progress", "canceling") == (created.status, cancelling.status)
    ended = await model.batch_status(cancelling)
    assert "ended" == ended.status
    assert [("ada", "canceled")] == [(result.custom_id, result.status) for result in await model.batch_results(ended)]
    assert {"ada": "canceled"} == server.batches.outcomes(created.id)
    assert 0 == server.batches.answered


@pytest.mark.parametrize("wire", WIRES)
async def test_abandoned_run_cancels_its_batch(server: FakeProviderServer, wire: Wire) -> None:
    """Cancelling the only run waiting on a batch makes pydantic-ai cancel the batch (`POST .../cancel`)."""
    server.respond_with(by_name)
    server.batches.in_progress_polls = 1_000_000
    agent = Agent(model_for(server, wire), output_type=Person, capabilities=[batching(max_requests=1)])
    run = asyncio.ensure_future(agent.run("Who is Ada?"))
    while not server.batches.created:
        await asyncio.sleep(0.01)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    [batch_id] = server.batches.created
    for _ in range(500):  # the cancel runs in a task of pydantic-ai's own
        if any(request.path.endswith(f"/{batch_id}/cancel") for request in server.requests):
            break
        await asyncio.sleep(0.01)
    prefix = "/v1/batches" if wire == "openai" else "/v1/messages/batches"
    cancels = [(request.method, request.path) for request in server.requests if request.path.endswith("/cancel")]
    assert [("POST", f"{prefix}/{batch_id}/cancel")] == cancels


# --- Resume from a pending run --------------------------------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
async def test_pending_run_resumes_collecting_the_same_batch(server: FakeProviderServer, wire: Wire) -> None:
    """A run ending pending is resumed from its serialized history: it collects the same batch, never creating one."""
    server.respond_with(by_name)
    server.batches.in_progress_polls = 1_000_000
    output_type: Any = [Person, PendingModelResponse]
    agent = Agent(model_for(server, wire), output_type=output_type, capabilities=[batching(max_requests=1)])
    first = await agent.run("Who is Ada?")
    assert isinstance(first.output, PendingModelResponse)
    stored = ModelMessagesTypeAdapter.dump_json(first.all_messages())
    server.batches.in_progress_polls = 0
    history = ModelMessagesTypeAdapter.validate_json(stored)
    resumed = Agent(model_for(server, wire), output_type=output_type, capabilities=[batching(max_requests=1)])
    second = await resumed.run(message_history=history)
    assert Person(name="Ada") == second.output
    assert 1 == len(server.batches.created) == server.batches.answered


# --- Usage ------------------------------------------------------------------------------------------------------


async def test_paid_usage_counts_batch_and_live_answers(server: FakeProviderServer) -> None:
    """`paid` adds the reply's own usage for batch answers and live answers alike."""
    server.respond_with(
        lambda request: Reply.tool_call(args={"name": "Ada"}, usage=TokenUsage(input_tokens=10, output_tokens=3))
    )
    agent = Agent(server.openai_responses_model(), output_type=Person, capabilities=[batching(max_requests=1)])
    await agent.run("Who is Ada?")
    await Agent(server.openai_responses_model(), output_type=Person).run("Who is Ada?")
    paid = server.batches.paid
    assert (1, 10, 3) == (paid.batch_requests, paid.batch.input_tokens, paid.batch.output_tokens)
    assert (1, 10, 3) == (paid.live_requests, paid.live.input_tokens, paid.live.output_tokens)
    assert (20, 6) == (paid.total.input_tokens, paid.total.output_tokens)


# --- The OpenAI wire directly ------------------------------------------------------------------------------------


async def test_openai_statuses_and_chat_completions_lines(server: FakeProviderServer) -> None:
    """Status checks say `validating`, `in_progress`, `finalizing`, then `completed`; chat completions lines work."""
    from openai import AsyncOpenAI

    server.script(Reply.text("hello"))
    server.batches.in_progress_polls = 2
    messages = [{"role": "user", "content": "Hi"}]
    line = {
        "custom_id": "a",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {"model": "m", "messages": messages},
    }
    async with AsyncOpenAI(base_url=server.openai_base_url, api_key="test-key", max_retries=0) as client:
        uploaded = await client.files.create(file=("batch.jsonl", json.dumps(line).encode()), purpose="batch")
        batch = await client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        checks = [await client.batches.retrieve(batch.id) for _ in range(3)]
        assert ["validating", "in_progress", "finalizing", "completed"] == [batch.status] + [c.status for c in checks]
        assert (1, 1, 0) == (
            checks[-1].request_counts.total,
            checks[-1].request_counts.completed,
            checks[-1].request_counts.failed,
        )
        assert checks[-1].output_file_id is not None
        output = await client.files.content(checks[-1].output_file_id)
    [answered] = [json.loads(text) for text in output.text.splitlines()]
    assert ("a", 200) == (answered["custom_id"], answered["response"]["status_code"])
    assert "hello" == answered["response"]["body"]["choices"][0]["message"]["content"]
    assert "openai" == server.batches.log[0].wire
