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
    assert {
        "associative_match",
        "classify_ticket",
        "draft_reply",
        "extract_contact",
        "extract_event",
        "extract_invoice",
        "find_sender",
        "summarize",
    } <= set(system.templates.names())
    assert {"Contact", "Event", "Invoice", "LineItem", "Party", "Reply", "Summary", "TicketClassification"} <= set(
        system.models.names()
    )


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


SHIPPED = [
    "associative_match",
    "classify_ticket",
    "draft_reply",
    "extract_contact",
    "extract_event",
    "extract_invoice",
    "find_sender",
    "summarize",
]


def test_every_shipped_template_is_covered(system: TaskSystem) -> None:
    """The default-model run below covers every template the folder registers."""
    assert SHIPPED == sorted(system.templates.names())


@pytest.mark.parametrize("name", SHIPPED)
def test_each_template_runs_on_the_embedded_default_model(system: TaskSystem, name: str) -> None:
    """With no model configured, every shipped template completes on `atomtask:synthetic` with a valid instance."""
    params = system.templates.get(name).params
    ada = {"name": "Ada Lovelace", "email": "ada@example.com", "phone": None, "company": None}
    text = "Example text about a refund for Jane Doe, jane@example.com."
    inputs = {p: ada if s.type == "Contact" else text for p, s in params.items() if s.required}
    result = system.execute(name, inputs)
    assert result.ok, result.error
    assert ("default", "atomtask:synthetic") == (result.notes.model_source, result.notes.model)
    assert result.notes.default_model_notice is not None
    assert 1 == len(result.notes.attempts)  # valid at once: no retry spent on the synthetic answer
    output_cls = system.templates.compiled(name).output_cls
    assert output_cls is not None and isinstance(result.parsedContent, output_cls)


def test_pipeline_script_runs_on_the_embedded_default_model(templates_dir: Path) -> None:
    """pipeline.sexp's script (`atomtask eval`) runs both tasks on the default model to a Reply."""
    system = TaskSystem(templates=templates_dir)
    pipeline = templates_dir / "pipeline.sexp"
    message = "Hi, it's Ada Lovelace (ada@example.com): my invoice is wrong."
    result = system.defatom(pipeline.read_text(encoding="utf-8"), file=str(pipeline), variables={"message": message})
    reply = result.unwrap()
    assert system.models.get("Reply") is type(reply)
    assert reply.greeting and reply.body


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


def test_extract_invoice_nests_and_constrains(system: TaskSystem) -> None:
    """extract_invoice builds nested Party and LineItem objects; a bad currency or quantity is sent back."""
    good = {
        "number": "F-17",
        "issued_on": "2025-01-31",
        "seller": {"name": "Acme GmbH", "vat_number": "DE123456789"},
        "currency": "EUR",
        "lines": [{"description": "Widget", "quantity": 2, "unit_price": 9.5}],
        "total": 22.61,
    }
    bad = {**good, "currency": "€", "lines": [{"description": "Widget", "quantity": 0, "unit_price": 9.5}]}
    rec = Recorder(bad, good)
    invoice = system.execute("extract_invoice", {"text": "Invoice F-17 ..."}, model=rec.model).unwrap()
    assert ("Acme GmbH", None, "Widget") == (invoice.seller.name, invoice.due_date, invoice.lines[0].description)
    assert system.models.get("LineItem") is type(invoice.lines[0])
    schema = system.models.get("Invoice").model_json_schema()
    assert ["EUR", "USD", "GBP", "CHF"] == schema["properties"]["currency"]["enum"]
    assert "number" in schema["required"] and "due_date" not in schema["required"]


def test_extract_event_enforces_formats_from_its_json_schema_file(system: TaskSystem) -> None:
    """extract_event's schema is Event.json; a malformed date-time or e-mail goes back to the model."""
    bad = {"title": "Launch", "starts_at": "next Monday 9am", "organiser_email": "ann at example.org"}
    good = {"title": "Launch", "starts_at": "2025-03-03T09:00:00+01:00", "organiser_email": "ann@example.org"}
    rec = Recorder(bad, good)
    result = system.execute("extract_event", {"message": "Launch next Monday 9am, ask Ann"}, model=rec.model)
    event = result.unwrap()
    assert ("2025-03-03T09:00:00+01:00", None) == (event.starts_at, event.link)
    errors = str(result.notes.attempts[0].errors)
    assert "'next Monday 9am' is not a 'date-time'" in errors
    assert "'ann at example.org' is not a 'email'" in errors


def test_bundled_templates_match_the_repository(templates_dir: Path) -> None:
    """The package's bundled templates are the repository's templates/ folder."""
    bundled = sorted(p.name for p in bundled_templates_path().iterdir() if p.suffix in (".yaml", ".sexp", ".json"))
    repo = sorted(p.name for p in templates_dir.iterdir() if p.suffix in (".yaml", ".sexp", ".json"))
    assert repo == bundled
