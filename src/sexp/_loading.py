"""Reading `.sexp` files as declarations, for `TaskSystem.load` and `atomtask check`.

`register` puts `read_declarations` in the loading layer's reader registry; the package metadata
names it in the `atomtask.readers` entry-point group, so `.sexp` files are read wherever declaration
files are, without the loading layer importing this front end (nor this module the S-expression
reader, until a `.sexp` file is read).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from atomtask.loading._readers import register_reader
from atomtask.schemas._sources import read_source

if TYPE_CHECKING:
    # Imported when a `.sexp` file is read, not when the reader registers: they pull in pydantic.
    from atomtask.errors import UsageError
    from atomtask.loading._declarations import Declarations

__all__ = ["SEXP_SUFFIX", "read_declarations", "register"]

SEXP_SUFFIX = ".sexp"


def read_declarations(path: Path, errors: list[UsageError]) -> Declarations:
    """The `defschema`, `defatom`, `defworkflow` and `defmodels` forms of a `.sexp` file as `Declarations` (the reader).

    Only top-level declarations are read; the file's other forms are its script, which loading never
    runs. A bad declaration is noted in `errors` and reading goes on; unreadable source (not UTF-8, a
    syntax error) raises.
    """
    from atomtask.errors import SexpSyntaxError, UsageError
    from atomtask.loading._declarations import Declarations, PartialTemplate
    from atomtask.sexp._defmodels import model_aliases_from_form
    from atomtask.sexp._defworkflow import workflow_from_form
    from atomtask.sexp._evaluator import read_declared_template
    from atomtask.sexp._forms import schema_from_form
    from atomtask.sexp._reader import SList, Symbol, read

    out = Declarations()
    for form in read(read_source(path, error=SexpSyntaxError), str(path)):
        if not isinstance(form, SList):
            continue
        try:
            if form.head == "defatom":  # every mistake of the form, and what is left of it for `atomtask check`
                reading = read_declared_template(form)
                errors.extend(p for p in reading.problems if isinstance(p, UsageError))
                if reading.template is not None:
                    out.templates.append(reading.template)
                elif reading.partial is not None:
                    out.partial_templates.append(PartialTemplate(template=reading.partial, dropped=reading.dropped))
            elif form.head == "defschema":
                out.schemas.append(schema_from_form(form))
            elif form.head == "defworkflow":
                out.workflows.append(workflow_from_form(form))
            elif form.head == "defmodels":
                out.model_aliases.extend(model_aliases_from_form(form))
        except UsageError as exc:
            errors.append(exc)
            name = form.items[1] if len(form.items) > 1 else None
            if form.head == "defschema" and isinstance(name, Symbol):
                out.invalid_schemas.setdefault(name.name, form.location)
    return out


def register() -> None:
    """Read `.sexp` files with `read_declarations` (called through the `atomtask.readers` entry point)."""
    register_reader((SEXP_SUFFIX,), read_declarations)
