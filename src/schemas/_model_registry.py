"""The `ModelRegistry`: names for the Pydantic classes templates declare as their output, and the built-in ones.

Every `TaskSystem` registers the output classes of the templates atomtask ships (what the memory
system's `associative_match` answers) when it is built (`register_builtin_schemas`), so the shipped
`templates/associative_match.yaml` resolves wherever `templates/` is loaded:

- under reserved names, `atomtask.AssociativeMatchResult` and `atomtask.MatchItem`, which no user
  schema can take (a schema name is an identifier) and which the shipped template uses;
- under their plain names, `AssociativeMatchResult` and `MatchItem`, as defaults: a user who declares
  or registers a schema of that name gets their own class under it, without a duplicate-name error,
  and the memory system goes on using these.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from atomtask._paths import env_importable
from atomtask._registry import Registry
from atomtask.errors import DuplicateNameError, SchemaError, SourceLocation
from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from atomtask.schemas.json_schema._models import JsonSchemaResources

__all__ = [
    "BUILTIN_PREFIX",
    "BUILTIN_SCHEMAS",
    "AssociativeMatchResult",
    "MatchItem",
    "ModelRegistry",
    "register_builtin_schemas",
]

M = TypeVar("M", bound=type[BaseModel])


class ModelRegistry(Registry[type[BaseModel]]):
    """Maps schema names to Pydantic classes.

    Example:
        ```python
        registry = ModelRegistry()
        registry.register(Contact)          # registered as "Contact"
        registry.register(Contact, "Person")
        registry.get("Contact") is Contact
        ```
    """

    kind = "schema"
    unknown = SchemaError

    def __init__(self, *, importable: Iterable[str] = ()) -> None:
        super().__init__()
        self._locations: dict[str, SourceLocation | None] = {}
        self._overridable: set[str] = set()
        #: Packages whose code declarations may name by import path (`schema: {python: "pkg.mod:Cls"}`, tools,
        #: `call:` steps): the given ones and `$ATOMTASK_IMPORTABLE`'s.
        self.importable: tuple[str, ...] = (*importable, *env_importable())
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
        from atomtask.schemas.json_schema._models import JsonSchemaResources

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
            existing = self._entries.get(key)
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
            self._entries[key] = cls
            self._locations[key] = location
            if overridable:
                self._overridable.add(key)
            else:
                self._overridable.discard(key)
        return cls

    def get(self, name: str) -> type[BaseModel]:
        """The class registered under `name`; raises `SchemaError` with near names if there is none."""
        return self._entry(name)

    def location_of(self, name: str) -> SourceLocation | None:
        """Where the schema `name` was declared, when it came from a file."""
        return self._locations.get(name)


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


BUILTIN_PREFIX = "atomtask."
"""The reserved names of the built-in classes are their class names after this prefix."""


class MatchItem(BaseModel):
    """One stored document the model judged relevant to the query."""

    # Models often answer an id such as "42" as the number 42; the id is still the string.
    model_config = ConfigDict(coerce_numbers_to_str=True)

    id: str = Field(description="The id of a candidate document, copied exactly from its `<document id=...>` tag.")
    # The reason comes before the score, so the model writes its reasoning before it scores.
    reason: str = Field(description="One sentence on why the document is relevant.")
    relevance_score: float = Field(
        ge=0, le=1, description="How relevant the document is to the query, from 0 (not at all) to 1 (exactly)."
    )


class AssociativeMatchResult(BaseModel):
    """The documents relevant to a query, most relevant first, with a summary of what they say about it."""

    context_summary: str = Field(
        description="Two or three sentences: what the relevant documents say about the query ('' if none is relevant)."
    )
    # Required, without a default: OpenAI's strict mode asks every field to be required.
    matches: list[MatchItem] = Field(description="The relevant candidates, most relevant first; empty when none is.")


BUILTIN_SCHEMAS: tuple[type[BaseModel], ...] = (MatchItem, AssociativeMatchResult)
"""Output classes of the shipped templates, registered in every `TaskSystem` (see `register_builtin_schemas`)."""


def register_builtin_schemas(models: ModelRegistry) -> None:
    """Register the built-in classes under their reserved names, and under their plain names as defaults."""
    for cls in BUILTIN_SCHEMAS:
        models.register(cls, BUILTIN_PREFIX + cls.__name__)
        models.register(cls, overridable=True)
