"""Schema declarations as read from configuration: YAML field schemas, JSON Schemas, Python classes.

Plain data (pydantic models that are also the file format); checking them and building classes from
them happens in `_fields` (YAML fields), `json_schema` (JSON Schema) and `_sources` (Python classes).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeAlias

from atomtask.errors import SourceLocation
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StrictBool, StrictFloat, StrictInt, StrictStr

__all__ = ["FieldDef", "JsonSchemaDef", "PythonSchemaDef", "SchemaDef", "canonical"]

_Count = Annotated[StrictInt, Field(ge=0)]
_Bound: TypeAlias = StrictInt | StrictFloat


class _Declaration(BaseModel):
    """A declaration read from configuration: it may know where it came from; equality ignores that."""

    model_config = ConfigDict(extra="forbid")

    _location: SourceLocation | None = PrivateAttr(default=None)

    @property
    def location(self) -> SourceLocation | None:
        """Where it is declared, when it came from a file (set by the loader)."""
        return self._location

    @location.setter
    def location(self, location: SourceLocation | None) -> None:
        self._location = location

    def content(self) -> dict[str, Any]:
        """The declaration without locations: what equality and the class cache compare."""
        return self.model_dump()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Declaration) or type(other) is not type(self):
            return NotImplemented
        return canonical(self.content()) == canonical(other.content())

    __hash__ = None  # type: ignore[assignment]  # mutable, like any non-frozen model


class FieldDef(_Declaration):
    """One field of a named schema: `{name, type, description, default, enum, constraints, fields}`.

    `default` absent and `default: null` differ: the second gives the field a default (None).
    """

    name: str
    type: str = "str"
    description: str | None = None
    default: Any = None
    enum: list[StrictBool | StrictInt | StrictFloat | StrictStr] | None = None
    ge: _Bound | None = None
    gt: _Bound | None = None
    le: _Bound | None = None
    lt: _Bound | None = None
    min_length: _Count | None = None
    max_length: _Count | None = None
    pattern: str | None = None
    #: A JSON Schema `format` (`email`, `uri`, `date-time`, `uuid`, ...), enforced on `str` fields.
    format: str | None = None
    min_items: _Count | None = None
    max_items: _Count | None = None
    #: `required: true` on an optional type (`str?`): the key must be given, though its value may be null
    #: (no default). OpenAI's strict mode asks this of every field.
    required: StrictBool | None = None
    #: The fields of a nested object: `type: object` (or `list[object]`, `object?`) with `fields:` under it.
    fields: list[FieldDef] | None = None

    @property
    def has_default(self) -> bool:
        """Whether `default` was given (even as None)."""
        return "default" in self.model_fields_set

    def content(self) -> dict[str, Any]:
        nested = None if self.fields is None else [f.content() for f in self.fields]
        return {**self.model_dump(exclude={"fields"}), "fields": nested, "has_default": self.has_default}


class SchemaDef(_Declaration):
    """A named schema: a class name, a description, and at least one field."""

    name: str
    description: str | None = None
    fields: list[FieldDef]

    def content(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "fields": [f.content() for f in self.fields],
        }


def canonical(value: Any) -> str:
    """A text that differs whenever the values differ (`1`, `1.0` and `true` included)."""
    try:
        return json.dumps(value, sort_keys=True, default=repr)
    except (TypeError, ValueError):  # keys of mixed types cannot be sorted
        return repr(value)


class JsonSchemaDef(_Declaration):
    """A named schema given as JSON Schema: `{name, description, json_schema, strict_schema}`.

    `base_uri` is where relative `$ref`s resolve from (a `.json` file's own URI); it is set by the
    loader and is not part of the YAML format.
    """

    name: str
    description: str | None = None
    json_schema: dict[str, Any] | bool
    #: Refuse at load what would only be a warning (a keyword that looks misspelt, a `format` nothing checks).
    strict_schema: StrictBool = False
    base_uri: str | None = Field(default=None, exclude=True)

    _places: Mapping[str, SourceLocation] | Callable[[], Mapping[str, SourceLocation]] | None = PrivateAttr(
        default=None
    )

    def set_places(self, places: Mapping[str, SourceLocation] | Callable[[], Mapping[str, SourceLocation]]) -> None:
        """Where the parts of `json_schema` are, by unescaped JSON Pointer (or a function working it out once)."""
        self._places = places

    def location_at(self, pointer: str) -> SourceLocation | None:
        """Where the part at `pointer` (`/properties/age`) is declared: the nearest enclosing part that is known.

        Falls back to the declaration's `location` when no part is known (a schema not read from a file).
        """
        places = self._places
        if callable(places):
            places = self._places = places()
        if places:
            parts = pointer.rstrip("/").split("/") if pointer not in ("", "/") else [""]
            while parts:
                found = places.get("/".join(parts))
                if found is not None:
                    return found
                parts.pop()
        return self.location


class PythonSchemaDef(_Declaration):
    """A named schema that is a Python class: `{name, python: "package.module:Class"}`."""

    name: str
    python: str
