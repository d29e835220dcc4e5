"""Model aliases at run time: escalation and fallbacks seen offline, the model that ran and its alias."""

from __future__ import annotations

from pathlib import Path

import pytest
from atomtask import ConfigurationError, FailureReason, TaskStatus, TaskSystem, Template
from atomtask.handlers import BaseHandler
from atomtask.loading import ModelAliases
from atomtask.testing import scripted_model

from tests.helpers import user_text

# The declarations name real providers; the tests map those model strings to scripted models.
REVIEW = """\
models:
  fast: openai-chat:gpt-4o-mini
  strong: anthropic:claude-sonnet-4-5
schemas:
  - name: Verdict
    fields:
      - {name: verdict, type: 'literal["approve", "reject"]'}
templates:
  - name: judge
    model: fast
    retries: 0
    params: {claim: str}
    instructions: "Judge the claim: {{claim}}"
    output_format: {type: json, schema: Verdict}
  - name: judge_with_fallback
    model: fast
    fallbacks: [strong]
    retries: 0
    params: {claim: str}
    instructions: "Judge the claim: {{claim}}"
    output_format: {type: json, schema: Verdict}
workflows:
  - name: review
    state:
      - {name: claim, type: str}
      - {name: verdict, type: str, default: ""}
    steps:
      - id: judge
        task: judge
        inputs: {claim: "{{state.claim}}"}
        outputs: {verdict: verdict}
        on_failure: {retry_with: "anthropic:claude-sonnet-4-5"}
"""

CLAIM = "The moon is made of rock."


@pytest.fixture
def declarations(tmp_path: Path) -> Path:
    (tmp_path / "review.yaml").write_text(REVIEW, encoding="utf-8")
    return tmp_path


def test_retry_with_reaches_the_aliased_model_so_the_escalated_request_is_seen_offline(declarations: Path) -> None:
    """`retry_with: "anthropic:claude-sonnet-4-5"` mapped to a scripted model: it gets the step's exact request."""
    weak = scripted_model({"verdict": "maybe"}, model_name="weak")  # not a valid verdict: the step fails
    strong = scripted_model({"verdict": "approve"}, model_name="strong")
    system = TaskSystem(
        templates=declarations,
        model_aliases={"openai-chat:gpt-4o-mini": weak, "anthropic:claude-sonnet-4-5": strong},
    )
    result = system.run_workflow("review", {"claim": CLAIM})
    assert TaskStatus.COMPLETE == result.status
    assert "approve" == result.state.verdict
    first, escalated = result.visits("judge")
    assert [(0, "FAILED", "function:weak"), (1, "COMPLETE", "function:strong")] == [
        (v.attempt, v.status.value, v.model) for v in (first, escalated)
    ]
    assert (1, 1) == (len(weak.calls), len(strong.calls))
    asked = strong.calls[0]
    assert f"Judge the claim: {CLAIM}" in user_text(asked.messages)
    [output_tool] = asked.info.output_tools
    assert ["approve", "reject"] == output_tool.parameters_json_schema["properties"]["verdict"]["enum"]
    assert ("function:weak", "fast") == (first.result.notes.model, first.result.notes.model_alias)
    notes = escalated.result.notes
    assert ("function:strong", "anthropic:claude-sonnet-4-5") == (notes.model, notes.model_alias)
    assert ["function:strong"] == [attempt.model for attempt in notes.attempts]


def test_template_fallbacks_go_through_aliases(declarations: Path) -> None:
    """`fallbacks: [strong]`: after the first model's invalid answer, the model `strong` stands for answers."""
    weak = scripted_model({"verdict": "maybe"}, model_name="weak")
    strong = scripted_model({"verdict": "reject"}, model_name="strong")
    system = TaskSystem(
        templates=declarations,
        model_aliases={"openai-chat:gpt-4o-mini": weak, "anthropic:claude-sonnet-4-5": strong},
    )
    result = system.execute("judge_with_fallback", {"claim": CLAIM})
    assert TaskStatus.COMPLETE == result.status
    assert "reject" == result.parsedContent.verdict
    notes = result.notes
    assert ["function:weak", "function:strong"] == notes.models_tried
    assert ("function:strong", "strong", "template") == (notes.model, notes.model_alias, notes.model_source)
    assert ["function:weak", "function:strong"] == [attempt.model for attempt in notes.attempts]
    assert f"Judge the claim: {CLAIM}" in user_text(strong.calls[0].messages)


def test_a_calls_model_may_be_an_alias_and_an_unknown_one_fails_the_call(declarations: Path) -> None:
    """`execute(model="strong")` runs the aliased model; `model="strnog"` is a FAILED configuration_error."""
    strong = scripted_model({"verdict": "approve"}, model_name="strong")
    system = TaskSystem(templates=declarations, model_aliases={"anthropic:claude-sonnet-4-5": strong})
    result = system.execute("judge", {"claim": CLAIM}, model="strong")
    assert ("function:strong", "strong", "call") == (
        result.notes.model,
        result.notes.model_alias,
        result.notes.model_source,
    )
    failed = system.execute("judge", {"claim": CLAIM}, model="strnog")
    assert FailureReason.CONFIGURATION_ERROR == failed.error.reason
    assert "Model 'strnog' in `model=` of this call has no provider prefix" in failed.error.message
    assert "Did you mean 'strong'?" in failed.error.message


def test_a_runs_model_may_be_an_alias(declarations: Path) -> None:
    """`run_workflow(model="strong")` wins over the step's template model, through the alias."""
    strong = scripted_model({"verdict": "approve"}, model_name="strong")
    system = TaskSystem(templates=declarations, model_aliases={"anthropic:claude-sonnet-4-5": strong})
    result = system.run_workflow("review", {"claim": CLAIM}, model="strong")
    assert "approve" == result.state.verdict
    assert "function:strong" == result.steps[0].result.notes.model
    with pytest.raises(ConfigurationError, match=r"Did you mean 'strong'"):
        system.run_workflow("review", {"claim": CLAIM}, model="strnog")


def test_the_systems_model_may_be_an_alias_its_files_declare(declarations: Path) -> None:
    """`TaskSystem(model="fast", templates=...)`: the default model is named by an alias from the files."""
    fast = scripted_model("Hi!", model_name="fast")
    system = TaskSystem(model="fast", templates=declarations, model_aliases={"openai-chat:gpt-4o-mini": fast})
    system.register(Template(name="hi", instructions="Say hi."))
    result = system.execute("hi")
    assert ("Hi!", "function:fast", "fast", "system") == (
        result.content,
        result.notes.model,
        result.notes.model_alias,
        result.notes.model_source,
    )
    with pytest.raises(ConfigurationError, match=r"Model 'fsat' in the TaskSystem configuration .* Did you mean"):
        TaskSystem(model="fsat", templates=declarations)


def test_atomtask_model_may_name_an_alias() -> None:
    """`ATOMTASK_MODEL=fast` resolves through the aliases; an unknown name says did-you-mean."""
    aliases = ModelAliases({"fast": "openai-chat:gpt-4o-mini"})
    choice = BaseHandler(environ={"ATOMTASK_MODEL": "fast"}, model_aliases=aliases).choose_model()
    assert ("openai-chat:gpt-4o-mini", "openai-chat:gpt-4o-mini", "fast", "environment") == (
        choice.spec,
        choice.label,
        choice.alias,
        choice.source,
    )
    with pytest.raises(ConfigurationError, match=r"`ATOMTASK_MODEL` environment variable .* Did you mean 'fast'"):
        BaseHandler(environ={"ATOMTASK_MODEL": "fsat"}, model_aliases=aliases).choose_model()


def test_the_systems_choice_follows_an_alias_changed_after_it_was_made() -> None:
    """The default model's choice is kept between calls, but not past a change of the aliases."""
    aliases = ModelAliases({"fast": "openai-chat:gpt-4o-mini"})
    handler = BaseHandler(model="fast", model_aliases=aliases)
    assert "openai-chat:gpt-4o-mini" == handler.choose_model().label
    assert handler.choose_model() is handler.choose_model()
    aliases.add({"fast": "anthropic:claude-haiku-4-5"})
    assert "anthropic:claude-haiku-4-5" == handler.choose_model().label


def test_the_response_cache_keys_on_the_model_that_ran(tmp_path: Path) -> None:
    """An alias that stands for another model is another cache entry: the key is the real model's."""
    system = TaskSystem(cache=True, cache_path=":memory:", model_aliases={"fast": scripted_model("one", "two")})
    system.register(Template(name="hi", instructions="Say hi.", model="fast"))
    assert "one" == system.execute("hi").content
    assert system.execute("hi").notes.cached
    system.model_aliases.add({"fast": scripted_model("other", model_name="other")})
    fresh = system.execute("hi")
    assert ("other", False) == (fresh.content, fresh.notes.cached)
