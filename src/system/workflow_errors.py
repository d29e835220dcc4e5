"""The usage errors of workflows: one class per kind of mistake, each under a stable `atomtask check` code.

Every one is a `UsageError`, raised (or, for `atomtask check`, collected) when a workflow is
registered, before any model is called. Each carries the `code` (E110-E120), the `workflow` and
`step` it concerns, the `location` (file:line:col when the declaration came from a file) and the
near names for "did you mean".
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from atomtask.system.errors import SourceLocation, UsageError

__all__ = [
    "WORKFLOW_ERROR_CODES",
    "WorkflowBindingError",
    "WorkflowControlError",
    "WorkflowCycleError",
    "WorkflowDataFlowError",
    "WorkflowDeclarationError",
    "WorkflowError",
    "WorkflowExpressionError",
    "WorkflowMigrationError",
    "WorkflowNameError",
    "WorkflowNotFoundError",
    "WorkflowParallelError",
    "WorkflowPathError",
    "WorkflowTypeError",
]


class WorkflowError(UsageError):
    """A workflow declaration is wrong; `code` is its `atomtask check` code.

    Attributes:
        workflow: the workflow's name, when known.
        step: the id of the step at fault, when the mistake is in one step.
    """

    code: ClassVar[str] = "E110"
    #: The rule's short name, for `atomtask check --explain`.
    rule: ClassVar[str] = "workflow-invalid"

    def __init__(
        self,
        message: str,
        *,
        location: SourceLocation | None = None,
        suggestions: Iterable[str] = (),
        workflow: str | None = None,
        step: str | None = None,
    ) -> None:
        self.workflow = workflow
        self.step = step
        super().__init__(message, location=location, suggestions=suggestions)


class WorkflowDeclarationError(WorkflowError):
    """E110: the workflow's shape is wrong (unknown key, duplicate step id, bad state, bad model string)."""

    code = "E110"
    rule = "workflow-invalid"


class WorkflowNameError(WorkflowError):
    """E111: a step names a task or a sub-workflow that is not registered."""

    code = "E111"
    rule = "workflow-unknown-name"


class WorkflowNotFoundError(WorkflowNameError, LookupError):
    """E111: no workflow is registered under the requested name."""


class WorkflowExpressionError(WorkflowError):
    """E112: an expression or placeholder is outside the language (syntax, function, `{{item}}` out of a loop).

    Attributes:
        offset: the 0-based offset in the expression text where the problem starts, when known.
    """

    code = "E112"
    rule = "workflow-expression"
    offset: int | None = None


class WorkflowPathError(WorkflowError):
    """E113: a `state.x.y` path (in a placeholder or an expression) names no field of the state."""

    code = "E113"
    rule = "workflow-state-path"


class WorkflowTypeError(WorkflowError):
    """E114: types do not fit: an input against a parameter, an output against a state field, an operator."""

    code = "E114"
    rule = "workflow-type"


class WorkflowBindingError(WorkflowError):
    """E115: a required parameter is unbound, an input or output names nothing, `collect` is misused."""

    code = "E115"
    rule = "workflow-binding"


class WorkflowDataFlowError(WorkflowError):
    """E116: a step reads a field that no earlier step has written on some path, and it has no default."""

    code = "E116"
    rule = "workflow-data-flow"


class WorkflowControlError(WorkflowError):
    """E117: a route or `on_failure` target does not exist, a step is unreachable, a route entry is dead."""

    code = "E117"
    rule = "workflow-control"


class WorkflowCycleError(WorkflowError):
    """E118: a cycle of steps has no `max_visits` bound, or a workflow runs itself as a sub-workflow."""

    code = "E118"
    rule = "workflow-unbounded-cycle"


class WorkflowParallelError(WorkflowError):
    """E119: two steps of one `parallel` group write the same state field."""

    code = "E119"
    rule = "workflow-parallel-conflict"


class WorkflowMigrationError(WorkflowError):
    """E120: a `migrations:` entry is wrong: a broken version chain, a field or step it names, a value, a `call`."""

    code = "E120"
    rule = "workflow-migration"


#: Every workflow error class by its check code (the first class of each code).
WORKFLOW_ERROR_CODES: dict[str, type[WorkflowError]] = {
    cls.code: cls
    for cls in (
        WorkflowDeclarationError,
        WorkflowNameError,
        WorkflowExpressionError,
        WorkflowPathError,
        WorkflowTypeError,
        WorkflowBindingError,
        WorkflowDataFlowError,
        WorkflowControlError,
        WorkflowCycleError,
        WorkflowParallelError,
        WorkflowMigrationError,
    )
}
