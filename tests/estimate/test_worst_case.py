"""A dry run's worst case: never below what a run that re-asks, falls back or is capped by `max_tokens` spent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from atomtask import TaskSystem
from atomtask.testing import FakeProviderServer, Reply

CONTACT = {"name": "Ada Lovelace", "email": "ada@example.com", "phone": None, "company": None}
TEXT = "Hi, it's Ada Lovelace (ada@example.com): my invoice F-17 is wrong."


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


@pytest.mark.usefixtures("allow_model_requests")
@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_the_worst_case_covers_a_run_that_re_asks_every_time(
    server: FakeProviderServer, templates_dir: Path, wire: str
) -> None:
    """Three invalid answers (every retry of extract_contact spent, each re-ask carrying the last): worst >= actual."""
    system = TaskSystem(templates=templates_dir)
    model = server.openai_chat_model() if wire == "openai" else server.anthropic_model()
    estimate = system.estimate("extract_contact", {"text": TEXT}, model=model)
    invalid = {"email": "not an e-mail " * 8, "phone": ["a list", "not a string"], "company": {"no": "object"}}
    server.script(*(Reply.tool_call(args=invalid) for _ in range(3)))
    result = system.execute("extract_contact", {"text": TEXT}, model=model)
    assert not result.ok
    assert 3 == len(server.requests) == estimate.total.requests.worst
    usage = result.notes.usage
    assert estimate.total.input_tokens.worst >= usage.input_tokens
    assert estimate.total.output_tokens.worst >= usage.output_tokens
    assert estimate.total.input_tokens.expected < usage.input_tokens  # the expected run asks once


@pytest.mark.usefixtures("allow_model_requests")
def test_the_worst_case_answer_is_max_tokens_when_set(server: FakeProviderServer, templates_dir: Path) -> None:
    """With `max_tokens`, each answer counts that many tokens at worst, and no assumption is noted."""
    system = TaskSystem(templates=templates_dir)
    model = server.openai_chat_model()
    settings = {"max_tokens": 60}
    estimate = system.estimate("extract_contact", {"text": TEXT}, model=model, model_settings=settings)
    assert 3 * 60 == estimate.total.output_tokens.worst
    assert not any("no max_tokens" in note for note in estimate.rows[0].notes)
    server.script(Reply.tool_call(args={"email": "nobody"}), Reply.tool_call(args=CONTACT))
    result = system.execute("extract_contact", {"text": TEXT}, model=model, model_settings=settings)
    assert result.ok, result.error
    assert 60 == server.requests[0].body["max_completion_tokens"]
    assert estimate.total.input_tokens.worst >= result.notes.usage.input_tokens
    assert estimate.total.output_tokens.worst >= result.notes.usage.output_tokens


def test_without_max_tokens_the_worst_answer_is_an_assumption_said_so(templates_dir: Path) -> None:
    """No `max_tokens`: each answer is assumed at most 4x expected (at least 256 tokens), and the note says so."""
    system = TaskSystem(templates=templates_dir)
    estimate = system.estimate("extract_contact", {"text": TEXT}, model="openai:gpt-4o-mini")
    row = estimate.rows[0]
    assert 3 * 256 == row.output_tokens.worst
    assert "no max_tokens: worst case assumed 256 output tokens an answer" in row.notes
    assert "no max_tokens" in estimate.render()


def test_every_fallback_counts_at_worst_and_none_is_expected(tmp_path: Path) -> None:
    """A template's fallbacks: each model's every retry at worst, the first model alone expected."""
    (tmp_path / "t.yaml").write_text(
        "name: greet\nmodel: openai:gpt-4o-mini\nfallbacks: [anthropic:claude-haiku-4-5]\nretries: 2\n"
        "params: {who: str}\ninstructions: Greet {{who}}.\nexpected_output_tokens: 40\n"
    )
    system = TaskSystem(templates=tmp_path)
    estimate = system.estimate("greet", {"who": "Ada"})
    assert ["openai:gpt-4o-mini", "anthropic:claude-haiku-4-5"] == [row.model for row in estimate.rows]
    first, fallback = estimate.rows
    assert (1, 3) == (first.requests.expected, first.requests.worst)
    assert (0, 3) == (fallback.requests.expected, fallback.requests.worst)
    assert 40 == first.output_tokens.expected  # declared, not the 256 of a text answer
    assert 0 == fallback.output_tokens.expected
    assert (1, 6) == (estimate.total.requests.expected, estimate.total.requests.worst)


def test_a_loop_counts_at_its_bound_and_a_branch_not_taken_at_worst(templates_dir: Path) -> None:
    """article_writer's review/revise loop at `max_visits` (+1 review); support_triage's other answers at worst only."""
    system = TaskSystem(templates=templates_dir)
    article = system.estimate("article_writer", {"topic": "How tides work"}, model="openai:gpt-4o-mini")
    requests = {row.template: row.requests for row in article.rows}
    assert 2 * 2 == requests["revise_article"].worst  # max_visits 2, two attempts each
    assert 3 * 2 == requests["review_article"].worst
    triage = system.estimate(
        "support_triage", {"subject": "Charged twice", "body": "My card was charged twice."}, model="openai:gpt-4o-mini"
    )
    answered = [row for row in triage.rows if row.template.startswith("answer_")]
    assert 3 == len(answered)
    assert 1 == sum(row.requests.expected for row in answered)  # the branch the answers took
    assert all(row.requests.worst >= 2 for row in answered)


FOR_EACH = """\
schemas:
  - name: Gist
    fields:
      - {name: gist, type: str}
templates:
  - name: gist_of
    params: {note: str}
    instructions: "The gist of: {{note}}"
    output_format: {type: json, schema: Gist}
workflows:
  - name: gists
    state:
      fields:
        - {name: notes, type: "list[str]"}
        - {name: gists, type: "list[Gist]", default: []}
    steps:
      - id: each
        task: gist_of
        for_each: "{{state.notes}}"
        as: note
        inputs: {note: "{{note}}"}
        collect: gists
"""


def test_a_for_each_counts_every_item_of_the_run_inputs(tmp_path: Path) -> None:
    """`for_each` over a list the caller gives: one call per element expected, and per element at worst."""
    (tmp_path / "gists.yaml").write_text(FOR_EACH)
    system = TaskSystem(templates=tmp_path)
    notes = ["Buy milk.", "Call Ada about the invoice.", "Book the train to Paris for Monday."]
    estimate = system.estimate("gists", {"notes": notes}, model="openai:gpt-4o-mini")
    (row,) = estimate.rows
    assert (3, 3 * 2) == (row.requests.expected, row.requests.worst)
    assert ("step 'each': for_each counted over 3 items (the run inputs' list)",) == estimate.notes
    one = system.estimate("gist_of", {"note": notes[2]}, model="openai:gpt-4o-mini").rows[0]
    assert one.input_tokens.expected < row.input_tokens.expected < 3 * one.input_tokens.expected
