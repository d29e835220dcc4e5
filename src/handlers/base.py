"""`BaseHandler`: provider settings and the choice of model for each call.

The model for a call is, in order: the one passed to the call, the template's, the TaskSystem's,
the `ATOMTASK_MODEL` environment variable, then the embedded default (pydantic-ai's `test` model,
which invents schema-shaped answers) with a visible notice saying how to configure a real one.
API keys are read by the provider SDKs from the environment; atomtask never stores or prints them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

import attrs
from atomtask.loading.providers import check_model_string, provider_of
from atomtask.system.errors import ConfigurationError
from atomtask.system.retry_policy import ProviderRetries

if TYPE_CHECKING:
    from pydantic_ai.models import Model
    from pydantic_ai.settings import ModelSettings

__all__ = ["DEFAULT_MODEL", "DEFAULT_MODEL_NOTICE", "BaseHandler", "ModelChoice", "model_label"]

DEFAULT_MODEL = "test"
MODEL_ENV = "ATOMTASK_MODEL"
DEFAULT_MODEL_NOTICE = (
    "atomtask: no model configured, running on the embedded test model (synthetic answers). "
    "Set ATOMTASK_MODEL (e.g. openai-chat:gpt-4o-mini with OPENAI_API_KEY) or pass --model."
)

ModelSource = Literal["call", "template", "system", "environment", "default", "fallback"]


@attrs.frozen(kw_only=True)
class ModelChoice:
    """The model chosen for one call, and why."""

    spec: Model | str
    label: str
    source: ModelSource

    @property
    def notice(self) -> str | None:
        return DEFAULT_MODEL_NOTICE if self.source == "default" else None


def model_label(model: Model | str) -> str:
    """A printable name for a model string or instance (`provider:name`)."""
    if isinstance(model, str):
        return model
    name = model.model_name
    return name if name.startswith(f"{model.system}:") else f"{model.system}:{name}"


class BaseHandler:
    """Holds the provider settings and the default model; builds the model for each call.

    Args:
        model: the default model, a pydantic-ai model string or `Model` instance.
        base_url: an OpenAI-compatible endpoint (Ollama, vLLM, llama.cpp, a proxy) used for
            `openai-chat:` and `openai:` model strings, e.g. `http://localhost:11434/v1`.
            Without it, the SDK's own `OPENAI_BASE_URL` environment variable still applies.
        model_settings: pydantic-ai `ModelSettings` (temperature, max_tokens, timeout, ...).
        environ: where `ATOMTASK_MODEL` and keys are read from (default: `os.environ`).
        provider_retries: how provider faults (429, 5xx, timeouts, dropped connections) are retried.
    """

    def __init__(
        self,
        *,
        model: Model | str | None = None,
        base_url: str | None = None,
        model_settings: ModelSettings | None = None,
        environ: Mapping[str, str] | None = None,
        provider_retries: ProviderRetries | None = None,
    ) -> None:
        if isinstance(model, str):
            check_model_string(model, where="the TaskSystem configuration")
        self.model = model
        self.base_url = base_url
        self.model_settings = model_settings
        self.provider_retries = provider_retries if provider_retries is not None else ProviderRetries()
        self._environ = environ if environ is not None else os.environ
        self._built: dict[str, Model] = {}

    def choose_model(self, *, call: Model | str | None = None, template: str | None = None) -> ModelChoice:
        """Pick the model for one call: call, template, handler, `ATOMTASK_MODEL`, then the default."""
        if call is not None:
            if isinstance(call, str):
                check_model_string(call, where="the call")
            return ModelChoice(spec=call, label=model_label(call), source="call")
        if template is not None:
            return ModelChoice(spec=template, label=template, source="template")
        if self.model is not None:
            return ModelChoice(spec=self.model, label=model_label(self.model), source="system")
        env_model = self._environ.get(MODEL_ENV)
        if env_model:
            check_model_string(env_model, where=f"the `{MODEL_ENV}` environment variable")
            return ModelChoice(spec=env_model, label=env_model, source="environment")
        return ModelChoice(spec=DEFAULT_MODEL, label=DEFAULT_MODEL, source="default")

    def build(self, choice: ModelChoice) -> Model | str:
        """What to hand to pydantic-ai: the instance, the string, or a model wired to `base_url`."""
        spec = choice.spec
        if not isinstance(spec, str) or self.base_url is None or provider_of(spec) not in ("openai-chat", "openai"):
            return spec
        built = self._built.get(spec)
        if built is None:
            built = self._openai_compatible(spec.split(":", 1)[1])
            self._built[spec] = built
        return built

    def _openai_compatible(self, model_name: str) -> Model:
        try:
            from pydantic_ai.models.openai import OpenAIChatModel
            from pydantic_ai.providers.openai import OpenAIProvider
        except ImportError as exc:
            raise ConfigurationError("A `base_url` needs the OpenAI SDK: `pip install 'atomtask[openai]'`.") from exc
        # Local servers usually ignore the key, but the SDK insists on one.
        api_key = self._environ.get("OPENAI_API_KEY") or "not-needed"
        provider = OpenAIProvider(base_url=self.base_url, api_key=api_key)
        return OpenAIChatModel(model_name, provider=provider)
