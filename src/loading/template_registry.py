"""The `TemplateRegistry`: checked templates by name.

Registering logs a warning (`single_brace_placeholder`) for a `{param}` written with single braces,
which is sent to the model as written; `atomtask check` is not needed to see it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

from atomtask.loading.checks import CompiledTemplate, compile_template
from atomtask.schemas.model_registry import ModelRegistry
from atomtask.system.errors import DuplicateNameError, TemplateNotFoundError, did_you_mean, near_names
from atomtask.system.logs import get_logger
from atomtask.system.templates import Template

__all__ = ["TemplateRegistry"]

log = get_logger(__name__)


class TemplateRegistry:
    """Templates by name, each checked against the `ModelRegistry` when it is registered.

    Registration raises a usage error (with the template's file and line when it came from a file)
    for an undeclared placeholder, an unknown schema or provider, a bad type string, or a name
    already taken by a different template. Nothing is accepted now and fixed later.
    """

    def __init__(self, models: ModelRegistry) -> None:
        self._models = models
        self._compiled: dict[str, CompiledTemplate] = {}
        self._lock = threading.Lock()

    def register(self, template: Template, *, replace: bool = False) -> Template:
        """Check and register `template`; returns it. Re-registering an identical template is a no-op."""
        compiled = compile_template(template, self._models)
        with self._lock:
            existing = self._compiled.get(template.name)
            if existing is not None and not replace:
                if _declared(existing.template) == _declared(template):
                    return existing.template
                where = existing.template.location
                at = f" at {where}" if where is not None else ""
                raise DuplicateNameError(
                    f"Template name {template.name!r} is already registered{at}. Rename one of them, or pass "
                    "`replace=True` to overwrite.",
                    location=template.location,
                )
            self._compiled[template.name] = compiled
        if compiled.single_braces:
            _warn_single_braces(compiled)
        return template

    def get(self, name: str) -> Template:
        """The template registered under `name`; raises `TemplateNotFoundError` with near names."""
        return self.compiled(name).template

    def compiled(self, name: str) -> CompiledTemplate:
        """The checked, resolved form of template `name` that the executor runs."""
        try:
            return self._compiled[name]
        except KeyError:
            raise TemplateNotFoundError(
                f"No template named {name!r}.{did_you_mean(name, self._compiled)} "
                f"Registered templates: {', '.join(sorted(self._compiled)) or 'none'}.",
                suggestions=near_names(name, self._compiled),
            ) from None

    def names(self) -> list[str]:
        """The registered template names, sorted."""
        return sorted(self._compiled)

    def __contains__(self, name: object) -> bool:
        return name in self._compiled

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._compiled)


def _warn_single_braces(compiled: CompiledTemplate) -> None:
    """One warning per registered template, naming every `{param}` and where the first one is."""
    found = compiled.single_braces
    first = found[0]
    log.warning(
        "single_brace_placeholder",
        template=compiled.name,
        params=sorted({b.param for b in found}),
        location=str(first.location) if first.location is not None else None,
        fix=f"{first.text!r} in the {first.field} of template {compiled.name!r} is sent to the model as written; "
        f"write `{{{{{first.param}}}}}` to insert the parameter"
        + (f" ({len(found) - 1} more like it)" if len(found) > 1 else "")
        + ".",
    )


def _declared(template: Template) -> dict[str, object]:
    """What a template declares, ignoring where it was declared."""
    return template.model_dump()
