"""`TaskSystem`'s workflow runs: `run_workflow` (durable with a `run_id`), `resume_workflow`, `workflow_runs`.

A mixin of the facade, kept apart so `task_system.py` stays one concern: building and wiring the parts.
It needs the system's `workflows` registry and `runner`; durable runs (`atomtask.runs`, the `durable`
extra) are imported only when a run id or a run store is given.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, overload

from atomtask.loading.providers import check_model_string
from atomtask.system.templates import TemplateLimits
from atomtask.system.workflow_results import StepVisit, WorkflowResult
from atomtask.workflows.registry import WorkflowRegistry
from pydantic import BaseModel

if TYPE_CHECKING:
    from atomtask.runs.records import RunInfo
    from atomtask.workflows.runner import WorkflowRunner
    from pydantic_ai.models import Model

__all__ = ["WorkflowRuns"]

S = TypeVar("S", bound=BaseModel)


class WorkflowRuns:
    """Running workflows, durably or not; mixed into `TaskSystem`, which provides `workflows` and `runner`."""

    workflows: WorkflowRegistry

    @property
    def runner(self) -> WorkflowRunner:
        raise NotImplementedError  # TaskSystem's

    @overload
    def run_workflow(
        self,
        name: str,
        inputs: Mapping[str, Any] | None = None,
        *,
        model: Model | str | None = None,
        model_settings: Mapping[str, Any] | None = None,
        limits: TemplateLimits | Mapping[str, Any] | None = None,
        expect: None = None,
        on_visit: Callable[[StepVisit], None] | None = None,
        run_id: str | None = None,
        db: str | None = None,
        on_waiting: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> WorkflowResult[Any]: ...

    @overload
    def run_workflow(
        self,
        name: str,
        inputs: Mapping[str, Any] | None = None,
        *,
        model: Model | str | None = None,
        model_settings: Mapping[str, Any] | None = None,
        limits: TemplateLimits | Mapping[str, Any] | None = None,
        expect: type[S],
        on_visit: Callable[[StepVisit], None] | None = None,
        run_id: str | None = None,
        db: str | None = None,
        on_waiting: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> WorkflowResult[S]: ...

    def run_workflow(
        self,
        name: str,
        inputs: Mapping[str, Any] | None = None,
        *,
        model: Model | str | None = None,
        model_settings: Mapping[str, Any] | None = None,
        limits: TemplateLimits | Mapping[str, Any] | None = None,
        expect: type[BaseModel] | None = None,
        on_visit: Callable[[StepVisit], None] | None = None,
        run_id: str | None = None,
        db: str | None = None,
        on_waiting: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> WorkflowResult[Any]:
        """Run workflow `name` on `inputs` (its run inputs); a run that failed is a FAILED result, not an exception.

        `model=` wins over every model the workflow, its steps and tasks name (not over `retry_with`);
        `model_settings=` go on top of every step's, the workflow's and each task's, key by key;
        `limits=` tighten the workflow's `limits` (which hold across all steps); `expect=Cls` types
        the result as `WorkflowResult[Cls]`; `on_visit` gets each top-level `StepVisit` as it ends.
        Raises before any call: `WorkflowNotFoundError` ("did you mean"), `ConfigurationError` (a bad
        model, setting, limit or `expect=`); inputs that do not fit the state are a FAILED result.
        Works inside a running event loop too, as `execute` does.

        `run_id=` makes the run durable (`atomtask[durable]`): each completed step is checkpointed in the
        run store (`db=`: a SQLite file or a `postgresql://` URL; default `$ATOMTASK_HOME/runs.sqlite`)
        before the next starts, so `resume_workflow(run_id)` continues it after a crash without running a
        completed step again; `result.run_id` names it. A run id already in the store raises `RunExistsError`.
        `on_waiting(run_id, wait)` is told when a durable run stops to wait for an approval (`wait`: its
        `step`, `message`, `timeout`).
        """
        from atomtask.handlers.blocking import run_blocking

        options: dict[str, Any] = {"model": model, "model_settings": model_settings, "limits": limits}
        options.update(run_id=run_id, db=db, on_waiting=on_waiting)
        return run_blocking(self.run_workflow_async(name, inputs, expect=expect, on_visit=on_visit, **options))

    @overload
    async def run_workflow_async(
        self,
        name: str,
        inputs: Mapping[str, Any] | None = None,
        *,
        model: Model | str | None = None,
        model_settings: Mapping[str, Any] | None = None,
        limits: TemplateLimits | Mapping[str, Any] | None = None,
        expect: None = None,
        on_visit: Callable[[StepVisit], None] | None = None,
        run_id: str | None = None,
        db: str | None = None,
        on_waiting: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> WorkflowResult[Any]: ...

    @overload
    async def run_workflow_async(
        self,
        name: str,
        inputs: Mapping[str, Any] | None = None,
        *,
        model: Model | str | None = None,
        model_settings: Mapping[str, Any] | None = None,
        limits: TemplateLimits | Mapping[str, Any] | None = None,
        expect: type[S],
        on_visit: Callable[[StepVisit], None] | None = None,
        run_id: str | None = None,
        db: str | None = None,
        on_waiting: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> WorkflowResult[S]: ...

    async def run_workflow_async(
        self,
        name: str,
        inputs: Mapping[str, Any] | None = None,
        *,
        model: Model | str | None = None,
        model_settings: Mapping[str, Any] | None = None,
        limits: TemplateLimits | Mapping[str, Any] | None = None,
        expect: type[BaseModel] | None = None,
        on_visit: Callable[[StepVisit], None] | None = None,
        run_id: str | None = None,
        db: str | None = None,
        on_waiting: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> WorkflowResult[Any]:
        """The async form of `run_workflow` (each step runs with pydantic-ai `Agent.run`)."""
        compiled = self.workflows.compiled(name)
        if isinstance(model, str):
            check_model_string(model, where="`run_workflow(model=...)`")
        options: dict[str, Any] = {"model": model, "model_settings": model_settings, "limits": limits}
        if run_id is not None or db is not None:
            from atomtask.runs import durable

            options.update(run_id=run_id, db=db, expect=expect, on_visit=on_visit, on_waiting=on_waiting)
            return await durable.run(self.workflows, self.runner, name, inputs, **options)
        return await self.runner.run_async(compiled, inputs, expect=expect, on_visit=on_visit, **options)

    def resume_workflow(
        self,
        run_id: str,
        *,
        db: str | None = None,
        model: Model | str | None = None,
        on_visit: Callable[[StepVisit], None] | None = None,
        inputs: Mapping[str, Any] | None = None,
        on_waiting: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> WorkflowResult[Any]:
        """Resume the durable run `run_id` from its last checkpoint; its completed steps are not run (or paid) again.

        `inputs` gives the values of its `redact: true` state fields again: they are never stored.

        The run's workflow must be loaded. `model=` is needed again when the run was started with a `Model`
        instance (only model strings are stored). A FAILED run goes on from the step that failed (the steps
        completed before it come back from their checkpoints). Raises before anything runs: `RunNotFoundError`,
        `RunStateError` (the run is COMPLETE), `CorruptCheckpointError`, `WorkflowNotFoundError`.
        """
        from atomtask.handlers.blocking import run_blocking
        from atomtask.runs import durable

        options: dict[str, Any] = {"db": db, "model": model, "on_visit": on_visit, "inputs": inputs}
        options.update(on_waiting=on_waiting)
        return run_blocking(durable.resume(self.workflows, self.runner, run_id, **options))

    def approve_workflow(
        self,
        run_id: str,
        *,
        approved: bool = True,
        note: str | None = None,
        by: str | None = None,
        db: str | None = None,
    ) -> RunInfo:
        """Decide for the durable run `run_id`, WAITING at an approval step (`approved=False` rejects).

        The decision goes to the step's `output:` field; the run's process goes on with it (a run whose process
        has gone gets it on `resume_workflow`). Raises `RunNotFoundError`, `ApprovalError` (not WAITING).
        """
        from atomtask.handlers.blocking import run_blocking
        from atomtask.runs import durable

        return run_blocking(durable.approve(run_id, approved=approved, note=note, by=by, db=db))

    def workflow_runs(self, *, db: str | None = None) -> list[RunInfo]:
        """The durable runs in the store (`db=`, default `$ATOMTASK_HOME/runs.sqlite`), the most recent first."""
        from atomtask.handlers.blocking import run_blocking
        from atomtask.runs import durable

        return run_blocking(durable.list_runs(db=db))
