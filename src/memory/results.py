"""What the memory system stores and what a query returns besides the model's answer."""

from __future__ import annotations

from typing import Any, Literal

from atomtask.schemas.builtins import AssociativeMatchResult, MatchItem
from atomtask.system.results import TaskError, TaskResult
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Document", "DroppedMatch", "MemoryContext", "PromptReport"]


class Document(BaseModel):
    """A document in the store: a caller-chosen id, its text, and JSON metadata."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(min_length=1)
    text: str
    metadata: dict[str, Any] = Field(default_factory=dict)


class DroppedMatch(BaseModel):
    """A match the model gave that the memory system did not pass on, and why."""

    model_config = ConfigDict(frozen=True)

    item: MatchItem
    why: Literal["not_a_candidate", "duplicate", "over_limit"]


class PromptReport(BaseModel):
    """How the candidates were fitted into the prompt budget; `cut` says whether anything was left out.

    Attributes:
        budget_chars: the budget for the system text plus the prompt.
        prompt_chars: their length as rendered (at most the budget; pydantic-ai may strip a few
            surrounding blanks, so the model can receive slightly fewer).
        candidates_found: full-text matches considered (at most `max_candidates`).
        sent_ids: the candidates in the prompt, best rank first; only these ids can be matches.
        omitted_ids: candidates left out because they did not fit.
        truncated_ids: candidates sent shortened (over `max_document_chars`, or cut to fit).
        query_truncated: the query was over a quarter of the budget and was shortened.
    """

    budget_chars: int
    prompt_chars: int = 0
    candidates_found: int = 0
    sent_ids: list[str] = Field(default_factory=list)
    omitted_ids: list[str] = Field(default_factory=list)
    truncated_ids: list[str] = Field(default_factory=list)
    query_truncated: bool = False

    @property
    def cut(self) -> bool:
        """True when a candidate, part of one, or part of the query was left out to stay in budget."""
        return bool(self.omitted_ids or self.truncated_ids or self.query_truncated)


class MemoryContext(AssociativeMatchResult):
    """The answer of `MemorySystem.get_relevant_context_for`: an `AssociativeMatchResult` plus what happened.

    `context_summary` and `matches` are the model's validated answer (the `MatchItem` instances the
    task returned, not copies), less the matches listed in `dropped`. `error` is set when the task
    failed (then `matches` is empty); `task_result` is the task's whole `TaskResult` with every
    attempt's raw output and the usage (None when no candidate was found and no model was called).
    """

    matches: list[MatchItem] = Field(default_factory=list)  # empty when the task failed or found nothing
    dropped: list[DroppedMatch] = Field(default_factory=list)
    prompt: PromptReport
    error: TaskError | None = None
    task_result: TaskResult[AssociativeMatchResult] | None = Field(default=None, exclude=True, repr=False)

    @property
    def ok(self) -> bool:
        """True unless the task failed."""
        return self.error is None

    @property
    def dropped_ids(self) -> list[str]:
        """The ids of the dropped matches, in the model's order."""
        return [d.item.id for d in self.dropped]
