"""Model strings, model settings and the options of a call, checked without importing any provider SDK.

The provider prefixes a model string may use are derived from pydantic-ai itself (its known model
names and its OpenAI-compatible provider names) rather than kept by hand, so they follow the installed
version; atomtask adds its own provider, `atomtask:`, for the models it embeds (`atomtask:synthetic`,
the offline default). Model settings (`temperature`, `max_tokens`, `seed`, ...) are checked against
pydantic-ai's `ModelSettings`, for a template's `model_settings` at registration and for the
`model_settings=` of a call or a `TaskSystem`: an unknown key gets "did you mean", a value of the
wrong type names the type expected. pydantic-ai is imported only when there are settings to check.
`check_options` checks the keyword arguments of a call or a run into one `CallOptions`.

A name without a provider prefix passes only as one of the model aliases the caller gives (`aliases=`,
`TaskSystem.model_aliases`), else "did you mean" names the near aliases; an unknown provider gets the
few nearest providers (never all ~50: `atomtask list --providers` lists them).
"""

from __future__ import annotations

import contextlib
import functools
import types
import typing
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast, get_args

from atomtask.errors import ConfigurationError, SourceLocation, UsageError, did_you_mean, near_names
from atomtask.system._options import NO_OPTIONS, CallOptions
from atomtask.system._templates import CacheChoice, RepairMode, TemplateLimits, cache_choice, repair_mode
from pydantic import TypeAdapter, ValidationError

if TYPE_CHECKING:
    from pydantic_ai.models import Model

__all__ = [
    "API_KEY_ENV",
    "ATOMTASK_MODELS",
    "ATOMTASK_PROVIDER",
    "SDK_RETRYING_PROVIDERS",
    "check_model_settings",
    "check_model_string",
    "check_options",
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
    helper process that imports pydantic-ai while the check reads and builds (`atomtask.lint._compat`).
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


def check_model_string(
    model: str, *, where: str, location: SourceLocation | None = None, aliases: Collection[str] = ()
) -> None:
    """Raise `ConfigurationError` unless `model` is a model alias or names a provider pydantic-ai knows.

    `where` says whose model string it is, for the message (e.g. "template 'extract'"); `aliases` are
    the names a model may be given by (`TaskSystem.model_aliases`): a name without a provider prefix
    must be one of them, and an unknown one gets "did you mean" over them and the providers.
    """
    if model in aliases or model == "test":
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
        raise _unknown_name(model, where, location, aliases, providers)
    bare = provider.removeprefix("gateway/")
    if bare in providers or provider in providers:
        return
    close = near_names(provider, _suggestable(provider, providers))
    listed = (
        f"Did you mean {' or '.join(repr(name) for name in close)}?"
        if close
        else f"Common providers: {', '.join(p for p in _COMMON_PROVIDERS if p in providers)}."
    )
    raise ConfigurationError(
        f"Unknown provider {provider!r} in model {model!r} in {where}. {listed} `atomtask list --providers` "
        f"lists all {len(providers)} that the installed pydantic-ai knows.",
        location=location,
        suggestions=close,
    )


# Named when nothing is close to an unknown provider, in this order.
_COMMON_PROVIDERS = ("openai-chat", "openai", "anthropic", "google", "ollama", "groq", "mistral")


def _suggestable(typed: str, providers: frozenset[str]) -> list[str]:
    """The providers to suggest for `typed`: the `gateway/` ones only to a name that says `gateway`."""
    return [p for p in providers if "gateway" in typed or not p.startswith("gateway/")]


def _unknown_name(
    model: str, where: str, location: SourceLocation | None, aliases: Collection[str], providers: frozenset[str]
) -> ConfigurationError:
    """The error for a name with no provider prefix that is not an alias: near aliases, or `provider:` forms."""
    names = sorted(name for name in aliases if ":" not in name)
    close = near_names(model, names)
    # `anthropic` for `anthropic:<model>`, the model name left out.
    prefixes = [f"{name}:" for name in near_names(model, _suggestable(model, providers), n=2)]
    hints = [repr(name) for name in close] + [f"`{prefix}<model-name>`" for prefix in prefixes]
    hint = f" Did you mean {' or '.join(hints)}?" if hints else ""
    if names:
        message = (
            f"Model {model!r} in {where} has no provider prefix and is not a model alias.{hint} Model aliases: "
            f"{', '.join(names)}. A model string is written `provider:model-name`, for example "
            "`openai-chat:gpt-4o-mini`."
        )
    else:
        message = (
            f"Model {model!r} in {where} has no provider prefix and no model alias is declared.{hint} Write it as "
            "`provider:model-name`, for example `openai-chat:gpt-4o-mini` or `anthropic:claude-sonnet-4-5` (or "
            "`atomtask:synthetic`, the offline model), or declare the name as a model alias (`models: {"
            f'{model}: "openai-chat:gpt-4o-mini"}}` in a declaration file, or `TaskSystem(model_aliases=...)`).'
        )
    return ConfigurationError(message, location=location, suggestions=[*close, *prefixes])


def check_model_settings(
    settings: object,
    *,
    where: str,
    error: type[UsageError] = ConfigurationError,
    locate: Callable[[str], SourceLocation | None] | None = None,
) -> dict[str, Any]:
    """Check `settings` against pydantic-ai's `ModelSettings`: known keys, each value of its declared type.

    Values are validated strictly (`"0.2"` is not a temperature) and returned as validated. Keys a
    provider adds to its own settings (`openai_reasoning_effort`, `anthropic_metadata`, ...) pass
    unchecked: their types live beside the provider SDK, which is imported only when a call needs it.
    A mistake raises `error` naming the key, what it must be, and where.
    """
    if not isinstance(settings, Mapping):
        raise error(
            f"The model settings of {where} must be a mapping such as `{{temperature: 0, max_tokens: 500}}`, "
            f"got {type(settings).__name__} {settings!r}.",
            location=locate("") if locate is not None else None,
        )
    fields = _model_settings_fields()
    checked: dict[str, Any] = {}
    for key, value in settings.items():
        location = locate(str(key)) if locate is not None else None
        if key in fields:
            annotation, adapter = fields[key]
            try:
                checked[key] = adapter.validate_python(value, strict=True)
            except ValidationError:
                raise error(
                    f"Model setting {key!r} of {where} must be {_type_text(annotation)}, got "
                    f"{type(value).__name__} {value!r}. Fix the value (`{key}: ...`).",
                    location=location,
                ) from None
        elif isinstance(key, str) and key.split("_", 1)[0] in _provider_setting_prefixes():
            checked[key] = value
        else:
            raise error(
                f"Unknown model setting {key!r} in {where}.{_setting_hint(str(key), fields)} Model settings "
                f"(pydantic-ai `ModelSettings`): {', '.join(fields)}; a provider's own settings start with its "
                "name (`openai_...`, `anthropic_...`).",
                location=location,
                suggestions=_setting_suggestions(str(key), fields),
            )
    return checked


@functools.cache
def _model_settings_fields() -> dict[str, tuple[Any, TypeAdapter[Any]]]:
    # Imported here, not at module level: pydantic-ai costs about a second to import, and listing or
    # loading templates that set no model settings should not pay for it.
    from pydantic_ai.settings import ModelSettings

    return {key: (hint, TypeAdapter(hint)) for key, hint in typing.get_type_hints(ModelSettings).items()}


@functools.cache
def _provider_setting_prefixes() -> frozenset[str]:
    return frozenset(name.split("-", 1)[0] for name in known_providers())


def _setting_suggestions(key: str, fields: Mapping[str, Any]) -> list[str]:
    # `stop` for `stop_sequences`, `tokens` for `max_tokens`: a word of the real name first.
    words = [name for name in fields if key in name.split("_")]
    return list(dict.fromkeys([*words, *near_names(key, fields)]))[:3]


def _setting_hint(key: str, fields: Mapping[str, Any]) -> str:
    close = _setting_suggestions(key, fields)
    if not close:
        return ""
    return " Did you mean " + " or ".join(repr(c) for c in close) + "?"


def _type_text(annotation: Any) -> str:
    """`int`, `float | None`, `'low' | 'high'`: a type as a template author reads it."""
    if annotation is type(None):
        return "None"
    if isinstance(annotation, type):
        return annotation.__name__
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " | ".join(repr(v) for v in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_text(arg) for arg in typing.get_args(annotation))
    return str(annotation).replace("typing.", "").replace("pydantic_ai.settings.", "")


def check_options(
    *,
    model: Model | str | None = None,
    retries: int | None = None,
    limits: TemplateLimits | Mapping[str, Any] | None = None,
    repair: RepairMode | str | bool | None = None,
    model_settings: Mapping[str, Any] | None = None,
    cache: CacheChoice = None,
    where: str = "this call",
    aliases: Collection[str] = (),
) -> CallOptions:
    """The keyword arguments of a call (or a run) checked into one `CallOptions`; `NO_OPTIONS` when all are None.

    A bad value raises `ConfigurationError` naming the argument, `where` it was given and the fix: an unknown
    provider, a negative `retries=`, a limit that is not a positive number, an unknown repair mode, an
    unknown or mistyped model setting, a `cache=` that is not a cache setting. A `model=` may be one of
    `aliases` (`TaskSystem.model_aliases`), kept as given: the handler resolves it for each call.
    """
    # The usual call asks nothing (checked on every `execute`): plain tests, no allocation.
    nothing_asked = model is None and retries is None and limits is None and repair is None
    if nothing_asked and model_settings is None and cache is None:
        return NO_OPTIONS
    if isinstance(model, str):
        check_model_string(model, where=f"`model=` of {where}", aliases=aliases)
    if retries is not None and (isinstance(retries, bool) or not isinstance(retries, int) or retries < 0):
        raise ConfigurationError(f"Invalid `retries=` for {where}: {retries!r}. Pass a whole number, 0 or more.")
    checked_limits = limits
    if limits is not None and not isinstance(limits, TemplateLimits):
        try:
            checked_limits = TemplateLimits.model_validate(limits)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            raise ConfigurationError(
                f"Invalid `limits=` for {where}: {first['msg']} ({'.'.join(str(p) for p in first['loc'])}). Limits "
                "are positive numbers for `requests`, `input_tokens`, `output_tokens`, `total_tokens` and `cost` "
                "(USD)."
            ) from None
    checked_repair: RepairMode | None = None
    if repair is not None:
        try:
            checked_repair = repair_mode(repair)
        except ValueError as exc:
            raise ConfigurationError(f"Invalid `repair=` for {where}: {exc}.") from None
    settings = None
    if model_settings is not None:
        settings = check_model_settings(model_settings, where=f"{where} (`model_settings=`)")
    return CallOptions(
        model=model,
        retries=retries,
        limits=cast("TemplateLimits | None", checked_limits),
        repair=checked_repair,
        model_settings=settings,
        cache=cache_choice(cache, what=f"`cache=` for {where}"),
    )
