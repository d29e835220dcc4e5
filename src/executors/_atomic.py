"""`AtomicTaskExecutor`: run one task, from a name, inputs and `CallOptions` to a `TaskResult`.

The path: look the template up, validate the inputs against its parameters and render the system text
and instructions strictly (`_prompts`), resolve what the call asks against the template and the
`TaskSystem` (`resolve_options`: the model, retries, limits, repair, model settings and cache), hand
one `ModelCall` to the manager, and wrap the outcome with its notes. A failure at any step is a FAILED
result with a typed reason; nothing here raises for a task that failed. With the response cache on for
a call (`_cache`), a stored answer for the same rendered call is returned instead of asking the model,
and a COMPLETE one is stored.

There is one implementation of each step (`_prepare`, the manager's `run`, `_finish`); `execute_async`
awaits the model call, `execute` runs only that call to completion on an event loop, on a worker thread
when the caller is already inside a running event loop (Jupyter, a FastAPI handler). With tracing on,
`execute` runs all of `execute_async` there instead, so that the task's span holds every step.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
import threading
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from types import FrameType
from typing import Any, TypeAlias

import attrs
from atomtask._logs import get_logger
from atomtask.errors import DefaultModelWarning, RenderError, TemplateNotFoundError, UsageError
from atomtask.executors._cache import CacheConfig, CachePlan, schema_fingerprint
from atomtask.executors._prompts import render, validate_inputs
from atomtask.handlers._base import BaseHandler, ModelChoice
from atomtask.handlers._blocking import run_blocking
from atomtask.handlers._ledger import usage_total
from atomtask.handlers._llm import CallOutcome, LLMInteractionManager, ModelCall
from atomtask.loading._template_registry import CompiledTemplate, TemplateRegistry
from atomtask.system._media import media_inputs
from atomtask.system._options import LARGE_PROMPT, NO_OPTIONS, CallOptions, SubtaskRequest
from atomtask.system._results import FailureReason, TaskError, TaskNotes, TaskResult, TaskStatus
from atomtask.system._templates import CachePolicy, RepairMode, TemplateLimits

__all__ = ["AtomicTaskExecutor", "Resolved", "TaskRef", "resolve_options"]

log = get_logger(__name__)
# Parametrised once: pydantic's `TaskResult[Any]` lookup costs about a millisecond inside a run.
_Result = TaskResult[Any]

#: What a run names: a registered template, a step's request for one, or a template compiled for this
#: call only (`TaskSystem.ask`), which runs exactly as a registered one does.
TaskRef: TypeAlias = str | SubtaskRequest | CompiledTemplate


@attrs.define(kw_only=True)  # one per call, read-only by convention (see `ModelCall`)
class Resolved:
    """What one call of a template runs with, once the call's options met the template and the `TaskSystem`."""

    model: ModelChoice
    fallbacks: tuple[ModelChoice, ...]
    retries: int | None
    limits: TemplateLimits | None
    repair: RepairMode
    model_settings: dict[str, Any] | None
    cache: CachePolicy | None


def resolve_options(
    options: CallOptions, compiled: CompiledTemplate, handler: BaseHandler, cache: CacheConfig
) -> Resolved:
    """Who wins, field by field, between a call's options, its template and the `TaskSystem` (see `CallOptions`).

    Raises `ConfigurationError` for a model string that names no provider (the call fails with it).
    """
    template = compiled.template
    choice = handler.choose_model(call=options.model, template=template.model)
    # A model named by the call replaces the template's choice, its fallbacks included.
    fallbacks = (
        ()
        if choice.source == "call" or not template.fallbacks
        else tuple(handler.named(m, "fallback") for m in template.fallbacks)
    )
    settings = dict(compiled.model_settings) if compiled.model_settings else None
    if options is NO_OPTIONS:  # the usual call: the template's own
        return Resolved(
            model=choice,
            fallbacks=fallbacks,
            retries=template.retries,
            limits=template.limits,
            repair=template.repair,
            model_settings=settings,
            cache=cache.policy(None, template.cache, side_effects=bool(template.tools)),
        )
    limits = options.limits
    if template.limits is not None:
        limits = template.limits if limits is None else limits.tightest(template.limits)
    if options.model_settings is not None:
        settings = {**(settings or {}), **options.model_settings}
    return Resolved(
        model=choice,
        fallbacks=fallbacks,
        retries=options.retries if options.retries is not None else template.retries,
        limits=limits,
        repair=options.repair if options.repair is not None else template.repair,
        model_settings=settings,
        cache=cache.policy(options.cache, template.cache, side_effects=bool(template.tools)),
    )


@attrs.define(kw_only=True)  # one per call, read-only by convention (see `ModelCall`)
class _Prepared:
    call: ModelCall
    started: float
    events: Any  # the task's logger, looked up once (`logs.current`) for all its events
    cache: CachePlan | None = None
    warnings: list[str] = attrs.field(factory=list)  # for `TaskNotes.warnings`


class AtomicTaskExecutor:
    """Runs one task at a time (sync or async) against a `TemplateRegistry` and a manager (and a response cache).

    Example:
        ```python
        executor = AtomicTaskExecutor(system.templates, system.manager)
        result = executor.execute("extract_contact", {"text": "..."}, CallOptions(retries=2))
        ```
    """

    def __init__(
        self,
        templates: TemplateRegistry,
        manager: LLMInteractionManager,
        cache: CacheConfig | None = None,
        *,
        large_prompt: int = LARGE_PROMPT,
    ) -> None:
        self.templates = templates
        self.manager = manager
        self.cache = cache if cache is not None else CacheConfig()
        #: A rendered prompt longer than this many characters runs with a warning (0: never warn).
        self.large_prompt = large_prompt
        self._default_notice_logged = False

    def execute(
        self,
        name_or_request: TaskRef,
        inputs: Mapping[str, Any] | None = None,
        options: CallOptions = NO_OPTIONS,
        *,
        expect: type[Any] | None = None,
    ) -> TaskResult[Any]:
        """Run a task synchronously; never raises for a failed task.

        Works inside a running event loop too: the run then happens on a worker thread while this one waits.
        """
        if self.manager.tracing is not None:  # the task's span holds all of it, as in `execute_async`
            return run_blocking(self.execute_async(name_or_request, inputs, options, expect=expect))
        # Only the model call goes to the event loop: every await of the run resumes each coroutine
        # around it, so none is added there.
        prepared = self._prepare(name_or_request, inputs, options, expect)
        if isinstance(prepared, TaskResult):
            return prepared
        return self._finish(prepared, run_blocking(self.manager.run(prepared.call)))

    async def execute_async(
        self,
        name_or_request: TaskRef,
        inputs: Mapping[str, Any] | None = None,
        options: CallOptions = NO_OPTIONS,
        *,
        expect: type[Any] | None = None,
    ) -> TaskResult[Any]:
        """Run a task on the running event loop (pydantic-ai `run`); never raises for a failed task."""
        tracing = self.manager.tracing  # OpenTelemetry: the task's span, with pydantic-ai's nested inside it
        if tracing is None:  # `_run`, spelled out: no frame of its own
            prepared = self._prepare(name_or_request, inputs, options, expect)
            if isinstance(prepared, TaskResult):
                return prepared
            return self._finish(prepared, await self.manager.run(prepared.call))
        run = self._run(name_or_request, inputs, options, expect)  # prepared inside the span
        named = name_or_request.name if isinstance(name_or_request, CompiledTemplate) else name_or_request
        return await tracing.task(named, run, templates=self.templates, fingerprint=schema_fingerprint)

    def refuse(self, name_or_request: TaskRef, problem: UsageError) -> TaskResult[Any]:
        """The FAILED result (`configuration_error`) of a call whose options are wrong; no model is called."""
        name = name_or_request if isinstance(name_or_request, str) else name_or_request.name
        error = TaskError(reason=FailureReason.CONFIGURATION_ERROR, message=problem.message)
        return _failed(name, time.perf_counter(), error)

    async def _run(
        self,
        name_or_request: TaskRef,
        inputs: Mapping[str, Any] | None,
        options: CallOptions,
        expect: type[Any] | None,
    ) -> TaskResult[Any]:
        prepared = self._prepare(name_or_request, inputs, options, expect)
        if isinstance(prepared, TaskResult):
            return prepared
        return self._finish(prepared, await self.manager.run(prepared.call))

    def _prepare(
        self,
        name_or_request: TaskRef,
        inputs: Mapping[str, Any] | None,
        options: CallOptions,
        expect: type[Any] | None,
    ) -> _Prepared | TaskResult[Any]:
        """The call to make, or the result without one (a failure before the call, or a cache hit)."""
        started = time.perf_counter()
        if isinstance(name_or_request, SubtaskRequest):
            name = name_or_request.name
            inputs = {**name_or_request.inputs, **(inputs or {})}
            if options.model is None and name_or_request.model is not None:
                options = attrs.evolve(options, model=name_or_request.model)
        elif isinstance(name_or_request, CompiledTemplate):
            name = name_or_request.name
        else:
            name = name_or_request
        events = log.current()
        events.info("task_started", template=name)
        if isinstance(name_or_request, CompiledTemplate):
            compiled = name_or_request
        else:
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
                    details={"params": [exc.param], "available": exc.available},
                ),
            )
        try:
            resolved = resolve_options(options, compiled, self.manager.handler, self.cache)
        except UsageError as exc:
            return _failed(name, started, TaskError(reason=FailureReason.CONFIGURATION_ERROR, message=exc.message))
        choice = resolved.model
        if choice.source == "default" and not self._default_notice_logged:  # the one source with a notice
            self._default_notice_logged = True
            log.info("default_model_used", notice=choice.notice)
            _warn_default_model(choice.notice)
        size = len(prompt) + (len(system) if system else 0)
        large = self.large_prompt and size > self.large_prompt
        if large:
            log.warning("large_prompt", template=name, characters=size, limit=self.large_prompt)
        call = ModelCall(
            template=name,
            model=choice,
            system=system,
            prompt=prompt,
            media=media_inputs(values, tuple(compiled.media_params)) if compiled.media_params else (),
            output_cls=compiled.output_cls,
            mode=compiled.output_mode,
            retries=resolved.retries,
            limits=resolved.limits,
            fallbacks=resolved.fallbacks,
            repair=resolved.repair,
            model_settings=resolved.model_settings,
            fixed_system=not compiled.system_placeholders,
            tools=compiled.tools,
            batching=options.batching,
        )
        warned = [_large_prompt_warning(name, size, self.large_prompt)] if large else []
        if resolved.cache is None:
            return _Prepared(call=call, started=started, events=events, warnings=warned)
        plan = self.cache.plan(call, resolved.cache, self.manager.handler)
        # A run resumed from a provider batch waits for the answer it paid for: no stored answer replaces it.
        resuming = options.batching is not None and options.batching.history is not None
        hit = None if resuming else self.cache.lookup(plan, call, started)
        if hit is not None:
            if warned:
                hit.notes.warnings = warned
            return hit
        return _Prepared(call=call, started=started, events=events, cache=plan, warnings=warned)

    def _finish(self, prepared: _Prepared, outcome: CallOutcome) -> TaskResult[Any]:
        """The result of the call (stored in the response cache when it is COMPLETE and the cache is on)."""
        call = prepared.call
        model = outcome.model or call.model.label
        duration_ms = (time.perf_counter() - prepared.started) * 1000
        answered = next((c for c in (call.model, *call.fallbacks) if c.label == model), None)
        notes = TaskNotes(
            template=call.template,
            model=model,
            model_source=call.model.source,
            model_alias=answered.alias if answered is not None else None,
            output_mode=str(call.mode) if call.output_cls is not None else "text",  # (`.value` runs Python)
            duration_ms=duration_ms,
            usage=usage_total(outcome.attempts),
            attempts=outcome.attempts,
            models_tried=outcome.models_tried,
            default_model_notice=call.model.notice,
            media=[media.note(param) for param, media in call.media],
            warnings=[*prepared.warnings, *outcome.warnings] if outcome.warnings else prepared.warnings,
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
            return _Result(status=TaskStatus.FAILED, content=outcome.content, notes=notes, error=outcome.error)
        events.info(
            "task_completed",
            template=call.template,
            attempts=len(outcome.attempts),
            model=model,
            # Rounded to 0.01 ms by arithmetic: `round(x, 2)` formats the number through its decimal digits.
            duration_ms=int(duration_ms * 100 + 0.5) / 100,
        )
        result = _Result(status=TaskStatus.COMPLETE, content=outcome.content, parsedContent=outcome.output, notes=notes)
        if prepared.cache is not None:
            self.cache.save(prepared.cache, result)
        return result


def _large_prompt_warning(name: str, size: int, limit: int) -> str:
    return (
        f"The prompt of template {name!r} is {size:,} characters long, over the {limit:,} at which atomtask "
        "warns: check that the input is the one meant. Raise `TaskSystem(large_prompt=...)` (`ATOMTASK_LARGE_PROMPT`; "
        "0 turns the warning off) if it is."
    )


#: Whether the default-model notice has been shown in this process (it is shown once, as on the CLI).
_default_model_warned = False
# Frames a warning should not point at: atomtask's own, and the event loop or thread a sync call ran on.
_PASSED = (
    str(Path(__file__).resolve().parent.parent),
    str(Path(asyncio.__file__).parent),
    threading.__file__,
    str(Path(concurrent.futures.__file__).parent),
)


def _warn_default_model(notice: str | None) -> None:
    """The default-model notice as a `DefaultModelWarning`, once per process, pointing at the caller's line."""
    global _default_model_warned
    if _default_model_warned or notice is None:
        return
    _default_model_warned = True
    warnings.warn(DefaultModelWarning(notice), stacklevel=_outside_atomtask())


def _outside_atomtask() -> int:
    """The `stacklevel` (for the caller of this function) of the user's line that ran the task.

    The first frame outside atomtask, the event loop and the threads; the task's own preparation when the
    call came from another thread and no such frame is on this one's stack.
    """
    frame: FrameType | None = sys._getframe(2)  # level 2 for our caller: the one that prepared the task
    level = 2
    while frame is not None:
        if not frame.f_code.co_filename.startswith(_PASSED):
            return level
        frame = frame.f_back
        level += 1
    return 2


def _fits(compiled: CompiledTemplate, expect: type[Any]) -> bool:
    declared: type[Any] = compiled.output_cls if compiled.output_cls is not None else str
    return issubclass(declared, expect)


def _failed(name: str, started: float, error: TaskError) -> TaskResult[Any]:
    log.warning("task_failed", template=name, reason=error.reason.value, attempts=0)
    notes = TaskNotes(template=name, duration_ms=(time.perf_counter() - started) * 1000)
    return _Result(status=TaskStatus.FAILED, notes=notes, error=error)
