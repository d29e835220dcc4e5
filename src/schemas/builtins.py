"""The output classes of the templates atomtask ships: what the memory system's `associative_match` answers.

They live in the schema layer, not in `memory/`, because the facade needs them and sits below the
memory front end. Deliberately light (pydantic only): every `TaskSystem` registers these classes when
it is built (`register_builtin_schemas`), so the shipped `templates/associative_match.yaml` resolves
wherever `templates/` is loaded:

- under reserved names, `atomtask.AssociativeMatchResult` and `atomtask.MatchItem`, which no user
  schema can take (a schema name is an identifier) and which the shipped template uses;
- under their plain names, `AssociativeMatchResult` and `MatchItem`, as defaults: a user who declares
  or registers a schema of that name gets their own class under it, without a duplicate-name error,
  and the memory system goes on using these.
"""

from __future__ import annotations

from atomtask.schemas.model_registry import ModelRegistry
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["BUILTIN_PREFIX", "BUILTIN_SCHEMAS", "AssociativeMatchResult", "MatchItem", "register_builtin_schemas"]

BUILTIN_PREFIX = "atomtask."
"""The reserved names of the built-in classes are their class names after this prefix."""


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
    # Required, without a default: OpenAI's strict mode asks every field to be required.
    matches: list[MatchItem] = Field(description="The relevant candidates, most relevant first; empty when none is.")


BUILTIN_SCHEMAS: tuple[type[BaseModel], ...] = (MatchItem, AssociativeMatchResult)
"""Output classes of the shipped templates, registered in every `TaskSystem` (see `register_builtin_schemas`)."""


def register_builtin_schemas(models: ModelRegistry) -> None:
    """Register the built-in classes under their reserved names, and under their plain names as defaults."""
    for cls in BUILTIN_SCHEMAS:
        models.register(cls, BUILTIN_PREFIX + cls.__name__)
        models.register(cls, overridable=True)
