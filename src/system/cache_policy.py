"""What a template or a call declares about the response cache: `CachePolicy` (on or off, and how long).

A template writes `cache: true`, `cache: false` or `cache: {ttl: 1h}` (YAML), `(cache true)` or
`(cache ((ttl "1h")))` (`defatom`); a call passes `cache=True`, `False`, a mapping or a
`CachePolicy`. All of them become a `CachePolicy`. The cache itself (the key, the SQLite store) lives
in `atomtask.executors`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from atomtask.system.errors import ConfigurationError, near_names
from pydantic import BaseModel, ConfigDict, ValidationError, field_serializer, field_validator, model_validator

__all__ = ["CachePolicy", "cache_choice", "format_duration", "parse_duration"]

_CACHE_FORMS = "True, False, None, a `CachePolicy`, or a mapping like `{'ttl': '1h'}`"

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_DURATION = re.compile(r"^\s*(?:\d+(?:\.\d+)?\s*[smhdw]\s*)+$")
_DURATION_HELP = "a duration like `90s`, `30m`, `1h`, `1h30m`, `7d`, `2w`, or a number of seconds"


def parse_duration(value: Any) -> timedelta:
    """`"1h30m"`, `"7d"`, `90` (seconds) or a `timedelta` as a positive `timedelta`; raises `ValueError`."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str) and _DURATION.match(value.lower()):
        seconds = sum(float(n) * _UNITS[unit] for n, unit in _PART.findall(value.lower()))
    else:
        raise ValueError(f"{value!r} is not a duration; write {_DURATION_HELP}")
    if seconds <= 0:
        raise ValueError(f"{value!r} is not a positive duration; write {_DURATION_HELP}")
    return timedelta(seconds=seconds)


def format_duration(value: timedelta) -> str:
    """A duration as `parse_duration` reads it back: `1h30m`, `7d`, `90s` (`1.5s` below whole seconds)."""
    seconds = value.total_seconds()
    if seconds != int(seconds):
        return f"{seconds:g}s"
    rest, parts = int(seconds), []
    for unit in ("w", "d", "h", "m", "s"):
        count, rest = divmod(rest, _UNITS[unit])
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"


class CachePolicy(BaseModel):
    """Whether answers are served from the response cache, and for how long a stored answer stays good.

    `CachePolicy.model_validate(True)` is `CachePolicy(enabled=True)`; `{"ttl": "1h"}` is on with a TTL of
    an hour. Without a `ttl` a stored answer never expires (clear it with `atomtask cache clear`).

    Example:
        ```python
        Template(name="summarise", instructions="...", cache={"ttl": "1d"})
        system.execute("summarise", {"text": "..."}, cache=False)  # this call asks the model
        ```
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    ttl: timedelta | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_bool(cls, data: Any) -> Any:
        if isinstance(data, bool):
            return {"enabled": data}
        if not isinstance(data, dict | CachePolicy):
            raise ValueError(f"{data!r} is not a cache setting; write `true`, `false` or `{{ttl: 1h}}`")
        if isinstance(data, dict):
            for key in data:
                if key not in cls.model_fields:
                    near = near_names(str(key), cls.model_fields, n=1)
                    hint = f"did you mean {near[0]!r}" if near else "write `ttl` (and `enabled`)"
                    raise ValueError(f"unknown cache setting {key!r}; {hint}")
        return data

    @field_validator("ttl", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return None if value is None else parse_duration(value)

    @field_serializer("ttl")
    def _ttl_text(self, value: timedelta | None) -> str | None:
        return None if value is None else format_duration(value)

    @property
    def ttl_seconds(self) -> float | None:
        """The TTL in seconds, or None when stored answers never expire."""
        return None if self.ttl is None else self.ttl.total_seconds()


def cache_choice(value: Any, *, what: str = "`cache=`") -> bool | CachePolicy | None:
    """A `cache=` argument checked: a bool, None, or a `CachePolicy` (from a policy or a mapping).

    Anything else (`"yes"`, `1`, a list, a mapping with a bad `ttl` or an unknown key) raises
    `ConfigurationError` naming the value and the accepted forms.
    """
    if value is None or isinstance(value, bool | CachePolicy):
        return value
    if not isinstance(value, Mapping):
        raise ConfigurationError(f"Invalid {what}: {value!r} is not a cache setting. Pass {_CACHE_FORMS}.")
    try:
        return CachePolicy.model_validate(dict(value))
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"]) or "cache"
        raise ConfigurationError(
            f"Invalid {what}: `{where}`: {err['msg'].removeprefix('Value error, ')}. Pass {_CACHE_FORMS}."
        ) from None
