"""`TaskSystem`: the facade most users touch. It owns one of each part and wires them together.

The parts that run tasks (the manager, which imports pydantic-ai, the executor and the workflow
runner) are built on first use, so constructing a system and loading or listing templates and
workflows does not import pydantic-ai.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

from atomtask.executors.caching import CacheChoice, CacheConfig
from atomtask.handlers.base import BaseHandler
from atomtask.loading.declarations import Declarations
from atomtask.loading.model_settings import check_model_settings
from atomtask.loading.providers import check_model_string
from atomtask.loading.readers import load_paths
from atomtask.loading.template_registry import TemplateRegistry
from atomtask.schemas.builtins import register_builtin_schemas
from atomtask.schemas.fields import build_models
from atomtask.schemas.model_registry import ModelRegistry
from atomtask.system.batch_results import BatchItemResult
from atomtask.system.requests import SubtaskRequest
from atomtask.system.results import TaskResult
from atomtask.system.retry_policy import ProviderRetries
from atomtask.system.templates import RepairMode, Template, TemplateLimits
from atomtask.system.tracing import TraceSettings, trace_settings
from atomtask.system.workflows import Workflow
from atomtask.task_workflows import WorkflowRuns
from atomtask.workflows.registry import WorkflowRegistry

if TYPE_CHECKING:
    from atomtask.batch.engine import BatchRun
    from atomtask.executors.atomic import AtomicTaskExecutor
    from atomtask.executors.cache_store import ResponseCache
    from atomtask.executors.streaming import TaskStream
    from atomtask.handlers.llm import LLMInteractionManager
    from atomtask.workflows.runner import WorkflowRunner
    from pydantic_ai.models import Model
    from pydantic_ai.settings import ModelSettings

__all__ = ["TaskSystem", "bundled_templates_path"]

T = TypeVar("T")


def bundled_templates_path() -> Path:
    """The folder of templates shipped inside the package (the repository's `templates/`)."""
    return Path(str(resources.files("atomtask.bundled_templates")))


class TaskSystem(WorkflowRuns):
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
        cache: True or False turns the response cache on or off for every call, over each template's `cache:`
            (a call's `cache=` still wins); None (the default) leaves it to the templates: off where they are silent.
            Anything else (`"no"`, `1`) raises `ConfigurationError`.
        cache_path: the cache's SQLite file (str or PathLike), `":memory:"` or a `ResponseCache` (default
            `$ATOMTASK_HOME/cache.sqlite3`); anything else (`123`) raises `ConfigurationError`.
        instrument: OpenTelemetry spans for every task, workflow run and step, with pydantic-ai's nested inside:
            True (the global tracer provider), a `TraceSettings` (a tracer provider, `include_content`), or
            False; None (the default) reads `ATOMTASK_OTEL=1`. Prompt and output text only with `include_content`.
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
        cache: bool | None = None,
        cache_path: str | Path | ResponseCache | None = None,
        instrument: bool | TraceSettings | None = None,
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
        self._cache = CacheConfig(cache, cache_path)  # a given path is opened (and checked) now
        self._trace = trace_settings(instrument, os.environ)  # None: off, and OpenTelemetry is never imported
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

                    tracing = None
                    if self._trace is not None:
                        from atomtask.handlers.tracing_spans import Tracing

                        tracing = Tracing(self._trace)
                    self._executor = AtomicTaskExecutor(
                        self.templates, LLMInteractionManager(self.handler, tracing), self._cache
                    )
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
        repair: RepairMode | str | bool | None = None,
        model_settings: Mapping[str, Any] | None = None,
        cache: CacheChoice = None,
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
        repair: RepairMode | str | bool | None = None,
        model_settings: Mapping[str, Any] | None = None,
        cache: CacheChoice = None,
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
        repair: RepairMode | str | bool | None = None,
        model_settings: Mapping[str, Any] | None = None,
        cache: CacheChoice = None,
        expect: type[Any] | None = None,
    ) -> TaskResult[Any]:
        """Run a task and return its `TaskResult`; a failed task is a FAILED result, not an exception.

        `expect=Cls` types the result as `TaskResult[Cls]` and fails (configuration_error) when the
        template's declared output is not a `Cls`. `model=` wins over the template's model and its
        fallbacks. `retries=` overrides the template's output retries, `limits=` tightens its limits
        (across all attempts and fallbacks), `repair=` sets the repair mode for this call (`"safe"`, `"lenient"`,
        or `"off"`; `False` is `"off"`).
        `model_settings=` (pydantic-ai `ModelSettings`: `temperature`, `max_tokens`, `seed`, ...) go on
        top of the template's and the TaskSystem's, key by key; an unknown key or a value of the wrong
        type fails the call with `configuration_error`. `cache=` (True, False, `{"ttl": "1h"}`) wins over the
        template's `cache:`; a hit returns the stored answer with `notes.cached` and zero usage.

        Called where an event loop is already running (Jupyter, an async web handler), the task runs
        on a worker thread while the caller waits; `await execute_async(...)` avoids blocking the loop.
        """
        options: dict[str, Any] = {"model": model, "retries": retries, "limits": limits, "repair": repair}
        options |= {"model_settings": model_settings, "cache": cache}
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
        repair: RepairMode | str | bool | None = None,
        model_settings: Mapping[str, Any] | None = None,
        cache: CacheChoice = None,
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
        repair: RepairMode | str | bool | None = None,
        model_settings: Mapping[str, Any] | None = None,
        cache: CacheChoice = None,
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
        repair: RepairMode | str | bool | None = None,
        model_settings: Mapping[str, Any] | None = None,
        cache: CacheChoice = None,
        expect: type[Any] | None = None,
    ) -> TaskResult[Any]:
        """The async form of `execute` (pydantic-ai `Agent.run`)."""
        options: dict[str, Any] = {"model": model, "retries": retries, "limits": limits, "repair": repair}
        options |= {"model_settings": model_settings, "cache": cache}
        return await self.executor.execute_async(name_or_request, inputs, expect=expect, **options)

    @overload
    def execute_stream(
        self,
        name_or_request: str | SubtaskRequest,
        inputs: Mapping[str, Any] | None = None,
        *,
        expect: None = None,
        **kw: Any,
    ) -> TaskStream[Any]: ...

    @overload
    def execute_stream(
        self,
        name_or_request: str | SubtaskRequest,
        inputs: Mapping[str, Any] | None = None,
        *,
        expect: type[T],
        **kw: Any,
    ) -> TaskStream[T]: ...

    def execute_stream(
        self, name_or_request: str | SubtaskRequest, inputs: Mapping[str, Any] | None = None, **options: Any
    ) -> TaskStream[Any]:
        """`execute_async`, streamed: `async for partial in stream` (`PartialOutput[T]`), `await stream.get_result()`.

        Options as `execute_async`, plus `debounce_by` (seconds between partials; None: every chunk). The
        result has `execute`'s ledger; repair and retries apply to the final answer (`executors.streaming`).
        """
        from atomtask.executors.streaming import stream_task

        return stream_task(self.executor, name_or_request, inputs, **options)

    def batch(self, name: str, items: Iterable[Mapping[str, Any]], **options: Any) -> BatchRun:
        """Run template or workflow `name` over `items` (mappings of inputs): an async iterator of `BatchItemResult`s.

        Results come in completion order (`result.index` is the item's position). Options: `model`,
        `model_settings`, `concurrency` (default 8), `rpm`, `tpm` (per minute), `max_cost`, `max_tokens`
        (stop taking items once reached), `id_field` (default `"id"`), `batch_id` with `db` (record every
        finished item; a later run with the same id yields those as they were, `resumed=True`, and runs
        only the rest), `retry_failed`. A 429 from the provider pauses every worker for its `Retry-After`.
        The returned `BatchRun` keeps the counts (`done`, `failed`, `failed_by`, `spent`, `stopped`).

        Example:
            ```python
            async for item in system.batch("extract_contact", [{"text": t} for t in texts], concurrency=32):
                print(item.id, item.status, item.output)
            ```
        """
        from atomtask.batch.api import start_batch

        return start_batch(self, name, items, **options)

    def batch_sync(self, name: str, items: Iterable[Mapping[str, Any]], **options: Any) -> list[BatchItemResult]:
        """The sync form of `batch`: every `BatchItemResult`, in completion order (sort by `index` for input order)."""
        from atomtask.batch.api import collect
        from atomtask.handlers.blocking import run_blocking

        return run_blocking(collect(self.batch(name, items, **options)))
