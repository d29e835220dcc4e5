"""The exception hierarchy.

Two roots, as in pydantic-ai: a *usage* error means the developer's template, schema, file or call
is wrong and is raised at load or registration time, before any model is called; a *run* failure
(the model or provider failed) is not raised by `execute` but reported in a FAILED `TaskResult`,
and only `TaskResult.unwrap()` turns it into a `TaskFailedError` (which lives beside `TaskResult` in
`atomtask.system.results`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

import attrs

__all__ = [
    "AtomTaskError",
    "ConfigurationError",
    "DuplicateNameError",
    "SchemaError",
    "SourceLocation",
    "TemplateError",
    "TemplateNotFoundError",
    "UsageError",
    "did_you_mean",
    "near_names",
]


@attrs.frozen(kw_only=True)
class SourceLocation:
    """Where a declaration came from: a file (or `<string>`), and a 1-based line and column."""

    file: str | None = None
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        parts = [self.file or "<string>"]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)


def near_names(name: str, candidates: Iterable[str], *, n: int = 3, cutoff: float = 0.6) -> list[str]:
    """Known names close to `name`, best first, compared case-insensitively."""
    by_folded: dict[str, str] = {}
    for candidate in candidates:
        by_folded.setdefault(candidate.lower(), candidate)
    matches = difflib.get_close_matches(name.lower(), list(by_folded), n=n, cutoff=cutoff)
    return [by_folded[m] for m in matches]


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """A ` Did you mean 'x'?` suffix, or an empty string when nothing is close."""
    close = near_names(name, candidates)
    if not close:
        return ""
    if len(close) == 1:
        return f" Did you mean {close[0]!r}?"
    return " Did you mean " + " or ".join(repr(c) for c in close) + "?"


class AtomTaskError(Exception):
    """Base class of every exception atomtask raises."""


class UsageError(AtomTaskError):
    """The developer's declaration or call is wrong; raised before any model is called.

    Attributes:
        message: what is wrong and how to fix it.
        location: where the offending declaration is, when it came from a file or source text.
        suggestions: near names for "did you mean", best first.
    """

    def __init__(
        self,
        message: str,
        *,
        location: SourceLocation | None = None,
        suggestions: Iterable[str] = (),
    ) -> None:
        self.message = message
        self.location = location
        self.suggestions = list(suggestions)
        super().__init__(self._render())

    def _render(self) -> str:
        if self.location is None:
            return self.message
        return f"{self.location}: {self.message}"

    def with_location(self, location: SourceLocation | None) -> UsageError:
        """A copy of this error that points at `location` (kept when it already has one)."""
        if self.location is not None or location is None:
            return self
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.location = location
        Exception.__init__(clone, clone._render())
        return clone


class TemplateError(UsageError):
    """A template is invalid: an undeclared placeholder, a bad parameter, a malformed field."""


class SchemaError(UsageError):
    """A schema is invalid or cannot be resolved: an unknown name, a bad type string."""


class ConfigurationError(UsageError):
    """Settings are wrong: an unknown provider in a model string, a missing provider package."""


class DuplicateNameError(UsageError):
    """A template or schema name is already taken by a different definition."""


class TemplateNotFoundError(UsageError, LookupError):
    """No template is registered under the requested name."""
