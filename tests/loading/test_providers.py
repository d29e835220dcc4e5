"""Model strings are checked against the providers pydantic-ai knows, without importing SDKs."""

from __future__ import annotations

import subprocess
import sys

import pytest
from atomtask import ConfigurationError
from atomtask.loading._providers import check_model_string, known_providers, providers_from


def test_known_providers_include_the_common_ones() -> None:
    """The derived list holds the providers users name most."""
    assert {"openai", "openai-chat", "anthropic", "ollama", "groq", "google"} <= known_providers()


@pytest.mark.parametrize("model", ["test", "openai-chat:gpt-4o-mini", "anthropic:claude-x", "ollama:llama3.2"])
def test_valid_model_strings_pass(model: str) -> None:
    """Known providers pass, whatever the model name."""
    check_model_string(model, where="test")


def test_unknown_provider_names_the_nearest_few_not_all() -> None:
    """The message names the bad prefix and the few nearest providers, not every provider, and how to list them."""
    with pytest.raises(ConfigurationError) as raised:
        check_model_string("antropic:claude", where="template 'x'")
    message = raised.value.message
    assert message.startswith("Unknown provider 'antropic' in model 'antropic:claude' in template 'x'. Did you mean")
    assert "anthropic" == raised.value.suggestions[0]
    assert len(raised.value.suggestions) <= 3
    assert "ollama" not in message and "groq" not in message
    assert f"`atomtask list --providers` lists all {len(known_providers())}" in message


def test_an_unknown_provider_with_nothing_near_names_the_common_ones() -> None:
    """With no near name, the common providers are named instead (and still not all of them)."""
    with pytest.raises(ConfigurationError) as raised:
        check_model_string("zzqx:model", where="template 'x'")
    assert "Common providers: openai-chat, openai, anthropic, google, ollama, groq, mistral." in raised.value.message
    assert [] == raised.value.suggestions


def test_checking_does_not_import_provider_sdks() -> None:
    """Checking model strings leaves the openai and anthropic SDKs unimported."""
    code = (
        "import sys; from atomtask.loading._providers import check_model_string;"
        "check_model_string('anthropic:claude-x', where='t'); check_model_string('openai-chat:x', where='t');"
        "print(sorted(m for m in ('openai', 'anthropic') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "[]" == out.strip()


def test_the_embedded_synthetic_model_string_passes() -> None:
    """`atomtask:synthetic`, the offline default, is a valid model string; `atomtask` is a known provider."""
    check_model_string("atomtask:synthetic", where="test")
    assert "atomtask" in known_providers()


def test_an_unknown_embedded_model_is_refused_with_a_suggestion() -> None:
    """`atomtask:<other>` is refused, suggesting the near embedded model and listing the embedded ones."""
    with pytest.raises(ConfigurationError) as raised:
        check_model_string("atomtask:synthetc", where="template 'x'")
    assert "Unknown embedded model 'atomtask:synthetc' in template 'x'" in raised.value.message
    assert "Did you mean 'atomtask:synthetic'?" in raised.value.message
    assert ["atomtask:synthetic"] == raised.value.suggestions


def test_known_providers_can_come_from_another_process() -> None:
    """Inside `providers_from`, the source answers until pydantic-ai is asked; a source that cannot say is skipped."""
    from atomtask.loading import _providers as providers

    imported = known_providers()
    providers._imported_providers.cache_clear()  # as in a process that has not imported pydantic-ai
    try:
        with providers_from(lambda: frozenset({"elsewhere"})), providers_from(lambda: None):
            assert frozenset({"elsewhere"}) == known_providers()
        assert imported == known_providers()  # outside: pydantic-ai itself, and remembered
        with providers_from(lambda: frozenset({"elsewhere"})):
            assert imported == known_providers()  # once pydantic-ai was asked, it is the answer
    finally:
        providers._imported_providers.cache_clear()
