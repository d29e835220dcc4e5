"""The real-world-like JSON Schema sample (`benchmarks/real_world_schemas.py`): all load, verdicts exact."""

from __future__ import annotations

import pytest

from benchmarks.json_schema_real_world import Tally, run
from benchmarks.real_world_schemas import CASES, DRAFT_URIS


@pytest.fixture(scope="module")
def tallies() -> dict[str, Tally]:
    return run()


def test_the_sample_covers_every_cause_and_draft() -> None:
    """Over 100 schemas, in every cause, under draft-04 to 2020-12, without `$schema`, and `$schema`s as published."""
    assert 100 < len(CASES)
    causes = {"vendor-keyword", "openapi-format", "unchecked-format", "typo", "plain", "draft-mismatch", "schema-uri"}
    assert causes == {case.cause for case in CASES}
    assert set(DRAFT_URIS.values()) == {case.schema.get("$schema") for case in CASES}


def test_no_schema_is_refused_at_load(tallies: dict[str, Tally]) -> None:
    """Every valid schema loads, whatever its vendor keywords, formats or typos."""
    assert {cause: 0 for cause in tallies} == {cause: t.refused for cause, t in tallies.items()}


def test_no_invalid_instance_is_accepted_and_none_valid_refused(tallies: dict[str, Tally]) -> None:
    """0 false accepts and 0 false rejects against the labels."""
    assert (0, 0) == (sum(t.false_accepts for t in tallies.values()), sum(t.false_rejects for t in tallies.values()))


def test_full_agreement_with_the_reference_validator(tallies: dict[str, Tally]) -> None:
    """Every verdict equals `jsonschema`'s (the author's draft, formats asserted), and every label does too."""
    assert [] == [note for t in tallies.values() for note in t.notes]
    assert all(t.agree_reference == t.judged == t.instances for t in tallies.values())


def test_warnings_are_where_the_causes_are(tallies: dict[str, Tally]) -> None:
    """Typos and unchecked formats warn on every such schema; vendor keywords and OpenAPI formats never do."""
    assert (tallies["typo"].schemas, tallies["unchecked-format"].schemas) == (
        tallies["typo"].warned,
        tallies["unchecked-format"].warned,
    )
    assert (0, 0, 0) == (tallies["vendor-keyword"].warned, tallies["openapi-format"].warned, tallies["plain"].warned)
