"""`TaskSystem`: the facade most users touch. It owns one of each part and wires them together.

One model registry, one template registry and one workflow registry (what `load` and `register` fill),
the model aliases every part resolves model names with, the handler (provider settings, the default
model), and the parts that run tasks and workflows: the manager (which imports pydantic-ai), the
executor and the workflow runner, built on first use, so constructing a system and loading or listing
templates and workflows does not import pydantic-ai.
Every method that runs something checks its keyword arguments into one `CallOptions` and passes that
on; durable runs (`atomtask.runs`, the `durable` extra) are imported only when a run id or a run store
is given, batches (`atomtask.batch`) only when one runs.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

from atomtask.errors import ConfigurationError, SchemaError
from atomtask.executors._cache import CacheConfig
from atomtask.handlers._base import BaseHandler
from atomtask.loading._declarations import Declarations
from atomtask.loading._model_aliases import ModelAliases
from atomtask.loading._providers import check_model_settings, check_options
from atomtask.loading._readers import load_paths
from atomtask.loading._template_registry import CompiledTemplate, TemplateRegistry, compile_template
from atomtask.schemas._fields import build_models
from atomtask.schemas._model_registry import ModelRegistry, register_builtin_schemas
from atomtask.system._options import (
    CallOptions,
    ProviderRetries,
    SubtaskRequest,
    TraceSettings,
    trace_settings,
)
from atomtask.system._options import large_prompt as large_prompt_size
from atomtask.system._results import BatchItemResult, StepVisit, TaskResult, WorkflowResult
from atomtask.system._templates import CacheChoice, OutputFormat, OutputMode, RepairMode, Template, TemplateLimits
from atomtask.system._workflows import Workflow
from atomtask.workflows._registry import WorkflowRegistry
from pydantic import BaseModel, ValidationError

if TYPE_CHECKING:
    from atomtask.batch._api import BatchOptions
    from atomtask.batch._run import BatchRun
    from atomtask.estimate._figures import Estimate
    from atomtask.executors._atomic import AtomicTaskExecutor
    from atomtask.executors._cache_store import ResponseCache
    from atomtask.executors._streaming import TaskStream
    from atomtask.handlers._llm import LLMInteractionManager
    from atomtask.runs._records import RunInfo
    from atomtask.workflows._runner import WorkflowRunner
    from pydantic_ai.models import Model
    from pydantic_ai.settings import ModelSettings
    from typing_extensions import Unpack

__all__ = ["TaskSystem", "bundled_templates_path", "extract", "extract_async"]

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
        server: the kind of server behind it: `llama-cpp-python`, `llama-server`, `ollama`, `vllm`, `lmstudio`,
            `openai` or `generic`, so every request goes in the form it honours (grammar-constrained output where it
            offers it, `max_tokens`); None (the default) detects it from the endpoint at the first request.
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
        model_aliases: names for models, used wherever a model is named (`model=`, a template's `model` and
            `fallbacks`, a step's `model` and `retry_with`, `--model`): a role (`{"fast": "openai-chat:gpt-4o-mini"}`)
            or a model string standing for another model, e.g. a `FunctionModel` for
            `"anthropic:claude-sonnet-4-5"`. They win over the files' `models:`; `system.model_aliases.add(...)`
            adds more (see `ModelAliases`).
        large_prompt: a rendered prompt (system text and instructions) longer than this many characters runs
            with a warning, logged (`large_prompt`) and in the result's `notes.warnings`; None (the default) reads
            `ATOMTASK_LARGE_PROMPT`, else 1,000,000. 0 turns the warning off.
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
        model_aliases: Mapping[str, Model | str] | None = None,
        large_prompt: int | None = None,
        server: str | None = None,
    ) -> None:
        self.models = ModelRegistry(importable=importable)
        # The shipped templates' Python output classes, so `templates/` resolves in every system.
        register_builtin_schemas(self.models)
        #: Names for models (`fast`, or a model string standing for another model), resolved at each call.
        self.model_aliases = ModelAliases(model_aliases)
        self.templates = TemplateRegistry(self.models, model_aliases=self.model_aliases)
        self.workflows = WorkflowRegistry(self.templates, self.models)
        if model_settings is not None:
            checked = check_model_settings(model_settings, where="the TaskSystem (`model_settings=`)")
            model_settings = cast("ModelSettings", checked)
        self._cache = CacheConfig(cache, cache_path)  # a given path is opened (and checked) now
        self._trace = trace_settings(instrument, os.environ)  # None: off, and OpenTelemetry is never imported
        self._large_prompt = large_prompt_size(large_prompt, os.environ)
        # `ask`'s templates, compiled once for each output, mode and name (they hold no model or text of their own).
        self._asked: dict[tuple[Any, ...], CompiledTemplate] = {}
        self._executor: AtomicTaskExecutor | None = None
        self._runner: WorkflowRunner | None = None
        self._parts_lock = threading.Lock()
        if templates is not None:
            self.load(templates)
        # After loading: `model` may be an alias the files declare (`models:`).
        self.handler = BaseHandler(
            model=model,
            base_url=base_url,
            model_settings=model_settings,
            provider_retries=provider_retries,
            model_aliases=self.model_aliases,
            server=server,
        )

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
                    from atomtask.executors._atomic import AtomicTaskExecutor
                    from atomtask.handlers._llm import LLMInteractionManager

                    tracing = None
                    if self._trace is not None:
                        from atomtask.handlers._tracing import Tracing

                        tracing = Tracing(self._trace)
                    self._executor = AtomicTaskExecutor(
                        self.templates,
                        LLMInteractionManager(self.handler, tracing),
                        self._cache,
                        large_prompt=self._large_prompt,
                    )
        return self._executor

    @property
    def runner(self) -> WorkflowRunner:
        """The `WorkflowRunner` that runs workflows through the executor (built on first use)."""
        if self._runner is None:
            from atomtask.workflows._runner import WorkflowRunner

            executor = self.executor
            with self._parts_lock:
                if self._runner is None:
                    self._runner = WorkflowRunner(executor)
        return self._runner

    def load(self, path: str | Path | Iterable[str | Path]) -> list[str]:
        """Load templates, schemas, workflows and model aliases from YAML and `.sexp` files or folders.

        Returns the names of the templates loaded.

        Every file is read by the reader for its suffix (YAML, JSON Schema `.json`, and the top-level
        `defschema`/`defatom`/`defworkflow`/`defmodels` forms of `.sexp` files; the same readers `atomtask
        check` uses). Model aliases (`models:`) are added first and schemas built and registered next, all
        files together (they may reference each other across files and formats), then every template,
        then every workflow (`system.workflows`) is checked and registered. Any mistake raises a usage
        error with its file, line and column, before any model is called.
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
        from atomtask.sexp._evaluator import Interpreter

        options = check_options(
            model=model, model_settings=model_settings, where="`defatom()`", aliases=self.model_aliases
        )
        interpreter = Interpreter(self, model=options.model, model_settings=options.model_settings)
        return interpreter.evaluate(source, file=file, variables=variables)

    def register_declarations(self, declarations: Declarations) -> list[str]:
        """Register already-read model aliases, schemas, templates and workflows (what `load` does).

        Returns the names of the templates registered.
        """
        if declarations.model_aliases:  # first: templates and steps may name them
            self.model_aliases.declare(declarations.model_aliases)
        if declarations.json_schemas or declarations.python_schemas:
            from atomtask.schemas._sources import register_schema_sources

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
        try:
            options = check_options(
                model=model,
                retries=retries,
                limits=limits,
                repair=repair,
                model_settings=model_settings,
                cache=cache,
                aliases=self.model_aliases,
            )
        except ConfigurationError as exc:
            return self.executor.refuse(name_or_request, exc)
        return self.executor.execute(name_or_request, inputs, options, expect=expect)

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
        try:
            options = check_options(
                model=model,
                retries=retries,
                limits=limits,
                repair=repair,
                model_settings=model_settings,
                cache=cache,
                aliases=self.model_aliases,
            )
        except ConfigurationError as exc:
            return self.executor.refuse(name_or_request, exc)
        return await self.executor.execute_async(name_or_request, inputs, options, expect=expect)

    @overload
    def ask(
        self,
        output: type[T],
        text: str,
        *,
        instructions: str | None = None,
        model: Model | str | None = None,
        retries: int | None = None,
        limits: TemplateLimits | Mapping[str, Any] | None = None,
        repair: RepairMode | str | bool | None = None,
        model_settings: Mapping[str, Any] | None = None,
        cache: CacheChoice = None,
        mode: OutputMode | str | None = None,
        name: str = "ask",
    ) -> TaskResult[T]: ...

    @overload
    def ask(
        self,
        output: str,
        text: str,
        *,
        instructions: str | None = None,
        model: Model | str | None = None,
        retries: int | None = None,
        limits: TemplateLimits | Mapping[str, Any] | None = None,
        repair: RepairMode | str | bool | None = None,
        model_settings: Mapping[str, Any] | None = None,
        cache: CacheChoice = None,
        mode: OutputMode | str | None = None,
        name: str = "ask",
    ) -> TaskResult[Any]: ...

    def ask(
        self,
        output: type[Any] | str,
        text: str,
        *,
        instructions: str | None = None,
        model: Model | str | None = None,
        retries: int | None = None,
        limits: TemplateLimits | Mapping[str, Any] | None = None,
        repair: RepairMode | str | bool | None = None,
        model_settings: Mapping[str, Any] | None = None,
        cache: CacheChoice = None,
        mode: OutputMode | str | None = None,
        name: str = "ask",
    ) -> TaskResult[Any]:
        """One call without a named template: `text` to the model, the answer validated into `output`.

        `output` is a Pydantic class (`parsedContent` is an instance of it), a registered schema's name, or
        `str` for a text answer; `instructions` are the system text (sent as written, never rendered), and
        `text` the user's message. Everything else is `execute`'s: the same executor, repair, retries,
        limits, model settings, response cache, ledger (`notes.attempts`) and tracing, as if a template named
        `name` had been registered; `mode` picks tool, native or prompted output.

        Example:
            ```python
            contact = system.ask(Contact, "Ada Lovelace, ada@example.com", instructions="Extract the contact.")
            print(contact.unwrap().email)
            ```

        Raises `SchemaError` for an `output` that is neither a Pydantic class, a registered schema's name nor
        `str`, and `ConfigurationError` for a bad `mode` or `name`; a bad model, limit or setting is a FAILED
        result (`configuration_error`), as with `execute`.
        """
        asked = self._ask(output, text, instructions, mode, name, model, retries, limits, repair, model_settings, cache)
        if isinstance(asked, TaskResult):
            return asked
        return self.executor.execute(*asked)

    @overload
    async def ask_async(
        self,
        output: type[T],
        text: str,
        *,
        instructions: str | None = None,
        model: Model | str | None = None,
        retries: int | None = None,
        limits: TemplateLimits | Mapping[str, Any] | None = None,
        repair: RepairMode | str | bool | None = None,
        model_settings: Mapping[str, Any] | None = None,
        cache: CacheChoice = None,
        mode: OutputMode | str | None = None,
        name: str = "ask",
    ) -> TaskResult[T]: ...

    @overload
    async def ask_async(
        self,
        output: str,
        text: str,
        *,
        instructions: str | None = None,
        model: Model | str | None = None,
        retries: int | None = None,
        limits: TemplateLimits | Mapping[str, Any] | None = None,
        repair: RepairMode | str | bool | None = None,
        model_settings: Mapping[str, Any] | None = None,
        cache: CacheChoice = None,
        mode: OutputMode | str | None = None,
        name: str = "ask",
    ) -> TaskResult[Any]: ...

    async def ask_async(
        self,
        output: type[Any] | str,
        text: str,
        *,
        instructions: str | None = None,
        model: Model | str | None = None,
        retries: int | None = None,
        limits: TemplateLimits | Mapping[str, Any] | None = None,
        repair: RepairMode | str | bool | None = None,
        model_settings: Mapping[str, Any] | None = None,
        cache: CacheChoice = None,
        mode: OutputMode | str | None = None,
        name: str = "ask",
    ) -> TaskResult[Any]:
        """The async form of `ask` (pydantic-ai `Agent.run`)."""
        asked = self._ask(output, text, instructions, mode, name, model, retries, limits, repair, model_settings, cache)
        if isinstance(asked, TaskResult):
            return asked
        return await self.executor.execute_async(*asked)

    def _ask(
        self,
        output: type[Any] | str,
        text: str,
        instructions: str | None,
        mode: OutputMode | str | None,
        name: str,
        model: Model | str | None,
        retries: int | None,
        limits: TemplateLimits | Mapping[str, Any] | None,
        repair: RepairMode | str | bool | None,
        model_settings: Mapping[str, Any] | None,
        cache: CacheChoice,
    ) -> tuple[CompiledTemplate, dict[str, Any], CallOptions] | TaskResult[Any]:
        """What `ask` runs (its template, inputs and options), or the refusal; raises for a bad output, mode or name."""
        task = self._ask_template(output, bool(instructions), mode, name)
        inputs = {"text": text, "instructions": instructions} if instructions else {"text": text}
        try:
            options = check_options(
                model=model,
                retries=retries,
                limits=limits,
                repair=repair,
                model_settings=model_settings,
                cache=cache,
                aliases=self.model_aliases,
            )
        except ConfigurationError as exc:
            return self.executor.refuse(task, exc)
        return task, inputs, options

    def _ask_template(
        self, output: type[Any] | str, instructed: bool, mode: OutputMode | str | None, name: str
    ) -> CompiledTemplate:
        """The template `ask` runs: `{{text}}` the prompt, `{{instructions}}` the system text, `output` the answer."""
        structured = isinstance(output, str) or (isinstance(output, type) and issubclass(output, BaseModel))
        if output is not str and not structured:
            fix = (
                f"pass the class `{type(output).__name__}`, not an instance"
                if isinstance(output, BaseModel)
                else "wrap other types in a model: `class Answer(BaseModel): value: ...`"
            )
            raise SchemaError(
                f"`ask()` answers a Pydantic model class (`ask(Contact, ...)`), a registered schema's name, or `str` "
                f"for text, not {output!r}; {fix}."
            )
        key = (output, instructed, mode, name)
        compiled = self._asked.get(key)
        if compiled is not None:
            return compiled
        if output is str:
            if mode is not None:
                raise ConfigurationError(
                    f"`mode={mode!r}` applies to a structured answer; `ask(str, ...)` answers text."
                )
            answer = OutputFormat()
        else:
            try:
                chosen = OutputMode.TOOL if mode is None else mode
                answer = OutputFormat.model_validate({"schema": output, "mode": chosen})
            except ValidationError:
                modes = ", ".join(f"`{m.value}`" for m in OutputMode)
                raise ConfigurationError(f"Invalid `mode={mode!r}` for `ask()`: use one of {modes}.") from None
        try:
            template = Template(
                name=name,
                params={"text": "str", **({"instructions": "str"} if instructed else {})},
                system="{{instructions}}" if instructed else None,
                instructions="{{text}}",
                output_format=answer,
            )
        except ValidationError as exc:
            problem = exc.errors(include_url=False)[0]["msg"].removeprefix("Value error, ")
            raise ConfigurationError(f"Invalid `name={name!r}` for `ask()`: {problem}.") from None
        compiled = compile_template(template, self.models, aliases=self.model_aliases)
        if len(self._asked) >= 256:  # outputs made on the fly would otherwise pile up
            self._asked.clear()
        self._asked[key] = compiled
        return compiled

    @overload
    def execute_stream(
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
        debounce_by: float | None = 0.1,
        expect: None = None,
    ) -> TaskStream[Any]: ...

    @overload
    def execute_stream(
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
        debounce_by: float | None = 0.1,
        expect: type[T],
    ) -> TaskStream[T]: ...

    def execute_stream(
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
        debounce_by: float | None = 0.1,
        expect: type[Any] | None = None,
    ) -> TaskStream[Any]:
        """`execute_async`, streamed: `async for partial in stream` (`PartialOutput[T]`), `await stream.get_result()`.

        Options as `execute_async`, plus `debounce_by` (seconds between partials; None: every chunk). The
        result has `execute`'s ledger; repair and retries apply to the final answer (`TaskStream`).
        """
        from atomtask.executors._streaming import TaskStream, stream_task

        try:
            options = check_options(
                model=model,
                retries=retries,
                limits=limits,
                repair=repair,
                model_settings=model_settings,
                cache=cache,
                aliases=self.model_aliases,
            )
        except ConfigurationError as exc:
            refused = self.executor.refuse(name_or_request, exc)

            async def answer(_sink: Any) -> TaskResult[Any]:
                return refused

            return TaskStream(answer)
        return stream_task(self.executor, name_or_request, inputs, options, debounce_by=debounce_by, expect=expect)

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
        from atomtask.handlers._blocking import run_blocking

        options = check_options(
            model=model, model_settings=model_settings, limits=limits, where="this run", aliases=self.model_aliases
        )
        run = self._run_workflow(name, inputs, options, expect, on_visit, run_id, db, on_waiting)
        return run_blocking(run)

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
        options = check_options(
            model=model, model_settings=model_settings, limits=limits, where="this run", aliases=self.model_aliases
        )
        return await self._run_workflow(name, inputs, options, expect, on_visit, run_id, db, on_waiting)

    async def _run_workflow(
        self,
        name: str,
        inputs: Mapping[str, Any] | None,
        options: CallOptions,
        expect: type[BaseModel] | None,
        on_visit: Callable[[StepVisit], None] | None,
        run_id: str | None,
        db: str | None,
        on_waiting: Callable[[str, dict[str, Any]], None] | None,
    ) -> WorkflowResult[Any]:
        compiled = self.workflows.compiled(name)
        if run_id is None and db is None:
            return await self.runner.run_async(compiled, inputs, options, expect=expect, on_visit=on_visit)
        from atomtask.runs import _durable as durable

        return await durable.run(
            self.workflows,
            self.runner,
            name,
            inputs,
            options,
            run_id=run_id,
            db=db,
            expect=expect,
            on_visit=on_visit,
            on_waiting=on_waiting,
            base_url=self.handler.base_url,
        )

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

        `inputs` gives the values of its `redact: true` state fields again: they are never stored. The steps go
        to this system's `base_url`; a run started with another (`RunInfo.base_url`) logs `run_endpoint_changed`.

        The run's workflow must be loaded. `model=` is needed again when the run was started with a `Model`
        instance (only model strings are stored). A FAILED run goes on from the step that failed (the steps
        completed before it come back from their checkpoints). Raises before anything runs: `RunNotFoundError`,
        `RunStateError` (the run is COMPLETE), `CorruptCheckpointError`, `WorkflowNotFoundError`.
        """
        from atomtask.handlers._blocking import run_blocking
        from atomtask.runs import _durable as durable

        resumed = durable.resume(
            self.workflows,
            self.runner,
            run_id,
            db=db,
            model=model,
            on_visit=on_visit,
            inputs=inputs,
            on_waiting=on_waiting,
            base_url=self.handler.base_url,
        )
        return run_blocking(resumed)

    def approve_workflow(
        self,
        run_id: str,
        *,
        approved: bool = True,
        note: str | None = None,
        by: str | None = None,
        db: str | None = None,
        step: str | None = None,
    ) -> RunInfo:
        """Decide for the durable run `run_id`, WAITING at an approval step (`approved=False` rejects).

        The decision goes to the step's `output:` field; the run's process goes on with it (a run whose process
        has gone gets it on `resume_workflow`). Each visit of an approval step is decided once. With `step=`, the
        decision is sent only if the run waits at that step. Raises `RunNotFoundError`, `ApprovalError` (not
        WAITING, waiting at another step than `step`, or that visit decided already: the decision that stands).
        """
        from atomtask.handlers._blocking import run_blocking
        from atomtask.runs import _durable as durable

        return run_blocking(durable.approve(run_id, approved=approved, note=note, by=by, db=db, step=step))

    def workflow_runs(self, *, db: str | None = None) -> list[RunInfo]:
        """The durable runs in the store (`db=`, default `$ATOMTASK_HOME/runs.sqlite`), the most recent first."""
        from atomtask.handlers._blocking import run_blocking
        from atomtask.runs import _durable as durable

        return run_blocking(durable.list_runs(db=db))

    def batch(self, name: str, items: Iterable[Mapping[str, Any]], **options: Unpack[BatchOptions]) -> BatchRun:
        """Run template or workflow `name` over `items` (mappings of inputs): an async iterator of `BatchItemResult`s.

        Results come in completion order (`result.index` is the item's position); the options are
        `BatchOptions` (`model`, `model_settings`, `retries`, `repair`, `concurrency`, `rpm`, `tpm`, `max_cost`,
        `max_total_tokens`, `id_field`, `batch_id` with `db`, `retry_failed`, `provider_batch`, ...). A 429 from the
        provider pauses every worker for its `Retry-After`. The returned `BatchRun` keeps the counts (`done`,
        `failed`, `failed_by`, `spent`, `stopped`). Bad items and options raise before anything runs.

        Example:
            ```python
            async for item in system.batch("extract_contact", [{"text": t} for t in texts], concurrency=32):
                print(item.id, item.status, item.output)
            ```
        """
        from atomtask.batch._api import start_batch

        return start_batch(self, name, items, **options)

    def batch_sync(
        self, name: str, items: Iterable[Mapping[str, Any]], **options: Unpack[BatchOptions]
    ) -> list[BatchItemResult]:
        """The sync form of `batch`: every `BatchItemResult`, in completion order (sort by `index` for input order)."""
        from atomtask.batch._api import collect
        from atomtask.handlers._blocking import run_blocking

        return run_blocking(collect(self.batch(name, items, **options)))

    def estimate(
        self,
        name: str,
        inputs: Mapping[str, Any] | None = None,
        *,
        items: Iterable[Mapping[str, Any]] | None = None,
        model: Model | str | None = None,
        model_settings: Mapping[str, Any] | None = None,
        retries: int | None = None,
        repair: RepairMode | str | bool | None = None,
        provider_batch: bool = False,
    ) -> Estimate:
        """What running template or workflow `name` would cost, without calling a model (`--dry-run`).

        Per template and model and in total: requests, input and output tokens and USD, each expected and at
        worst (every retry, fallback, loop bound and `for_each` item); `items=` estimates a batch, item by item.
        `provider_batch=True` prices at the provider's batch rates. Raises what a run would report before any
        model call: `TaskFailedError` (inputs that do not fit, an unknown template), `WorkflowNotFoundError`,
        `WorkflowFailedError` (run inputs that do not fit the state), `ConfigurationError` (a bad option).

        Example:
            ```python
            estimate = system.estimate("extract_contact", {"text": "Ada Lovelace, ada@example.com"})
            print(estimate.render())
            ```
        """
        from atomtask.estimate._estimate import estimate_items, estimate_task, estimate_workflow

        options = check_options(
            model=model, model_settings=model_settings, retries=retries, repair=repair, aliases=self.model_aliases
        )
        if items is not None:
            return estimate_items(self, name, list(items), options, provider_batch=provider_batch)
        if name in self.workflows.names() and name not in self.templates.names():
            return estimate_workflow(self, name, inputs, options, provider_batch=provider_batch)
        return estimate_task(self, name, inputs, options, provider_batch=provider_batch)


#: What `extract` tells the model when the caller gives no `instructions`.
EXTRACT_INSTRUCTIONS = (
    "Extract the information the answer's fields ask for from the user's text. Use only what the text says; "
    "leave out what it does not say wherever the schema allows."
)

_shared: TaskSystem | None = None
_shared_lock = threading.Lock()


def _shared_system() -> TaskSystem:
    """The `TaskSystem` `extract` runs on, made on first use: the model from `ATOMTASK_MODEL`, else the embedded one."""
    global _shared
    if _shared is None:
        with _shared_lock:
            if _shared is None:
                _shared = TaskSystem()
    return _shared


def extract(
    output: type[T],
    text: str,
    *,
    instructions: str | None = None,
    model: Model | str | None = None,
    retries: int | None = None,
    limits: TemplateLimits | Mapping[str, Any] | None = None,
    repair: RepairMode | str | bool | None = None,
    model_settings: Mapping[str, Any] | None = None,
    cache: CacheChoice = None,
) -> TaskResult[T]:
    """Extract an `output` (a Pydantic class) from `text` in one call: `TaskSystem.ask` on a shared `TaskSystem`.

    The shared system is `TaskSystem()`: its model is `model=`, else `ATOMTASK_MODEL`, else the embedded
    `atomtask:synthetic` (made-up, schema-valid values, with a `DefaultModelWarning` once). Without
    `instructions`, the model is told to extract what the fields ask for from the text. For a `base_url`,
    schemas from files or a cache setting, make your own `TaskSystem` and call its `ask`.

    Example:
        ```python
        contact = atomtask.extract(Contact, "Reach Ada Lovelace at ada@example.com").unwrap()
        ```
    """
    return _shared_system().ask(
        output,
        text,
        instructions=instructions or EXTRACT_INSTRUCTIONS,
        model=model,
        retries=retries,
        limits=limits,
        repair=repair,
        model_settings=model_settings,
        cache=cache,
        name="extract",
    )


async def extract_async(
    output: type[T],
    text: str,
    *,
    instructions: str | None = None,
    model: Model | str | None = None,
    retries: int | None = None,
    limits: TemplateLimits | Mapping[str, Any] | None = None,
    repair: RepairMode | str | bool | None = None,
    model_settings: Mapping[str, Any] | None = None,
    cache: CacheChoice = None,
) -> TaskResult[T]:
    """The async form of `extract` (`TaskSystem.ask_async` on the shared `TaskSystem`)."""
    return await _shared_system().ask_async(
        output,
        text,
        instructions=instructions or EXTRACT_INSTRUCTIONS,
        model=model,
        retries=retries,
        limits=limits,
        repair=repair,
        model_settings=model_settings,
        cache=cache,
        name="extract",
    )
