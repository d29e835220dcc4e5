"""`--model` and `$ATOMTASK_MODEL` checked in the command line's terms: model strings at once, aliases once read.

A command checks the flag twice: before anything runs (a model string with an unknown provider stops it
there) and once its declaration files are read, when a name without a provider prefix must be one of
the model aliases they declare (`models:`), with "did you mean" over them.
"""

from __future__ import annotations

import os
from collections.abc import Collection

__all__ = ["MODEL_ENV", "check_model_flags"]

MODEL_ENV = "ATOMTASK_MODEL"


def check_model_flags(model: str | None, aliases: Collection[str] | None = None) -> None:
    """Refuse a bad `--model` (or, without one, a bad `$ATOMTASK_MODEL`) before anything runs.

    A name without a provider prefix may be a model alias the declaration files declare (`models:`):
    with `aliases` None (the files not read yet) it is let through, to be checked again once they are.
    """
    given: str | None = model
    where = "`--model`"
    if model is None:
        given, where = os.environ.get(MODEL_ENV), f"the `{MODEL_ENV}` environment variable"
    if not given or (aliases is None and ":" not in given and given != "test"):
        return
    from atomtask.loading._providers import check_model_string

    check_model_string(given, where=where, aliases=aliases or ())
