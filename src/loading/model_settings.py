"""Model settings (`temperature`, `max_tokens`, `seed`, ...) checked against pydantic-ai's `ModelSettings`.

Used for a template's `model_settings` at registration and for the `model_settings=` of a call or a
`TaskSystem`: an unknown key gets "did you mean", a value of the wrong type names the type expected.
pydantic-ai is imported only when there are settings to check.
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from atomtask.loading.providers import known_providers
from atomtask.system.errors import ConfigurationError, SourceLocation, UsageError, near_names
from pydantic import TypeAdapter, ValidationError

__all__ = ["check_model_settings"]


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
