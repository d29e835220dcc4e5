"""`Declarations`: the templates, schemas, workflows and model aliases a reader got from a file."""

from __future__ import annotations

import attrs
from atomtask.errors import DuplicateNameError, SourceLocation
from atomtask.loading._model_aliases import ModelAliasDef
from atomtask.schemas._declarations import JsonSchemaDef, PythonSchemaDef, SchemaDef
from atomtask.system._templates import Template
from atomtask.system._workflows import Workflow

__all__ = ["Declarations", "PartialTemplate", "Skipped", "reject_duplicate_schemas"]


@attrs.frozen(kw_only=True)
class Skipped:
    """A file (or part of one) that was read but is not a declaration, and why; `atomtask check` warns."""

    message: str
    location: SourceLocation


@attrs.frozen(kw_only=True)
class PartialTemplate:
    """A template whose file has shape mistakes (the reader reported them), read without the keys in error.

    What is left still goes through the registration checks in `atomtask check`, so one run reports a
    misplaced `temperature:` and a bad default of the same template; it is never registered. `dropped`
    names the keys left out (a parameter whose declaration was wrong is kept as `params.NAME`, typed `any`).
    """

    template: Template
    dropped: frozenset[str]


@attrs.frozen(kw_only=True)
class Declarations:
    """Templates, named schemas, workflows and model aliases read from files, in file order.

    `invalid_schemas` names the schemas a reader found declared but could not read (their errors are
    the reader's); `skipped` lists what was read and deliberately not taken as a declaration;
    `model_aliases` are the `models:` entries (registered before the templates that may name them);
    `partial_templates` are the templates read despite shape mistakes, for `atomtask check` only.
    """

    templates: list[Template] = attrs.field(factory=list)
    schemas: list[SchemaDef] = attrs.field(factory=list)
    json_schemas: list[JsonSchemaDef] = attrs.field(factory=list)
    python_schemas: list[PythonSchemaDef] = attrs.field(factory=list)
    invalid_schemas: dict[str, SourceLocation | None] = attrs.field(factory=dict)
    skipped: list[Skipped] = attrs.field(factory=list)
    workflows: list[Workflow] = attrs.field(factory=list)
    model_aliases: list[ModelAliasDef] = attrs.field(factory=list)
    partial_templates: list[PartialTemplate] = attrs.field(factory=list)

    def extend(self, other: Declarations) -> None:
        self.templates.extend(other.templates)
        self.schemas.extend(other.schemas)
        self.json_schemas.extend(other.json_schemas)
        self.python_schemas.extend(other.python_schemas)
        for name, location in other.invalid_schemas.items():
            self.invalid_schemas.setdefault(name, location)
        self.skipped.extend(other.skipped)
        self.workflows.extend(other.workflows)
        self.model_aliases.extend(other.model_aliases)
        self.partial_templates.extend(other.partial_templates)


def reject_duplicate_schemas(schemas: list[SchemaDef]) -> None:
    """Raise `DuplicateNameError` when one schema name is declared twice with different contents."""
    seen: dict[str, SchemaDef] = {}
    for schema in schemas:
        first = seen.get(schema.name)
        if first is not None and first != schema:
            raise DuplicateNameError(
                f"Schema {schema.name!r} is declared twice, first at {first.location}; rename one of them.",
                location=schema.location,
            )
        seen[schema.name] = schema
