"""The workflows of `atomtask check`: every problem of every workflow, from the checks registration runs.

`WorkflowRegistry.check_all` runs the checks `TaskSystem.load` runs (through `register_all`), so the
findings (E110-E120) are the errors loading would raise, all of them rather than the first: a circle
of sub-workflows (E118) or a broken workflow hides nothing of the other workflows, in any file. A
workflow declared twice with different contents is E105, as a template would be; a step whose task
is declared but invalid says so, rather than calling the task unknown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs
from atomtask.loading.template_registry import TemplateRegistry
from atomtask.schemas.model_registry import ModelRegistry
from atomtask.system.errors import SourceLocation
from atomtask.system.workflow_errors import WorkflowError, WorkflowNameError
from atomtask.system.workflows import Workflow
from atomtask.workflows.registry import WorkflowRegistry

__all__ = ["WorkflowProblem", "workflow_problems"]


@attrs.frozen(kw_only=True)
class WorkflowProblem:
    """One finding about a workflow: its check code, the message, where."""

    code: str
    message: str
    location: SourceLocation | None


def workflow_problems(
    workflows: Iterable[Workflow],
    templates: TemplateRegistry,
    models: ModelRegistry,
    broken_templates: Mapping[str, SourceLocation | None] | None = None,
) -> list[WorkflowProblem]:
    """Every problem of `workflows` against the registered templates and schemas, in the order found.

    `broken_templates` are the templates declared but not registered (their own errors are reported
    where they are declared), by name, with where they are declared.
    """
    found: list[WorkflowProblem] = []
    unique: dict[str, Workflow] = {}
    for workflow in workflows:
        first = unique.get(workflow.name)
        if first is None:
            unique[workflow.name] = workflow
        elif first.model_dump() != workflow.model_dump():
            at = f" at {first.location}" if first.location is not None else ""
            message = f"Workflow name {workflow.name!r} is already declared{at}; rename one of them."
            found.append(WorkflowProblem(code="E105", message=message, location=workflow.location))
    registry = WorkflowRegistry(templates, models)
    for checked in registry.check_all(unique.values()):
        for error in checked.errors:
            found.append(_problem(checked.workflow, error, broken_templates or {}))
    return found


def _problem(
    workflow: Workflow, error: WorkflowError, broken_templates: Mapping[str, SourceLocation | None]
) -> WorkflowProblem:
    message = error.message
    if isinstance(error, WorkflowNameError) and error.step is not None:
        task = next((step.task for _, step in workflow.all_steps() if step.id == error.step), None)
        if task is not None and task in broken_templates:
            declared = broken_templates[task]
            at = f" at {declared}" if declared is not None else ""
            message = (
                f"Step {error.step!r} runs task {task!r}, which is declared{at} but invalid, so it is not "
                "registered (its errors are reported there). Fix that template."
            )
    return WorkflowProblem(code=error.code, message=message, location=error.location or workflow.location)
