"""`TaskSystem`: the facade most users touch. It owns one of each part and wires them together."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, overload

from atomtask.executors.atomic import AtomicTaskExecutor
from atomtask.handlers.base import BaseHandler
from atomtask.handlers.llm import LLMInteractionManager
from atomtask.loading.declarations import Declarations
from atomtask.loading.readers import load_paths
from atomtask.loading.template_registry import TemplateRegistry
from atomtask.schemas.builtins import BUILTIN_SCHEMAS
from atomtask.schemas.fields import build_models
from atomtask.schemas.model_registry import ModelRegistry
from atomtask.system.requests import SubtaskRequest
from atomtask.system.results import TaskResult
from atomtask.system.retry_policy import ProviderRetries
from atomtask.system.templates import Template, TemplateLimits

if TYPE_CHECKING:
    from pydantic_ai.models import Model
    from pydantic_ai.settings import ModelSettings

__all__ = ["TaskSystem", "bundled_templates_path"]

T = TypeVar("T")


def bundled_templates_path() -> Path:
    """The folder of templates shipped inside the package (the repository's `templates/`)."""
    return Path(str(resources.files("atomtask.bundled_templates")))


class TaskSystem:
    """One model registry, one template registry, a handler, a manager and an executor.

    Example:
        ```python
        system = TaskSystem(model="openai-chat:gpt-4o-mini")
        system.models.register(Contact)
        system.load("templates/")
        contact = system.execute("extract_contact", {"text": "..."}).unwrap()
        ```

    Args:
        model: the default model: a pydantic-ai model string or `Model` instance (e.g. `FunctionModel`).
        templates: a YAML file or folder (or several) to load right away.
        base_url: an OpenAI-compatible endpoint for `openai-chat:` models (Ollama, vLLM, ...).
        model_settings: pydantic-ai `ModelSettings` applied to every call.
        importable: packages whose Pydantic classes templates may name by import path
            (`schema: {python: "myapp.schemas:Contact"}`); any other module is refused, never imported.
        provider_retries: how provider faults (429, 5xx, timeouts, dropped connections) are retried.
    """

    def __init__(
        self,
        model: Model | str | None = None,
        templates: str | Path | Iterable[str | Path] | None = None,
        *,
        base_url: str | None = None,
        model_settings: ModelSettings | None = None,
        importable: Iterable[str] = (),
        provider_retries: ProviderRetries | None = None,
    ) -> None:
        self.models = ModelRegistry(importable=importable)
        # The shipped templates' Python output classes, so `templates/` resolves in every system.
        for cls in BUILTIN_SCHEMAS:
            self.models.register(cls)
        self.templates = TemplateRegistry(self.models)
        self.handler = BaseHandler(
            model=model, base_url=base_url, model_settings=model_settings, provider_retries=provider_retries
        )
        self.manager = LLMInteractionManager(self.handler)
        self.executor = AtomicTaskExecutor(self.templates, self.manager)
        if templates is not None:
            self.load(templates)

    def load(self, path: str | Path | Iterable[str | Path]) -> list[str]:
        """Load templates and named schemas from YAML and `.sexp` files or folders; returns the template names.

        Every file is read by the reader for its suffix (YAML, JSON Schema `.json`, and the top-level
        `defschema`/`defatom` forms of `.sexp` files; the same readers `atomtask check` uses). Schemas
        are built and registered first, all files together (they may reference each other across files
        and formats), then every template is checked and registered. Any mistake raises a usage error
        with its file, line and column, before any model is called.
        """
        paths = [path] if isinstance(path, str | Path) else list(path)
        return self.register_declarations(load_paths(paths))

    def defatom(self, source: str, *, file: str = "<string>", variables: Mapping[str, Any] | None = None) -> Any:
        """Evaluate S-expression source (`defatom`, `defschema`, task calls...); returns the last value.

        `variables` are bound as names the source can use. Syntax mistakes raise `SexpSyntaxError`,
        bad declarations the same usage errors as YAML, and run-time mistakes `SexpEvalError`, each
        with the line and column.

        Example:
            ```python
            system.defatom('(defatom greet (params (who str)) (instructions "Say hi to {{who}}"))')
            result = system.defatom('(greet (who "Ada"))')  # a TaskResult
            ```
        """
        from atomtask.sexp.evaluator import Interpreter

        return Interpreter(self).evaluate(source, file=file, variables=variables)

    def register_declarations(self, declarations: Declarations) -> list[str]:
        """Register already-read schemas and templates (what `load` does after reading files)."""
        if declarations.json_schemas or declarations.python_schemas:
            from atomtask.schemas.sources import register_schema_sources

            register_schema_sources(declarations.json_schemas, declarations.python_schemas, self.models)
        if declarations.schemas:
            known = {name: self.models.get(name) for name in self.models.names()}
            built = build_models(declarations.schemas, known=known)
            for schema in declarations.schemas:
                self.models.register(built[schema.name], schema.name, location=schema.location)
        for template in declarations.templates:
            self.templates.register(template)
        return [t.name for t in declarations.templates]

    def register(self, template: Template, *, replace: bool = False) -> Template:
        """Check and register one template (same as `system.templates.register`)."""
        return self.templates.register(template, replace=replace)

    @overload
    def execute(
        self,
        name_or_request: str | SubtaskRequest,
        inputs: Mapping[str, Any] | None = None,
        *,
        model: Model | str | None = None,
        retries: int | None = None,
        limits: TemplateLimits | Mapping[str, Any] | None = None,
        repair: bool | None = None,
        expect: None = None,
    ) -> TaskResult[Any]: ...

    @overload
    def execute(
        self,
        name_or_request: str | SubtaskRequest,
        inputs: Mapping[str, Any] | None = None,
        *,
        model: Model | str | None = None,
        retries: int | None = None,
        limits: TemplateLimits | Mapping[str, Any] | None = None,
        repair: bool | None = None,
        expect: type[T],
    ) -> TaskResult[T]: ...

    def execute(
        self,
        name_or_request: str | SubtaskRequest,
        inputs: Mapping[str, Any] | None = None,
        *,
        model: Model | str | None = None,
        retries: int | None = None,
        limits: TemplateLimits | Mapping[str, Any] | None = None,
        repair: bool | None = None,
        expect: type[Any] | None = None,
    ) -> TaskResult[Any]:
        """Run a task and return its `TaskResult`; a failed task is a FAILED result, not an exception.

        `expect=Cls` types the result as `TaskResult[Cls]` and fails (configuration_error) when the
        template's declared output is not a `Cls`. `retries=` overrides the template's output retries,
        `limits=` tightens its limits (across all attempts and fallbacks), `repair=False` turns local
        output repair off for this call.
        """
        options: dict[str, Any] = {"model": model, "retries": retries, "limits": limits, "repair": repair}
        return self.executor.execute(name_or_request, inputs, expect=expect, **options)

    @overload
    async def execute_async(
        self,
        name_or_request: str | SubtaskRequest,
        inputs: Mapping[str, Any] | None = None,
        *,
        model: Model | str | None = None,
        retries: int | None = None,
        limits: TemplateLimits | Mapping[str, Any] | None = None,
        repair: bool | None = None,
        expect: None = None,
    ) -> TaskResult[Any]: ...

    @overload
    async def execute_async(
        self,
        name_or_request: str | SubtaskRequest,
        inputs: Mapping[str, Any] | None = None,
        *,
        model: Model | str | None = None,
        retries: int | None = None,
        limits: TemplateLimits | Mapping[str, Any] | None = None,
        repair: bool | None = None,
        expect: type[T],
    ) -> TaskResult[T]: ...

    async def execute_async(
        self,
        name_or_request: str | SubtaskRequest,
        inputs: Mapping[str, Any] | None = None,
        *,
        model: Model | str | None = None,
        retries: int | None = None,
        limits: TemplateLimits | Mapping[str, Any] | None = None,
        repair: bool | None = None,
        expect: type[Any] | None = None,
    ) -> TaskResult[Any]:
        """The async form of `execute` (pydantic-ai `Agent.run`)."""
        options: dict[str, Any] = {"model": model, "retries": retries, "limits": limits, "repair": repair}
        return await self.executor.execute_async(name_or_request, inputs, expect=expect, **options)
