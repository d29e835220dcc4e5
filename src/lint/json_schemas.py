"""The output JSON Schema the rules read: what `cls.model_json_schema()` returns, made with less overhead.

A check makes one JSON Schema per output class (a thousand schemas, a thousand generators), and
pydantic's `GenerateJsonSchema` spends a good part of each on work that does not depend on the
schema: every instance builds its table of ~65 handler methods, and holds it as bound methods, a
cycle that only the collector frees; every default value is serialised through a new `TypeAdapter`.
`CheckJsonSchema` is the same generator (the same output, pinned by the tests) without that work:
the handler table is looked up by name (kept per class) and holds no reference to the instance, and
a default that JSON already represents as itself (`None`, a string, a boolean, an integer) is used
as it is, which is what the `TypeAdapter` would have returned.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, ClassVar

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue

__all__ = ["CheckJsonSchema", "output_json_schema"]

_AS_IS = (str, bool, int)  # exact types: JSON mode serialises these values unchanged
_PYDANTICS = getattr(BaseModel.model_json_schema, "__func__", None)  # the classmethod's function


class CheckJsonSchema(GenerateJsonSchema):
    """`GenerateJsonSchema` with its per-instance set-up cut (see the module's docstring); same output."""

    _handler_names: ClassVar[dict[str, str] | None] = None

    def build_schema_type_to_method(self) -> dict[Any, Callable[[Any], JsonSchemaValue]]:
        names = type(self)._handler_names
        if names is None:
            table = super().build_schema_type_to_method()  # the first instance: pydantic's own table
            names = {key: f"{key.replace('-', '_')}_schema" for key in table}  # the names it looked up
            type(self)._handler_names = names
        return _BoundOnLookup(self, names)

    def encode_default(self, dft: Any) -> Any:
        if dft is None or type(dft) in _AS_IS:
            return dft
        return super().encode_default(dft)


class _BoundOnLookup(dict[Any, Callable[[Any], JsonSchemaValue]]):
    """A handler table that binds the handler when it is looked up: no reference from the table to the generator."""

    __slots__ = ("_names", "_owner")

    def __init__(self, owner: GenerateJsonSchema, names: dict[str, str]) -> None:
        super().__init__()
        self._owner = weakref.ref(owner)
        self._names = names

    def __missing__(self, key: Any) -> Callable[[Any], JsonSchemaValue]:
        owner = self._owner()
        if owner is None or key not in self._names:
            raise KeyError(key)
        method: Callable[[Any], JsonSchemaValue] = getattr(owner, self._names[key])
        return method


def output_json_schema(cls: type[BaseModel]) -> dict[str, Any]:
    """`cls.model_json_schema()`: the one a JSON Schema class was built with, else through `CheckJsonSchema`.

    A class that makes its own (`model_json_schema` overridden) is asked for it as it is.
    """
    made = cls.__dict__.get("json_schema_generated")
    if isinstance(made, dict):
        return made
    if getattr(cls.model_json_schema, "__func__", None) is not _PYDANTICS:
        return cls.model_json_schema()
    return cls.model_json_schema(schema_generator=CheckJsonSchema)
