"""The `WorkflowRegistry`: checked workflows by name, beside the `TemplateRegistry` they run tasks from."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import attrs
from atomtask._registry import Registry
from atomtask.errors import (
    DuplicateNameError,
    WorkflowCycleError,
    WorkflowError,
    WorkflowNameError,
    WorkflowNotFoundError,
    did_you_mean,
    near_names,
)
from atomtask.loading._template_registry import TemplateRegistry
from atomtask.schemas._model_registry import ModelRegistry
from atomtask.system._workflows import Workflow
from atomtask.workflows._checks import WorkflowCheck, check_workflow
from atomtask.workflows._compiled import CompiledWorkflow

__all__ = ["WorkflowRegistry"]


class WorkflowRegistry(Registry[CompiledWorkflow]):
    """Workflows by name, each checked when it is registered (against the tasks, schemas and workflows known).

    Example:
        ```python
        workflows = WorkflowRegistry(system.templates, system.models)
        workflows.register(article_writer)     # raises the first WorkflowError, with file:line:col
        compiled = workflows.compiled("article_writer")
        ```

    A workflow's sub-workflows must be registered before it; `register_all` orders a batch (from
    files that may name each other in any order) so they are.
    """

    kind = "workflow"
    unknown = WorkflowNotFoundError

    def __init__(self, templates: TemplateRegistry, models: ModelRegistry) -> None:
        super().__init__()
        self.templates = templates
        self.models = models

    def check(self, workflow: Workflow) -> WorkflowCheck:
        """Every problem of `workflow` against what is registered now; registers nothing."""
        return check_workflow(workflow, templates=self.templates, models=self.models, resolve_workflow=self.compiled)

    def register(self, workflow: Workflow, *, replace: bool = False) -> Workflow:
        """Check and register `workflow`; returns it. Re-registering an identical workflow is a no-op."""
        existing = self._entries.get(workflow.name)
        if existing is not None and not replace:
            if existing.workflow.model_dump() == workflow.model_dump():
                return existing.workflow
            self._taken(workflow, existing)
        compiled = self.check(workflow).unwrap()
        with self._lock:
            existing = self._entries.get(workflow.name)
            if existing is not None and not replace and existing.workflow.model_dump() != workflow.model_dump():
                self._taken(workflow, existing)
            self._entries[workflow.name] = compiled
        return workflow

    def register_all(self, workflows: Iterable[Workflow], *, replace: bool = False) -> list[str]:
        """Register a batch, each after the sub-workflows it names; returns the names in the order given."""
        batch = list(workflows)
        for workflow in self.order(batch):
            self.register(workflow, replace=replace)
        return [w.name for w in batch]

    def check_all(self, workflows: Iterable[Workflow]) -> list[WorkflowCheck]:
        """Every problem of every workflow in a batch (for `atomtask check`), registering none of them.

        Workflows of the batch may name each other as sub-workflows; the checks are in the batch's order.
        A circle of sub-workflows is an E118 at each step of the circle that runs the next workflow of it;
        it hides nothing else: every other problem of those workflows, and of the rest, is reported too.
        """
        batch = list(workflows)
        calls = _calls(batch)
        checked: dict[str, WorkflowCheck] = {}
        known = sorted({*self._entries, *calls})

        def checking(workflow: Workflow) -> WorkflowCheck:
            circles: dict[str, str] = {}

            def resolve(name: str) -> CompiledWorkflow:
                back = _path(calls, name, workflow.name) if name in calls else []
                if back[-1:] == [workflow.name]:  # `name` runs `workflow` back, directly or not
                    circles[name] = _circle_message([workflow.name, *back])
                    raise WorkflowNameError(circles[name])
                found = checked.get(name)
                if found is not None:
                    if found.compiled is None:
                        raise WorkflowNameError(f"Sub-workflow {name!r} has problems of its own; fix them first.")
                    return found.compiled
                if name in self._entries:
                    return self._entries[name]
                raise _not_found(name, known, "Workflows declared or registered")

            check = check_workflow(workflow, templates=self.templates, models=self.models, resolve_workflow=resolve)
            if not circles:
                return check
            return attrs.evolve(check, errors=tuple(_as_cycle(e, set(circles.values())) for e in check.errors))

        for workflow in _post_order(batch, calls):
            checked[workflow.name] = checking(workflow)
        return [checked[w.name] for w in batch]

    @staticmethod
    def order(batch: Sequence[Workflow]) -> list[Workflow]:
        """`batch` with each workflow after the workflows of the batch it runs; raises E118 on a circle."""
        calls = _calls(batch)
        for workflow in batch:
            for name in calls[workflow.name]:
                back = _path(calls, name, workflow.name)
                if name != workflow.name and back[-1] == workflow.name:
                    raise WorkflowCycleError(
                        _circle_message([workflow.name, *back]), location=workflow.location, workflow=workflow.name
                    )
        return _post_order(batch, calls)

    def get(self, name: str) -> Workflow:
        """The workflow registered under `name`; raises `WorkflowNotFoundError` with near names."""
        return self.compiled(name).workflow

    def compiled(self, name: str) -> CompiledWorkflow:
        """The checked form of workflow `name` that the runner takes."""
        return self._entry(name)

    @staticmethod
    def _taken(workflow: Workflow, existing: CompiledWorkflow) -> None:
        where = existing.workflow.location
        at = f" at {where}" if where is not None else ""
        raise DuplicateNameError(
            f"Workflow name {workflow.name!r} is already registered{at}. Rename one of them, or pass "
            "`replace=True` to overwrite.",
            location=workflow.location,
        )


def _not_found(name: str, known: Sequence[str], label: str) -> WorkflowNotFoundError:
    return WorkflowNotFoundError(
        f"No workflow named {name!r}.{did_you_mean(name, known)} {label}: {', '.join(known) or 'none'}.",
        suggestions=near_names(name, known),
    )


def _calls(batch: Sequence[Workflow]) -> dict[str, list[str]]:
    """Each workflow of `batch` by name -> the workflows of the batch its steps run, in step order."""
    names = {w.name for w in batch}
    calls: dict[str, list[str]] = {}
    for workflow in batch:
        ran = (step.workflow for _, step in workflow.all_steps() if step.workflow is not None)
        calls.setdefault(workflow.name, list(dict.fromkeys(n for n in ran if n in names)))
    return calls


def _post_order(batch: Sequence[Workflow], calls: Mapping[str, list[str]]) -> list[Workflow]:
    """`batch` with each workflow after the ones it runs, except along a circle (the first of each name kept)."""
    by_name: dict[str, Workflow] = {}
    for workflow in batch:
        by_name.setdefault(workflow.name, workflow)
    placed: dict[str, Workflow] = {}
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        for child in calls[name]:
            visit(child)
        placed[name] = by_name[name]

    for workflow in batch:
        visit(workflow.name)
    return list(placed.values())


def _path(calls: Mapping[str, list[str]], start: str, goal: str) -> list[str]:
    """The shortest chain of sub-workflow calls from `start` to `goal`, both included (`[start]` when none)."""
    came_from: dict[str, str | None] = {start: None}
    todo = [start]
    while todo and goal not in came_from:
        current = todo.pop(0)
        for child in calls.get(current, []):
            if child not in came_from:
                came_from[child] = current
                todo.append(child)
    if goal not in came_from:
        return [start]
    path = [goal]
    while (back := came_from[path[-1]]) is not None:
        path.append(back)
    return path[::-1]


def _circle_message(circle: Sequence[str]) -> str:
    return (
        f"Workflows {' -> '.join(repr(n) for n in circle)} run each other as sub-workflows, without end. "
        "Break the circle."
    )


def _as_cycle(error: WorkflowError, circles: set[str]) -> WorkflowError:
    """A step's "no such workflow" error that is really a circle of sub-workflows, as the E118 it is."""
    if not isinstance(error, WorkflowNameError) or not any(error.message.endswith(c) for c in circles):
        return error
    return WorkflowCycleError(
        error.message, location=error.location, suggestions=error.suggestions, workflow=error.workflow, step=error.step
    )
