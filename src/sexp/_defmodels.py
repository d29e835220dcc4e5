"""`(defmodels (fast "openai-chat:gpt-4o-mini") ...)`: model aliases declared in S-expression source.

The form is YAML's `models:` mapping: each entry names an alias (a symbol, or a string for a full model
string standing for another model) and what it stands for (a model string, or another alias's name).
It is read as `ModelAliasDef`s, located at each target, and checked where they are added
(`ModelAliases.declare`), as YAML's are.
"""

from __future__ import annotations

from atomtask.errors import ConfigurationError
from atomtask.loading._model_aliases import ModelAliasDef
from atomtask.sexp._forms import describe
from atomtask.sexp._reader import Literal, SList, Symbol

__all__ = ["model_aliases_from_form"]

_EXAMPLE = '`(defmodels (fast "openai-chat:gpt-4o-mini") (strong "anthropic:claude-sonnet-4-5"))`'


def model_aliases_from_form(form: SList) -> list[ModelAliasDef]:
    """The aliases a `(defmodels (name "target") ...)` form declares, in order."""
    entries = form.items[1:]
    if not entries:
        raise ConfigurationError(f"`defmodels` declares no alias; write {_EXAMPLE}.", location=form.location)
    aliases: list[ModelAliasDef] = []
    for entry in entries:
        if not isinstance(entry, SList) or len(entry.items) != 2:
            raise ConfigurationError(
                f'Each entry of `defmodels` is `(name "model")`, found {describe(entry)}; write {_EXAMPLE}.',
                location=entry.location,
            )
        name, target = (_text(node) for node in entry.items)
        if name is None or target is None:
            raise ConfigurationError(
                f"A `defmodels` entry names an alias (a symbol or a string) and a model string, found "
                f"{describe(entry.items[0])} and {describe(entry.items[1])}; write {_EXAMPLE}.",
                location=entry.location,
            )
        aliases.append(ModelAliasDef(name=name, target=target, location=entry.items[1].location))
    return aliases


def _text(node: object) -> str | None:
    if isinstance(node, Symbol):
        return node.name
    if isinstance(node, Literal) and isinstance(node.value, str):
        return node.value
    return None
