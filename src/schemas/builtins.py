"""The output classes of the templates atomtask ships: what the memory system's `associative_match` answers.

They live in the schema layer, not in `memory/`, because the facade needs them and sits below the
memory front end. Deliberately light (pydantic only): every `TaskSystem` registers these classes by
name when it is built, so the shipped `templates/associative_match.yaml` (`schema:
AssociativeMatchResult`) resolves wherever `templates/` is loaded.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["BUILTIN_SCHEMAS", "AssociativeMatchResult", "MatchItem"]


class MatchItem(BaseModel):
    """One stored document the model judged relevant to the query."""

    # Models often answer an id such as "42" as the number 42; the id is still the string.
    model_config = ConfigDict(coerce_numbers_to_str=True)

    id: str = Field(description="The id of a candidate document, copied exactly from its `<document id=...>` tag.")
    # The reason comes before the score, so the model writes its reasoning before it scores.
    reason: str = Field(description="One sentence on why the document is relevant.")
    relevance_score: float = Field(
        ge=0, le=1, description="How relevant the document is to the query, from 0 (not at all) to 1 (exactly)."
    )


class AssociativeMatchResult(BaseModel):
    """The documents relevant to a query, most relevant first, with a summary of what they say about it."""

    context_summary: str = Field(
        description="Two or three sentences: what the relevant documents say about the query ('' if none is relevant)."
    )
    matches: list[MatchItem] = Field(
        default_factory=list, description="The relevant candidates, most relevant first; empty when none is."
    )


BUILTIN_SCHEMAS: tuple[type[BaseModel], ...] = (MatchItem, AssociativeMatchResult)
"""Output classes of the shipped templates, registered under their class names in every `TaskSystem`."""
