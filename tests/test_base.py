"""BaseHandler: model choice order and the embedded default."""

from __future__ import annotations

import pytest
from atomtask import BaseHandler, ConfigurationError
from atomtask.handlers.base import DEFAULT_MODEL_NOTICE
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
    assert ("test", "default") == (default.label, default.source)
    assert DEFAULT_MODEL_NOTICE == default.notice
    assert "ATOMTASK_MODEL" in DEFAULT_MODEL_NOTICE


def test_model_instances_are_accepted_and_labelled() -> None:
    """A pydantic-ai Model instance is used as is and labelled provider:name."""
    model = TestModel()
    choice = BaseHandler(model=model, environ={}).choose_model()
    assert model is choice.spec
    assert "test:test" == choice.label


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
