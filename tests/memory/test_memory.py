"""MemorySystem: typed relevance judgements from an atomic task over a bounded, full-text-selected prompt."""

from __future__ import annotations

from pathlib import Path
from typing import Any, assert_type

import pytest
from atomtask import (
    AssociativeMatchResult,
    ConfigurationError,
    FailureReason,
    MatchItem,
    MemoryContext,
    MemorySystem,
    TaskSystem,
    Template,
    TemplateNotFoundError,
    UsageError,
)
from atomtask.memory._memory import CHARS_PER_TOKEN
from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart
from pydantic_ai.models.function import AgentInfo

from tests.helpers import Recorder, user_text

DOCS = [
    ("refunds", "Refunds are paid within 14 days of the request."),
    ("shipping", "Shipping takes 3 days; refunds for lost parcels are automatic."),
    ("office", "Our office is in Paris, near the river."),
]


def answer(*matches: tuple[str, float], summary: str = "Refunds take up to 14 days.") -> dict[str, Any]:
    return {
        "context_summary": summary,
        "matches": [{"id": i, "relevance_score": s, "reason": f"{i} is about it"} for i, s in matches],
    }


def memory_with(rec: Recorder, path: str | Path = ":memory:", **kwargs: Any) -> MemorySystem:
    memory = MemorySystem(TaskSystem(model=rec.model), path=path, **kwargs)
    memory.add_many(DOCS)
    return memory


def prompt_chars(messages: list[ModelMessage], info: AgentInfo) -> int:
    """Characters the model received: the instructions plus every user prompt."""
    return len(info.instructions or "") + len(user_text(messages))


def test_relevant_ids_come_back_typed() -> None:
    """The matches are the task's own validated MatchItem instances, in an AssociativeMatchResult."""
    rec = Recorder(answer(("refunds", 0.9), ("shipping", 0.4)))
    memory = memory_with(rec)
    context = memory.get_relevant_context_for("How long do refunds take?")
    assert_type(context, MemoryContext)
    assert isinstance(context, AssociativeMatchResult)
    assert ["refunds", "shipping"] == [m.id for m in context.matches]
    assert all(type(m) is MatchItem for m in context.matches)
    assert context.task_result is not None
    parsed = context.task_result.parsedContent
    assert parsed is not None
    assert parsed.matches[0] is context.matches[0]
    assert "Refunds take up to 14 days." == context.context_summary
    assert (True, []) == (context.ok, context.dropped)


def test_only_full_text_candidates_are_sent() -> None:
    """The prompt holds the documents sharing a word with the query, and not the others."""
    rec = Recorder(answer(("refunds", 0.9)))
    context = memory_with(rec).get_relevant_context_for("refunds")
    sent = user_text(rec.calls[0][0])
    assert '<document id="refunds">\nRefunds are paid within 14 days of the request.\n</document>' in sent
    assert "Paris" not in sent
    assert ["refunds", "shipping"] == sorted(context.prompt.sent_ids)


def test_an_invented_id_is_dropped_and_noted() -> None:
    """An id that was not a candidate is dropped, and kept in `dropped` with the reason."""
    rec = Recorder(answer(("ghost", 0.99), ("refunds", 0.9), ("office", 0.5)))
    context = memory_with(rec).get_relevant_context_for("refunds")
    assert ["refunds"] == [m.id for m in context.matches]
    assert ["ghost", "office"] == context.dropped_ids
    assert {"not_a_candidate"} == {d.why for d in context.dropped}
    assert 0.99 == context.dropped[0].item.relevance_score


def test_duplicates_and_matches_past_the_limit_are_dropped() -> None:
    """A repeated id and matches beyond `limit` are dropped with their reasons."""
    rec = Recorder(answer(("refunds", 0.9), ("refunds", 0.8), ("shipping", 0.4)))
    context = memory_with(rec).get_relevant_context_for("refunds", limit=1)
    assert ["refunds"] == [m.id for m in context.matches]
    assert [("refunds", "duplicate"), ("shipping", "over_limit")] == [(d.item.id, d.why) for d in context.dropped]
    assert "Return at most 1 relevant documents" in user_text(rec.calls[0][0])


def test_out_of_range_score_is_sent_back_to_the_model() -> None:
    """A score above 1 fails validation; the model's corrected answer is what comes back."""
    rec = Recorder(answer(("refunds", 1.5)), answer(("refunds", 0.9)))
    context = memory_with(rec).get_relevant_context_for("refunds")
    assert [0.9] == [m.relevance_score for m in context.matches]
    assert context.task_result is not None
    assert 2 == len(context.task_result.notes.attempts)


def test_a_failed_task_says_why_with_its_ledger() -> None:
    """When every answer is invalid the context has the error, no matches, and the task's raw outputs."""
    rec = Recorder(answer(("refunds", 1.5)), answer(("refunds", -1)))
    context = memory_with(rec).get_relevant_context_for("refunds")
    assert not context.ok
    assert context.error is not None
    assert FailureReason.OUTPUT_VALIDATION_FAILURE == context.error.reason
    assert [] == context.matches
    assert context.task_result is not None
    raw = [a.raw_output for a in context.task_result.notes.attempts]
    assert 2 == len(raw)
    assert '"relevance_score": -1' in (raw[1] or "")


def test_each_query_is_a_fresh_run_without_history() -> None:
    """The model receives one request: the template's system text as instructions and one user prompt."""
    rec = Recorder(answer(("refunds", 0.9)), answer(("office", 0.7)))
    memory = memory_with(rec)
    memory.get_relevant_context_for("refunds")
    memory.get_relevant_context_for("Paris office")
    system_text = memory.task_system.templates.get("associative_match").system
    for messages, info in rec.calls:
        assert 1 == len(messages)
        request = messages[0]
        assert isinstance(request, ModelRequest)
        assert [UserPromptPart] == [type(p) for p in request.parts]
        assert (system_text or "").strip() == info.instructions
    assert "refunds" not in user_text(rec.calls[1][0]).lower()


def test_queries_write_nothing_to_the_store() -> None:
    """Asking questions stores no conversation: the same documents, the same tables."""
    rec = Recorder(answer(("refunds", 0.9)))
    memory = memory_with(rec)
    tables = memory.store.tables()
    memory.get_relevant_context_for("refunds")
    assert (3, tables) == (len(memory), memory.store.tables())


def test_a_large_store_keeps_the_prompt_under_budget() -> None:
    """With 10,000 matching documents the model gets at most the budget, and the cut is noted."""
    seen: list[int] = []

    def reply(messages: list[ModelMessage], info: AgentInfo) -> dict[str, Any]:
        seen.append(prompt_chars(messages, info))
        return answer(("doc-1", 0.8))

    rec = Recorder(reply)
    memory = MemorySystem(TaskSystem(model=rec.model), path=":memory:", max_prompt_chars=4_000, max_candidates=200)
    memory.add_many(
        (f"doc-{i}", f"Invoice {i} for customer {i % 97}: widgets shipped and paid.") for i in range(10_000)
    )
    context = memory.get_relevant_context_for("which invoice covers the widgets?")
    assert 10_000 == len(memory)
    assert 200 == context.prompt.candidates_found
    assert seen[0] <= context.prompt.prompt_chars <= 4_000
    assert 3_500 < context.prompt.prompt_chars  # packed close to the budget, not far under it
    assert context.prompt.cut
    assert 200 == len(context.prompt.sent_ids) + len(context.prompt.omitted_ids)
    assert 0 < len(context.prompt.omitted_ids)


def test_long_documents_and_queries_are_cut_and_noted() -> None:
    """A document over `max_document_chars` and a query over a quarter of the budget are shortened."""
    rec = Recorder(answer(("long", 0.5)))
    memory = MemorySystem(TaskSystem(model=rec.model), ":memory:", max_prompt_chars=3_000, max_document_chars=300)
    memory.add("long", "refund " * 200)
    context = memory.get_relevant_context_for("refund " * 500)
    assert (["long"], True) == (context.prompt.truncated_ids, context.prompt.query_truncated)
    assert prompt_chars(*rec.calls[0]) <= context.prompt.prompt_chars <= 3_000
    assert "refund refund […]\n</document>" in user_text(rec.calls[0][0])


def test_a_token_budget_is_turned_into_characters() -> None:
    """`max_prompt_tokens` sets the budget at CHARS_PER_TOKEN characters a token; the smaller budget wins."""
    system = TaskSystem()
    assert 2_000 * CHARS_PER_TOKEN == MemorySystem(system, ":memory:", max_prompt_tokens=2_000).budget_chars
    both = MemorySystem(system, ":memory:", max_prompt_tokens=2_000, max_prompt_chars=5_000)
    assert 5_000 == both.budget_chars


def test_a_budget_smaller_than_the_template_is_rejected() -> None:
    """A budget that leaves no room for candidates is refused with the minimum to use."""
    with pytest.raises(ConfigurationError, match=r"Raise `max_prompt_chars` to at least \d+"):
        MemorySystem(TaskSystem(), ":memory:", max_prompt_chars=500)


def test_no_candidates_means_no_model_call() -> None:
    """A query sharing no word with any document returns an empty context without calling the model."""
    rec = Recorder()
    context = memory_with(rec).get_relevant_context_for("quantum chromodynamics")
    assert ([], [], None, None) == (rec.calls, context.matches, context.error, context.task_result)
    assert 0 == context.prompt.candidates_found


def test_a_restart_keeps_the_data(tmp_path: Path) -> None:
    """Documents added before closing are found by a new MemorySystem on the same file."""
    path = tmp_path / "memory.sqlite3"
    with memory_with(Recorder(), path=path) as first:
        first.add("notes", "Meeting notes: refunds policy review.", {"author": "ann"})
    rec = Recorder(answer(("notes", 0.7), ("refunds", 0.9)))
    with MemorySystem(TaskSystem(model=rec.model), path=path) as second:
        assert 4 == len(second)
        notes = second.get("notes")
        assert notes is not None
        assert {"author": "ann"} == notes.metadata
        context = second.get_relevant_context_for("refunds policy")
    assert ["notes", "refunds"] == [m.id for m in context.matches]


async def test_async_queries_share_the_same_path() -> None:
    """`get_relevant_context_for_async` runs the task with `execute_async` and filters the same way."""
    rec = Recorder(answer(("ghost", 0.9), ("refunds", 0.8)))
    context = await memory_with(rec).get_relevant_context_for_async("refunds")
    assert (["refunds"], ["ghost"]) == ([m.id for m in context.matches], context.dropped_ids)


def test_the_template_is_loaded_when_missing_and_checked_when_given() -> None:
    """An empty system gets the shipped template; a template answering another schema is refused."""
    system = TaskSystem()
    MemorySystem(system, ":memory:")
    assert "associative_match" in system.templates
    system.register(
        Template(name="wrong", params={"query": "str", "candidates": "str"}, instructions="{{query}} {{candidates}}")
    )
    with pytest.raises(ConfigurationError, match="'wrong' answers text, but the memory system needs"):
        MemorySystem(system, ":memory:", template="wrong")
    with pytest.raises(TemplateNotFoundError):
        MemorySystem(system, ":memory:", template="nope")


def test_a_limit_below_one_is_a_usage_error() -> None:
    """`limit=0` is refused before anything runs."""
    with pytest.raises(UsageError, match="`limit` must be at least 1"):
        memory_with(Recorder()).get_relevant_context_for("refunds", limit=0)


def test_user_schemas_named_like_the_builtins_do_not_change_the_memory_task(tmp_path: Path) -> None:
    """With the user's own `AssociativeMatchResult` and `MatchItem`, the memory system still runs on its own."""
    (tmp_path / "mine.yaml").write_text(
        "name: MatchItem\nfields: [{name: title, type: str}]\n---\n"
        "name: AssociativeMatchResult\nfields: [{name: items, type: 'list[MatchItem]'}]\n"
    )
    rec = Recorder(answer(("refunds", 0.9)))
    system = TaskSystem(model=rec.model, templates=tmp_path)
    memory = MemorySystem(system, ":memory:")
    memory.add_many(DOCS)
    context = memory.get_relevant_context_for("refunds")
    assert (True, ["refunds"]) == (context.ok, [m.id for m in context.matches])
    assert all(type(m) is MatchItem for m in context.matches)
    assert system.models.get("MatchItem") is not MatchItem
