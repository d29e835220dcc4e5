"""The templates in templates/ load, and each runs end to end with a FunctionModel."""

from __future__ import annotations

from pathlib import Path

import pytest
from atomtask import TaskSystem
from atomtask.task_system import bundled_templates_path
from pydantic import BaseModel

from tests.helpers import Recorder, user_text


@pytest.fixture
def system(templates_dir: Path) -> TaskSystem:
    return TaskSystem(templates=templates_dir)


def test_shipped_templates_are_registered(system: TaskSystem) -> None:
    """All shipped templates and schemas load without error."""
    assert {"classify_ticket", "extract_contact", "summarize", "find_sender", "draft_reply"} <= set(
        system.templates.names()
    )
    assert {"Contact", "Summary", "TicketClassification", "Reply"} <= set(system.models.names())


def test_extract_contact(system: TaskSystem) -> None:
    """extract_contact returns a Contact instance built from the model's answer."""
    rec = Recorder({"name": "Grace Hopper", "email": "grace@navy.mil", "phone": None, "company": "US Navy"})
    result = system.execute("extract_contact", {"text": "Grace Hopper, US Navy, grace@navy.mil"}, model=rec.model)
    contact = result.unwrap()
    assert system.models.get("Contact") is type(contact)
    assert "grace@navy.mil" == contact.email
    assert "locale en" in user_text(rec.calls[0][0])


def test_classify_ticket_rejects_out_of_set_categories(system: TaskSystem) -> None:
    """A category outside the fixed set, or a confidence above 1, is sent back and corrected."""
    rec = Recorder(
        {"reasoning": "r", "category": "Billing!", "confidence": 1.5},
        {"reasoning": "Card charged twice.", "category": "billing", "confidence": 0.9},
    )
    result = system.execute("classify_ticket", {"subject": "Double charge", "body": "Charged twice"}, model=rec.model)
    ticket = result.unwrap()
    assert ("billing", 0.9) == (ticket.category, ticket.confidence)
    errors = result.notes.attempts[0].errors or []
    assert {"category", "confidence"} == {e["loc"][0] for e in errors if isinstance(e, dict)}


def test_summarize_renders_the_int_default(system: TaskSystem) -> None:
    """summarize renders its int default into the prompt and validates the key point count."""
    rec = Recorder({"title": "T", "summary": "S.", "key_points": ["a", "b"]})
    result = system.execute("summarize", {"document": "Some text."}, model=rec.model)
    summary = result.unwrap()
    assert isinstance(summary, BaseModel)
    assert ["a", "b"] == summary.key_points
    assert "at most 5 key points" in user_text(rec.calls[0][0])


@pytest.mark.parametrize("name", ["extract_contact", "classify_ticket", "summarize", "associative_match"])
def test_each_template_runs_on_the_embedded_default_model(system: TaskSystem, name: str) -> None:
    """With no model configured, every shipped template completes on the embedded test model."""
    params = system.templates.get(name).params
    inputs = {p: "Example text about a refund for Jane Doe, jane@example.com." for p, s in params.items() if s.required}
    result = system.execute(name, inputs)
    assert result.ok, result.error
    assert "default" == result.notes.model_source
    assert result.notes.default_model_notice is not None


def test_pipeline_feeds_the_first_tasks_contact_into_the_second(templates_dir: Path) -> None:
    """pipeline.sexp: find_sender's validated Contact becomes draft_reply's `sender` parameter."""
    rec = Recorder(
        {"name": "Ada Lovelace", "email": "ada@example.com", "phone": None, "company": None},
        {"greeting": "Dear Ms Lovelace,", "body": "We have corrected your invoice."},
    )
    message = "Hi, it's Ada Lovelace (ada@example.com): my invoice says {{tone}}, which is wrong."
    system = TaskSystem(model=rec.model, templates=templates_dir)
    pipeline = templates_dir / "pipeline.sexp"
    result = system.defatom(pipeline.read_text(encoding="utf-8"), file=str(pipeline), variables={"message": message})
    reply = result.unwrap()
    assert system.models.get("Reply") is type(reply)
    assert "Dear Ms Lovelace," == reply.greeting
    assert 2 == len(rec.calls)
    assert message in user_text(rec.calls[0][0])
    second_prompt = user_text(rec.calls[1][0])
    assert "Write a friendly reply to Ada Lovelace about their message:" in second_prompt
    assert "my invoice says {{tone}}, which is wrong" in second_prompt  # braces in a value are data


def test_bundled_templates_match_the_repository(templates_dir: Path) -> None:
    """The package's bundled templates are the repository's templates/ folder."""
    bundled = sorted(p.name for p in bundled_templates_path().iterdir() if p.suffix in (".yaml", ".sexp"))
    repo = sorted(p.name for p in templates_dir.iterdir() if p.suffix in (".yaml", ".sexp"))
    assert repo == bundled
