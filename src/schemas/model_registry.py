"""The `ModelRegistry`: names for the Pydantic classes that templates declare as their output."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from atomtask.system.errors import DuplicateNameError, SchemaError, SourceLocation, did_you_mean, near_names
from pydantic import BaseModel

if TYPE_CHECKING:
    from atomtask.schemas.json_models import JsonSchemaResources

__all__ = ["ModelRegistry"]

M = TypeVar("M", bound=type[BaseModel])


class ModelRegistry:
    """Maps schema names to Pydantic classes.

    Example:
        ```python
        registry = ModelRegistry()
        registry.register(Contact)          # registered as "Contact"
        registry.register(Contact, "Person")
        registry.get("Contact") is Contact
        ```
    """

    def __init__(self, *, importable: Iterable[str] = ()) -> None:
        self._classes: dict[str, type[BaseModel]] = {}
        self._locations: dict[str, SourceLocation | None] = {}
        self._overridable: set[str] = set()
        self._lock = threading.Lock()
        #: Packages whose classes templates may name by import path (`schema: {python: "pkg.mod:Cls"}`).
        self.importable: tuple[str, ...] = tuple(importable)
        self._json_documents: dict[str, Any] = {}
        self._json_resources: JsonSchemaResources | None = None

    def add_json_document(self, uri: str, contents: Any) -> None:
        """Make a JSON document available to JSON Schema `$ref`s under `uri` (nothing is ever fetched)."""
        with self._lock:
            self._json_documents[uri] = contents
            self._json_resources = None

    @property
    def json_resources(self) -> JsonSchemaResources:
        """The documents JSON Schema `$ref`s may point to (see `add_json_document`)."""
        from atomtask.schemas.json_models import JsonSchemaResources

        with self._lock:
            if self._json_resources is None:
                self._json_resources = JsonSchemaResources(documents=self._json_documents)
            return self._json_resources

    def register(
        self,
        cls: M,
        name: str | None = None,
        *,
        replace: bool = False,
        location: SourceLocation | None = None,
        overridable: bool = False,
    ) -> M:
        """Register `cls` under `name` (default: the class name); returns `cls`, so it works as a decorator.

        Registering the same class again is a no-op; a different class under a taken name raises
        `DuplicateNameError` unless `replace=True`, or unless the name was registered `overridable`
        (as the built-in classes' plain names are: a user's own `MatchItem` takes the name over). An
        `overridable` registration never displaces a class already under the name.
        """
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)):
            raise SchemaError(
                f"Only Pydantic model classes can be registered as schemas, got {cls!r}; "
                "subclass `pydantic.BaseModel`.",
                location=location,
            )
        key = name or cls.__name__
        with self._lock:
            existing = self._classes.get(key)
            if overridable and existing is not None:
                return cls  # the name is already someone's: a default gives way
            if existing is not None and existing is not cls and not replace and key not in self._overridable:
                where = self._locations.get(key)
                at = f" (registered at {where})" if where is not None else ""
                raise DuplicateNameError(
                    f"Schema name {key!r} is already registered to {_qualname(existing)}{at}; "
                    f"cannot register {_qualname(cls)} under it. Pick another name or pass `replace=True`.",
                    location=location,
                )
            self._classes[key] = cls
            self._locations[key] = location
            if overridable:
                self._overridable.add(key)
            else:
                self._overridable.discard(key)
        return cls

    def get(self, name: str) -> type[BaseModel]:
        """The class registered under `name`; raises `SchemaError` with near names if there is none."""
        try:
            return self._classes[name]
        except KeyError:
            raise SchemaError(
                f"Unknown schema {name!r}.{did_you_mean(name, self._classes)} "
                f"Registered: {', '.join(sorted(self._classes)) or 'none'}.",
                suggestions=near_names(name, self._classes),
            ) from None

    def location_of(self, name: str) -> SourceLocation | None:
        """Where the schema `name` was declared, when it came from a file."""
        return self._locations.get(name)

    def names(self) -> list[str]:
        """The registered names, sorted."""
        return sorted(self._classes)

    def __contains__(self, name: object) -> bool:
        return name in self._classes

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._classes)


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"
