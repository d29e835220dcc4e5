"""`BaseHandler`: provider settings and the choice of model for each call.

The model for a call is, in order: the one passed to the call, the template's, the TaskSystem's,
the `ATOMTASK_MODEL` environment variable, then the embedded default (`atomtask:synthetic`, which
answers offline with schema-valid made-up values) with a visible notice saying how to configure a
real one. Whichever names it, a model alias (`ModelAliases`) is resolved here, at each choice: the
`ModelChoice` holds the model it stands for (its `label` is the real model's, as the ledger shows
it) and the `alias` it was named by. A `base_url` sends every model string whose pydantic-ai provider
takes one to that endpoint (`openai-chat:`, `ollama:`, `anthropic:`, ...); a provider that takes none,
and an embedded system model (which has no endpoint), is refused with the reason. API keys are read by the
provider SDKs from the environment; atomtask never stores or prints them.

An `openai-chat:` model sent to an endpoint other than OpenAI's (`base_url`, `OPENAI_BASE_URL`), and an
`ollama:` or `vllm:` model, is a local server's: its token limit goes out as `max_tokens` (which those
servers read; OpenAI's `max_completion_tokens` they ignore), and its Agent gets a `ServerDialect`
(`handlers._dialect`) that sends each request in the form that server honours. `server=` names the kind
of server (`loading._servers`); without it the kind is detected from the endpoint at the first request.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, cast

import attrs
from atomtask.errors import ConfigurationError
from atomtask.loading._model_aliases import ModelAliases
from atomtask.loading._providers import API_KEY_ENV, ATOMTASK_PROVIDER, check_model_string, provider_of
from atomtask.loading._servers import ServerProfile, server_of_provider, server_profile, serves_locally
from atomtask.system._options import ProviderRetries

if TYPE_CHECKING:
    from atomtask.handlers._dialect import ServerDialect
    from pydantic_ai.models import Model
    from pydantic_ai.settings import ModelSettings

__all__ = ["DEFAULT_MODEL", "DEFAULT_MODEL_NOTICE", "BaseHandler", "ModelChoice", "is_embedded", "model_label"]

DEFAULT_MODEL = "atomtask:synthetic"
MODEL_ENV = "ATOMTASK_MODEL"
DEFAULT_MODEL_NOTICE = (
    "atomtask: no model configured, answering with the embedded synthetic model (atomtask:synthetic: made-up, "
    "schema-valid values, no LLM). Set ATOMTASK_MODEL (e.g. openai-chat:gpt-4o-mini with OPENAI_API_KEY) "
    "or pass --model (in Python, `TaskSystem(model=...)`)."
)

# Providers whose pydantic-ai class names its endpoint differently.
_BASE_URL_PARAMETER = {"litellm": "api_base", "azure": "azure_endpoint", "azure-responses": "azure_endpoint"}

ModelSource = Literal["call", "template", "system", "environment", "default", "fallback"]


@attrs.frozen(kw_only=True)
class ModelChoice:
    """The model chosen for one call, and why.

    `spec` is the model itself (an alias already resolved), `label` its printable name, `source` who
    named it, and `alias` the name it was named by when that was a model alias (`fast`, or a model
    string mapped to another model).
    """

    spec: Model | str
    label: str
    source: ModelSource
    alias: str | None = None

    @property
    def notice(self) -> str | None:
        return DEFAULT_MODEL_NOTICE if self.source == "default" else None


def is_embedded(model: str) -> bool:
    """Whether a model string names a model that runs in this process (`test`, `atomtask:synthetic`): no endpoint."""
    return model == "test" or provider_of(model) == ATOMTASK_PROVIDER


# The choices `base_url` goes with (`--model` with `--base-url` is a call's model): one of them that has no
# endpoint leaves the URL unused, so it is refused. A template's own `model: test` or a fallback may be
# local on purpose.
_SYSTEM_WIDE = frozenset({"call", "system", "environment", "default"})


def _no_endpoint(model: str, source: ModelSource) -> str:
    who = "No model is configured, so" if source == "default" else "Model"
    return (
        f"{who} {model!r} answers in this process and has no endpoint: the `base_url` (`--base-url`) given would be "
        "ignored. Name the server's model, e.g. `--model openai-chat:<model>` (`TaskSystem(model=...)`), "
        "or drop `base_url`."
    )


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
        base_url: the endpoint for every model string whose pydantic-ai provider takes one: an
            OpenAI-compatible server for `openai-chat:` (Ollama, vLLM, llama.cpp, a proxy), e.g.
            `http://localhost:11434/v1`, or `ollama:`, `anthropic:`, `groq:`, `mistral:`, `google:`,
            `openrouter:`... A model string whose provider takes none fails with a `configuration_error`
            saying so, and so does an embedded model (`atomtask:synthetic`, `test`), which has no endpoint, when
            it is the call's or the system's model (`model=`, `--model`, `ATOMTASK_MODEL`, or the default when
            none is configured); a template's or a fallback's own embedded model, and model instances, are left
            alone. Without
            it, the SDKs' own variables (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`, `OLLAMA_BASE_URL`, ...) still apply.
        model_settings: pydantic-ai `ModelSettings` (temperature, max_tokens, timeout, ...).
        environ: where `ATOMTASK_MODEL` and keys are read from (default: `os.environ`).
        provider_retries: how provider faults (429, 5xx, timeouts, dropped connections) are retried.
        model_aliases: the names models may be given by wherever one is named (`TaskSystem.model_aliases`).
        server: the kind of OpenAI-compatible server behind `base_url` (`llama-cpp-python`, `ollama`, `vllm`,
            `llama-server`, `lmstudio`, `openai`, `generic`; `loading._servers.SERVER_PROFILES`), so each
            request is sent in the form it honours. Default: detected from the endpoint at the first request.
    """

    def __init__(
        self,
        *,
        model: Model | str | None = None,
        base_url: str | None = None,
        model_settings: ModelSettings | None = None,
        environ: Mapping[str, str] | None = None,
        provider_retries: ProviderRetries | None = None,
        model_aliases: ModelAliases | None = None,
        server: str | None = None,
    ) -> None:
        self.server: ServerProfile | None = server_profile(server) if server is not None else None
        self.model_aliases = model_aliases if model_aliases is not None else ModelAliases()
        if isinstance(model, str):
            check_model_string(model, where="the TaskSystem configuration", aliases=self.model_aliases)
            if base_url is not None and is_embedded(model):
                raise ConfigurationError(_no_endpoint(model, "system"))
        self.model = model
        self.base_url = base_url
        self.model_settings = model_settings
        self.provider_retries = provider_retries if provider_retries is not None else ProviderRetries()
        self._environ = environ if environ is not None else os.environ
        self._built: dict[str, Model] = {}
        # The choice for `self.model`, made once per model and aliases (a frozen value every call may share).
        self._system_choice: tuple[Model | str, int, ModelChoice] | None = None

    def choose_model(self, *, call: Model | str | None = None, template: str | None = None) -> ModelChoice:
        """Pick the model for one call: call, template, handler, `ATOMTASK_MODEL`, then the default.

        A model alias is resolved (`ModelChoice.spec` is the model it stands for); a call's model string
        is checked (`ConfigurationError` for an unknown provider or alias).
        """
        if call is not None:
            if isinstance(call, str):
                check_model_string(call, where="the call", aliases=self.model_aliases)
            return self.named(call, "call")
        if template is not None:
            return self.named(template, "template")
        if self.model is not None:
            cached = self._system_choice
            version = self.model_aliases.version
            if cached is None or cached[0] is not self.model or cached[1] != version:  # `model` may be reassigned
                cached = self._system_choice = (self.model, version, self.named(self.model, "system"))
            return cached[2]
        env_model = self._environ.get(MODEL_ENV)
        if env_model:
            check_model_string(env_model, where=f"the `{MODEL_ENV}` environment variable", aliases=self.model_aliases)
            return self.named(env_model, "environment")
        return ModelChoice(spec=DEFAULT_MODEL, label=DEFAULT_MODEL, source="default")

    def named(self, model: Model | str, source: ModelSource) -> ModelChoice:
        """The choice of `model`, named by `source` (a template's fallback: `"fallback"`), its alias resolved."""
        if isinstance(model, str) and model in self.model_aliases:
            target = self.model_aliases.resolve(model)
            return ModelChoice(spec=target, label=model_label(target), source=source, alias=model)
        return ModelChoice(spec=model, label=model_label(model), source=source)

    def build(self, choice: ModelChoice) -> Model | str:
        """What to hand to pydantic-ai: the instance, the string, an embedded model, or a model wired to `base_url`.

        Raises `ConfigurationError` for a `base_url` with a provider that takes none, and `ImportError`
        when the provider's SDK is missing (both become a `configuration_error` result).
        """
        spec = choice.spec
        if not isinstance(spec, str):
            return spec
        provider = provider_of(spec)
        embedded = is_embedded(spec)
        if embedded and self.base_url is not None and choice.source in _SYSTEM_WIDE:
            raise ConfigurationError(_no_endpoint(spec, choice.source))
        local = not embedded and self._local_server(provider)
        if not embedded and not local and (self.base_url is None or provider is None):
            return spec
        built = self._built.get(spec)
        if built is None:
            built = self._embedded(spec) if embedded else self._with_base_url(spec, local=local)
            self._built[spec] = built
        return built

    def _local_server(self, provider: str | None) -> bool:
        """Whether a model string of `provider` goes to a local OpenAI-compatible server (see the module docstring)."""
        base_url = self.base_url or self._environ.get("OPENAI_BASE_URL") or None
        return serves_locally(provider, base_url=base_url, named=self.server)

    def dialect(self, choice: ModelChoice) -> ServerDialect | None:
        """The capability that speaks the dialect of `choice`'s server, for a local server's model; else None."""
        spec = choice.spec
        if not isinstance(spec, str) or is_embedded(spec) or not self._local_server(provider_of(spec)):
            return None
        from atomtask.handlers._dialect import ServerDialect

        named = self.server or _provider_server(provider_of(spec))
        return ServerDialect(named)

    @staticmethod
    def _embedded(spec: str) -> Model:
        from atomtask.handlers._synthetic import embedded_model

        return embedded_model(spec)

    def _with_base_url(self, spec: str, *, local: bool = False) -> Model:
        """`spec`'s pydantic-ai model, its provider built with `base_url` (pydantic-ai picks the model class).

        A local server's model (`local`) gets the profile that sends its token limit as `max_tokens` and says it
        has no batch API.
        """
        from pydantic_ai.models import infer_model

        provider_name = spec.split(":", 1)[0]
        if provider_name.startswith("gateway/"):
            from pydantic_ai.providers.gateway import gateway_provider

            provider: Any = gateway_provider(provider_name.removeprefix("gateway/"), base_url=self.base_url)
        else:
            from pydantic_ai.providers import infer_provider_class

            provider_class = infer_provider_class(provider_name)  # imports the SDK: ImportError if missing
            parameters = inspect.signature(provider_class).parameters
            keyword = _BASE_URL_PARAMETER.get(provider_name, "base_url")
            if keyword not in parameters:
                raise ConfigurationError(
                    f"Model {spec!r} cannot take a `base_url`: pydantic-ai's {provider_class.__name__} for provider "
                    f"{provider_name!r} always calls that provider's own endpoint. Drop `base_url` (`--base-url`), "
                    "or, for an OpenAI-compatible server, name the model `openai-chat:<model>`."
                )
            arguments: dict[str, Any] = {keyword: self.base_url} if self.base_url is not None else {}
            env = API_KEY_ENV.get(provider_name)
            if env and self._environ.get(env) and "api_key" in parameters:
                arguments["api_key"] = self._environ[env]
            provider = provider_class(**arguments)
        model = infer_model(spec, provider_factory=lambda _name: provider)
        if not local:
            return model
        from pydantic_ai.models.openai import OpenAIChatModel

        if not isinstance(model, OpenAIChatModel):
            return model
        server = self.server or _provider_server(provider_name)
        field = server.max_tokens_field if server is not None else "max_tokens"
        profile: dict[str, Any] = {
            "openai_chat_supports_max_completion_tokens": field == "max_completion_tokens",
            "openai_supports_batch_api": False,  # a local server serves no Batch API (`--provider-batch` refuses it)
        }
        if server is not None and not server.json_object:
            profile["supports_json_object_output"] = False
        return type(model)(model.model_name, provider=provider, profile=cast(Any, profile))


def _provider_server(provider: str | None) -> ServerProfile | None:
    name = server_of_provider(provider)
    return server_profile(name) if name is not None else None
