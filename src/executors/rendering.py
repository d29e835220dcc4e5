"""Strict prompt rendering: each placeholder is replaced once, values are never rendered again.

Rendering is a single pass over the template text with the placeholder offsets found at
registration, so `{{...}}` inside a value is data, not a placeholder. Strings go in as they are;
everything else goes in as JSON (never a Python repr).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pydantic_core
from atomtask.system.templates import Placeholder
from pydantic import BaseModel

__all__ = ["RenderError", "format_value", "render"]


class RenderError(Exception):
    """A `{{param.field}}` path does not exist in the value given (reported as an input failure)."""

    def __init__(self, placeholder: Placeholder, missing: str, available: Sequence[str]) -> None:
        self.placeholder = placeholder
        self.missing = missing
        self.available = list(available)
        listing = ", ".join(self.available) or "none"
        super().__init__(
            f"Placeholder {placeholder.text!r}: the value of {placeholder.param!r} has no field {missing!r} "
            f"(available: {listing})"
        )


def render(text: str, placeholders: Sequence[Placeholder], values: Mapping[str, Any]) -> str:
    """Replace `placeholders` (found in `text`, in order) with their values."""
    if not placeholders:
        return text
    pieces: list[str] = []
    cursor = 0
    for ph in placeholders:
        pieces.append(text[cursor : ph.start])
        value = values[ph.param]
        pieces.append(format_value(_lookup(ph, value) if ph.path else value))
        cursor = ph.end
    pieces.append(text[cursor:])
    return "".join(pieces)


def _lookup(ph: Placeholder, value: Any) -> Any:
    for field in ph.path:
        if isinstance(value, BaseModel):
            fields = type(value).model_fields
            if field not in fields:
                raise RenderError(ph, field, list(fields))
            value = getattr(value, field)
        elif isinstance(value, Mapping):
            if field not in value:
                raise RenderError(ph, field, [str(k) for k in value])
            value = value[field]
        else:
            raise RenderError(ph, field, [])
    return value


def format_value(value: Any) -> str:
    """A value as it is inserted into text: a string as it is, a model or anything else as JSON (never a repr)."""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return pydantic_core.to_json(value).decode()
