"""`TaskSystem`: the facade most users touch. It owns one of each part and wires them together."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, overload

from atomtask.executors.atomic import AtomicTaskExecutor
from atomtask.handlers.base import BaseHandler
from atomtask.handlers.llm import LLMInteractionManager
from atomtask.system.loader import Declarations, load_paths
from atomtask.system.model_registry import ModelRegistry
from atomtask.system.requests import SubtaskRequest
from atomtask.system.results import TaskResult
from atomtask.system.retry_policy import ProviderRetries
from atomtask.system.schemas import build_models
from atomtask.system.template_registry import TemplateRegistry
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
        provider_retries: how provider faults (429, 5xx, timeouts, dropped connections) are retried.
    """

    def __init__(
        self,
        model: Model | str | None = None,
        templates: str | Path | Iterable[str | Path] | None = None,
        *,
        base_url: str | None = None,
        model_settings: ModelSettings | None = None,
        provider_retries: ProviderRetries | None = None,
    ) -> None:
        self.models = ModelRegistry()
        self.templates = TemplateRegistry(self.models)
        self.handler = BaseHandler(
            model=model, base_url=base_url, model_settings=model_settings, provider_retries=provider_retries
        )
        self.manager = LLMInteractionManager(self.handler)
        self.executor = AtomicTaskExecutor(self.templates, self.manager)
        if templates is not None:
            self.load(templates)

    def load(self, path: str | Path | Iterable[str | Path]) -> list[str]:
        """Load templates and named schemas from a YAML file or a folder; returns the template names.

        Schemas are built and registered first (they may reference each other across files), then
        every template is checked and registered. Any mistake raises a usage error with its file
        and line, before any model is called.
        """
        paths = [path] if isinstance(path, str | Path) else list(path)
        return self.register_declarations(load_paths(paths))

    def register_declarations(self, declarations: Declarations) -> list[str]:
        """Register already-read schemas and templates (what `load` does after reading files)."""
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
