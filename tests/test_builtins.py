"""The memory system's output schemas, and their registration in every TaskSystem."""

from __future__ import annotations

from pathlib import Path

import pytest
from atomtask import AssociativeMatchResult, MatchItem, TaskSystem
from atomtask.schemas.builtins import BUILTIN_SCHEMAS
from pydantic import ValidationError

from tests.helpers import Recorder


@pytest.mark.parametrize("score", [-0.01, 1.01, 7])
def test_scores_outside_zero_to_one_never_validate(score: float) -> None:
    """A relevance score below 0 or above 1 is a validation error."""
    with pytest.raises(ValidationError) as raised:
        MatchItem(id="a", relevance_score=score, reason="r")
    assert ["relevance_score"] == [e["loc"][0] for e in raised.value.errors()]


def test_numeric_ids_are_read_as_strings() -> None:
    """An id answered as a number is kept as the string id."""
    assert "42" == MatchItem.model_validate({"id": 42, "relevance_score": 0.5, "reason": "r"}).id


def test_schema_shows_the_score_bounds_to_the_model() -> None:
    """The JSON Schema the model sees carries the 0-1 bounds."""
    score = MatchItem.model_json_schema()["properties"]["relevance_score"]
    assert (0, 1) == (score["minimum"], score["maximum"])


def test_every_task_system_knows_the_builtin_schemas() -> None:
    """A fresh TaskSystem resolves the built-in output classes by name."""
    system = TaskSystem()
    assert [AssociativeMatchResult, MatchItem] == [
        system.models.get("AssociativeMatchResult"),
        system.models.get("MatchItem"),
    ]
    assert {cls.__name__ for cls in BUILTIN_SCHEMAS} <= set(system.models.names())


def test_loading_the_templates_folder_binds_the_python_class(templates_dir: Path) -> None:
    """`associative_match` in templates/ answers the Python `AssociativeMatchResult` class."""
    system = TaskSystem(templates=templates_dir)
    assert AssociativeMatchResult is system.templates.compiled("associative_match").output_cls
    rec = Recorder({"context_summary": "s", "matches": [{"id": "x", "relevance_score": 0.5, "reason": "r"}]})
    inputs = {"query": "q", "candidates": '<document id="x">\nt\n</document>'}
    result = system.execute("associative_match", inputs, model=rec.model, expect=AssociativeMatchResult)
    assert isinstance(result.unwrap().matches[0], MatchItem)
