"""BaseHandler: model choice order and the embedded default."""

from __future__ import annotations

import pytest
from atomtask import ConfigurationError
from atomtask.handlers import BaseHandler
from atomtask.handlers._base import DEFAULT_MODEL_NOTICE, model_label
from atomtask.handlers._synthetic import SyntheticModel
from pydantic_ai.models.test import TestModel


def test_call_beats_template_beats_system_beats_env_beats_default() -> None:
    """The model comes from the call, the template, the system, ATOMTASK_MODEL, then the default."""
    env = {"ATOMTASK_MODEL": "anthropic:claude-sonnet-4-5"}
    handler = BaseHandler(model="openai-chat:gpt-4o-mini", environ=env)
    assert "call" == handler.choose_model(call="groq:llama-3.3-70b-versatile", template="openai:gpt-5").source
    assert "openai:gpt-5" == handler.choose_model(template="openai:gpt-5").label
    assert "openai-chat:gpt-4o-mini" == handler.choose_model().label
    assert "anthropic:claude-sonnet-4-5" == BaseHandler(environ=env).choose_model().label
    default = BaseHandler(environ={}).choose_model()
    assert ("atomtask:synthetic", "default") == (default.label, default.source)
    assert DEFAULT_MODEL_NOTICE == default.notice
    assert "ATOMTASK_MODEL" in DEFAULT_MODEL_NOTICE


def test_model_instances_are_accepted_and_labelled() -> None:
    """A pydantic-ai Model instance is used as is and labelled provider:name."""
    model = TestModel()
    choice = BaseHandler(model=model, environ={}).choose_model()
    assert model is choice.spec
    assert "test:test" == choice.label


def test_the_system_model_choice_is_made_once_and_follows_a_new_model() -> None:
    """The choice for the TaskSystem's model is one shared value until `handler.model` is replaced."""
    handler = BaseHandler(model=TestModel(), environ={})
    first = handler.choose_model()
    assert first is handler.choose_model()
    handler.model = "openai-chat:gpt-4o-mini"
    assert ("openai-chat:gpt-4o-mini", "system") == (handler.choose_model().label, handler.choose_model().source)


def test_bad_env_model_is_a_configuration_error() -> None:
    """A malformed ATOMTASK_MODEL is reported naming the variable."""
    with pytest.raises(ConfigurationError, match="ATOMTASK_MODEL"):
        BaseHandler(environ={"ATOMTASK_MODEL": "nope:x"}).choose_model()


def test_base_url_builds_an_openai_compatible_model() -> None:
    """With a base URL, `openai-chat:` strings become an OpenAIChatModel aimed at that URL."""
    handler = BaseHandler(base_url="http://127.0.0.1:9/v1", environ={})
    built = handler.build(handler.choose_model(call="openai-chat:llama3.2"))
    assert not isinstance(built, str)
    assert "llama3.2" == built.model_name
    assert "http://127.0.0.1:9/v1/" == str(built.base_url)
    assert built is handler.build(handler.choose_model(call="openai-chat:llama3.2"))


def test_default_builds_the_embedded_synthetic_model() -> None:
    """The default `atomtask:synthetic` becomes one SyntheticModel instance, labelled like its model string."""
    handler = BaseHandler(environ={})
    choice = handler.choose_model()
    built = handler.build(choice)
    assert isinstance(built, SyntheticModel)
    assert "atomtask:synthetic" == model_label(built)
    assert built is handler.build(choice)
    assert "synthetic" in DEFAULT_MODEL_NOTICE and "\n" not in DEFAULT_MODEL_NOTICE


def test_test_model_string_builds_pydantic_ais_test_model() -> None:
    """`test` is pydantic-ai's TestModel (its usage counted from the request), one instance, labelled `test`."""
    handler = BaseHandler(environ={})
    built = handler.build(handler.choose_model(call="test"))
    assert isinstance(built, TestModel)
    assert "test" == handler.choose_model(call="test").label
    assert built is handler.build(handler.choose_model(call="test"))


@pytest.mark.parametrize(
    ("model", "model_class"),
    [
        ("ollama:llama3.2", "OllamaModel"),
        ("anthropic:claude-haiku-4-5", "AnthropicModel"),
        ("openai:gpt-5", "OpenAIResponsesModel"),
        ("vllm:qwen3", "OpenAIChatModel"),
    ],
)
def test_base_url_reaches_every_provider_that_takes_one(model: str, model_class: str) -> None:
    """`base_url` builds the provider's own model class with that endpoint, not only for `openai-chat:`."""
    handler = BaseHandler(base_url="http://127.0.0.1:9/v1", environ={"ANTHROPIC_API_KEY": "sk-ant-test"})
    built = handler.build(handler.choose_model(call=model))
    assert not isinstance(built, str)
    assert model_class == type(built).__name__
    assert model.split(":", 1)[1] == built.model_name
    assert "http://127.0.0.1:9/v1" == str(built.base_url).rstrip("/")


def test_base_url_is_refused_for_a_provider_that_takes_none() -> None:
    """A provider with a fixed endpoint (Cerebras) refuses `base_url` with the reason and the fix."""
    handler = BaseHandler(base_url="http://127.0.0.1:9/v1", environ={})
    with pytest.raises(ConfigurationError) as raised:
        handler.build(handler.choose_model(call="cerebras:llama3.1-8b"))
    assert "'cerebras:llama3.1-8b' cannot take a `base_url`" in raised.value.message
    assert "CerebrasProvider" in raised.value.message
    assert "`openai-chat:<model>`" in raised.value.message


def test_base_url_leaves_model_instances_alone() -> None:
    """A model instance (a test's stand-in) is built as it is, `base_url` or not."""
    handler = BaseHandler(base_url="http://127.0.0.1:9/v1", environ={})
    model = TestModel()
    assert model is handler.build(handler.choose_model(call=model))


@pytest.mark.parametrize("model", ["test", "atomtask:synthetic", None])
def test_base_url_with_an_embedded_model_is_refused(model: str | None) -> None:
    """`base_url` with `test`, `atomtask:synthetic` or the default (synthetic) is a ConfigurationError, not ignored."""
    environ = {"ATOMTASK_MODEL": model} if model else {}
    handler = BaseHandler(base_url="http://127.0.0.1:9/v1", environ=environ)
    with pytest.raises(ConfigurationError) as raised:
        handler.build(handler.choose_model())
    assert "has no endpoint: the `base_url` (`--base-url`) given would be ignored" in raised.value.message
    assert "`--model openai-chat:<model>`" in raised.value.message
    if model is None:
        assert raised.value.message.startswith("No model is configured, so 'atomtask:synthetic'")


def test_an_embedded_fallback_or_template_model_keeps_working_beside_a_base_url() -> None:
    """The URL is for the system's model: a template's or a fallback's own `test` still runs in process."""
    handler = BaseHandler(model="openai-chat:llama3.2", base_url="http://127.0.0.1:9/v1", environ={})
    assert isinstance(handler.build(handler.choose_model(template="test")), TestModel)
    assert isinstance(handler.build(handler.named("atomtask:synthetic", "fallback")), SyntheticModel)


def test_an_embedded_system_model_with_a_base_url_is_refused_at_once() -> None:
    """`TaskSystem(model="test", base_url=...)` raises when it is made, naming the model."""
    with pytest.raises(ConfigurationError, match="Model 'test' answers in this process"):
        BaseHandler(model="test", base_url="http://127.0.0.1:9/v1", environ={})
