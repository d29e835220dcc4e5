"""The values a script computes with that are not data, and the names that bind them.

`TaskFunction` (what `defatom` binds and a template's name evaluates to), `WorkflowFunction` (what
a registered workflow's name evaluates to), `Builtin` (a function of the language), `Closure` (what
`lambda` makes) and `Environment`, the chain of frames that `let` and each function call open.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs
from atomtask.sexp.reader import Node, SList
from atomtask.system.errors import SourceLocation

__all__ = ["MISSING", "Builtin", "Closure", "Environment", "TaskFunction", "WorkflowFunction"]


@attrs.frozen
class TaskFunction:
    """The value `defatom` binds: calling it runs the task of that name."""

    name: str

    def __str__(self) -> str:
        return f"<task {self.name}>"


@attrs.frozen
class WorkflowFunction:
    """What a registered workflow's name evaluates to: calling it runs the workflow of that name."""

    name: str

    def __str__(self) -> str:
        return f"<workflow {self.name}>"


@attrs.frozen
class Builtin:
    """A function of the language; its arguments are evaluated, in order."""

    name: str
    fn: Callable[[list[Any], SList], Any] = attrs.field(repr=False)

    def __str__(self) -> str:
        return f"<builtin {self.name}>"


@attrs.frozen(eq=False)
class Closure:
    """A function made by `(lambda (param...) body...)`: its body runs in a frame over the one it was made in."""

    params: tuple[str, ...]
    body: tuple[Node, ...] = attrs.field(repr=False)
    env: Environment = attrs.field(repr=False)
    location: SourceLocation
    #: The name it was first bound to (`define`, `let`), for messages.
    name: str | None = None

    def __str__(self) -> str:
        return f"<function {self.name}>" if self.name else f"<lambda at {self.location}>"

    def signature(self) -> str:
        """How a printed value shows it: `<function square (n)>`, or `<function (y)>` for a lambda."""
        name = f" {self.name}" if self.name else ""
        return f"<function{name} ({' '.join(self.params)})>"

    def label(self) -> str:
        """How messages name it: `function 'f'` or `lambda at file:line:col`."""
        return f"function {self.name!r}" if self.name else f"lambda at {self.location}"


MISSING = object()


class Environment:
    """Names bound to values, in a chain of frames (each `let` opens one)."""

    def __init__(self, bindings: Mapping[str, Any] | None = None, parent: Environment | None = None) -> None:
        self._values: dict[str, Any] = dict(bindings or {})
        self._parent = parent

    def lookup(self, name: str) -> Any:
        """The value bound to `name` here or in an enclosing frame, else a private sentinel."""
        env: Environment | None = self
        while env is not None:
            if name in env._values:
                return env._values[name]
            env = env._parent
        return MISSING

    def define(self, name: str, value: Any) -> None:
        """Bind `name` in this frame."""
        self._values[name] = value

    def frame_of(self, name: str) -> Environment | None:
        """The nearest frame that binds `name` (this one or an enclosing one), else None."""
        env: Environment | None = self
        while env is not None:
            if name in env._values:
                return env
            env = env._parent
        return None

    @property
    def is_root(self) -> bool:
        """True for the outermost frame (the builtins)."""
        return self._parent is None

    def names(self) -> set[str]:
        """Every name visible from this frame."""
        env: Environment | None = self
        found: set[str] = set()
        while env is not None:
            found.update(env._values)
            env = env._parent
        return found
