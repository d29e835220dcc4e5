"""Collecting every problem of one workflow (for `atomtask check`), each located at its part of the declaration."""

from __future__ import annotations

from collections.abc import Iterable

import attrs
from atomtask.system.errors import SourceLocation
from atomtask.system.workflow_errors import WorkflowError
from atomtask.system.workflows import Workflow

__all__ = ["Problems", "shift"]


def shift(location: SourceLocation | None, offset: int | None) -> SourceLocation | None:
    """`location` moved `offset` characters right, when both its column and the offset are known."""
    if location is None or offset is None or location.column is None:
        return location
    return SourceLocation(file=location.file, line=location.line, column=location.column + offset)


@attrs.define
class Problems:
    """The problems found so far in `workflow`, in the order found (a key is reported once)."""

    workflow: Workflow
    errors: list[WorkflowError] = attrs.field(factory=list)
    _seen: set[tuple[str, str]] = attrs.field(factory=set)

    def add(
        self,
        kind: type[WorkflowError],
        message: str,
        where: str,
        *,
        step: str | None = None,
        offset: int | None = None,
        suggestions: Iterable[str] = (),
    ) -> None:
        """Note one problem at the declaration path `where` (`steps.2.inputs.topic`), `offset` into its text."""
        key = (kind.code, message)
        if key in self._seen:
            return
        self._seen.add(key)
        location = shift(self.workflow.location_of(where), offset)
        self.errors.append(
            kind(message, location=location, suggestions=suggestions, workflow=self.workflow.name, step=step)
        )

    def adopt(self, error: WorkflowError, where: str, *, step: str | None = None, prefix: str = "") -> None:
        """Note an error raised by a helper (a parser), locating it at `where` plus its own offset."""
        offset = getattr(error, "offset", None)
        self.add(type(error), prefix + error.message, where, step=step, offset=offset, suggestions=error.suggestions)

    def __bool__(self) -> bool:
        return bool(self.errors)
