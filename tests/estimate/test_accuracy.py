"""A dry run's expected tokens against what the fake provider server reports for the same runs (±15%).

The server counts a request's input tokens as its body's bytes // 4 and an answer's output tokens as
the tool call's arguments (or text) // 4; it answers each request with the synthetic model's value
for the schema it was sent (`ServedAnswers`), a different one for each conversation.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from atomtask import TaskSystem
from atomtask.testing import FakeProviderServer
from atomtask.testing._served import ServedAnswers

from tests.test_shipped_templates import SHIPPED

pytestmark = pytest.mark.usefixtures("allow_model_requests")

SAMPLES: dict[str, Any] = {
    "Contact": {"name": "Ada Lovelace", "email": "ada@example.com", "phone": None, "company": None},
    "Article": {"title": "How tides work", "body": "The moon pulls the sea."},
}
TEXTS = [
    "Example text about a refund for Jane Doe, jane@example.com.",
    "Hi, it's Ada Lovelace (ada@example.com): my invoice F-17 of 31 January is wrong, the total should be 22.61 EUR.",
    "Grace Hopper, US Navy, grace@navy.mil, +1 555 0100. Launch next Monday 9am at the harbour, ask Ann.",
    "The tides rise and fall twice a day because the moon and the sun pull on the oceans.",
    "My card was charged twice for order 1234; please refund one of the charges.",
    "Team sync tomorrow at 10:00 in room 4; bring the Q3 numbers and the hiring plan.",
]


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        fake.respond_with(ServedAnswers())
        yield fake


def _inputs(system: TaskSystem, name: str, text: str) -> dict[str, Any]:
    params = system.templates.get(name).params
    return {p: SAMPLES.get(spec.type, text) for p, spec in params.items() if spec.required}


def _within(expected: float, actual: float, share: float = 0.15) -> bool:
    return abs(expected - actual) <= share * actual


@pytest.mark.slow
@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_expected_tokens_of_every_shipped_template_are_within_15_percent(
    server: FakeProviderServer, templates_dir: Path, wire: str
) -> None:
    """Input tokens per run, and output tokens over six runs of each JSON template, within ±15% of the server's."""
    system = TaskSystem(templates=templates_dir)
    model = server.openai_chat_model() if wire == "openai" else server.anthropic_model()
    off: list[str] = []
    for name in SHIPPED:
        text_output = system.templates.compiled(name).output_cls is None
        expected_out = actual_out = 0.0
        for text in TEXTS if not text_output else TEXTS[:1]:
            inputs = _inputs(system, name, text)
            estimate = system.estimate(name, inputs, model=model)
            result = system.execute(name, inputs, model=model)
            assert result.ok, result.error
            usage = result.notes.usage
            row = estimate.rows[0]
            if not _within(row.input_tokens.expected, usage.input_tokens):
                off.append(f"{name} input {row.input_tokens.expected} vs {usage.input_tokens}")
            assert row.input_tokens.worst >= usage.input_tokens
            assert row.output_tokens.worst >= usage.output_tokens
            expected_out += row.output_tokens.expected
            actual_out += usage.output_tokens
        # A text answer's size is a stated default (256 tokens), not the fake server's two sentences.
        if not text_output and not _within(expected_out, actual_out):
            off.append(f"{name} output {expected_out} vs {actual_out}")
    assert [] == off


def test_expected_input_tokens_are_the_request_body_the_server_receives(
    server: FakeProviderServer, templates_dir: Path
) -> None:
    """The estimate of one run counts the very body the server then receives (bytes // 4), and one request."""
    system = TaskSystem(templates=templates_dir)
    model = server.openai_chat_model()
    inputs = {"text": TEXTS[1]}
    estimate = system.estimate("extract_contact", inputs, model=model)
    assert [] == server.requests  # the estimate sent nothing
    result = system.execute("extract_contact", inputs, model=model)
    assert 1 == len(server.requests)
    assert result.notes.usage.input_tokens == estimate.total.input_tokens.expected
    assert 1 == estimate.total.requests.expected


WORKFLOW = """\
schemas:
  - name: Sender
    fields:
      - {name: name, type: str}
      - {name: email, type: str}
  - name: Answer
    fields:
      - {name: greeting, type: str}
      - {name: body, type: str}
templates:
  - name: who_wrote
    params: {message: str}
    system: You read e-mails and say who wrote them.
    instructions: "Who wrote this message? {{message}}"
    output_format: {type: json, schema: Sender}
  - name: answer_them
    params: {sender: Sender, message: str}
    system: You answer customers kindly.
    instructions: "Write to {{sender.name}} <{{sender.email}}> about: {{message}}"
    output_format: {type: json, schema: Answer}
workflows:
  - name: reply
    state:
      fields:
        - {name: message, type: str}
        - {name: sender, type: Sender?}
        - {name: answer, type: Answer?}
    steps:
      - id: find
        task: who_wrote
        inputs: {message: "{{state.message}}"}
        output: sender
      - id: write
        task: answer_them
        inputs: {sender: "{{state.sender}}", message: "{{state.message}}"}
        output: answer
"""


def test_a_two_step_workflow_is_estimated_within_15_percent(server: FakeProviderServer, tmp_path: Path) -> None:
    """Both steps of a workflow: two requests, input tokens within ±15% of the run's, the worst never below."""
    (tmp_path / "reply.yaml").write_text(WORKFLOW)
    system = TaskSystem(templates=tmp_path)
    model = server.openai_chat_model()
    inputs = {"message": TEXTS[1]}
    estimate = system.estimate("reply", inputs, model=model)
    assert [] == server.requests
    result = system.run_workflow("reply", inputs, model=model)
    assert result.ok, result.error
    assert ["who_wrote", "answer_them"] == [row.template for row in estimate.rows]
    assert 2 == estimate.total.requests.expected == len(server.requests)
    usage = result.usage
    assert _within(estimate.total.input_tokens.expected, usage.input_tokens)
    assert _within(estimate.total.output_tokens.expected, usage.output_tokens, 0.5)  # one draw of each answer
    assert estimate.total.input_tokens.worst >= usage.input_tokens
    assert estimate.total.output_tokens.worst >= usage.output_tokens


SHIPPED_WORKFLOWS = {
    "article_writer": {"topic": "How tides work"},
    "refine_draft": {"brief": "Write a short note about the moon and the tides."},
    "support_triage": {"subject": "Charged twice", "body": "My card was charged twice for order 1234."},
}


@pytest.mark.slow
@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_the_shipped_workflows_are_estimated_within_15_percent(
    server: FakeProviderServer, templates_dir: Path, wire: str
) -> None:
    """Each shipped workflow: input tokens within ±15% of the run's, worst never below; article_writer's output too."""
    system = TaskSystem(templates=templates_dir)
    assert set(SHIPPED_WORKFLOWS) == set(system.workflows.names())
    model = server.openai_chat_model() if wire == "openai" else server.anthropic_model()
    for name, inputs in SHIPPED_WORKFLOWS.items():
        estimate = system.estimate(name, inputs, model=model)
        result = system.run_workflow(name, inputs, model=model)
        assert result.ok, result.error
        usage, total = result.usage, estimate.total
        assert _within(total.input_tokens.expected, usage.input_tokens), name
        assert total.input_tokens.worst >= usage.input_tokens
        assert total.output_tokens.worst >= usage.output_tokens
        assert total.requests.worst >= usage.requests
        if name == "article_writer":  # no text step: every answer's size comes from its schema
            assert _within(total.output_tokens.expected, usage.output_tokens)
