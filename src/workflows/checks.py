"""Registration checks: a `Workflow` against the registered tasks, schemas and workflows, before any call.

`check_workflow` finds every problem (for `atomtask check`) and, when there is none, returns the
`CompiledWorkflow` the runner takes; `compile_workflow` raises the first problem instead. The checks,
each with its code (see `atomtask.system.workflow_errors`):

- E110 the declaration's shape (duplicate step ids, the state's fields, model strings and settings);
- E111 task, sub-workflow and state schema names exist ("did you mean");
- E112 expressions and placeholders stay inside the expression language;
- E113 every `state.x.y` path exists in the state;
- E114 input types fit the parameters, output types fit the state fields, operators fit their operands;
- E115 every required parameter is bound, no unknown one is, every output field exists;
- E116 data flow: a step reads only fields written on every path to it, run inputs, or fields with defaults;
- E117 route targets exist, every step is reachable, no route entry is dead;
- E118 every cycle has `max_visits`; E119 no two steps of a `parallel` group write the same field;
- E120 the `migrations` chain to the current `version`, and what each migration names (`migration_checks`).

A state field may say `redact: true` (a boolean, E110 otherwise); a named state class says it with
`Field(json_schema_extra={"redact": True})`. The compiled workflow lists those fields (`redacted_fields`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from atomtask.loading.model_settings import check_model_settings
from atomtask.loading.providers import check_model_string
from atomtask.loading.template_registry import TemplateRegistry
from atomtask.schemas.declarations import SchemaDef
from atomtask.schemas.fields import build_models
from atomtask.schemas.model_registry import ModelRegistry
from atomtask.system.errors import UsageError
from atomtask.system.workflow_errors import WorkflowDeclarationError, WorkflowError, WorkflowNameError
from atomtask.system.workflows import END, Workflow
from atomtask.workflows.compiled import CompiledStep, CompiledWorkflow
from atomtask.workflows.flow import check_flow
from atomtask.workflows.migration_checks import check_migrations
from atomtask.workflows.problems import Problems
from atomtask.workflows.step_checks import check_input_types, compile_step
from atomtask.workflows.step_context import StepContext
from pydantic import BaseModel, ValidationError

__all__ = ["WorkflowCheck", "check_workflow", "compile_workflow"]

#: Finds a registered workflow's compiled form by name; raises `WorkflowNotFoundError` (E111).
WorkflowResolver = Callable[[str], CompiledWorkflow]


@attrs.frozen(kw_only=True)
class WorkflowCheck:
    """Every problem of one workflow, and its compiled form when there is none."""

    workflow: Workflow
    errors: tuple[WorkflowError, ...]
    compiled: CompiledWorkflow | None

    def unwrap(self) -> CompiledWorkflow:
        """The compiled workflow, or raise the first problem (saying how many more there are)."""
        if self.compiled is not None:
            return self.compiled
        first = self.errors[0]
        if len(self.errors) == 1:
            raise first
        more = len(self.errors) - 1
        raise type(first)(
            f"{first.message} (and {more} more problem{'s' if more > 1 else ''}; `atomtask check` lists them all)",
            location=first.location,
            suggestions=first.suggestions,
            workflow=first.workflow,
            step=first.step,
        )


def compile_workflow(
    workflow: Workflow,
    *,
    templates: TemplateRegistry,
    models: ModelRegistry,
    resolve_workflow: WorkflowResolver | None = None,
) -> CompiledWorkflow:
    """Check `workflow` and return its compiled form; raises the first `WorkflowError` found."""
    return check_workflow(workflow, templates=templates, models=models, resolve_workflow=resolve_workflow).unwrap()


def check_workflow(
    workflow: Workflow,
    *,
    templates: TemplateRegistry,
    models: ModelRegistry,
    resolve_workflow: WorkflowResolver | None = None,
) -> WorkflowCheck:
    """Find every problem of `workflow` (in the order found); compile it when there is none.

    `resolve_workflow` finds sub-workflows (a `WorkflowRegistry` passes its own `compiled`).
    """
    problems = Problems(workflow)
    _check_ids(problems, workflow)
    if workflow.model is not None:
        try:
            check_model_string(workflow.model, where=f"workflow {workflow.name!r}")
        except UsageError as exc:
            problems.add(WorkflowDeclarationError, exc.message, "model")
    if workflow.model_settings is not None:
        try:
            check_model_settings(workflow.model_settings, where=f"workflow {workflow.name!r}")
        except UsageError as exc:
            problems.add(WorkflowDeclarationError, exc.message, "model_settings")
    state_cls = _state_class(problems, workflow, models)
    if state_cls is None:
        return WorkflowCheck(workflow=workflow, errors=tuple(problems.errors), compiled=None)
    ctx = StepContext(
        problems=problems, state_cls=state_cls, templates=templates, models=models, resolve_workflow=resolve_workflow
    )
    ids = [step.id for step in workflow.steps] + [END]
    steps = tuple(
        compile_step(ctx, step, f"steps.{index}", ids[index + 1]) for index, step in enumerate(workflow.steps)
    )
    index: dict[str, CompiledStep] = {}
    for step in steps:
        index[step.id] = step
        index.update((member.id, member) for member in step.members)
    written_by_steps = frozenset().union(*(step.writes for step in steps))
    fields = state_cls.model_fields
    run_inputs = tuple(name for name in fields if name not in written_by_steps)
    required = tuple(name for name in run_inputs if fields[name].is_required())
    readable = frozenset(run_inputs) | {name for name, info in fields.items() if not info.is_required()}
    written = check_flow(problems, steps, readable, fields)
    for step in steps:
        if step.id in written:
            check_input_types(ctx, step, written[step.id])
    migrations = check_migrations(problems, workflow, state_cls, models)
    redacted = _redacted(problems, workflow, state_cls)
    if problems:
        return WorkflowCheck(workflow=workflow, errors=tuple(problems.errors), compiled=None)
    compiled = CompiledWorkflow(
        workflow=workflow,
        state_cls=state_cls,
        steps=steps,
        run_inputs=run_inputs,
        required_inputs=required,
        index=index,
        migrations=migrations,
        redacted_fields=redacted,
    )
    return WorkflowCheck(workflow=workflow, errors=(), compiled=compiled)


def _check_ids(problems: Problems, workflow: Workflow) -> None:
    seen: dict[str, str] = {}
    for path, step in workflow.all_steps():
        if step.id in seen:
            problems.add(
                WorkflowDeclarationError,
                f"Step id {step.id!r} is used twice in workflow {workflow.name!r} (first at "
                f"{workflow.location_of(seen[step.id]) or seen[step.id]}); step ids are unique, group members "
                "included.",
                f"{path}.id",
                step=step.id,
            )
        else:
            seen[step.id] = path


def _state_class(problems: Problems, workflow: Workflow, models: ModelRegistry) -> type[BaseModel] | None:
    state = workflow.state
    if state.schema_ is not None:
        try:
            return models.get(state.schema_)
        except UsageError as exc:
            problems.add(WorkflowNameError, f"The state of workflow {workflow.name!r}: {exc.message}", "state.schema",
                         suggestions=exc.suggestions)  # fmt: skip
            return None
    definition: dict[str, Any] = {
        "name": _class_name(workflow.name) + "State",
        "description": state.description or f"The state of workflow {workflow.name!r}.",
        "fields": [_without_redact(f) for f in state.fields or []],
    }
    try:
        schema = SchemaDef.model_validate(definition)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = [str(p) for p in error["loc"]]
        where = "state." + ".".join(loc)
        problems.add(WorkflowDeclarationError, f"Invalid state of workflow {workflow.name!r}: `{'.'.join(loc[2:])}`"
                     f" of field {_field_label(state.fields, loc)}: {error['msg']}.", where)  # fmt: skip
        return None
    schema.location = workflow.location_of("state")
    for number, field in enumerate(schema.fields):
        field.location = workflow.location_of(f"state.fields.{number}.type")
    try:
        known = {name: models.get(name) for name in models.names()}
        return build_models([schema], known=known)[schema.name]
    except UsageError as exc:
        message = exc.message.replace(f" of schema {schema.name!r}", "").replace(f" in schema {schema.name!r}", "")
        problems.add(WorkflowDeclarationError, f"Invalid state of workflow {workflow.name!r}: {message}", "state")
        if exc.location is not None:
            problems.errors[-1] = problems.errors[-1].__class__(
                problems.errors[-1].message, location=exc.location, workflow=workflow.name, suggestions=exc.suggestions
            )
        return None


def _without_redact(field: Any) -> Any:
    """A state field as the schemas layer takes it: `redact` is the workflow's option, not the schema's."""
    return {k: v for k, v in field.items() if k != "redact"} if isinstance(field, dict) else field


def _redacted(problems: Problems, workflow: Workflow, state_cls: type[BaseModel]) -> frozenset[str]:
    """The state fields declared `redact: true` (a non-boolean `redact` is noted, E110)."""
    found: set[str] = set()
    for number, field in enumerate(workflow.state.fields or []):
        if not isinstance(field, dict) or "redact" not in field:
            continue
        if not isinstance(field["redact"], bool):
            problems.add(
                WorkflowDeclarationError,
                f"`redact` of state field {field.get('name')!r} in workflow {workflow.name!r} is true or false, not "
                f"{field['redact']!r}.",
                f"state.fields.{number}.redact",
            )
        elif field["redact"]:
            found.add(str(field.get("name")))
    for name, info in state_cls.model_fields.items():
        extra = info.json_schema_extra
        if isinstance(extra, dict) and extra.get("redact") is True:
            found.add(name)
    return frozenset(found)


def _field_label(fields: list[dict[str, Any]] | None, loc: list[str]) -> str:
    if len(loc) >= 2 and loc[0] == "fields" and loc[1].isdigit() and fields is not None:
        raw = fields[int(loc[1])]
        if isinstance(raw, dict) and isinstance(raw.get("name"), str):
            return repr(raw["name"])
        return f"#{int(loc[1]) + 1}"
    return "?"


def _class_name(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.replace("-", "_").split("_") if part) or "Workflow"
