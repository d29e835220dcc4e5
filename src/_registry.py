"""`Registry`: things registered once under a name and looked up by it, with "did you mean" for a near name.

The base of the three registries a `TaskSystem` holds: the `ModelRegistry` (schemas), the
`TemplateRegistry` and the `WorkflowRegistry`. Each checks what it registers its own way; the names,
the lookup and the error for an unknown name (its class, the near names, what is registered) are here,
once. Registering takes a lock, so several threads may load declarations at once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import ClassVar, Generic, TypeVar

from atomtask.errors import UsageError, did_you_mean, near_names

__all__ = ["Registry"]

V = TypeVar("V")


class Registry(Generic[V]):
    """Entries by name. Subclasses name what they hold (`kind`) and the error an unknown name raises."""

    #: What an entry is called in messages: `"schema"`, `"template"`, `"workflow"`.
    kind: ClassVar[str]
    #: The usage error a lookup of an unknown name raises (with the near names as `suggestions`).
    unknown: ClassVar[type[UsageError]]

    def __init__(self) -> None:
        self._entries: dict[str, V] = {}
        self._lock = threading.Lock()

    def names(self) -> list[str]:
        """The registered names, sorted."""
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)

    def _entry(self, name: str) -> V:
        """The entry under `name`; the registry's `unknown` error, naming near names, when there is none."""
        try:
            return self._entries[name]
        except KeyError:
            raise self._unknown(name) from None

    def _unknown(self, name: str) -> UsageError:
        known = self._entries
        return self.unknown(
            f"No {self.kind} named {name!r}.{did_you_mean(name, known)} "
            f"Registered {self.kind}s: {', '.join(sorted(known)) or 'none'}.",
            suggestions=near_names(name, known),
        )
