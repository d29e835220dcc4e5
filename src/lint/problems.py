"""Every problem of a declaration that registration rejects, not only the first one it raises.

Registration stops at a template's first mistake. `check` wants them all, found by the same code so
that the messages and locations are the ones registration gives: the template is compiled once per
concern (each parameter, each model string, the model settings, the output schema, each text with
its placeholders), as a copy holding only that concern. A parameter whose own copy fails is typed
`any` in the copies that check the texts, so its placeholders are still checked once. A schema is
built with just the schemas it references (`closure`), so one broken schema does not hide another's
mistakes; `atomtask.schemas.field_checks.schema_problems` then lists each of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from atomtask.loading.checks import compile_template
from atomtask.schemas.declarations import FieldDef, SchemaDef
from atomtask.schemas.model_registry import ModelRegistry
from atomtask.schemas.type_strings import parse_type, referenced_names
from atomtask.system.errors import UsageError
from atomtask.system.templates import OutputFormat, ParamSpec, Template

__all__ = ["closure", "template_problems"]


def template_problems(template: Template, models: ModelRegistry) -> list[UsageError]:
    """The usage errors `compile_template` raises for each concern of `template`, in declaration order."""
    neutral: dict[str, Any] = {
        "params": {},
        "system": None,
        "instructions": "",
        "output_format": OutputFormat(),
        "model": None,
        "fallbacks": [],
        "model_settings": None,
    }
    neutral = {key: value for key, value in neutral.items() if key in Template.model_fields}
    problems: list[UsageError] = []

    def attempt(**concern: Any) -> bool:
        variant = template.model_copy(update={**neutral, **concern})
        try:
            compile_template(variant, models)
        except UsageError as exc:
            problems.append(exc)
            return False
        return True

    if template.model is not None:
        attempt(model=template.model)
    for fallback in template.fallbacks:
        attempt(fallbacks=[fallback])
    usable: dict[str, ParamSpec] = {}
    for name, spec in template.params.items():
        usable[name] = spec if attempt(params={name: spec}) else ParamSpec(type="any")
    for field in ("system", "instructions"):
        if getattr(template, field):
            attempt(params=usable, **{field: getattr(template, field)})
    if getattr(template, "model_settings", None) is not None:
        attempt(model_settings=template.model_settings)
    attempt(output_format=template.output_format)
    return problems


def _all_fields(fields: Iterable[FieldDef]) -> Iterator[FieldDef]:
    for field in fields:
        yield field
        if field.fields is not None:
            yield from _all_fields(field.fields)


def closure(schema: SchemaDef, batch: dict[str, SchemaDef]) -> list[SchemaDef]:
    """`schema` and the schemas of `batch` it references, directly or not, nested objects included (it first)."""
    out = [schema]
    seen = {schema.name}
    todo = [schema]
    while todo:
        for field in _all_fields(todo.pop().fields):
            try:
                names = referenced_names(parse_type(field.type))
            except UsageError:
                continue
            for name in names - seen:
                if name in batch:
                    seen.add(name)
                    out.append(batch[name])
                    todo.append(batch[name])
    return out
