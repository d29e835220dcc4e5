"""Model strings: which provider prefixes exist, checked without importing any provider SDK.

The list is derived from pydantic-ai itself (its known model names and its OpenAI-compatible
provider names) rather than kept by hand, so it follows the installed version. atomtask adds its own
provider, `atomtask:`, for the models it embeds (`atomtask:synthetic`, the offline default).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import get_args

from atomtask.system.errors import ConfigurationError, SourceLocation, did_you_mean, near_names

__all__ = [
    "API_KEY_ENV",
    "ATOMTASK_MODELS",
    "ATOMTASK_PROVIDER",
    "SDK_RETRYING_PROVIDERS",
    "check_model_string",
    "install_command",
    "known_providers",
    "provider_of",
    "providers_from",
]

# The models atomtask embeds, named `atomtask:<name>`; `atomtask.handlers` builds them.
ATOMTASK_PROVIDER = "atomtask"
ATOMTASK_MODELS: tuple[str, ...] = ("synthetic",)

# Providers that pydantic-ai's `infer_model` routes explicitly but that no known model name uses.
_ROUTED_ONLY = frozenset({"openai-responses", "azure-responses", "openai-chatgpt", "openai-codex", "system-one"})

# The environment variable each provider SDK reads its key from, to say which one to set.
API_KEY_ENV: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
    "openai-chat": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google": "GOOGLE_API_KEY",
    "groq": "GROQ_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "cohere": "CO_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "xai": "XAI_API_KEY",
    "together": "TOGETHER_API_KEY",
    "fireworks": "FIREWORKS_API_KEY",
    "cerebras": "CEREBRAS_API_KEY",
    "huggingface": "HF_TOKEN",
    "moonshotai": "MOONSHOTAI_API_KEY",
}


# Providers whose SDK one of atomtask's extras installs (the OpenAI SDK serves every OpenAI-compatible one).
_SDK_EXTRAS = {"openai": "openai", "openai-chat": "openai", "openai-responses": "openai", "anthropic": "anthropic"}

# The SDK clients pydantic-ai builds for these providers retry on their own (twice, by default).
SDK_RETRYING_PROVIDERS = frozenset({"openai", "openai-chat", "openai-responses", "anthropic", "groq"})


def install_command(model: str) -> str:
    """The `pip install ...` that provides the SDK a model string's provider needs."""
    provider = provider_of(model) or model
    if provider in _SDK_EXTRAS:
        return f"pip install 'atomtask[{_SDK_EXTRAS[provider]}]'"
    return f"pip install 'pydantic-ai-slim[{provider}]'"


# Who else can say which providers pydantic-ai knows, asked before importing it (see `providers_from`).
_SOURCES: list[Callable[[], frozenset[str] | None]] = []


def known_providers() -> frozenset[str]:
    """Every provider prefix the installed pydantic-ai accepts in a model string."""
    if not _imported_providers.cache_info().currsize:
        for source in reversed(_SOURCES):
            found = source()
            if found is not None:
                return found
    return _imported_providers()


@contextlib.contextmanager
def providers_from(source: Callable[[], frozenset[str] | None]) -> Iterator[None]:
    """While inside, `known_providers` asks `source` first, unless pydantic-ai was asked already.

    `source` answers what `known_providers` would (None: it cannot); `atomtask check` passes the
    helper process that imports pydantic-ai while the check reads and builds (`atomtask.lint.compat_process`).
    """
    _SOURCES.append(source)
    try:
        yield
    finally:
        _SOURCES.remove(source)


@functools.cache
def _imported_providers() -> frozenset[str]:
    # `pydantic_ai.models` imports no provider SDK; those load only when a provider is built.
    from pydantic_ai.models import OpenAIChatCompatibleProvider, known_model_names

    prefixes = {name.split(":", 1)[0] for name in known_model_names() if ":" in name}
    prefixes.update(get_args(OpenAIChatCompatibleProvider.__value__))
    return frozenset(prefixes | _ROUTED_ONLY | {ATOMTASK_PROVIDER})


def provider_of(model: str) -> str | None:
    """The provider prefix of a model string (`openai-chat:gpt-4o` -> `openai-chat`)."""
    return model.split(":", 1)[0] if ":" in model else None


def check_model_string(model: str, *, where: str, location: SourceLocation | None = None) -> None:
    """Raise `ConfigurationError` unless `model` names a provider pydantic-ai knows.

    `where` says whose model string it is, for the message (e.g. "template 'extract'").
    """
    if model in ("test",):
        return
    provider = provider_of(model)
    if provider == ATOMTASK_PROVIDER:
        embedded = [f"{ATOMTASK_PROVIDER}:{name}" for name in ATOMTASK_MODELS]
        if model in embedded:
            return
        raise ConfigurationError(
            f"Unknown embedded model {model!r} in {where}.{did_you_mean(model, embedded)} The embedded "
            f"models are {', '.join(f'`{m}`' for m in embedded)}.",
            location=location,
            suggestions=near_names(model, embedded),
        )
    providers = known_providers()
    if provider is None:
        raise ConfigurationError(
            f"Model {model!r} in {where} has no provider prefix; write it as `provider:model-name`, "
            "for example `openai-chat:gpt-4o-mini` or `anthropic:claude-sonnet-4-5` (or `atomtask:synthetic`, "
            "the offline model).",
            location=location,
        )
    bare = provider.removeprefix("gateway/")
    if bare in providers or provider in providers:
        return
    raise ConfigurationError(
        f"Unknown provider {provider!r} in model {model!r} in {where}."
        f"{did_you_mean(provider, providers)} Known providers: {', '.join(sorted(providers))}.",
        location=location,
        suggestions=near_names(provider, providers),
    )
