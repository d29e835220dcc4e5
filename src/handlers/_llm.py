"""`LLMInteractionManager`: the only module that builds and runs pydantic-ai `Agent`s.

One request in (`ModelCall`), one outcome out (`CallOutcome`). Agents are cached by what changes
them (the model, the output type and mode, the tracing, and a system text that is the same for every
call of its template: run instructions cost pydantic-ai about 0.3% of a run); everything that varies
per call (a rendered system text, the prompt, retries, limits, model settings) is passed to the run,
where the model really receives it. The raw answer of every attempt and the usage are kept either
way, read from the run's messages (`capture_run_messages`), because pydantic-ai's exceptions do not
carry them.

Every way a run can fail (an HTTP error, an unreachable provider, answers that never validated, a
usage limit, a missing provider package) is mapped to a `TaskError` with a fixed `FailureReason` and
a message that says the fix (`map_error`); the validation errors of the last answer are read from the
exception's cause. `model_output_schema` asks pydantic-ai itself for the output JSON Schema exactly
as a model receives it (after its profile's transform), by running one request against a
`FunctionModel` that carries the model's profile and stopping it there: nothing leaves the process.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import attrs
from atomtask._logs import get_logger
from atomtask.errors import ConfigurationError, Suspended, UsageError, join_sentences, plural
from atomtask.handlers._base import BaseHandler, ModelChoice
from atomtask.handlers._blocking import run_blocking
from atomtask.handlers._ledger import (
    ProviderRetry,
    RunState,
    ToolRecorder,
    feedback_errors,
    ledger_attempts,
    redact,
    remaining_limits,
    usage_total,
)
from atomtask.handlers._refusals import RequestRefusal, request_refusal
from atomtask.handlers._repair import OutputRepair
from atomtask.handlers._tools import connect_tools, tool_error, tool_limit
from atomtask.loading._providers import (
    API_KEY_ENV,
    ATOMTASK_PROVIDER,
    SDK_RETRYING_PROVIDERS,
    install_command,
    provider_of,
)
from atomtask.loading._tools import ResolvedTools
from atomtask.system._media import Media, media_refusal
from atomtask.system._options import Batching
from atomtask.system._results import Attempt, FailureReason, TaskError
from atomtask.system._templates import OutputMode, RepairMode, TemplateLimits
from pydantic import BaseModel, ValidationError
from pydantic_ai import Agent, NativeOutput, PendingModelResponse, PromptedOutput, ToolOutput, capture_run_messages
from pydantic_ai.capabilities import ToolSearch
from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelHTTPError,
    ModelRetry,
    OutputTokenLimitExceeded,
    ToolRetryError,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
    UserError,
)
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, infer_model_profile
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.profiles import ModelProfileSpec
from pydantic_ai.settings import ModelSettings

if TYPE_CHECKING:
    from atomtask.handlers._tracing import Tracing

__all__ = [
    "CallOutcome",
    "LLMInteractionManager",
    "ModelCall",
    "budget_error",
    "configuration_error",
    "errors_of_last_answer",
    "map_error",
    "media_error",
    "model_output_schema",
]

log = get_logger(__name__)


# Built for every call, and only read after: `attrs.define`, not `frozen`, whose `__init__` sets each field
# through `object.__setattr__` (about twice the cost, measured on the happy path).
@attrs.define(kw_only=True)
class ModelCall:
    """One request to a model, fully rendered (read-only by convention)."""

    template: str
    model: ModelChoice
    system: str | None
    prompt: str
    output_cls: type[BaseModel] | None
    mode: OutputMode = OutputMode.TOOL
    retries: int | None = None
    limits: TemplateLimits | None = None
    fallbacks: tuple[ModelChoice, ...] = ()
    repair: RepairMode = RepairMode.SAFE
    # The template's and the call's model settings, merged (the TaskSystem's go under them at run time).
    model_settings: dict[str, Any] | None = None
    # The system text is the template's own, the same for every call (no placeholders): it goes on the Agent.
    fixed_system: bool = False
    # What the model may call before its answer (`handlers._tools` connects them for the call).
    tools: ResolvedTools | None = None
    # The images, documents and audio sent beside the prompt, each with its parameter (`system._media`).
    media: tuple[tuple[str, Media], ...] = ()
    # A provider batch's item: its requests go through the shared `BatchModelRequests` (`system.Batching`).
    batching: Batching | None = None

    @property
    def user_prompt(self) -> str | list[Any]:
        """The user's message as the model receives it: the rendered prompt, then each media value's content part."""
        if not self.media:
            return self.prompt
        return [self.prompt, *(media.content() for _, media in self.media)]


@attrs.define(kw_only=True)  # one per call, read-only by convention (see `ModelCall`)
class CallOutcome:
    """What came back: the validated output or an error, and the ledger of attempts either way."""

    output: Any
    content: str | None
    attempts: list[Attempt]  # their usage in all: `ledger.usage_total`
    error: TaskError | None = None
    model: str | None = None
    models_tried: list[str] = attrs.field(factory=list)
    warnings: list[str] = attrs.field(factory=list)  # for `TaskNotes.warnings`


def configuration_error(choice: ModelChoice, exc: Exception) -> TaskError:
    """A model that cannot be used (missing provider package, missing key): a `configuration_error` naming the fix."""
    label = choice.label
    if isinstance(exc, ImportError):
        message = (
            f"Model {label!r} needs a provider package that is not installed; "
            f"install it with `{install_command(label)}`."
        )
    elif isinstance(exc, UsageError):
        message = exc.message
    elif (env := API_KEY_ENV.get(provider_of(label) or "")) is not None and env in str(exc):
        # pydantic-ai's text points at `Agent('test')` and `...Provider(api_key=...)`, which atomtask users never write.
        message = f"Model {label!r} needs an API key: set the `{env}` environment variable, or choose another model."
        return TaskError(
            reason=FailureReason.CONFIGURATION_ERROR, message=message, details={"model": label, "env_var": env}
        )
    else:
        message = f"Model {label!r} cannot be used: {redact(str(exc))}"
    return TaskError(reason=FailureReason.CONFIGURATION_ERROR, message=message, details={"model": label})


def media_error(call: ModelCall, choice: ModelChoice, profile: Mapping[str, Any]) -> TaskError | None:
    """A `configuration_error` when the model's profile says it cannot take one of the call's media values."""
    for param, media in call.media:
        refused = media_refusal(profile, media.kind, media.media_type)
        if refused is None:
            continue
        what = f"{media.media_type}, " if media.media_type else ""
        return TaskError(
            reason=FailureReason.CONFIGURATION_ERROR,
            message=f"Model {choice.label!r} cannot take {refused}, according to pydantic-ai's profile for it, so "
            f"parameter {param!r} ({what}{media.source or 'bytes'}) of template {call.template!r} was not sent. "
            f"Choose a model that reads {refused} (`atomtask check --model` tells before a run: P307).",
            details={"model": choice.label, "param": param, "media_type": media.media_type, "kind": media.kind},
        )
    return None


def budget_error(call: ModelCall, choice: ModelChoice, exceeded: str, attempts: list[Attempt]) -> TaskError:
    """The next attempt would exceed the task's limits: a `usage_limit_exceeded` naming the models tried."""
    models = sorted({a.model for a in attempts if a.model})
    return TaskError(
        reason=FailureReason.USAGE_LIMIT_EXCEEDED,
        message=f"The next attempt (model {choice.label!r}) would exceed {exceeded} of template {call.template!r}, "
        f"after {plural(len(attempts), 'attempt')} on {', '.join(map(repr, models)) or 'no model'}. Raise the "
        "template's `limits` (or the call's `limits=`) if this is expected; every attempt is in `notes.attempts`.",
        details={"model": choice.label, "limits": call.limits.model_dump() if call.limits else None},
    )


def map_error(
    call: ModelCall, choice: ModelChoice, exc: Exception, attempts: list[Attempt], *, max_tokens: int | None = None
) -> TaskError:
    """A failed pydantic-ai run as a `TaskError`: its reason, a message that says what to do, and details.

    `max_tokens` is the run's (its model settings merged), named when an answer was cut off at it.
    """
    label = choice.label
    provider = provider_of(label) or label
    if isinstance(exc, UsageLimitExceeded) and "tool_calls_limit" in str(exc):
        return TaskError(
            reason=FailureReason.USAGE_LIMIT_EXCEEDED,
            message=f"The model of template {call.template!r} asked for more tool calls than its `tool_calls` "
            f"({call.tools.limit if call.tools is not None else '?'}) allows. Raise `tool_calls` if this is expected; "
            "every tool call is in `notes.attempts[].tool_calls`.",
            details={"model": label, "tool_calls": call.tools.limit if call.tools is not None else None},
        )
    if isinstance(exc, UsageLimitExceeded):
        return TaskError(
            reason=FailureReason.USAGE_LIMIT_EXCEEDED,
            message=f"{exc} (template {call.template!r}, {plural(len(attempts), 'model call')} made). Raise the "
            "template's `limits` if this is expected.",
            details={"model": label, "limits": call.limits.model_dump() if call.limits else None},
        )
    if isinstance(exc, ModelHTTPError):
        status = exc.status_code
        body = redact(_body_message(exc.body) or str(exc))
        message = f"Provider {provider!r} answered HTTP {status} for model {exc.model_name!r}: {body}"
        details: dict[str, Any] = {"status": status, "provider": provider, "model": label}
        refusal = request_refusal(exc)
        if refusal is not None and status not in (401, 403, 429):
            return _refused(call, exc, refusal, details)
        if status in (401, 403):
            env = API_KEY_ENV.get(provider)
            if env is not None:
                message += f". Check the `{env}` environment variable: the key is missing, wrong or not allowed."
                details["env_var"] = env
        return TaskError(reason=FailureReason.PROVIDER_ERROR, message=message, details=details)
    if isinstance(exc, ModelAPIError):
        # A dropped or refused connection says only "Connection error.": name where it was going.
        url = _request_url(exc)
        where = f" (request to {redact(url)})" if url is not None else ""
        return TaskError(
            reason=FailureReason.PROVIDER_ERROR,
            message=f"Provider {provider!r} failed for model {label!r}: {redact(str(exc)).rstrip('.')}{where}.",
            details={
                "provider": provider,
                "model": label,
                "status": None,
                "error_type": type(exc).__name__,
                "url": redact(url) if url is not None else None,
            },
        )
    if isinstance(exc, UnexpectedModelBehavior):
        answers = [a for a in attempts if a.model == label and a.fault is None]
        if call.output_cls is not None and call.mode is OutputMode.TOOL and answers and not _any_tool_call(answers):
            return _no_tool_calls(call, label, len(answers))
        if isinstance(exc, OutputTokenLimitExceeded) or (answers and answers[-1].finish_reason == "length"):
            return _cut_off(call, label, answers[-1] if answers else None, max_tokens)
        # Every answer of this model drew a re-ask: a schema mismatch (`errors`) or JSON that could not be
        # read (`parse_error`, the last answer's reason riding on the exception when it drew no feedback).
        invalid = [a for a in attempts if a.model == label and a.fault is None and (a.errors or a.parse_error)]
        if invalid:
            last = _describe_errors(invalid[-1].errors or invalid[-1].parse_error)
            return TaskError(
                reason=FailureReason.OUTPUT_VALIDATION_FAILURE,
                message=join_sentences(
                    f"The model's answer failed validation on {_all(len(invalid))} for template "
                    f"{call.template!r}; last errors: {last}",
                    "Raise `retries`, tighten the instructions, or use a stronger model; every raw answer is in "
                    "`notes.attempts`",
                ),
                details={"model": label, "attempts": len(invalid)},
            )
        return TaskError(
            reason=FailureReason.PROVIDER_ERROR,
            message=f"Model {label!r} behaved unexpectedly: {redact(str(exc))}",
            details={"model": label, "provider": provider, "status": None},
        )
    if isinstance(exc, UserError | UsageError):  # a server's dialect refuses a mode before sending (`_dialect`)
        return configuration_error(choice, exc)
    log.exception("task_unexpected_error", template=call.template, model=label)
    return TaskError(
        reason=FailureReason.UNEXPECTED_ERROR,
        message=f"Unexpected {type(exc).__name__} while running template {call.template!r}: {redact(str(exc))}",
        details={"model": label, "error_type": type(exc).__name__},
    )


def _refused(call: ModelCall, exc: ModelHTTPError, refusal: RequestRefusal, details: dict[str, Any]) -> TaskError:
    """An endpoint that refused to parse the request (a validation error of its body), whatever its status."""
    url = _request_url(exc)
    where = f"The endpoint at {redact(url)}" if url is not None else f"The endpoint of model {details['model']!r}"
    sent = f" ({refusal.sent!r})" if refusal.has_sent else ""
    return TaskError(
        reason=FailureReason.PROVIDER_ERROR,
        message=f"{where} refused the request's `{refusal.field}`{sent}: {redact(refusal.says).rstrip('.')} — this "
        f"server does not accept `{redact(refusal.refused)}` (HTTP {exc.status_code}, template {call.template!r}). "
        "Name the server (`--server NAME`, e.g. `--server llama-cpp-python`; `TaskSystem(server=...)`) so atomtask "
        "sends the form it accepts, or use another `mode` (`output_format.mode`).",
        details={
            **details,
            "refused": refusal.field,
            "sent": refusal.sent if refusal.has_sent else None,
            "url": redact(url) if url is not None else None,
        },
    )


def _any_tool_call(answers: Sequence[Attempt]) -> bool:
    """Whether any answer called a tool: the output tool (`tool_name`) or a function tool."""
    return any(a.tool_name is not None or a.tool_calls for a in answers)


def _no_tool_calls(call: ModelCall, label: str, count: int) -> TaskError:
    """Tool mode, and the endpoint answered prose every time: it most likely ignores `tool_choice`."""
    return TaskError(
        reason=FailureReason.OUTPUT_VALIDATION_FAILURE,
        message=f"The endpoint of model {label!r} returned no tool calls in {plural(count, 'attempt')} although the "
        f"output tool `final_result` was required for template {call.template!r} (it may not support `tool_choice`, "
        "e.g. llama-cpp-python ignores `tool_choice: required`): use `mode: prompted` or `mode: native` "
        "(`output_format.mode`), or `--server` to name the server; every raw answer is in `notes.attempts`.",
        details={"model": label, "attempts": count, "no_tool_calls": True},
    )


def _cut_off(call: ModelCall, label: str, last: Attempt | None, max_tokens: int | None) -> TaskError:
    """The answer stopped at the output token limit (`finish_reason: length`) with nothing usable in it."""
    at = _limit(max_tokens)
    tokens = last.usage.output_tokens if last is not None else 0
    after = f" after {plural(tokens, 'output token')}" if tokens else ""
    raise_it = (
        "raise --max-tokens (`model_settings: {max_tokens: ...}`)"
        if max_tokens
        else "set --max-tokens (`model_settings: {max_tokens: ...}`) above the server's default"
    )
    return TaskError(
        reason=FailureReason.OUTPUT_VALIDATION_FAILURE,
        message=f"The answer of model {label!r} for template {call.template!r} was cut off at {at} "
        f"(finish_reason: length){after}: {raise_it}, or ask for a shorter answer; the raw answer is in "
        "`notes.attempts`.",
        details={"model": label, "finish_reason": "length", "max_tokens": max_tokens},
    )


def _request_url(exc: BaseException) -> str | None:
    """The URL of the HTTP request behind a provider error: the SDK's exception (the cause) carries it."""
    cause: BaseException | None = exc
    for _ in range(8):  # the chain is pydantic-ai's error, the SDK's, httpx's, the socket's
        if cause is None:
            return None
        try:
            url = cause.request.url  # type: ignore[attr-defined]  # httpx raises RuntimeError when unset
        except Exception:
            url = None
        if url:
            return str(url)
        cause = cause.__cause__ or cause.__context__
    return None


def _body_message(body: object) -> str | None:
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(body.get("message"), str):
            return str(body["message"])
    if isinstance(body, str) and body:
        return body
    return None


def _all(count: int) -> str:
    return "its only attempt" if count == 1 else f"all {plural(count, 'attempt')}"


def _describe_errors(errors: list[dict[str, Any]] | str | None) -> str:
    if not errors:
        return "none"
    if isinstance(errors, str):
        return errors
    parts = []
    for err in errors[:3]:
        loc = ".".join(str(p) for p in err.get("loc", ()))
        parts.append(f"{loc + ': ' if loc else ''}{err.get('msg', '')}")
    more = f" (+{len(errors) - 3} more)" if len(errors) > 3 else ""
    return "; ".join(parts) + more


def errors_of_last_answer(exc: BaseException) -> list[dict[str, Any]] | None:
    """The validation errors of the answer that exhausted the retries, when `exc` carries them."""
    cause = exc.__cause__
    if isinstance(cause, ValidationError):
        return feedback_errors([list(cause.errors(include_url=False))])
    if isinstance(cause, ToolRetryError):
        return feedback_errors([cause.tool_retry.content])
    if isinstance(cause, ModelRetry):  # repair's verdict on the last answer (it could not be read as JSON)
        return feedback_errors([cause.message])
    return None


class LLMInteractionManager:
    """Builds, caches and runs pydantic-ai Agents for the `BaseHandler`'s models.

    One call may run several Agents: the call's model first, then each fallback model when the
    previous one exhausted its retries on invalid answers or failed at the provider. Limits hold
    across all of them; the ledger of attempts covers all of them.
    """

    def __init__(self, handler: BaseHandler, tracing: Tracing | None = None) -> None:
        self.handler = handler
        #: OpenTelemetry spans (`handlers._tracing`); None (off): no Agent is instrumented.
        self.tracing = tracing
        self._agents: dict[tuple[Any, ...], tuple[Agent[RunState, Any], Any]] = {}
        self._lock = threading.Lock()

    def run_sync(self, call: ModelCall) -> CallOutcome:
        """`run` from synchronous code, also where an event loop is already running (then on a worker thread)."""
        return run_blocking(self.run(call))

    async def run(self, call: ModelCall) -> CallOutcome:
        """Run `call` with `await Agent.run`, falling back model by model."""
        run = _Run(self, call)
        if run.connect:  # its MCP servers start before the first model and stop after the last
            async with run.tools_connected():
                return await self._drive(run)
        return await self._drive(run)

    async def _drive(self, run: _Run) -> CallOutcome:
        while (step := run.next_step()) is not None:
            with capture_run_messages() as messages:
                try:
                    result = await step.agent.run(step.prompt, **step.kwargs)
                except Exception as exc:  # every run failure becomes a FAILED result, never a raise
                    run.failed(step, exc, messages)
                    continue
            if isinstance(result.output, PendingModelResponse):  # waits in a provider batch (`Batching`)
                raise Suspended(
                    run.call.template, result.all_messages(), model=step.choice.label, attempts=list(run.attempts)
                )
            run.succeeded(step, result.output, messages)
        return run.outcome()

    def start(self, call: ModelCall) -> _Run:
        """The state `run` drives for `call` (steps, ledger, outcome), for another driver (`handlers.streaming`)."""
        return _Run(self, call)

    def agent_count(self) -> int:
        """How many distinct Agents have been built (for tests of the cache)."""
        return len(self._agents)

    def _agent(self, call: ModelCall, choice: ModelChoice) -> Agent[RunState, Any]:
        spec = choice.spec
        model_key: Any = spec if isinstance(spec, str) else ("instance", id(spec))
        fixed = call.system if call.fixed_system else None  # None: no instructions of its own (or the run's)
        # A template's function tools sit on its Agent, as a bare Agent's would (MCP servers go to each run).
        functions = call.tools.functions if call.tools is not None else ()
        # Each template's tools are one tuple made at registration; kept with the Agent (its id() stays taken).
        # A provider batch's template item ends its run while its request waits (`PendingModelResponse`).
        suspends = call.batching is not None and call.batching.suspend
        tools_key = id(functions) if functions else None
        key = (model_key, call.output_cls, call.mode, self.tracing, fixed, tools_key, suspends)
        cached = self._agents.get(key)
        if cached is not None:
            return cached[0]
        with self._lock:
            cached = self._agents.get(key)
            if cached is not None:
                return cached[0]
            # The capabilities live on the cached Agent (cheap); each run's records go to its `deps`.
            capabilities: list[Any] = [_Reliability()]
            dialect = self.handler.dialect(choice)  # a local server's: each request in the form it honours
            if dialect is not None:
                capabilities.append(dialect)
            agent: Agent[RunState, Any] = Agent(
                self.handler.build(choice),
                output_type=[output_spec(call.output_cls, call.mode), PendingModelResponse]
                if suspends
                else output_spec(call.output_cls, call.mode),
                # Shared by every template with this model and output, so named after the output.
                name=f"atomtask:{call.output_cls.__name__ if call.output_cls is not None else 'text'}",
                instructions=fixed,
                deps_type=RunState,
                capabilities=capabilities,
                model_settings=_SDK_NO_RETRIES if _sdk_retries(choice) else None,
                tools=functions,
            )
            if self.tracing is not None:  # pydantic-ai's spans, nested under the task's through the context
                agent.instrument = self.tracing.instrumentation
            # The model instance (and the tools) are kept with its Agent so their id() cannot be reused by another.
            self._agents[key] = (agent, (spec, functions))
            return agent


# atomtask owns retrying (`ProviderRetries`) so that every fault is in the ledger and the count is the
# user's. Set on the Agent, so any `max_retries` in the run's model settings (the TaskSystem's, the
# template's or the call's) still overrides it.
_SDK_NO_RETRIES: ModelSettings = {"max_retries": 0}


def run_settings(system: Mapping[str, Any] | None, call: Mapping[str, Any] | None) -> ModelSettings | None:
    """The model settings of one run: the TaskSystem's, then the call's (template and call merged), key by key."""
    if not system and not call:
        return None
    return cast("ModelSettings", {**(system or {}), **(call or {})})


def _sdk_retries(choice: ModelChoice) -> bool:
    return isinstance(choice.spec, str) and provider_of(choice.spec) in SDK_RETRYING_PROVIDERS


@dataclasses.dataclass
class _Reliability(ToolSearch[Any], ProviderRetry, OutputRepair, ToolRecorder):
    """Provider-fault retries, output repair and the tool calls' record, as the Agent's `ToolSearch` capability.

    pydantic-ai runs every hook of a run over every capability the Agent holds, copying the
    `RunContext` for each: one more capability costs about 5% of a run whether or not its hooks do
    anything. Every Agent holds a default `ToolSearch` (added unless one is given; it does nothing
    without deferred tools), so this one takes its place, with `ToolSearch`'s defaults unchanged,
    and an atomtask Agent holds no more capabilities than a bare one.
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        # The state used when the run's `deps` is not a `RunState` (see `run_state`).
        self.state = RunState()


@attrs.define(kw_only=True)  # one per model run, read-only by convention (see `ModelCall`)
class _Step:
    choice: ModelChoice
    agent: Agent[RunState, Any]
    kwargs: dict[str, Any]
    state: RunState
    prompt: str | list[Any] | None = None  # None: the run resumes from `message_history`


class _Run:
    """One call across its models: the ledger so far, the budget left, and the final outcome."""

    def __init__(self, manager: LLMInteractionManager, call: ModelCall) -> None:
        self.manager = manager
        self.call = call
        self.models = [call.model, *call.fallbacks]
        self.attempts: list[Attempt] = []
        self.tried: list[str] = []
        resumed = call.batching
        if resumed is not None and resumed.model is not None:  # a provider batch's run goes on where it waited
            labels = [choice.label for choice in self.models]
            if resumed.model in labels:
                self.tried = labels[: labels.index(resumed.model)]
                self.attempts = list(resumed.attempts)
        self.output: Any = None
        self.error: TaskError | None = None
        self.done = False
        # The call's tools: its functions' toolset, and its MCP servers once connected (`tools_connected`).
        self.toolsets: list[Any] | None = None
        self.connect = False  # it has MCP servers to connect
        self.warnings: list[str] = []
        tools = call.tools
        if tools is not None:
            if all(provider_of(choice.label) == ATOMTASK_PROVIDER for choice in self.models):
                # It answers the final output at once: no MCP server is started for tools it will not call.
                note = (
                    "atomtask:synthetic answers the final output directly and calls no tool; "
                    "use a real model, or scripted replies (atomtask.testing), to exercise the tools"
                )
                log.warning(
                    "synthetic_calls_no_tools",
                    template=call.template,
                    tools=[*tools.names, *(spec.mcp.label for spec in tools.mcp)],
                    note=note,
                )
                self.warnings.append(f"template {call.template!r}: {note}")
            elif tools.mcp:  # the functions are on the Agent (`_agent`)
                self.toolsets = []
                self.connect = True

    @contextlib.asynccontextmanager
    async def tools_connected(self) -> AsyncIterator[None]:
        """The block in which the call's MCP servers are connected, for `run` and streaming."""
        tools = self.call.tools
        if not self.connect or tools is None:
            yield
            return
        async with connect_tools(tools, self.call.template) as connected:
            if isinstance(connected, TaskError):
                self._finish(connected)
            else:
                self.toolsets = connected
            yield

    def next_step(self) -> _Step | None:
        """The next model's run, or None when the call is decided (answered, failed, or out of budget)."""
        if self.done or len(self.tried) >= len(self.models):
            return None
        choice = self.models[len(self.tried)]
        limits = self.call.limits
        budget = remaining_limits(limits, usage_total(self.attempts)) if limits is not None else None
        if isinstance(budget, str):
            self._finish(budget_error(self.call, choice, budget, self.attempts))
            return None
        if self.tried:
            log.info("task_fallback", template=self.call.template, model=choice.label, after=self.tried[-1])
        self.tried.append(choice.label)
        try:
            agent = self.manager._agent(self.call, choice)
        except Exception as exc:
            self._finish(configuration_error(choice, exc))
            return None
        if self.call.media and isinstance(agent.model, Model):  # refused here, not by the provider's HTTP 400
            refused = media_error(self.call, choice, agent.model.profile)
            if refused is not None:
                self._finish(refused)
                return None
        state = RunState(retries=self.manager.handler.provider_retries, repair=self.call.repair)
        kwargs: dict[str, Any] = {"deps": state}
        if not self.call.fixed_system:  # else the Agent holds the system text (`_agent`)
            kwargs["instructions"] = self.call.system
        system_settings = self.manager.handler.model_settings
        if system_settings or self.call.model_settings:
            kwargs["model_settings"] = run_settings(system_settings, self.call.model_settings)
        retries = self.call.retries
        batching = self.call.batching
        prompt: str | list[Any] | None = self.call.user_prompt
        if batching is not None:  # its requests go through the batch's shared `BatchModelRequests`
            kwargs["capabilities"] = [batching.capability]
            if batching.history is not None and batching.model == choice.label:
                # resumed: this model's request waits in a provider batch, with what it answered before
                kwargs["message_history"] = list(batching.history)
                prompt = None
                if batching.reasks_left is not None:
                    retries = batching.reasks_left
            elif batching.history is None and batching.reasks_left is not None:
                retries = batching.reasks_left
        if retries is not None:
            kwargs["retries"] = {"output": retries}
        if budget is not None:
            kwargs["usage_limits"] = budget
        if self.toolsets:
            kwargs["toolsets"] = self.toolsets
        tools = self.call.tools
        if tools is not None and tools.limit is not None:
            kwargs["usage_limits"] = tool_limit(budget, tools.limit, self.attempts)
        return _Step(choice=choice, agent=agent, kwargs=kwargs, state=state, prompt=prompt)

    def succeeded(self, step: _Step, output: Any, messages: Sequence[ModelMessage]) -> None:
        self._record(step, messages)
        self.output = output
        self.error = None
        self.done = True

    def failed(self, step: _Step, exc: Exception, messages: Sequence[ModelMessage]) -> None:
        attempts = self._record(step, messages)
        final_errors = errors_of_last_answer(exc)
        answered = [a for a in attempts if a.fault is None]
        if final_errors is not None and answered and not answered[-1].errors:
            # The answer that exhausted the retries draws no feedback message; its errors ride on
            # the exception's cause instead.
            last = answered[-1]
            self.attempts[last.index - 1] = last.model_copy(update={"errors": final_errors})
        failure = step.state.tool_failure
        if failure is not None and _raised_by(exc, failure):
            self._finish(tool_error(self.call.template, failure, self.attempts))
            return
        error = map_error(self.call, step.choice, exc, self.attempts, max_tokens=_max_tokens(step))
        more = len(self.tried) < len(self.models)
        if more and error.reason in (FailureReason.OUTPUT_VALIDATION_FAILURE, FailureReason.PROVIDER_ERROR):
            log.warning("task_model_failed", template=self.call.template, model=step.choice.label, reason=error.reason)
            self.error = error
            return
        self._finish(error)

    def outcome(self) -> CallOutcome:
        attempts = self.attempts  # each is logged (`task_attempt`) with the task's other events, by the executor
        content = None  # the last answer's raw text (a provider fault has none)
        for attempt in reversed(attempts):
            if attempt.fault is None:
                content = attempt.raw_output
                break
        return CallOutcome(
            output=self.output if self.error is None else None,
            content=content,
            attempts=attempts,
            error=self.error,
            model=self.tried[-1] if self.tried else None,
            models_tried=self.tried,  # the run is over: its list is handed on, not copied
            warnings=self.warnings,
        )

    def _finish(self, error: TaskError | None) -> None:
        self.error = error
        self.done = True

    def _record(self, step: _Step, messages: Sequence[ModelMessage]) -> list[Attempt]:
        attempts = ledger_attempts(
            messages,
            model=step.choice.label,
            mode=str(self.call.mode) if self.call.output_cls is not None else "text",  # (`.value` runs Python code)
            state=step.state,
            first_index=len(self.attempts) + 1,
        )
        self.attempts.extend(attempts)
        for attempt in attempts:
            if attempt.finish_reason == "length" and attempt.repairs:  # a repaired answer is the one accepted
                self.warnings.append(
                    f"template {self.call.template!r}: the answer of model {step.choice.label!r} (attempt "
                    f"{attempt.index}) was cut off at {_limit(_max_tokens(step))} (finish_reason: length) and "
                    "repaired, so data may be missing from it; raise --max-tokens (`model_settings: {max_tokens: "
                    "...}`) or ask for a shorter answer"
                )
        return attempts


def _limit(max_tokens: int | None) -> str:
    """The output token limit an answer was cut off at, as a message names it."""
    return f"max_tokens={max_tokens}" if max_tokens else "the model's own output limit"


def _max_tokens(step: _Step) -> int | None:
    """The `max_tokens` of a model's run: the one its cut-off request met, else its model settings merged."""
    if step.state.max_tokens is not None:
        return step.state.max_tokens
    settings: Mapping[str, Any] = step.kwargs.get("model_settings") or {}
    model = step.agent.model
    if "max_tokens" not in settings and isinstance(model, Model) and model.settings:
        settings = model.settings
    value = settings.get("max_tokens")
    return value if isinstance(value, int) else None


def _raised_by(exc: BaseException, failure: BaseException) -> bool:
    """Whether the run's exception is the tool's (as raised, chained, or in an exception group)."""
    seen: list[BaseException] = [exc]
    while seen:
        current = seen.pop()
        if current is failure:
            return True
        if isinstance(current, BaseExceptionGroup):
            seen.extend(current.exceptions)
        for linked in (current.__cause__, current.__context__):
            if linked is not None and len(seen) < 32:
                seen.append(linked)
    return False


def output_spec(output_cls: type[BaseModel] | None, mode: OutputMode) -> Any:
    """The pydantic-ai output type for `output_cls` in `mode` (`str` for text)."""
    if output_cls is None:
        return str
    if mode is OutputMode.NATIVE:
        return NativeOutput(output_cls)
    if mode is OutputMode.PROMPTED:
        return PromptedOutput(output_cls)
    return ToolOutput(output_cls)


class _Seen(Exception):
    """Stops a probe run once the request parameters have been read."""

    def __init__(self, info: AgentInfo) -> None:
        super().__init__("request captured")
        self.info = info


def _capture(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    raise _Seen(info)


def probe_request(profile: ModelProfileSpec | None, output_type: Any) -> AgentInfo:
    """What a model with `profile` would be sent for `output_type`: one request, stopped before any call.

    Runs the Agent on a `FunctionModel` carrying the profile, so the output tool or output object and
    the profile's schema transformations are pydantic-ai's own; nothing leaves the process.
    """
    agent: Agent[None, Any] = Agent(
        FunctionModel(_capture, model_name="atomtask-schema-probe", profile=profile), output_type=output_type
    )
    try:
        agent.run_sync("")
    except _Seen as seen:
        return seen.info
    raise AssertionError("the probe model was not called")  # pragma: no cover - the model always runs once


def _profile(choice: ModelChoice) -> ModelProfileSpec | None:
    spec = choice.spec
    if isinstance(spec, Model):
        return spec.profile
    if spec == "test":
        return None
    if provider_of(spec) == ATOMTASK_PROVIDER:
        from atomtask.handlers._synthetic import synthetic_profile

        return synthetic_profile()
    # `infer_model_profile` asks the provider class for the profile without constructing a client
    # (importing the provider's module, and with it its SDK, which must then be installed).
    try:
        return infer_model_profile(spec)
    except ImportError as exc:
        raise ConfigurationError(
            f"Model {spec!r} needs a provider package that is not installed ({exc.name or exc}) to know how it "
            f"receives schemas; install it with `{install_command(spec)}`, or omit `--model`."
        ) from None


def model_output_schema(output_cls: type[BaseModel], mode: OutputMode, choice: ModelChoice) -> dict[str, Any]:
    """What `choice` receives for `output_cls` in `mode`: the schema, and the tool that carries it in tool mode.

    Returns `{"mode", "json_schema"}` plus `"tool_name"`, `"tool_description"` and `"strict"` for tool mode.
    """
    info = probe_request(_profile(choice), output_spec(output_cls, mode))
    if mode is OutputMode.TOOL:
        tool = info.output_tools[0]
        return {
            "mode": mode.value,
            "tool_name": tool.name,
            "tool_description": tool.description,
            "strict": tool.strict,
            "json_schema": tool.parameters_json_schema,
        }
    output_object = info.model_request_parameters.output_object
    if output_object is None:  # pragma: no cover - pydantic-ai always sets it for native and prompted output
        raise AssertionError(f"pydantic-ai sent no output object in {mode.value} mode")
    return {
        "mode": mode.value,
        "name": output_object.name,
        "description": output_object.description,
        "strict": output_object.strict,
        "json_schema": output_object.json_schema,
    }
