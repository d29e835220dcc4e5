"""The templates in templates/ load, and each runs end to end with a FunctionModel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from atomtask import TaskSystem, bundled_templates_path
from atomtask.testing import scripted_model
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
    "answer_billing",
    "answer_general",
    "answer_technical",
    "associative_match",
    "classify_ticket",
    "critique_draft",
    "draft_reply",
    "extract_contact",
    "extract_event",
    "extract_invoice",
    "find_sender",
    "plan_draft",
    "polish_reply",
    "research_topic",
    "review_article",
    "revise_article",
    "summarize",
    "write_article",
    "write_draft",
]


def test_every_shipped_template_is_covered(system: TaskSystem) -> None:
    """The default-model run below covers every template the folder registers."""
    assert SHIPPED == sorted(system.templates.names())


@pytest.mark.parametrize("name", SHIPPED)
def test_each_template_runs_on_the_embedded_default_model(system: TaskSystem, name: str) -> None:
    """With no model configured, every shipped template completes on `atomtask:synthetic` with a valid instance."""
    params = system.templates.get(name).params
    samples = {
        "Contact": {"name": "Ada Lovelace", "email": "ada@example.com", "phone": None, "company": None},
        "Article": {"title": "How tides work", "body": "The moon pulls the sea."},
    }
    text = "Example text about a refund for Jane Doe, jane@example.com."
    inputs = {p: samples.get(s.type, text) for p, s in params.items() if s.required}
    result = system.execute(name, inputs)
    assert result.ok, result.error
    assert ("default", "atomtask:synthetic") == (result.notes.model_source, result.notes.model)
    assert result.notes.default_model_notice is not None
    assert 1 == len(result.notes.attempts)  # valid at once: no retry spent on the synthetic answer
    output_cls = system.templates.compiled(name).output_cls or str  # a text template answers a str
    assert isinstance(result.parsedContent, output_cls)


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
        "due_date": None,
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
    # `due_date: date?` with `required: true`: given by the model, possibly null (OpenAI strict mode).
    assert {"number", "due_date"} <= set(schema["required"])


def test_extract_event_enforces_formats_from_its_json_schema_file(system: TaskSystem) -> None:
    """extract_event's schema is Event.json; a malformed date-time or e-mail goes back to the model."""
    bad = {"title": "Launch", "starts_at": "next Monday 9am", "organiser_email": "ann at example.org"}
    good = {
        "title": "Launch",
        "starts_at": "2025-03-03T09:00:00+01:00",
        "organiser_email": "ann@example.org",
        "link": None,
        "attendees": ["Ann"],
    }
    bad = {**good, **bad}
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


# ---------------------------------------------------------------------------------------------
# The shipped workflows: article_writer.yaml, support_triage.yaml, director_evaluator.sexp.

WORKFLOW_INPUTS: dict[str, dict[str, str]] = {
    "article_writer": {"topic": "How tides work"},
    "refine_draft": {"brief": "A two-line poem about tides"},
    "support_triage": {"subject": "Charged twice", "body": "My card was charged twice for one order."},
}


def _steps(result: Any) -> list[str]:
    return [visit.step for visit in result.steps]


def _prompt(call: Any) -> str:
    return user_text(call.messages)


def test_every_shipped_workflow_is_covered(system: TaskSystem) -> None:
    """The folder registers the three workflows the runs below cover (YAML and defworkflow alike)."""
    assert sorted(WORKFLOW_INPUTS) == system.workflows.names()


@pytest.mark.parametrize("name", sorted(WORKFLOW_INPUTS))
def test_each_workflow_runs_to_complete_on_the_embedded_default_model(system: TaskSystem, name: str) -> None:
    """With no model configured, every shipped workflow COMPLETEs on `atomtask:synthetic`, its loops bounded."""
    result = system.run_workflow(name, WORKFLOW_INPUTS[name])
    assert "COMPLETE" == result.status, result.error
    assert {"atomtask:synthetic"} == {visit.result.notes.model for visit in result.steps if visit.result}
    assert isinstance(result.state, system.workflows.compiled(name).state_cls)


def test_article_writer_revises_until_the_review_is_good(system: TaskSystem) -> None:
    """research -> write -> review (4) -> revise -> review (8) -> end; the review's feedback reaches revise."""
    model = scripted_model(
        {"summary": "Tides follow the moon.", "facts": ["Two tides a day"]},
        {"title": "Tides", "body": "Draft one."},
        {"score": 4, "feedback": "Explain the sun's part."},
        {"title": "Tides", "body": "Draft two, with the sun."},
        {"score": 8, "feedback": "Good."},
    )
    result = system.run_workflow("article_writer", {"topic": "How tides work"}, model=model)
    assert ["research", "write", "review", "revise", "review"] == _steps(result)
    state = result.unwrap()
    assert ("Draft two, with the sun.", 8, 1) == (state.article.body, state.score, state.rounds)
    assert system.models.get("Article") is type(state.article)
    assert "Use these notes: Tides follow the moon." in _prompt(model.calls[1])
    assert "Feedback: Explain the sun's part." in _prompt(model.calls[3])
    assert "Title: Tides\nDraft one." in _prompt(model.calls[3])


def test_article_writer_stops_revising_after_two_rounds(system: TaskSystem) -> None:
    """A review that stays poor ends the loop at its bound, two revisions: COMPLETE (`on_max_visits: end`)."""
    review = {"score": 2, "feedback": "Still weak."}
    article = {"title": "Tides", "body": "Text."}
    model = scripted_model({"summary": "s", "facts": []}, article, review, article, review, article, review)
    result = system.run_workflow("article_writer", {"topic": "Tides"}, model=model)
    assert ["research", "write", "review", "revise", "review", "revise", "review", "revise"] == _steps(result)
    assert "SKIPPED" == result.steps[-1].status  # the third revision is over the bound: not run, the run ends
    assert ("COMPLETE", 2, 0) == (result.status, result.state.rounds, model.pending)


@pytest.mark.parametrize(
    ("category", "handler"),
    [("billing", "billing"), ("bug", "technical"), ("feature_request", "general"), ("other", "general")],
)
def test_support_triage_routes_each_category_to_its_handler(system: TaskSystem, category: str, handler: str) -> None:
    """classify -> the handler for the category -> reply; the reply is a typed Reply."""
    model = scripted_model(
        {"reasoning": "r", "category": category, "confidence": 0.9},
        "We will look into it today.",
        {"greeting": "Dear customer,", "body": "We will look into it today."},
    )
    result = system.run_workflow("support_triage", WORKFLOW_INPUTS["support_triage"], model=model)
    assert ["classify", handler, "reply"] == _steps(result)
    state = result.unwrap()
    assert (category, 0.9, "We will look into it today.") == (state.category, state.confidence, state.draft)
    assert system.models.get("Reply") is type(state.reply)
    assert "Turn this draft into the reply:\nWe will look into it today." in _prompt(model.calls[2])


def test_refine_draft_loops_until_the_critique_approves(system: TaskSystem) -> None:
    """direct -> execute -> evaluate, back to direct with the critique's feedback, until approved."""
    model = scripted_model(
        "Plan one.",
        "Draft one.",
        {"score": 3, "approved": False, "feedback": "Rhyme it."},
        "Plan two.",
        "Draft two.",
        {"score": 9, "approved": True, "feedback": "None."},
    )
    result = system.run_workflow("refine_draft", WORKFLOW_INPUTS["refine_draft"], model=model)
    assert ["direct", "execute", "evaluate", "direct", "execute", "evaluate"] == _steps(result)
    state = result.unwrap()
    assert ("Draft two.", 2, True) == (state.draft, state.rounds, state.critique.approved)
    assert "Feedback on the last draft: none yet" in _prompt(model.calls[0])
    assert "Feedback on the last draft: Rhyme it." in _prompt(model.calls[3])


def test_refine_draft_ends_after_three_rounds_without_approval(system: TaskSystem) -> None:
    """The fourth `direct` is over its `max_visits: 3`: the run ends COMPLETE with the third draft."""
    critique = {"score": 3, "approved": False, "feedback": "Again."}
    model = scripted_model(*["Plan.", "Draft.", critique] * 3)
    result = system.run_workflow("refine_draft", WORKFLOW_INPUTS["refine_draft"], model=model)
    assert ["direct", "execute", "evaluate"] * 3 + ["direct"] == _steps(result)
    assert ("COMPLETE", 3, 0) == (result.status, result.state.rounds, model.pending)


def _director_script(templates_dir: Path) -> tuple[str, str]:
    path = templates_dir / "director_evaluator.sexp"
    return path.read_text(encoding="utf-8"), str(path)


def test_director_evaluator_script_runs_on_the_embedded_default_model(templates_dir: Path) -> None:
    """director_evaluator.sexp's script (`atomtask eval`) ends within its three rounds on the default model."""
    system = TaskSystem(templates=templates_dir)
    source, file = _director_script(templates_dir)
    outcome = system.defatom(source, file=file, variables={"brief": "A two-line poem about tides"})
    assert 1 <= outcome["rounds"] <= 3
    assert outcome["done"] or 3 == outcome["rounds"]
    assert isinstance(outcome["result"], str) and outcome["result"]
    assert system.models.get("Critique") is type(outcome["verdict"])


def test_director_evaluator_script_feeds_the_critique_back(templates_dir: Path) -> None:
    """The script's director gets the last critique's score and feedback; an approval ends the loop."""
    model = scripted_model(
        "Plan one.",
        "Draft one.",
        {"score": 3, "approved": False, "feedback": "Rhyme it."},
        "Plan two.",
        "Draft two.",
        {"score": 9, "approved": True, "feedback": "None."},
    )
    system = TaskSystem(model=model, templates=templates_dir)
    source, file = _director_script(templates_dir)
    outcome = system.defatom(source, file=file, variables={"brief": "A poem"})
    assert ("Draft two.", 2, True) == (outcome["result"], outcome["rounds"], outcome["done"])
    assert "Feedback on the last draft: none yet" in _prompt(model.calls[0])
    assert "Feedback on the last draft: score 3/10: Rhyme it." in _prompt(model.calls[3])
