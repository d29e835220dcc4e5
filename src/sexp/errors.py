"""The errors of the S-expression front end, under atomtask's two roots.

A syntax error is a *usage* error (the source text is wrong; nothing ran). An evaluation error is
raised while a script runs (an unbound name, a wrong argument, a missing field) and is its own
`AtomTaskError`; `(unwrap r)` on a FAILED result raises `SexpTaskFailedError` (a task's) or
`SexpWorkflowFailedError` (a workflow run's), which carries the result. Every one of them names the
file, line and column of the offending form.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from atomtask.system.errors import AtomTaskError, SourceLocation, UsageError

if TYPE_CHECKING:
    from atomtask.system.results import TaskResult
    from atomtask.system.workflow_results import WorkflowResult

__all__ = ["SexpEvalError", "SexpSyntaxError", "SexpTaskFailedError", "SexpWorkflowFailedError"]


class SexpSyntaxError(UsageError):
    """S-expression source that cannot be read: an unclosed `(`, a stray `)`, a bad string or escape."""


class SexpEvalError(AtomTaskError):
    """A script failed while being evaluated: an unbound symbol, a bad special form, a missing field.

    Attributes:
        message: what is wrong and how to fix it.
        location: the file, line and column of the form being evaluated.
    """

    def __init__(self, message: str, *, location: SourceLocation | None = None) -> None:
        self.message = message
        self.location = location
        super().__init__(f"{location}: {message}" if location is not None else message)


class SexpTaskFailedError(SexpEvalError):
    """`(unwrap r)` met a FAILED `TaskResult`; the whole result (error, raw outputs, usage) rides along.

    Attributes:
        result: the failed `TaskResult`.
    """

    def __init__(self, message: str, *, result: TaskResult[Any], location: SourceLocation | None = None) -> None:
        self.result = result
        super().__init__(message, location=location)


class SexpWorkflowFailedError(SexpEvalError):
    """`(unwrap r)` met a FAILED `WorkflowResult`; the whole run (error, state, step visits, usage) rides along.

    Attributes:
        result: the failed `WorkflowResult`.
    """

    def __init__(self, message: str, *, result: WorkflowResult[Any], location: SourceLocation | None = None) -> None:
        self.result = result
        super().__init__(message, location=location)
