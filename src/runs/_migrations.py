"""Schema versions of a run's state: the state schema's fingerprint, and migrating a recorded state on resume.

`workflow` is the `CompiledWorkflow` the `WorkflowRegistry` holds (`registry.compiled(name)`): its
`version`, its `state_cls` (the current state class) and its checked `migrations` (a chain ending at
`version`, `convert` expressions parsed, `call` functions imported, all checked at registration, E120).

`migrate` is pure: it never changes the dict it is given, and reads and writes nothing else. Resuming
a run recorded under the current version and state schema gives the state back as it is; under
another version it applies the declared migrations in order (1.0 -> 1.1 -> 1.2), then validates the
result against the current state class field by field (a field no step has written yet may be
absent, as in a run). Anything else raises `MigrationError`, naming the run, both versions, the
fields at fault with pydantic's messages, and the migration to add, as YAML.

`resume_point` says at which step the resumed run continues (a migration's `resume_at`, or the recorded
step while it still exists; `ResumeStepMissingError` otherwise).

A migration's edits apply in this order, `convert` reading the state as it was before the migration:
`rename`, `drop`, `set`, `convert`; a `call` function gets a copy of the old state and returns the new.
A `convert` that fails in any way (a value that does not fit, a size limit of the expression language,
even a `RecursionError` or `MemoryError`) is a `MigrationError` naming the field: `migrate` runs before
the resume writes anything, so the stored run stays as it was.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from typing import Any

import attrs
from atomtask.errors import ExpressionRuntimeError, MigrationError, ResumeStepMissingError, near_names
from atomtask.workflows._compiled import CompiledMigration, CompiledWorkflow
from atomtask.workflows._migration_checks import migration_chain
from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python

__all__ = ["MigratedState", "migrate", "resume_point", "state_fingerprint"]

# Keywords that document a schema without changing what validates: editing them keeps the fingerprint.
_ANNOTATIONS = frozenset({"title", "description", "examples"})
# Keywords whose value maps names to schemas (a property called `description` is not the keyword).
_SCHEMA_MAPS = frozenset({"properties", "$defs", "definitions", "patternProperties", "dependentSchemas"})


@attrs.frozen(kw_only=True)
class MigratedState:
    """The state a resumed run goes on with.

    Attributes:
        state: the state's field values (JSON values), validated against the current state class.
        resume_at: the step to continue at, when a migration applied says so (`resume_at:`).
        applied: the migrations applied, in order (`("1.0 -> 1.1", "1.1 -> 1.2")`); empty when none was needed.
    """

    state: dict[str, Any]
    resume_at: str | None = None
    applied: tuple[str, ...] = ()


def state_fingerprint(state_cls: type[BaseModel]) -> str:
    """A stable hash of `state_cls`'s JSON Schema (keys sorted): it changes whenever what validates changes.

    Field names, types, constraints, defaults and required fields count; titles, descriptions and
    examples do not, so rewording a description does not strand the runs recorded before.
    """
    schema = _without_annotations(state_cls.model_json_schema())
    text = json.dumps(schema, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _without_annotations(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_without_annotations(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    found: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _ANNOTATIONS:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            found[key] = {name: _without_annotations(sub) for name, sub in value.items()}
        else:
            found[key] = _without_annotations(value)
    return found


def migrate(
    workflow: CompiledWorkflow,
    state: Mapping[str, Any],
    from_version: str | None,
    from_fingerprint: str,
    *,
    run_id: str,
) -> MigratedState:
    """The state of run `run_id` (recorded under `from_version`, schema `from_fingerprint`) for `workflow` now.

    Raises `MigrationError` when the schema changed under the same version, when no chain of
    migrations leads from `from_version` to the current version, when a migration fails, or when the
    migrated state does not validate. `state` is never changed.
    """
    current = workflow.version
    if from_version == current:
        if from_fingerprint == state_fingerprint(workflow.state_cls):
            return MigratedState(state=copy.deepcopy(dict(state)))
        raise _schema_changed(workflow, state, from_version, run_id)
    migrations = [m.migration for m in workflow.migrations]
    chain = migration_chain(migrations, from_version, current) if from_version is not None else None
    if chain is None:
        raise _no_path(workflow, state, from_version, run_id)
    values = copy.deepcopy(dict(state))
    applied: list[str] = []
    resume_at: str | None = None
    for index in chain:
        compiled = workflow.migrations[index]
        values = _apply(compiled, values, workflow, from_version, run_id, applied)
        applied.append(compiled.label)
        resume_at = compiled.migration.resume_at or resume_at
    faults = _faults(workflow, values)
    if faults:
        listing = "; ".join(f"`{field}`: {message}" for field, message in faults)
        raise MigrationError(
            f"Run {run_id!r} of workflow {workflow.name!r} was recorded under version {from_version!r}; after the "
            f"applying {', '.join(applied)} its state does not fit version {current!r}: {listing}. Fix the "
            f"migrations, e.g. {_edits_hint(faults)}; the stored run is unchanged.",
            run_id=run_id,
            workflow=workflow.name,
            from_version=from_version,
            to_version=current,
            fields=faults,
            applied=applied,
            fix=f"fix the migrations, e.g. {_edits_hint(faults)}",
        )
    return MigratedState(state=_validated(workflow, values), resume_at=resume_at, applied=tuple(applied))


def resume_point(
    workflow: CompiledWorkflow,
    step: str,
    migrated: MigratedState,
    *,
    run_id: str,
    from_version: str | None,
) -> str:
    """Where a resumed run continues: a migration's `resume_at` when one applied says so, else `step` itself.

    `step` is the (top-level) step the recorded run would continue at. When the current version has no
    such step and no migration says where to go, raises `ResumeStepMissingError`, suggesting `resume_at:`.
    """
    if migrated.resume_at is not None:
        return migrated.resume_at
    ids = [s.id for s in workflow.steps]
    if step in ids:
        return step
    raise ResumeStepMissingError(
        run_id,
        workflow=workflow.name,
        step=step,
        from_version=from_version,
        to_version=workflow.version,
        steps=ids,
        suggestions=near_names(step, ids),
    )


def _apply(
    compiled: CompiledMigration,
    old: dict[str, Any],
    workflow: CompiledWorkflow,
    from_version: str | None,
    run_id: str,
    applied: list[str],
) -> dict[str, Any]:
    """The state after one migration; raises `MigrationError` when its `call` or a `convert` fails."""
    migration = compiled.migration

    def failed(field: str | None, problem: str) -> MigrationError:
        return MigrationError(
            f"Run {run_id!r} of workflow {workflow.name!r}: migration {migration.label} failed on its state: "
            f"{problem}. Fix the migration; the stored run is unchanged.",
            run_id=run_id,
            workflow=workflow.name,
            from_version=from_version,
            to_version=workflow.version,
            fields=[(field, problem)] if field is not None else [],
            applied=applied,
            fix=f"fix migration {migration.label}",
        )

    if compiled.call is not None:
        try:
            result = compiled.call(copy.deepcopy(old))
        except Exception as exc:  # the user's function: any failure refuses the resume
            raise failed(None, f"`{migration.call}` raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(result, Mapping):
            raise failed(None, f"`{migration.call}` returned {type(result).__name__}, not the new state (a dict)")
        return copy.deepcopy(dict(result))
    converted: dict[str, Any] = {}
    for field, expr in compiled.convert:
        try:
            converted[field] = expr.evaluate({"state": old})
        except ExpressionRuntimeError as exc:
            raise failed(field, f"`convert: {field}` ({_clip(expr.text)}): {exc}") from None
        except Exception as exc:  # MemoryError, RecursionError, ...: nothing is written, the run stays as it was
            problem = f"`convert: {field}` ({_clip(expr.text)}) failed: {type(exc).__name__}"
            raise failed(field, problem + (f": {exc}" if str(exc) else "")) from exc
    new = dict(old)
    moved = {source: new.pop(source) for source in migration.rename if source in new}
    new.update((migration.rename[source], value) for source, value in moved.items())
    for field in migration.drop:
        new.pop(field, None)
    new.update(copy.deepcopy(migration.set_))
    new.update(converted)
    return new


def _clip(text: str) -> str:
    """An expression for a message: whole when short, else its start."""
    text = " ".join(text.split())
    return text if len(text) <= 80 else text[:77] + "..."


def _faults(workflow: CompiledWorkflow, values: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Each field of `values` that does not fit the current state class, with why (empty: it fits)."""
    cls = workflow.state_cls
    fields = cls.model_fields
    found: list[tuple[str, str]] = []
    instance = cls.model_construct()
    for name, value in values.items():
        if name not in fields:
            found.append((name, f"not a field of version {workflow.version!r}; drop or rename it"))
            continue
        try:
            cls.__pydantic_validator__.validate_assignment(instance, name, value)
        except ValidationError as exc:
            error = exc.errors(include_url=False)[0]
            inner = ".".join(str(p) for p in error["loc"][1:])
            found.append((name, error["msg"] + (f" (at `{inner}`)" if inner else "")))
        except Exception as exc:  # a validator of the state class that cannot handle a partial state
            found.append((name, f"{type(exc).__name__}: {exc}"))
    found.extend(
        (name, "missing: it is a required run input; set it") for name in workflow.required_inputs if name not in values
    )
    return found


def _validated(workflow: CompiledWorkflow, values: Mapping[str, Any]) -> dict[str, Any]:
    """`values` validated into the current state class and back to JSON values (only the fields given)."""
    instance = workflow.state_cls.model_construct()
    for name, value in values.items():
        workflow.state_cls.__pydantic_validator__.validate_assignment(instance, name, value)
    return {name: to_jsonable_python(instance.__dict__[name]) for name in values}


def _next_version(version: str | None) -> str:
    """A version after `version`: `1.0` -> `1.1`, `3` -> `4`, `beta` -> `beta.1`."""
    if version is None:
        return "1"
    head, _, last = version.rpartition(".")
    if last.isdigit():
        return f"{head}.{int(last) + 1}" if head else str(int(last) + 1)
    return f"{version}.1"


def _edits_hint(faults: list[tuple[str, str]]) -> str:
    """The edits a migration would need for `faults`, in YAML flow style (`drop: [x], convert: {y: ...}`)."""
    drops = [field for field, message in faults if message.startswith("not a field")]
    sets = [field for field, message in faults if message.startswith("missing")]
    converts = [field for field, _ in faults if field not in drops and field not in sets]
    parts = []
    if drops:
        parts.append(f"drop: [{', '.join(drops)}]")
    if sets:
        parts.append("set: {" + ", ".join(f"{f}: VALUE" for f in sets) + "}")
    if converts:
        parts.append("convert: {" + ", ".join(f"{f}: EXPR" for f in converts) + "}")
    return ", ".join(parts) or "rename: {OLD: NEW}"


def _migration_yaml(from_version: str, to_version: str, faults: list[tuple[str, str]]) -> str:
    return f'migrations: [{{from: "{from_version}", to: "{to_version}", {_edits_hint(faults)}}}]'


def _schema_changed(
    workflow: CompiledWorkflow, state: Mapping[str, Any], version: str | None, run_id: str
) -> MigrationError:
    faults = _faults(workflow, state)
    bumped = _next_version(version)
    old = version if version is not None else "OLD"
    fix = f'raise `version` to "{bumped}" and add `{_migration_yaml(old, bumped, faults)}`'
    at_fault = "; ".join(f"`{field}`: {message}" for field, message in faults)
    said = f" Fields at fault: {at_fault}." if at_fault else ""
    return MigrationError(
        f"Run {run_id!r} of workflow {workflow.name!r} was recorded under version {version!r} with another state "
        f"schema: the state changed without a new version, so its recorded state cannot be trusted.{said} To "
        f"resume it, {fix}. The stored run is unchanged.",
        run_id=run_id,
        workflow=workflow.name,
        from_version=version,
        to_version=version,
        fields=faults,
        missing=(version, bumped),
        fix=fix,
    )


def _no_path(workflow: CompiledWorkflow, state: Mapping[str, Any], version: str | None, run_id: str) -> MigrationError:
    current = workflow.version
    faults = _faults(workflow, state)
    migrations = [m.migration for m in workflow.migrations]
    # The oldest version the declared migrations already lead from: the missing one only has to reach it.
    reachable = [m.from_ for m in migrations if migration_chain(migrations, m.from_, current) is not None]
    target = reachable[0] if reachable else current
    at_fault = "; ".join(f"`{field}`: {message}" for field, message in faults)
    said = f" Fields at fault: {at_fault}." if at_fault else ""
    if version is None:
        fix = "start the run again: it was recorded before the workflow had a `version`, so no migration applies"
    else:
        fix = f"add `{_migration_yaml(version, target or 'VERSION', faults)}`"
    return MigrationError(
        f"Run {run_id!r} of workflow {workflow.name!r} was recorded under version {version!r}, and no migration "
        f"leads from it to the current version {current!r}.{said} To resume it, {fix}. The stored run is unchanged.",
        run_id=run_id,
        workflow=workflow.name,
        from_version=version,
        to_version=current,
        fields=faults,
        missing=(version, target),
        fix=fix,
    )
