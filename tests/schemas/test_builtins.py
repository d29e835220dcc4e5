"""The memory system's output schemas, and their registration in every TaskSystem."""

from __future__ import annotations

from pathlib import Path

import pytest
from atomtask import AssociativeMatchResult, MatchItem, TaskSystem, bundled_templates_path
from atomtask.schemas._model_registry import BUILTIN_SCHEMAS
from pydantic import BaseModel, ValidationError

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


USER_SCHEMAS = """\
schemas:
  - name: MatchItem
    fields:
      - {name: title, type: str}
  - name: AssociativeMatchResult
    fields:
      - {name: items, type: "list[MatchItem]"}
templates:
  - name: pick
    instructions: Pick
    output_format: {type: json, schema: AssociativeMatchResult}
"""


def test_user_schemas_may_take_the_builtin_names(tmp_path: Path) -> None:
    """A user's `MatchItem` and `AssociativeMatchResult` are theirs; the shipped template keeps the built-ins."""
    (tmp_path / "mine.yaml").write_text(USER_SCHEMAS)
    system = TaskSystem(templates=[tmp_path, bundled_templates_path() / "associative_match.yaml"])
    mine = system.templates.compiled("pick").output_cls
    assert mine is system.models.get("AssociativeMatchResult")
    assert mine is not AssociativeMatchResult
    assert ["title"] == list(system.models.get("MatchItem").model_fields)
    assert AssociativeMatchResult is system.templates.compiled("associative_match").output_cls
    assert (AssociativeMatchResult, MatchItem) == (
        system.models.get("atomtask.AssociativeMatchResult"),
        system.models.get("atomtask.MatchItem"),
    )


def test_a_user_class_registered_in_python_takes_the_name() -> None:
    """`system.models.register(MyMatchItem, "MatchItem")` is not a duplicate-name error."""

    class MyMatchItem(BaseModel):
        title: str

    system = TaskSystem()
    system.models.register(MyMatchItem, "MatchItem")
    assert MyMatchItem is system.models.get("MatchItem")
