"""Provider compatibility, derived by running pydantic-ai's own schema transformers on the output schema.

(That it imports no provider SDK is tested on the whole command, in test_lint_cli.py.)
"""

from __future__ import annotations

import datetime

from atomtask.lint._compat import analyse, profile_for
from pydantic import BaseModel, Field


class Out(BaseModel):
    score: float = Field(gt=0, description="Score")
    day: datetime.date = Field(description="Day")
    note: str | None = Field(default=None, description="Note")
    counts: dict[str, int] = Field(description="Counts")


SCHEMA = Out.model_json_schema()


def found(model: str, mode: str = "tool") -> list[tuple[str, str | None]]:
    return [(issue.code, issue.field) for issue in analyse(SCHEMA, model, mode)]


def test_openai_strict_mode_reasons() -> None:
    """OpenAI: not strict-compatible, naming the optional field, its default and the dict field."""
    issues = analyse(SCHEMA, "openai-chat:gpt-4o", "tool")
    assert [("P303", "note")] == [(i.code, i.field) for i in issues]
    message = issues[0].message
    assert "'note' is not required" in message
    assert "'note' has `default`" in message
    assert "'counts' is a dict" in message


def test_google_drops_and_moves_keywords() -> None:
    """Gemini: `exclusiveMinimum` is dropped (P304) and `format` moved into the description (P305)."""
    assert [("P305", "day"), ("P304", "score")] == sorted(found("google:gemini-2.5-flash"), reverse=True)


def test_unsupported_native_output_is_an_error() -> None:
    """A profile without JSON-schema output makes `mode: native` P301; tool mode is fine."""
    assert [("P301", None)] == found("mistral:mistral-large-latest", "native")
    assert [] == found("mistral:mistral-large-latest", "tool")


def test_prompted_mode_and_test_model_have_no_findings() -> None:
    """Prompted output sends no schema to transform, and `test` has no provider profile."""
    assert [] == found("openai-chat:gpt-4o", "prompted")
    assert [] == found("test")
    assert profile_for("test") is None


def test_a_transformer_that_rejects_the_schema_is_p302() -> None:
    """A schema pydantic-ai's transformer refuses (OpenAI: a boolean `false` root) is an error."""
    schema = {"$defs": {"Root": False}, "$ref": "#/$defs/Root", "title": "Root"}
    assert ["P302"] == [i.code for i in analyse(schema, "openai:gpt-4o", "tool")]
