"""The provider batch calls of `batch._provider` (submit, check, results) against the fake batch endpoints."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from atomtask.batch._provider import Endpoint, check, endpoint_of, results, submit
from atomtask.handlers._blocking import run_blocking
from atomtask.testing import FakeProviderServer, RecordedRequest, Reply, ServerReply

pytestmark = pytest.mark.usefixtures("allow_model_requests")


def _answer(request: RecordedRequest) -> ServerReply:
    text = str(request.body.get("messages"))
    if "boom" in text:
        return Reply.error(400, "That model does not take this request.")
    return Reply.text("Hello from the batch.")


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as server:
        server.respond_with(_answer)
        yield server


def _requests(endpoint: Endpoint) -> list[tuple[str, dict[str, object]]]:
    key = "max_completion_tokens" if endpoint.kind == "openai" else "max_tokens"
    return [
        (f"c{n}", {"model": "m", key: 50, "messages": [{"role": "user", "content": word}]})
        for n, word in enumerate(["hi", "boom", "late"])
    ]


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_submit_poll_and_read_every_outcome(server: FakeProviderServer, kind: str) -> None:
    """A batch is in progress for its first checks, then ends: one answer, one error, one expired request."""
    model = server.openai_chat_model() if kind == "openai" else server.anthropic_model()
    endpoint = endpoint_of(model)
    server.batches.in_progress_polls = 1
    server.batches.expire = {"c2"}

    async def go() -> tuple[list[bool], dict[str, object]]:
        submitted = await submit(endpoint, _requests(endpoint))
        seen = [submitted.ended]
        seen.append((await check(endpoint, submitted.provider_batch_id)).ended)
        seen.append((await check(endpoint, submitted.provider_batch_id)).ended)
        return seen, dict(await results(endpoint, submitted.provider_batch_id))

    ended, outcomes = run_blocking(go())
    assert [False, False, True] == ended
    assert {"c0": "succeeded", "c1": "errored", "c2": "expired"} == {k: v.status for k, v in outcomes.items()}
    body = outcomes["c0"].body
    assert body is not None and "Hello from the batch." in str(body)
    assert "does not take this request" in outcomes["c1"].message
    assert 1 == len(server.batches.created)
    assert 3 == server.batches.answered  # the expired one included


def test_an_unknown_batch_resource_is_a_404(server: FakeProviderServer) -> None:
    """A batch id the fake never created is answered 404, as the provider would."""
    import httpx2

    response = httpx2.get(f"{server.base_url}/v1/batches/batch_999")
    assert 404 == response.status_code
