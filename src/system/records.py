"""atomtask's own records (attempts, notes, results) built from values it has already typed, unvalidated.

Every task builds a `TaskResult`, its `TaskNotes`, an `Attempt` per answer and their `UsageNotes`
from values atomtask computed itself out of pydantic-ai's typed messages. Validating them again
only repeats work, and on the happy path that work ran with cold caches right after the model
call: it was the largest single part of atomtask's overhead over bare pydantic-ai. A builder from
`record_builder` sets what pydantic's `model_construct` sets (the fields in their declared order,
defaults filled in, and the set of fields given) at a fraction of the cost of a validation;
`model_construct` itself costs more than validating (it inspects each default factory it calls).

Only for models without validators, serializers, private attributes or extra fields, and without a
mutable default (`record_builder` refuses others). Callers pass values of the declared types: a
nested record as an instance, a `StrEnum` as its text. `tests/test_records.py` holds the builders
to the same records as validation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["record_builder"]

M = TypeVar("M", bound=BaseModel)

_new = object.__new__
_set = object.__setattr__
_MISSING: Any = object()  # a required field's place in the declared order, until the caller's value fills it


def record_builder(cls: type[M]) -> Callable[[dict[str, Any]], M]:
    """A function making a `cls` from a dict of its fields (those left out take their defaults), without validation."""
    decorators = cls.__pydantic_decorators__
    hooks = (
        decorators.validators,
        decorators.field_validators,
        decorators.root_validators,
        decorators.model_validators,
        decorators.field_serializers,
        decorators.model_serializers,
    )
    if any(hooks) or cls.__pydantic_post_init__ is not None or cls.__private_attributes__:
        raise TypeError(f"{cls.__name__} has validators, serializers or private attributes: validate it instead.")
    if cls.model_config.get("extra") is not None:
        raise TypeError(f"{cls.__name__} sets `extra`: validate it instead.")
    ordered: dict[str, Any] = {}  # every field, in declared order: its default, or a placeholder
    factories: list[tuple[str, Callable[[], Any]]] = []
    for name, field in cls.model_fields.items():
        if field.default_factory is not None:
            factories.append((name, field.default_factory))  # type: ignore[arg-type]  # takes no argument here
            ordered[name] = _MISSING
        elif field.is_required():
            ordered[name] = _MISSING
        elif isinstance(field.default, list | dict | set):
            raise TypeError(f"{cls.__name__}.{name} has a mutable default: give it a default_factory.")
        else:
            ordered[name] = field.default

    def build(fields: dict[str, Any]) -> M:
        values = {**ordered, **fields}  # a key keeps its first place: the declared order, as validation gives
        if factories:
            for name, factory in factories:
                if name not in fields:
                    values[name] = factory()
        record = _new(cls)
        _set(record, "__dict__", values)
        _set(record, "__pydantic_fields_set__", set(fields))
        _set(record, "__pydantic_extra__", None)
        _set(record, "__pydantic_private__", None)
        return record

    return build
