"""Reading `.sexp` files as declarations, for `TaskSystem.load` and `atomtask check`."""

from __future__ import annotations

from pathlib import Path

from atomtask.system.errors import UsageError
from atomtask.system.loader import Declarations

__all__ = ["SEXP_SUFFIX", "read_declarations"]

SEXP_SUFFIX = ".sexp"


def read_declarations(path: Path, errors: list[UsageError]) -> Declarations:
    """The `defschema` and `defatom` forms of a `.sexp` file as `Declarations` (the file reader).

    Only top-level declarations are read; the file's other forms are its script, which loading never
    runs. A bad declaration is noted in `errors` and reading goes on; unreadable source raises.
    """
    from atomtask.sexp.defatom import schema_from_form
    from atomtask.sexp.evaluator import declared_template
    from atomtask.sexp.reader import SList, read

    out = Declarations()
    for form in read(path.read_text(encoding="utf-8"), str(path)):
        if not isinstance(form, SList):
            continue
        try:
            if form.head == "defatom":
                out.templates.append(declared_template(form))
            elif form.head == "defschema":
                out.schemas.append(schema_from_form(form))
        except UsageError as exc:
            errors.append(exc)
    return out
