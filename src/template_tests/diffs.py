"""Comparing outputs: field-by-field differences (`field email was 'a', now null`) and partial matches.

Values are in their JSON form (what `output:` holds in a cases file): mappings, lists, scalars.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

__all__ = ["Difference", "differences", "shown", "subset_misses"]

_ABSENT: Any = attrs.NOTHING


@attrs.frozen(kw_only=True)
class Difference:
    """One place where two values differ: the dotted path, the value before and after (`NOTHING`: absent)."""

    path: str
    before: Any
    after: Any

    def __str__(self) -> str:
        where = f"field `{self.path}`" if self.path else "the output"
        if self.before is _ABSENT:
            return f"{where} is new: {shown(self.after)}"
        if self.after is _ABSENT:
            return f"{where} was {shown(self.before)}, now absent"
        return f"{where} was {shown(self.before)}, now {shown(self.after)}"


def shown(value: Any, limit: int = 80) -> str:
    """A value as JSON, cut to `limit` characters."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _same(a: Any, b: Any) -> bool:
    # `True == 1` in Python, but not in JSON; a float that equals an int is the same number.
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) else bool(a == b)


def differences(before: Any, after: Any, path: str = "") -> list[Difference]:
    """Where `after` differs from `before`, deepest places first-come (keys of `before`, then new keys)."""
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        out: list[Difference] = []
        for key in before:
            sub = f"{path}.{key}" if path else str(key)
            if key not in after:
                out.append(Difference(path=sub, before=before[key], after=_ABSENT))
            else:
                out.extend(differences(before[key], after[key], sub))
        for key in after:
            if key not in before:
                out.append(Difference(path=f"{path}.{key}" if path else str(key), before=_ABSENT, after=after[key]))
        return out
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [
            d for i, (b, a) in enumerate(zip(before, after, strict=True)) for d in differences(b, a, f"{path}[{i}]")
        ]
    return [] if _same(before, after) else [Difference(path=path, before=before, after=after)]


def subset_misses(expected: Any, actual: Any, path: str = "") -> list[str]:
    """What of `expected` `actual` does not hold: mappings by the keys given, lists item by item, scalars equal."""
    where = f"`{path}`" if path else "the output"
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return [f"{where} is {shown(actual)}, not a mapping"]
        misses: list[str] = []
        for key, value in expected.items():
            sub = f"{path}.{key}" if path else str(key)
            if key not in actual:
                misses.append(f"`{sub}` is absent (expected {shown(value)})")
            else:
                misses.extend(subset_misses(value, actual[key], sub))
        return misses
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{where} is {shown(actual)}, expected {len(expected)} item(s) like {shown(expected)}"]
        return [
            m
            for i, (e, a) in enumerate(zip(expected, actual, strict=True))
            for m in subset_misses(e, a, f"{path}[{i}]")
        ]
    return [] if _same(expected, actual) else [f"{where} is {shown(actual)}, expected {shown(expected)}"]
