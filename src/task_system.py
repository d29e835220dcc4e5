"""`TaskSystem`: the facade most users touch. It owns one of each part and wires them together.

The parts that run tasks (the manager, which imports pydantic-ai, the executor and the workflow
runner) are built on first use, so constructing a system and loading or listing templates and
workflows does not import pydantic-ai.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

from atomtask.handlers.base import BaseHandler
from atomtask.loading.declarations import Declarations
from atomtask.loading.model_settings import check_model_settings
from atomtask.loading.providers import check_model_string
from atomtask.loading.readers import load_paths
from atomtask.loading.template_registry import TemplateRegistry
from atomtask.schemas.builtins import register_builtin_schemas
from atomtask.schemas.fields import build_models
from atomtask.schemas.model_registry import ModelRegistry
from atomtask.system.requests import SubtaskRequest
from atomtask.system.results import TaskResult
from atomtask.system.retry_policy import ProviderRetries
from atomtask.system.templates import Template, TemplateLimits
from atomtask.system.workflow_results import StepVisit, WorkflowResult
from atomtask.system.workflows import Workflow
from atomtask.workflows.registry import WorkflowRegistry
from pydantic import BaseModel

if TYPE_CHECKING:
    from atomtask.executors.atomic import AtomicTaskExecutor
    from atomtask.handlers.llm import LLMInteractionManager
    from atomtask.workflows.runner import WorkflowRunner
    from pydantic_ai.models import Model
    from pydantic_ai.settings import ModelSettings

__all__ = ["TaskSystem", "bundled_templates_path"]

T = TypeVar("T")
S = TypeVar("S", bound=BaseModel)


def bundled_templates_path() -> Path:
    """The folder of templates shipped inside the package (the repository's `templates/`)."""
    return Path(str(resources.files("atomtask.bundled_templates")))


class TaskSystem:
    """One model registry, one template registry, one workflow registry, a handler, a manager and an executor.

    Example:
        ```python
        system = TaskSystem(model="openai-chat:gpt-4o-mini")
        system.models.register(Contact)
        system.load("templates/")
        contact = system.execute("extract_contact", {"text": "..."}).unwrap()
        article = system.run_workflow("article_writer", {"topic": "tides"}).unwrap()
        ```

    Args:
        model: the default model: a pydantic-ai model string or `Model` instance (e.g. `FunctionModel`).
        templates: a YAML file or folder (or several) to load right away.
        base_url: the provider's endpoint (a local OpenAI-compatible server for `openai-chat:`, Ollama, ...).
        model_settings: pydantic-ai `ModelSettings` applied to every call (a template's `model_settings` and a
            call's `model_settings=` go on top, key by key); checked like a template's.
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
        register_builtin_schemas(self.models)
        self.templates = TemplateRegistry(self.models)
        self.workflows = WorkflowRegistry(self.templates, self.models)
        if model_settings is not None:
            checked = check_model_settings(model_settings, where="the TaskSystem (`model_settings=`)")
            model_settings = cast("ModelSettings", checked)
        self.handler = BaseHandler(
            model=model, base_url=base_url, model_settings=model_settings, provider_retries=provider_retries
        )
        self._executor: AtomicTaskExecutor | None = None
        self._runner: WorkflowRunner | None = None
        self._parts_lock = threading.Lock()
        if templates is not None:
            self.load(templates)

    @property
    def manager(self) -> LLMInteractionManager:
        """The `LLMInteractionManager` that builds and runs the pydantic-ai Agents (built on first use)."""
        return self.executor.manager

    @property
    def executor(self) -> AtomicTaskExecutor:
        """The `AtomicTaskExecutor` that runs tasks (built on first use: it imports pydantic-ai)."""
        if self._executor is None:
            with self._parts_lock:
                if self._executor is None:
                    from atomtask.executors.atomic import AtomicTaskExecutor
                    from atomtask.handlers.llm import LLMInteractionManager

                    self._executor = AtomicTaskExecutor(self.templates, LLMInteractionManager(self.handler))
        return self._executor

    @property
    def runner(self) -> WorkflowRunner:
        """The `WorkflowRunner` that runs workflows through the executor (built on first use)."""
        if self._runner is None:
            from atomtask.workflows.runner import WorkflowRunner

            executor = self.executor
            with self._parts_lock:
                if self._runner is None:
                    self._runner = WorkflowRunner(executor)
        return self._runner

    def load(self, path: str | Path | Iterable[str | Path]) -> list[str]:
        """Load templates, schemas and workflows from YAML and `.sexp` files or folders; returns the template names.

        Every file is read by the reader for its suffix (YAML, JSON Schema `.json`, and the top-level
        `defschema`/`defatom` forms of `.sexp` files; the same readers `atomtask check` uses). Schemas
        are built and registered first, all files together (they may reference each other across files
        and formats), then every template, then every workflow (`system.workflows`) is checked and
        registered. Any mistake raises a usage error with its file, line and column, before any model
        is called.
        """
        paths = [path] if isinstance(path, str | Path) else list(path)
        return self.register_declarations(load_paths(paths))

    def defatom(
        self,
        source: str,
        *,
        file: str = "<string>",
        variables: Mapping[str, Any] | None = None,
        model: Model | str | None = None,
        model_settings: Mapping[str, Any] | None = None,
    ) -> Any:
        """Evaluate S-expression source (`defatom`, `defschema`, task calls...); returns the last value.

        `variables` are bound as names the source can use. `model` and `model_settings` apply to every
        task call in the source, as `execute(..., model=, model_settings=)` would: the model wins over
        each template's own (and its fallbacks), the settings go on top of each template's. A bad
        model string or setting raises `ConfigurationError` before anything is evaluated. Syntax
        mistakes raise `SexpSyntaxError`, bad declarations the same usage errors as YAML, and run-time
        mistakes `SexpEvalError`, each with the line and column.

        Example:
            ```python
            system.defatom('(defatom greet (params (who str)) (instructions "Say hi to {{who}}"))')
            result = system.defatom('(greet (who "Ada"))', model="openai-chat:gpt-4o-mini")  # a TaskResult
            ```
        """
        from atomtask.sexp.evaluator import Interpreter

        if isinstance(model, str):
            check_model_string(model, where="`defatom(model=...)`")
        if model_settings is not None:
            model_settings = check_model_settings(model_settings, where="`defatom(model_settings=...)`")
        interpreter = Interpreter(self, model=model, model_settings=model_settings)
        return interpreter.evaluate(source, file=file, variables=variables)

    def register_declarations(self, declarations: Declarations) -> list[str]:
        """Register already-read schemas, templates and workflows (what `load` does); returns the template names."""
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
        if declarations.workflows:  # after the templates: their steps run them; sub-workflows first
            self.workflows.register_all(declarations.workflows)
        return [t.name for t in declarations.templates]

    def register(self, template: Template, *, replace: bool = False) -> Template:
        """Check and register one template (same as `system.templates.register`)."""
        return self.templates.register(template, replace=replace)

    def register_workflow(self, workflow: Workflow, *, replace: bool = False) -> Workflow:
        """Check and register one workflow (as `system.workflows.register`); a mistake raises a `WorkflowError`."""
        return self.workflows.register(workflow, replace=replace)

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
        model_settings: Mapping[str, Any] | None = None,
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
        model_settings: Mapping[str, Any] | None = None,
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
        model_settings: Mapping[str, Any] | None = None,
        expect: type[Any] | None = None,
    ) -> TaskResult[Any]:
        """Run a task and return its `TaskResult`; a failed task is a FAILED result, not an exception.

        `expect=Cls` types the result as `TaskResult[Cls]` and fails (configuration_error) when the
        template's declared output is not a `Cls`. `model=` wins over the template's model and its
        fallbacks. `retries=` overrides the template's output retries, `limits=` tightens its limits
        (across all attempts and fallbacks), `repair=False` turns local output repair off for this call.
        `model_settings=` (pydantic-ai `ModelSettings`: `temperature`, `max_tokens`, `seed`, ...) go on
        top of the template's and the TaskSystem's, key by key; an unknown key or a value of the wrong
        type fails the call with `configuration_error`.

        Called where an event loop is already running (Jupyter, an async web handler), the task runs
        on a worker thread while the caller waits; `await execute_async(...)` avoids blocking the loop.
        """
        options: dict[str, Any] = {"model": model, "retries": retries, "limits": limits, "repair": repair}
        options["model_settings"] = model_settings
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
        model_settings: Mapping[str, Any] | None = None,
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
        model_settings: Mapping[str, Any] | None = None,
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
        model_settings: Mapping[str, Any] | None = None,
        expect: type[Any] | None = None,
    ) -> TaskResult[Any]:
        """The async form of `execute` (pydantic-ai `Agent.run`)."""
        options: dict[str, Any] = {"model": model, "retries": retries, "limits": limits, "repair": repair}
        options["model_settings"] = model_settings
        return await self.executor.execute_async(name_or_request, inputs, expect=expect, **options)

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
    ) -> WorkflowResult[Any]:
        """Run workflow `name` on `inputs` (its run inputs); a run that failed is a FAILED result, not an exception.

        `model=` wins over every model the workflow, its steps and tasks name (not over `retry_with`);
        `model_settings=` go on top of every step's, the workflow's and each task's, key by key;
        `limits=` tighten the workflow's `limits` (which hold across all steps); `expect=Cls` types
        the result as `WorkflowResult[Cls]`; `on_visit` gets each top-level `StepVisit` as it ends.
        Raises before any call: `WorkflowNotFoundError` ("did you mean"), `ConfigurationError` (a bad
        model, setting, limit or `expect=`); inputs that do not fit the state are a FAILED result.
        Works inside a running event loop too, as `execute` does.
        """
        from atomtask.handlers.blocking import run_blocking

        options: dict[str, Any] = {"model": model, "model_settings": model_settings, "limits": limits}
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
    ) -> WorkflowResult[Any]:
        """The async form of `run_workflow` (each step runs with pydantic-ai `Agent.run`)."""
        compiled = self.workflows.compiled(name)
        if isinstance(model, str):
            check_model_string(model, where="`run_workflow(model=...)`")
        options: dict[str, Any] = {"model": model, "model_settings": model_settings, "limits": limits}
        return await self.runner.run_async(compiled, inputs, expect=expect, on_visit=on_visit, **options)
