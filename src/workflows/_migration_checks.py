"""Checking a workflow's `migrations:` (E120) when it is registered, so a resume never meets a broken one.

Only the current state schema is known, so what can be checked is checked against it and against
what the migrations themselves say about older versions:

- the versions chain: a `version` is declared, no two migrations start from one version, none starts
  from the current version, and following `to` from any migration reaches the current version, with
  no circle;
- every field a migration writes (`rename` targets, `set`, `convert`) is a field of the current
  state, or one a later migration of its chain drops or renames;
- a field a migration drops, renames or reads in `convert` was not already removed by the migration
  before it (as far as can be known: the older schemas are not declared);
- a field is written once per migration, and not dropped where it is renamed;
- `set` values validate against their field's type (pydantic's message when not), and a `convert`
  expression is in the expression language (E112, E125) with a type that fits, where the field's type is
  the current one;
- a `convert` expression is type-checked against the state of the version it migrates from, as far as
  that is known (`_source_types`): a field the migrations carry unchanged to the current version held a
  value of its current type (when that reads the same once recorded as JSON: str, numbers, bool, lists
  of them), so `state.title * 10000000000` over a `str` title is refused here, not at resume; fields of
  unknown type read as `Any`, and the resume refuses what does not fit the recorded values;
- `resume_at` names a step, and `call` imports a function from an `importable` package.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Sequence
from typing import Any

from atomtask.errors import (
    ExpressionTypeError,
    UsageError,
    WorkflowExpressionError,
    WorkflowMigrationError,
    did_you_mean,
    near_names,
)
from atomtask.schemas._model_registry import ModelRegistry
from atomtask.schemas._sources import import_callable
from atomtask.system._workflows import Migration, Workflow
from atomtask.workflows._compiled import CompiledMigration
from atomtask.workflows._context import Problems
from atomtask.workflows._expressions import Expression, PathRef, expression_type, parse_expression
from atomtask.workflows._types import a_describe, compatible, describe, item_type, kinds, walk
from pydantic import BaseModel, TypeAdapter, ValidationError

__all__ = ["check_migrations", "migration_chain"]

_Error = WorkflowMigrationError


def migration_chain(migrations: Sequence[Migration], start: str | None, goal: str | None) -> list[int] | None:
    """The indexes of the migrations leading from version `start` to `goal`, in order; None when there is no path.

    Each version has at most one migration starting from it (a checked workflow), so the path is unique.
    """
    by_from = {m.from_: i for i, m in reversed(list(enumerate(migrations)))}
    path: list[int] = []
    current = start
    while current != goal:
        index = by_from.get(current) if current is not None else None
        if index is None or index in path:
            return None
        path.append(index)
        current = migrations[index].to
    return path


def _writes(m: Migration) -> dict[str, str]:
    """The fields `m` writes, each with the key that writes it."""
    found = {new: "rename" for new in m.rename.values()}
    found.update((field, "set") for field in m.set_)
    found.update((field, "convert") for field in m.convert)
    return found


def _removes(m: Migration) -> set[str]:
    """The fields `m` takes away (dropped or renamed from) and does not write back."""
    return (set(m.rename) | set(m.drop)) - set(_writes(m))


def check_migrations(
    problems: Problems, workflow: Workflow, state_cls: type[BaseModel], models: ModelRegistry
) -> tuple[CompiledMigration, ...]:
    """Check every migration of `workflow` (noting each problem) and return them compiled, in declared order."""
    migrations = workflow.migrations
    if not migrations:
        return ()
    if _chain_problems(problems, workflow):
        return ()
    fields = state_cls.model_fields
    compiled: list[CompiledMigration] = []
    for index, migration in enumerate(migrations):
        path = f"migrations.{index}"
        chain = migration_chain(migrations, migration.from_, workflow.version) or [index]
        later = [migrations[i] for i in chain[1:]]
        before = [m for m in migrations if m.to == migration.from_]
        _check_fields(problems, migration, path, fields, later, before)
        exact = {f for f in fields if not any(f in _writes(m) or f in _removes(m) for m in later)}
        _check_sets(problems, migration, path, fields, exact)
        source = _source_types(migration, later, fields)
        convert = _check_converts(problems, migration, path, fields, exact, before, source)
        if migration.resume_at is not None:
            _check_resume_at(problems, workflow, migration, path)
        call = _import_call(problems, migration, path, models) if migration.call is not None else None
        compiled.append(CompiledMigration(migration=migration, convert=convert, call=call))
    return tuple(compiled)


def _chain_problems(problems: Problems, workflow: Workflow) -> bool:
    """Note what is wrong with the chain of versions; True when there is something (the rest is not checked)."""
    known = len(problems.errors)
    current = workflow.version
    migrations = workflow.migrations
    if current is None:
        problems.add(
            _Error,
            f"Workflow {workflow.name!r} declares `migrations` but no `version`; add `version: "
            f'"{migrations[-1].to}"`, the version its migrations lead to.',
            "migrations",
        )
        return True
    first: dict[str, int] = {}
    for index, migration in enumerate(migrations):
        where = f"migrations.{index}.from"
        if migration.from_ == current:
            problems.add(
                _Error,
                f"Migration {index + 1} ({migration.label}) starts from {current!r}, the current version of workflow "
                f"{workflow.name!r}; migrations lead to it. Fix `from`, or raise `version`.",
                where,
            )
        elif migration.from_ in first:
            problems.add(
                _Error,
                f"Migrations {first[migration.from_] + 1} and {index + 1} both start from version "
                f"{migration.from_!r}; keep one per version, chained (1.0 -> 1.1 -> 1.2).",
                where,
            )
        else:
            first[migration.from_] = index
    if len(problems.errors) > known:
        return True
    for migration in migrations:
        if migration_chain(migrations, migration.from_, current) is not None:
            continue
        seen: list[str] = [migration.from_]
        version = migration.to
        while version in first and version not in seen:
            seen.append(version)
            version = migrations[first[version]].to
        if version in seen:
            circle = " -> ".join([*seen[seen.index(version) :], version])
            problems.add(_Error, f"Migrations {circle} form a circle; they must lead to {current!r}.", "migrations")
        else:
            last = next(i for i, m in enumerate(migrations) if m.to == version)
            problems.add(
                _Error,
                f"Migration {migrations[last].label} leads to version {version!r}, from which no migration goes on, "
                f'and the current version is {current!r}. Add `{{from: "{version}", to: "{current}", ...}}` or '
                "fix `to`.",
                f"migrations.{last}.to",
            )
    return len(problems.errors) > known


def _check_fields(
    problems: Problems,
    migration: Migration,
    path: str,
    fields: dict[str, Any],
    later: list[Migration],
    before: list[Migration],
) -> None:
    name = f"Migration {migration.label}"
    seen: dict[str, str] = {}
    consumed_later = set().union(*(set(m.rename) | set(m.drop) for m in later))
    for key, targets in (
        ("rename", list(migration.rename.values())),
        ("set", migration.set_),
        ("convert", migration.convert),
    ):
        for field in targets:
            where = f"{path}.{key}." + (
                next(o for o, n in migration.rename.items() if n == field) if key == "rename" else field
            )
            if field in seen:
                problems.add(
                    _Error, f"{name} writes `state.{field}` twice (`{seen[field]}` and `{key}`); keep one.", where
                )
                continue
            seen[field] = key
            if field not in fields and field not in consumed_later:
                problems.add(
                    _Error,
                    f"{name} writes `state.{field}` (`{key}`), but the state of the current version has no field "
                    f"{field!r} and no later migration drops or renames it.{did_you_mean(field, fields)} State "
                    f"fields: {', '.join(fields)}.",
                    where,
                    suggestions=near_names(field, fields),
                )
    for field in set(migration.drop) & set(migration.rename):
        problems.add(_Error, f"{name} both renames and drops `state.{field}`; keep one.", f"{path}.drop")
    for field in set(migration.drop) & set(migration.rename.values()):
        problems.add(_Error, f"{name} renames a field to `state.{field}` and drops it; keep one.", f"{path}.drop")
    gone = set.intersection(*(_removes(m) for m in before)) if before else set()
    for key, names in (("rename", list(migration.rename)), ("drop", migration.drop)):
        for field in names:
            if field in gone:
                what = "renames" if key == "rename" else "drops"
                problems.add(
                    _Error,
                    f"{name} {what} `state.{field}`, but version {migration.from_!r} has no such field: migration "
                    f"{before[0].label} removed it.",
                    f"{path}.{key}",
                )


def _annotation(field: Any) -> Any:
    """A field's type with its constraints (`Annotated[int, Ge(0)]`), to validate a value against."""
    if not field.metadata:
        return field.annotation
    return typing.Annotated[(field.annotation, *field.metadata)]


def _check_sets(problems: Problems, migration: Migration, path: str, fields: dict[str, Any], exact: set[str]) -> None:
    for field, value in migration.set_.items():
        if field not in exact:
            continue  # its type in that version is not known here
        try:
            TypeAdapter(_annotation(fields[field])).validate_python(value)
        except ValidationError as exc:
            message = exc.errors(include_url=False)[0]["msg"]
            problems.add(
                _Error,
                f"Migration {migration.label} sets `state.{field}` ({describe(fields[field].annotation)}) to "
                f"{value!r}, which does not fit: {message}.",
                f"{path}.set.{field}",
            )


def _plain(annotation: Any) -> Any | None:
    """`annotation` when a recorded (JSON) value of it reads as its type does in an expression: a str, number,
    bool, null, a literal of those, or a list of them; None otherwise (a date is a str once recorded, a
    class a dict: only the run can tell)."""
    found = kinds(annotation)
    if found <= {"str", "number", "bool", "none"}:
        return annotation
    element = item_type(annotation)
    if found <= {"list", "none"} and element is not None and _plain(element) is not None:
        return annotation
    return None


def _source_types(migration: Migration, later: list[Migration], fields: dict[str, Any]) -> dict[str, Any]:
    """The type of each field of version `migration.from_` that can be known, by its name.

    The older schemas are not declared, but a field that `migration` and the migrations after it carry to
    the current version unchanged (or only rename) must have held a value of its current type, or the
    migrated state would not validate; its type is taken from the current state. A field one of them
    writes (`set`, `convert`, a `rename` target) or drops is unknown, and a `call` on the way hides all.
    """
    known = {name: _plain(field.annotation) for name, field in fields.items()}
    for step in reversed([migration, *later]):
        if step.call is not None:
            return {}
        unknown = set(_writes(step)) | set(step.drop)
        older = {name: annotation for name, annotation in known.items() if name not in unknown}
        older.update((old, known.get(new)) for old, new in step.rename.items())
        known = older
    return {name: annotation for name, annotation in known.items() if annotation is not None}


def _source_path_type(source: dict[str, Any], ref: PathRef) -> Any:
    """The type of `ref` in the older version: `Any` unless its field's type is known (`_source_types`)."""
    if ref.field is None or ref.field not in source:
        return Any
    current = source[ref.field]
    for part in ref.parts[1:]:
        try:
            current = walk(current, part)
        except LookupError:
            return Any  # the older schema may have differed there: the run decides
    return current


def _check_converts(
    problems: Problems,
    migration: Migration,
    path: str,
    fields: dict[str, Any],
    exact: set[str],
    before: list[Migration],
    source: dict[str, Any],
) -> tuple[tuple[str, Expression], ...]:
    gone = set.intersection(*(_removes(m) for m in before)) if before else set()
    found: list[tuple[str, Expression]] = []
    for field, text in migration.convert.items():
        where = f"{path}.convert.{field}"
        prefix = f"Migration {migration.label}, `convert: {field}`: "
        try:
            expr = parse_expression(text, roots=("state",))
        except WorkflowExpressionError as exc:
            problems.adopt(exc, where, prefix=prefix)
            continue
        removed = [ref for ref in expr.paths if ref.field in gone]
        if removed:
            problems.add(
                _Error,
                f"{prefix}`{removed[0].text}` reads the state of version {migration.from_!r}, which has no field "
                f"{removed[0].field!r}: migration {before[0].label} removed it.",
                where,
                offset=removed[0].offset,
            )
            continue
        found.append((field, expr))
        try:
            value_type = expression_type(expr, lambda ref: _source_path_type(source, ref))
        except ExpressionTypeError as exc:
            read = sorted(
                {f"`state.{ref.field}` ({describe(source[ref.field])})" for ref in expr.paths if ref.field in source}
            )
            known = f" In version {migration.from_!r}: {', '.join(read)}." if read else ""
            problems.add(_Error, prefix + exc.message + known, where, offset=exc.offset)
            continue
        if field not in exact:
            continue
        if not compatible(value_type, fields[field].annotation):
            problems.add(
                _Error,
                f"{prefix}`{text.strip()}` is {a_describe(value_type)}, which does not fit `state.{field}` "
                f"({describe(fields[field].annotation)}).",
                where,
            )
    return tuple(found)


def _check_resume_at(problems: Problems, workflow: Workflow, migration: Migration, path: str) -> None:
    ids = [step.id for step in workflow.steps]
    target = migration.resume_at or ""
    group = next((step.id for step in workflow.steps if target in [m.id for m in step.members]), None)
    if group is not None:
        fix = f" It is inside the `parallel` group {group!r}; resume at the group."
    elif target not in ids:
        fix = f"{did_you_mean(target, ids)} Steps: {', '.join(ids)}."
    else:
        return
    problems.add(
        _Error,
        f"Migration {migration.label} resumes at {target!r}, which is not a step of workflow {workflow.name!r}.{fix}",
        f"{path}.resume_at",
        suggestions=near_names(target, ids),
    )


def _import_call(
    problems: Problems, migration: Migration, path: str, models: ModelRegistry
) -> Callable[[dict[str, Any]], Any] | None:
    where = f"migration {migration.label}"
    try:
        found: Callable[[dict[str, Any]], Any] = import_callable(
            migration.call or "", importable=models.importable, where=where
        )
    except UsageError as exc:
        problems.add(_Error, exc.message, f"{path}.call", suggestions=exc.suggestions)
        return None
    return found
