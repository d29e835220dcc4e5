"""A call's inputs checked against its template's parameters, and its prompts rendered strictly.

Inputs whose values all have exactly their parameter's plain type (`str`, `int`, `float`, `bool`)
are valid as they are and skip the validator; everything else goes through the template's pydantic
validator, whose errors become one `input_validation_failure` naming each parameter and the fix.
Rendering replaces each placeholder once: a value is never rendered again, so text inside a value
cannot inject a placeholder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pydantic_core
from atomtask.errors import RenderError, did_you_mean, join_sentences
from atomtask.loading._template_registry import CompiledTemplate
from atomtask.system._results import FailureReason, TaskError
from atomtask.system._templates import Placeholder
from pydantic import BaseModel, ValidationError

if TYPE_CHECKING:
    pass

__all__ = ["format_value", "render", "validate_inputs"]


def validate_inputs(compiled: CompiledTemplate, inputs: Mapping[str, Any]) -> Mapping[str, Any] | TaskError:
    """The values to render (defaults filled in; read, never changed), or the error naming each bad parameter."""
    plain = compiled.plain_inputs
    if plain is not None and type(inputs) is dict and inputs.keys() >= compiled.required_inputs:
        # Every value has exactly its parameter's plain type: what the validator would return, without it.
        # Anything else (a missing or unknown name, `1` for a float, a subclass) goes to the validator.
        for name, value in inputs.items():
            if plain.get(name) is not type(value):
                break
        else:
            return {**compiled.defaults, **inputs} if compiled.defaults else inputs
    try:
        # The validator builds a new dict and leaves its input alone: a dict needs no copy first.
        values = compiled.inputs.validator.validate_python(inputs if type(inputs) is dict else dict(inputs))
    except ValidationError as exc:
        return _input_error(compiled, exc)
    return {**compiled.defaults, **values} if compiled.defaults else values


def _input_error(compiled: CompiledTemplate, exc: ValidationError) -> TaskError:
    template = compiled.template
    declared = list(template.params)
    problems: list[str] = []
    params: list[str] = []
    for err in exc.errors():
        loc = [str(p) for p in err["loc"]]
        param = loc[0] if loc else "?"
        params.append(param)
        if err["type"] == "missing":
            spec = template.params.get(param)
            type_hint = f" ({spec.type})" if spec is not None else ""
            problems.append(f"missing required parameter {param!r}{type_hint}")
        elif err["type"] == "extra_forbidden":
            problems.append(f"unknown parameter {param!r}.{did_you_mean(param, declared)}".rstrip("."))
        else:
            path = ".".join(loc)
            problems.append(f"parameter {path!r}: {err['msg']} (got {_shown(err.get('input'))})")
    listing = ", ".join(declared) or "none"
    return TaskError(
        reason=FailureReason.INPUT_VALIDATION_FAILURE,
        message=join_sentences(
            f"Invalid inputs for template {template.name!r}: {'; '.join(problems)}", f"Declared parameters: {listing}"
        ),
        details={"params": sorted(set(params)), "errors": [str(p) for p in problems]},
    )


def _shown(value: Any, limit: int = 120) -> str:
    """A value as a message quotes it: bytes by their size only (an image's bytes never reach a message or a log)."""
    if isinstance(value, bytes | bytearray | memoryview):
        return f"{len(value):,} bytes"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
                raise RenderError(ph.text, ph.param, field, list(fields))
            value = getattr(value, field)
        elif isinstance(value, Mapping):
            if field not in value:
                raise RenderError(ph.text, ph.param, field, [str(k) for k in value])
            value = value[field]
        else:
            raise RenderError(ph.text, ph.param, field, [])
    return value


def format_value(value: Any) -> str:
    """A value as it is inserted into text: a string as it is, a model or anything else as JSON (never a repr)."""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return pydantic_core.to_json(value).decode()
