"""`ModelAliases`: names for models, resolved wherever a model is named.

A model alias maps a name to a model string or a pydantic-ai `Model` instance. The name is a role
(`fast`, `strong`) or a full model string (`anthropic:claude-sonnet-4-5`): the second kind stands a
`FunctionModel` in for the model a template, a step, `retry_with` or `fallbacks` names, so a test sees
what that model was asked without the network. Aliases come from declaration files (`models:` in YAML,
`(defmodels ...)` in `.sexp`, read as `ModelAliasDef`s) and from code (`TaskSystem(model_aliases=...)`,
`ModelAliases.add`). What code gives wins over what a file declares under the same name (a test swaps
`fast` for a scripted model without editing the files); two files declaring one name differently are
refused, as two templates are.

A target may be another alias: chains are followed (`strong` -> `anthropic:claude-sonnet-4-5` -> a
`FunctionModel`) and a cycle is refused where it is declared. Every target is checked when it is added:
a model string names a known provider, a name without a prefix is an alias. What a name resolves to is
decided at each call (`resolve`), so aliases added after a template was registered still apply.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, TypeGuard

import attrs
from atomtask.errors import ConfigurationError, DuplicateNameError, SourceLocation, did_you_mean, near_names
from atomtask.loading._providers import check_model_string, provider_of

if TYPE_CHECKING:
    from pydantic_ai.models import Model

__all__ = ["ModelAliasDef", "ModelAliases"]

# A role name: what `--model fast` and `model: fast` can carry unquoted, and never a model string.
_ALIAS_NAME = re.compile(r"[A-Za-z_][\w.\-]*")


@attrs.frozen(kw_only=True)
class ModelAliasDef:
    """One model alias as a declaration file declares it: `fast: "openai-chat:gpt-4o-mini"`."""

    name: str
    target: str
    #: Where its target is written.
    location: SourceLocation | None = None


@attrs.frozen(kw_only=True)
class _Entry:
    target: Model | str
    location: SourceLocation | None
    from_code: bool


class ModelAliases(Mapping[str, "Model | str"]):
    """Model names and what each stands for (a model string, another alias, or a `Model` instance).

    A mapping from each name to its target as given; `resolve(name)` follows the chain to the model.

    Example:
        ```python
        aliases = ModelAliases({"fast": "openai-chat:gpt-4o-mini", "cheap": "fast"})
        assert "openai-chat:gpt-4o-mini" == aliases.resolve("cheap")
        ```
    """

    def __init__(self, aliases: Mapping[str, Model | str] | None = None) -> None:
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        #: Counts the changes, so what was resolved before one is known to be stale.
        self.version = 0
        if aliases:
            self.add(aliases)

    def __getitem__(self, name: str) -> Model | str:
        return self._entries[name].target

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"ModelAliases({ {name: self._entries[name].target for name in self}!r})"

    def location_of(self, name: str) -> SourceLocation | None:
        """Where alias `name` was declared (None for an alias given in code)."""
        entry = self._entries.get(name)
        return entry.location if entry is not None else None

    def resolve(self, model: str) -> Model | str:
        """The model `model` stands for, through every alias in the chain; `model` itself when it is no alias."""
        entries = self._entries
        target: Model | str = model
        for _ in range(len(entries) + 1):  # chains were checked for cycles when added
            if not isinstance(target, str):
                return target
            entry = entries.get(target)
            if entry is None:
                return target
            target = entry.target
        return target  # pragma: no cover - a cycle is refused when it is added

    def add(self, aliases: Mapping[str, Model | str], *, where: str = "`model_aliases=`") -> None:
        """Add aliases from code (`{"fast": "openai-chat:gpt-4o-mini", "anthropic:claude-sonnet-4-5": model}`).

        An alias given again replaces the old one, whoever declared it. Raises `ConfigurationError` (and
        adds none of them) for a name that is neither a role name nor a model string, a model string with
        an unknown provider, a name without a prefix that is no alias, a cycle, or a target of another type.
        """
        if not isinstance(aliases, Mapping):
            raise ConfigurationError(
                f"{where} must be a mapping of model names to model strings or pydantic-ai `Model` instances, "
                f'such as `{{"fast": "openai-chat:gpt-4o-mini"}}`; got {type(aliases).__name__}.'
            )
        with self._lock:
            entries = dict(self._entries)
            for name, target in aliases.items():
                _check_name(name, where, None)
                checked = _checked_target(target, f"model alias {name!r} of {where}", None)
                entries[name] = _Entry(target=checked, location=None, from_code=True)
            _check_chains(entries, list(aliases))
            self._commit(entries)

    def declare(self, definitions: Iterable[ModelAliasDef]) -> None:
        """Add the aliases a declaration file declares, each checked where it is written.

        A name code gave already keeps the code's target; a name another declaration gave a different
        target raises `DuplicateNameError` naming both places; the same declaration read again is a
        no-op. Raises `ConfigurationError` at the declaration for a bad name, target or cycle.
        """
        with self._lock:
            entries = dict(self._entries)
            added: list[str] = []
            for definition in definitions:
                name, location = definition.name, definition.location
                _check_name(name, "`models:`", location)
                target = _checked_target(definition.target, f"model alias {name!r}", location)
                existing = entries.get(name)
                if existing is not None and (existing.from_code or existing.target == target):
                    continue
                if existing is not None:
                    at = f" at {existing.location}" if existing.location is not None else ""
                    raise DuplicateNameError(
                        f"Model alias {name!r} is already declared{at} as {existing.target!r}; here it is "
                        f"{target!r}. Keep one of them, or rename one.",
                        location=location,
                    )
                entries[name] = _Entry(target=target, location=location, from_code=False)
                added.append(name)
            _check_chains(entries, added)
            self._commit(entries)

    def _commit(self, entries: dict[str, _Entry]) -> None:
        if entries != self._entries:
            self._entries = entries  # replaced whole: a reader never sees half of a change
            self.version += 1


def _check_name(name: object, where: str, location: SourceLocation | None) -> None:
    if not isinstance(name, str):
        raise ConfigurationError(
            f"A model alias name in {where} must be a string, got {type(name).__name__} {name!r}.", location=location
        )
    if ":" in name or name == "test":  # a model string named to stand for another model
        check_model_string(name, where=f"the name of a model alias in {where}", location=location)
    elif not _ALIAS_NAME.fullmatch(name):
        raise ConfigurationError(
            f"Model alias name {name!r} in {where} is not a name: start with a letter or `_`, then letters, digits, "
            "`_`, `-` or `.` (`fast`, `gpt-strong`), or write a full model string (`provider:model-name`).",
            location=location,
        )


def _checked_target(target: object, where: str, location: SourceLocation | None) -> Model | str:
    """`target` when it is a model string with a known provider, a name (checked with the chain) or a `Model`."""
    if isinstance(target, str):
        if provider_of(target) is not None or target == "test":
            check_model_string(target, where=where, location=location)
        return target
    if _is_model(target):
        return target
    raise ConfigurationError(
        f"The target of {where} is {type(target).__name__} {target!r}; give a model string "
        "(`provider:model-name`), another alias's name, or a pydantic-ai `Model` instance.",
        location=location,
    )


def _is_model(value: object) -> TypeGuard[Model]:
    """Whether `value` is a pydantic-ai `Model` (imported only when something else than a string is given)."""
    from pydantic_ai.models import Model

    return isinstance(value, Model)


def _check_chains(entries: Mapping[str, _Entry], names: Iterable[str]) -> None:
    """Every chain from `names` ends at a model: no name without a prefix that is no alias, no cycle."""
    for name in names:
        seen = [name]
        entry = entries[name]
        target = entry.target
        while isinstance(target, str) and target in entries:
            if target in seen:
                cycle = " -> ".join([*seen[seen.index(target) :], target])
                raise ConfigurationError(
                    f"Model alias {name!r} goes round in a cycle ({cycle}): make one of them stand for a model "
                    "string (`provider:model-name`).",
                    location=entry.location,
                )
            seen.append(target)
            target = entries[target].target
        if isinstance(target, str) and provider_of(target) is None and target != "test":
            plain = [n for n in entries if ":" not in n]
            raise ConfigurationError(
                f"Model alias {seen[-1]!r} stands for {target!r}, which is neither a model alias nor a "
                f"model string.{did_you_mean(target, plain)} Write a model string (`provider:model-name`, for "
                f"example `openai-chat:gpt-4o-mini`) or declare {target!r} as an alias too.",
                location=entries[seen[-1]].location,
                suggestions=near_names(target, plain),
            )
