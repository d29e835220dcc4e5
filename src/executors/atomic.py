"""`AtomicTaskExecutor`: run one task, from a name and inputs to a `TaskResult`.

The path: look the template up, validate the inputs against its parameters, render the system
text and instructions strictly, choose the model, hand one `ModelCall` to the manager, and wrap
the outcome with its notes. A failure at any step is a FAILED result with a typed reason; nothing
here raises for a task that failed. With the response cache on for a call (`caching.py`), a stored
answer for the same rendered call is returned instead of asking the model, and a COMPLETE one is stored.

There is one implementation of each step (`_prepare`, the manager's `run`, `_finish`); `execute_async`
awaits the model call, `execute` runs only that call to completion on an event loop, on a worker thread
when the caller is already inside a running event loop (Jupyter, a FastAPI handler). With tracing on,
`execute` runs all of `execute_async` there instead, so that the task's span holds every step.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, overload

import attrs
from atomtask.executors.caching import CacheChoice, CacheConfig, CachePlan, schema_fingerprint
from atomtask.executors.inputs import validate_inputs
from atomtask.executors.overrides import CallOverrides
from atomtask.executors.rendering import RenderError, render
from atomtask.handlers.base import ModelChoice
from atomtask.handlers.blocking import run_blocking
from atomtask.handlers.ledger import usage_total
from atomtask.handlers.llm import CallOutcome, LLMInteractionManager, ModelCall
from atomtask.loading.checks import CompiledTemplate
from atomtask.loading.template_registry import TemplateRegistry
from atomtask.system.errors import TemplateNotFoundError, UsageError
from atomtask.system.logs import get_logger
from atomtask.system.records import record_builder
from atomtask.system.requests import SubtaskRequest
from atomtask.system.results import FailureReason, TaskError, TaskNotes, TaskResult, TaskStatus
from atomtask.system.templates import RepairMode, TemplateLimits

if TYPE_CHECKING:
    from pydantic_ai.models import Model

__all__ = ["AtomicTaskExecutor"]

log = get_logger(__name__)
T = TypeVar("T")
# Parametrised once: pydantic's `TaskResult[Any]` lookup costs about a millisecond inside a run.
_Result = TaskResult[Any]
# Built from values atomtask typed itself, not validated again (`system.records`).
_new_result = record_builder(_Result)
_new_notes = record_builder(TaskNotes)


@attrs.define(kw_only=True)  # one per call, read-only by convention (see `ModelCall`)
class _Prepared:
    call: ModelCall
    started: float
    events: Any  # the task's logger, looked up once (`logs.current`) for all its events
    cache: CachePlan | None = None


class AtomicTaskExecutor:
    """Runs one task at a time (sync or async) against a `TemplateRegistry` and a manager (and a response cache)."""

    def __init__(
        self, templates: TemplateRegistry, manager: LLMInteractionManager, cache: CacheConfig | None = None
    ) -> None:
        self.templates = templates
        self.manager = manager
        self.cache = cache if cache is not None else CacheConfig()
        self._default_notice_logged = False

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
        """Run a task synchronously; never raises for a failed task.

        Works inside a running event loop too: the run then happens on a worker thread while this one waits.
        """
        overrides = CallOverrides.of(retries, limits, repair, model_settings, cache)
        if self.manager.tracing is not None:  # the task's span holds all of it, as in `execute_async`
            return run_blocking(self._run(name_or_request, inputs, model, expect, overrides))
        # Only the model call goes to the event loop: every await of the run resumes each coroutine
        # around it, so none is added there.
        prepared = self._prepare(name_or_request, inputs, model, expect, overrides)
        if isinstance(prepared, TaskResult):
            return prepared
        return self._finish(prepared, run_blocking(self.manager.run(prepared.call)))

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
        """Run a task on the running event loop (pydantic-ai `run`); never raises for a failed task."""
        overrides = CallOverrides.of(retries, limits, repair, model_settings, cache)
        return await self._run(name_or_request, inputs, model, expect, overrides)

    async def _run(
        self,
        name_or_request: str | SubtaskRequest,
        inputs: Mapping[str, Any] | None,
        model: Model | str | None,
        expect: type[Any] | None,
        overrides: CallOverrides,
    ) -> TaskResult[Any]:
        tracing = self.manager.tracing  # OpenTelemetry: the task's span, with pydantic-ai's nested inside it
        if tracing is None:
            return await self._execute(name_or_request, inputs, model, expect, overrides)
        run = self._execute(name_or_request, inputs, model, expect, overrides)  # prepared inside the span
        return await tracing.task(name_or_request, run, templates=self.templates, fingerprint=schema_fingerprint)

    async def _execute(
        self,
        name_or_request: str | SubtaskRequest,
        inputs: Mapping[str, Any] | None,
        model: Model | str | None,
        expect: type[Any] | None,
        overrides: CallOverrides,
    ) -> TaskResult[Any]:
        prepared = self._prepare(name_or_request, inputs, model, expect, overrides)
        if isinstance(prepared, TaskResult):
            return prepared
        return self._finish(prepared, await self.manager.run(prepared.call))

    def _prepare(
        self,
        name_or_request: str | SubtaskRequest,
        inputs: Mapping[str, Any] | None,
        model: Model | str | None,
        expect: type[Any] | None,
        overrides: CallOverrides,
    ) -> _Prepared | TaskResult[Any]:
        """The call to make, or the result without one (a failure before the call, or a cache hit)."""
        started = time.perf_counter()
        if isinstance(name_or_request, SubtaskRequest):
            name = name_or_request.name
            inputs = {**name_or_request.inputs, **(inputs or {})}
            model = model if model is not None else name_or_request.model
        else:
            name = name_or_request
        events = log.current()
        events.info("task_started", template=name)
        try:
            compiled = self.templates.compiled(name)
        except TemplateNotFoundError as exc:
            return _failed(
                name,
                started,
                TaskError(
                    reason=FailureReason.TEMPLATE_NOT_FOUND,
                    message=exc.message,
                    details={"suggestions": exc.suggestions},
                ),
            )
        template = compiled.template
        if expect is not None and not _fits(compiled, expect):
            declared = compiled.output_cls.__name__ if compiled.output_cls is not None else "str"
            return _failed(
                name,
                started,
                TaskError(
                    reason=FailureReason.CONFIGURATION_ERROR,
                    message=f"Template {name!r} answers {declared}, but the caller expects "
                    f"{expect.__name__}; fix `expect=` or the template's `output_format.schema`.",
                    details={"declared": declared, "expected": expect.__name__},
                ),
            )
        values = validate_inputs(compiled, inputs or {})
        if isinstance(values, TaskError):
            return _failed(name, started, values)
        try:
            # `render` is called only for a text with placeholders (a fixed text is used as it is).
            system = template.system or None
            if system and compiled.system_placeholders:
                system = render(system, compiled.system_placeholders, values)
            prompt = template.instructions
            if compiled.instruction_placeholders:
                prompt = render(prompt, compiled.instruction_placeholders, values)
        except RenderError as exc:
            return _failed(
                name,
                started,
                TaskError(
                    reason=FailureReason.INPUT_VALIDATION_FAILURE,
                    message=f"{exc}. Pass a value that has that field, or fix the placeholder.",
                    details={"params": [exc.placeholder.param], "available": exc.available},
                ),
            )
        try:
            choice = self.manager.handler.choose_model(call=model, template=template.model)
            limits, settings, repair = overrides.resolve(template.limits, compiled.model_settings, template.repair)
            cache_policy = self.cache.policy(overrides.cache, template.cache)
        except UsageError as exc:
            return _failed(name, started, TaskError(reason=FailureReason.CONFIGURATION_ERROR, message=exc.message))
        if choice.source == "default" and not self._default_notice_logged:  # the one source with a notice
            self._default_notice_logged = True
            log.info("default_model_used", notice=choice.notice)
        # A model chosen by the call replaces the template's choice, its fallbacks included.
        fallbacks = (
            ()
            if choice.source == "call" or not template.fallbacks
            else tuple(ModelChoice(spec=m, label=m, source="fallback") for m in template.fallbacks)
        )
        call = ModelCall(
            template=name,
            model=choice,
            system=system,
            prompt=prompt,
            output_cls=compiled.output_cls,
            mode=compiled.output_mode,
            retries=overrides.retries if overrides.retries is not None else template.retries,
            limits=limits,
            fallbacks=fallbacks,
            repair=repair,
            model_settings=settings,
            fixed_system=not compiled.system_placeholders,
        )
        if cache_policy is None:
            return _Prepared(call=call, started=started, events=events)
        plan = self.cache.plan(call, cache_policy, self.manager.handler)
        hit = self.cache.lookup(plan, call, started)
        return hit if hit is not None else _Prepared(call=call, started=started, events=events, cache=plan)

    def _finish(self, prepared: _Prepared, outcome: CallOutcome) -> TaskResult[Any]:
        """The result of the call (stored in the response cache when it is COMPLETE and the cache is on)."""
        call = prepared.call
        model = outcome.model or call.model.label
        duration_ms = (time.perf_counter() - prepared.started) * 1000
        notes = _new_notes(
            {
                "template": call.template,
                "model": model,
                "model_source": call.model.source,
                "output_mode": str(call.mode) if call.output_cls is not None else "text",  # (`.value` runs Python)
                "duration_ms": duration_ms,
                "usage": usage_total(outcome.attempts),
                "attempts": outcome.attempts,
                "models_tried": outcome.models_tried,
                "default_model_notice": call.model.notice,
            }
        )
        events = prepared.events
        for attempt in outcome.attempts:
            events.debug(
                "task_attempt",
                template=call.template,
                attempt=attempt.index,
                model=attempt.model,
                valid=not attempt.errors and attempt.fault is None,  # `Attempt.valid`, spelled out
                errors=len(attempt.errors or ()),
                input_tokens=attempt.usage.input_tokens,
                output_tokens=attempt.usage.output_tokens,
            )
        if outcome.error is not None:
            events.warning(
                "task_failed",
                template=call.template,
                reason=outcome.error.reason.value,
                attempts=len(outcome.attempts),
                model=model,
            )
            failed: TaskResult[Any] = _new_result(
                {"status": TaskStatus.FAILED, "content": outcome.content, "notes": notes, "error": outcome.error}
            )
            return failed
        events.info(
            "task_completed",
            template=call.template,
            attempts=len(outcome.attempts),
            model=model,
            # Rounded to 0.01 ms by arithmetic: `round(x, 2)` formats the number through its decimal digits.
            duration_ms=int(duration_ms * 100 + 0.5) / 100,
        )
        result: TaskResult[Any] = _new_result(
            {"status": TaskStatus.COMPLETE, "content": outcome.content, "parsedContent": outcome.output, "notes": notes}
        )
        if prepared.cache is not None:
            self.cache.save(prepared.cache, result)
        return result


def _fits(compiled: CompiledTemplate, expect: type[Any]) -> bool:
    declared: type[Any] = compiled.output_cls if compiled.output_cls is not None else str
    return issubclass(declared, expect)


def _failed(name: str, started: float, error: TaskError) -> TaskResult[Any]:
    log.warning("task_failed", template=name, reason=error.reason.value, attempts=0)
    notes = TaskNotes(template=name, duration_ms=(time.perf_counter() - started) * 1000)
    return _Result(status=TaskStatus.FAILED, notes=notes, error=error)
