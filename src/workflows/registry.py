"""The `WorkflowRegistry`: checked workflows by name, beside the `TemplateRegistry` they run tasks from."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence

from atomtask.loading.template_registry import TemplateRegistry
from atomtask.schemas.model_registry import ModelRegistry
from atomtask.system.errors import DuplicateNameError, did_you_mean, near_names
from atomtask.system.workflow_errors import WorkflowCycleError, WorkflowNameError, WorkflowNotFoundError
from atomtask.system.workflows import Workflow
from atomtask.workflows.checks import WorkflowCheck, check_workflow
from atomtask.workflows.compiled import CompiledWorkflow

__all__ = ["WorkflowRegistry"]


class WorkflowRegistry:
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

    def __init__(self, templates: TemplateRegistry, models: ModelRegistry) -> None:
        self.templates = templates
        self.models = models
        self._compiled: dict[str, CompiledWorkflow] = {}
        self._lock = threading.Lock()

    def check(self, workflow: Workflow) -> WorkflowCheck:
        """Every problem of `workflow` against what is registered now; registers nothing."""
        return check_workflow(workflow, templates=self.templates, models=self.models, resolve_workflow=self.compiled)

    def register(self, workflow: Workflow, *, replace: bool = False) -> Workflow:
        """Check and register `workflow`; returns it. Re-registering an identical workflow is a no-op."""
        existing = self._compiled.get(workflow.name)
        if existing is not None and not replace:
            if existing.workflow.model_dump() == workflow.model_dump():
                return existing.workflow
            self._taken(workflow, existing)
        compiled = self.check(workflow).unwrap()
        with self._lock:
            existing = self._compiled.get(workflow.name)
            if existing is not None and not replace and existing.workflow.model_dump() != workflow.model_dump():
                self._taken(workflow, existing)
            self._compiled[workflow.name] = compiled
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
        """
        batch = list(workflows)
        checked: dict[str, WorkflowCheck] = {}

        def resolve(name: str) -> CompiledWorkflow:
            found = checked.get(name)
            if found is None:
                return self.compiled(name)
            if found.compiled is None:
                raise WorkflowNameError(f"Sub-workflow {name!r} has problems of its own; fix them first.")
            return found.compiled

        try:
            ordered = self.order(batch)
        except WorkflowCycleError as exc:
            return [WorkflowCheck(workflow=w, errors=(exc,), compiled=None) for w in batch]
        for workflow in ordered:
            checked[workflow.name] = check_workflow(
                workflow, templates=self.templates, models=self.models, resolve_workflow=resolve
            )
        return [checked[w.name] for w in batch]

    @staticmethod
    def order(batch: Sequence[Workflow]) -> list[Workflow]:
        """`batch` with each workflow after the workflows of the batch it runs; raises E118 on a circle."""
        by_name = {w.name: w for w in batch}
        placed: dict[str, Workflow] = {}
        visiting: list[str] = []

        def visit(workflow: Workflow) -> None:
            if workflow.name in placed:
                return
            if workflow.name in visiting:
                circle = [*visiting[visiting.index(workflow.name) :], workflow.name]
                raise WorkflowCycleError(
                    f"Workflows {' -> '.join(repr(n) for n in circle)} run each other as sub-workflows, without "
                    "end. Break the circle.",
                    location=workflow.location,
                    workflow=workflow.name,
                )
            visiting.append(workflow.name)
            for _, step in workflow.all_steps():
                if step.workflow is not None and step.workflow in by_name:
                    visit(by_name[step.workflow])
            visiting.pop()
            placed[workflow.name] = workflow

        for workflow in batch:
            visit(workflow)
        return list(placed.values())

    def get(self, name: str) -> Workflow:
        """The workflow registered under `name`; raises `WorkflowNotFoundError` with near names."""
        return self.compiled(name).workflow

    def compiled(self, name: str) -> CompiledWorkflow:
        """The checked form of workflow `name` that the runner takes."""
        try:
            return self._compiled[name]
        except KeyError:
            raise WorkflowNotFoundError(
                f"No workflow named {name!r}.{did_you_mean(name, self._compiled)} "
                f"Registered workflows: {', '.join(sorted(self._compiled)) or 'none'}.",
                suggestions=near_names(name, self._compiled),
            ) from None

    def names(self) -> list[str]:
        """The registered workflow names, sorted."""
        return sorted(self._compiled)

    def __contains__(self, name: object) -> bool:
        return name in self._compiled

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._compiled)

    @staticmethod
    def _taken(workflow: Workflow, existing: CompiledWorkflow) -> None:
        where = existing.workflow.location
        at = f" at {where}" if where is not None else ""
        raise DuplicateNameError(
            f"Workflow name {workflow.name!r} is already registered{at}. Rename one of them, or pass "
            "`replace=True` to overwrite.",
            location=workflow.location,
        )
