"""`system.records`: records built without validation are the records validation makes."""

from __future__ import annotations

from typing import Any

import pytest
from atomtask.system.records import record_builder
from atomtask.system.results import (
    Attempt,
    Coercion,
    FailureReason,
    TaskError,
    TaskNotes,
    TaskResult,
    TaskStatus,
    UsageNotes,
)
from pydantic import BaseModel, Field, field_validator

USAGE = {"requests": 1, "input_tokens": 56, "output_tokens": 13, "cost": 0.0021}
COERCION = Coercion(kind="enum", path="status", before="Done", after='"done"')

ATTEMPTS: list[dict[str, Any]] = [
    # An answer that validated as sent.
    {"model": "openai-chat:m", "output_mode": "tool", "raw_output": '{"a": 1}', "tool_name": "final_result",
     "usage": USAGE, "duration_ms": 812.5, "index": 1},
    # One repaired (the keys a capability recorded), one drawing feedback, one provider fault.
    {"model": "m", "output_mode": "prompted", "raw_output": "{'a': 1,}", "tool_name": None, "usage": USAGE,
     "duration_ms": None, "repairs": ["quotes"], "coercions": [COERCION], "parse_error": "line 1", "index": 2},
    {"model": "m", "output_mode": "text", "raw_output": "no", "usage": USAGE, "index": 3,
     "errors": [{"type": "missing", "loc": ["a"], "msg": "Field required", "input": {}}]},
    {"model": "m", "output_mode": "tool", "fault": "ModelHTTPError: 503", "status": 503, "index": 4},
]  # fmt: skip


def _nested(fields: dict[str, Any]) -> dict[str, Any]:
    """`fields` as a builder takes them: the nested usage as an instance."""
    return {**fields, "usage": UsageNotes(**fields["usage"])} if "usage" in fields else fields


def _same(built: BaseModel, validated: BaseModel) -> None:
    assert type(validated) is type(built)
    assert validated == built
    assert validated.model_fields_set == built.model_fields_set
    assert validated.model_dump_json() == built.model_dump_json()  # the fields in the same order
    assert repr(validated) == repr(built)


@pytest.mark.parametrize("fields", ATTEMPTS, ids=["answer", "repaired", "feedback", "fault"])
def test_an_attempt_built_is_the_attempt_validated(fields: dict[str, Any]) -> None:
    built = record_builder(Attempt)(_nested(fields))
    _same(built, Attempt.model_validate(fields))
    built.repairs.append("later")  # a default list of its own, not shared with the next record
    assert [] == record_builder(Attempt)({"index": 9}).repairs


def test_notes_and_results_built_are_the_ones_validated() -> None:
    attempts = [Attempt.model_validate(fields) for fields in ATTEMPTS]
    notes_fields = {
        "template": "extract",
        "model": "m",
        "model_source": "system",
        "output_mode": "tool",
        "duration_ms": 1500.25,
        "usage": USAGE,
        "attempts": attempts,
        "models_tried": ["m"],
        "default_model_notice": None,
    }
    notes = record_builder(TaskNotes)(_nested(notes_fields))
    _same(notes, TaskNotes.model_validate(notes_fields))
    error = TaskError(reason=FailureReason.PROVIDER_ERROR, message="down")
    for result_fields in (
        {"status": TaskStatus.COMPLETE, "content": '{"a": 1}', "parsedContent": {"a": 1}, "notes": notes},
        {"status": TaskStatus.FAILED, "content": None, "notes": notes, "error": error},
    ):
        built = record_builder(TaskResult[Any])(result_fields)
        _same(built, TaskResult[Any].model_validate(result_fields))
        assert built.ok is (result_fields["status"] is TaskStatus.COMPLETE)


def test_models_that_validation_would_change_are_refused() -> None:
    class Checked(BaseModel):
        name: str

        @field_validator("name")
        @classmethod
        def strip(cls, value: str) -> str:
            return value.strip()

    class Shared(BaseModel):
        tags: list[str] = Field(default=[])

    for cls in (Checked, Shared):
        with pytest.raises(TypeError, match=cls.__name__):
            record_builder(cls)
