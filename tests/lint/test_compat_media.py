"""P307: a template's `image`, `document` and `audio` parameters against what its model can take."""

from __future__ import annotations

import importlib
import io
import json
import textwrap
from pathlib import Path

import pytest
from atomtask.lint import check
from atomtask.lint._compat import ADAPTER_REFUSES, InlineAnalyses, ProcessAnalyses, main, media_issues


def found(model: str, *params: tuple[str, str]) -> list[str | None]:
    return [issue.field for issue in media_issues(model, list(params))]


def test_a_model_class_that_cannot_send_the_kind_is_p307() -> None:
    """Cohere's adapter sends no images, Groq's no documents, OpenAI's Responses API no audio."""
    issues = media_issues("cohere:command-r-plus", [("photo", "image")])
    assert ["P307"] == [issue.code for issue in issues]
    assert (
        "Parameter 'photo' is typed `image`, but model 'cohere:command-r-plus' cannot take images" in issues[0].message
    )
    assert "model class for `cohere:` cannot send images" in issues[0].message
    assert ["contract"] == found("groq:llama-3.3-70b-versatile", ("photo", "image"), ("contract", "document"))
    assert ["memo"] == found("openai:gpt-4o", ("memo", "audio"))


def test_the_profile_flags_decide_where_the_class_sends_the_kind() -> None:
    """OpenAI chat sends audio, but only OpenAI's audio models take it (as pydantic-ai's OpenAI provider says)."""
    assert ["memo"] == found("openai-chat:gpt-4o-mini", ("memo", "audio"))
    assert [] == found("openai-chat:gpt-4o-audio-preview", ("memo", "audio"))
    issue = media_issues("openai-chat:gpt-4o-mini", [("memo", "audio")])[0]
    assert "pydantic-ai's profile for it says it cannot take audio files" in issue.message


def test_models_that_take_the_kind_have_no_finding() -> None:
    """Anthropic reads images and PDFs, Gemini audio too; `test` and alias names have no profile."""
    assert [] == found("anthropic:claude-sonnet-4-5", ("photo", "image"), ("contract", "document"))
    assert [] == found("google:gemini-2.5-flash", ("memo", "audio"), ("photo", "image"))
    assert [] == found("test", ("photo", "image"))
    assert [] == found("fast", ("photo", "image"))


# provider prefix -> the model class `pydantic_ai.models.infer_model` builds for it
_CLASSES = {
    "openai": ("openai", "OpenAIResponsesModel"),
    "openai-chat": ("openai", "OpenAIChatModel"),
    "anthropic": ("anthropic", "AnthropicModel"),
    "openrouter": ("openrouter", "OpenRouterModel"),
    "google": ("google", "GoogleModel"),
    "groq": ("groq", "GroqModel"),
    "cohere": ("cohere", "CohereModel"),
    "mistral": ("mistral", "MistralModel"),
    "bedrock": ("bedrock", "BedrockConverseModel"),
    "huggingface": ("huggingface", "HuggingFaceModel"),
    "xai": ("xai", "XaiModel"),
}


def test_the_adapter_table_matches_the_installed_model_classes() -> None:
    """Each row is the model class's own `_unsupported_file_inputs`, for every class whose SDK is installed here."""
    checked = []
    for provider, (module, name) in _CLASSES.items():
        try:
            cls = getattr(importlib.import_module(f"pydantic_ai.models.{module}"), name)
        except ImportError:  # its SDK is not installed: nothing to compare with
            continue
        assert cls._unsupported_file_inputs == ADAPTER_REFUSES[provider], provider
        checked.append(provider)
    assert {"openai", "openai-chat", "anthropic"} <= set(checked)


def test_check_reports_p307_at_the_parameter_and_no_w201(tmp_path: Path) -> None:
    """`atomtask check` points at the parameter's line; a media parameter is never 'unused' (W201)."""
    (tmp_path / "t.yaml").write_text(
        textwrap.dedent(
            """\
            name: read_scan
            model: cohere:command-r-plus
            params:
              scan: image
              hint: str
            instructions: Read the scan. {{hint}}
            """
        ),
        encoding="utf-8",
    )
    report = check([tmp_path])
    assert [("P307", 4)] == [(f.code, f.location.line if f.location else None) for f in report.findings]
    assert 1 == report.errors


def test_check_model_applies_to_templates_without_a_model(tmp_path: Path) -> None:
    """`check --model` checks a template that names no model against the given one."""
    (tmp_path / "t.yaml").write_text(
        "name: listen\nparams: {memo: audio}\ninstructions: Transcribe the memo.\n", encoding="utf-8"
    )
    assert [] == [f.code for f in check([tmp_path]).findings]
    assert ["P307"] == [f.code for f in check([tmp_path], models=["anthropic:claude-sonnet-4-5"]).findings]


@pytest.mark.parametrize("model", ["cohere:command-r", "openai:gpt-4o", "anthropic:claude-haiku-4-5", "test"])
def test_the_helper_process_answers_media_requests_as_this_process_does(model: str) -> None:
    """Media requests through the helper give the issues an in-process analysis gives, in order with schemas."""
    params = [("photo", "image"), ("memo", "audio"), ("contract", "document")]
    inline, helper = InlineAnalyses(), ProcessAnalyses()
    try:
        for analyses in (inline, helper):
            analyses.submit({"type": "object", "title": "T", "properties": {}}, model, "tool")
            analyses.submit_media(model, params)
        assert inline.results() == helper.results()
    finally:
        helper.close()


def test_the_helper_answers_a_media_request_line() -> None:
    """`[index, null, model, "media", [[param, kind], ...]]` is answered with `media_issues`, by index."""
    line = json.dumps([0, None, "cohere:command-r", "media", [["photo", "image"]]]).encode() + b"\n"
    out = io.BytesIO()
    assert 0 == main(io.BytesIO(line), out)
    _, answer = [json.loads(text) for text in out.getvalue().splitlines()]
    issue = media_issues("cohere:command-r", [("photo", "image")])[0]
    assert [0, [["P307", issue.message, None, "photo"]]] == answer
