"""What a call asks besides its inputs, and what a `TaskSystem` is set up with: options, retries, tracing.

`CallOptions` is one typed value for what a call asks of the templates it runs (the model, retries,
limits, repair, model settings, cache), passed through every layer; `SubtaskRequest` names a task to
run; `ProviderRetries` says how provider faults are retried; `TraceSettings` what a `TaskSystem` is
told about OpenTelemetry (read from `instrument=` or `ATOMTASK_OTEL`, without importing it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
from atomtask.errors import ConfigurationError
from atomtask.system._templates import CachePolicy, RepairMode, TemplateLimits
from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider
    from pydantic_ai.models import Model

__all__ = [
    "LARGE_PROMPT",
    "LARGE_PROMPT_ENV",
    "NO_OPTIONS",
    "OTEL_CONTENT_ENV",
    "OTEL_ENV",
    "Batching",
    "CallOptions",
    "ProviderRetries",
    "SubtaskRequest",
    "TraceSettings",
    "large_prompt",
    "trace_settings",
]


@attrs.frozen(kw_only=True)
class CallOptions:
    """What a call asks of the templates it runs, over what they declare: one typed value through every layer.

    `TaskSystem.execute(model=, retries=, limits=, repair=, model_settings=, cache=)` checks its keyword
    arguments into one of these (`check_options`), and every layer below passes it on as it is: the
    executor, a streamed call, a workflow's steps, a durable run, a batch's items. A field left None
    says nothing here, so the layer below decides.

    Two functions decide who wins. Layers that ask (a `retry_with` model, the run's options, the step's,
    the workflow's) are stacked with `over`; what they ask meets the template and the `TaskSystem` in
    `resolve_options` (the executor's), field by field:

    - `model`: the first that names one: the call, the template (with its `fallbacks`, which a model
      named by the call replaces), the `TaskSystem`, `ATOMTASK_MODEL`, the embedded default;
    - `retries`, `repair`: the call's, else the template's;
    - `limits`: every layer's hold at once (the tightest of each limit);
    - `model_settings`: key by key, the call's over the template's over the `TaskSystem`'s;
    - `cache`: the call's, else the `TaskSystem`'s on or off, else the template's (a `TaskSystem` that turns
      the cache on keeps a template's `ttl`);
    - `batching`: the call's, else the layer's below (set only by a provider batch, for its items).
    """

    model: Model | str | None = None
    retries: int | None = None
    limits: TemplateLimits | None = None
    repair: RepairMode | None = None
    model_settings: Mapping[str, Any] | None = None
    cache: bool | CachePolicy | None = None
    batching: Batching | None = None

    def over(self, below: CallOptions) -> CallOptions:
        """These options where they say something, `below`'s where they do not; limits both, settings merged."""
        if below is NO_OPTIONS:
            return self
        if self is NO_OPTIONS:
            return below
        limits = self.limits
        if below.limits is not None:
            limits = below.limits if limits is None else limits.tightest(below.limits)
        settings = self.model_settings
        if below.model_settings:
            settings = {**below.model_settings, **(settings or {})}
        return CallOptions(
            model=self.model if self.model is not None else below.model,
            retries=self.retries if self.retries is not None else below.retries,
            limits=limits,
            repair=self.repair if self.repair is not None else below.repair,
            model_settings=settings,
            cache=self.cache if self.cache is not None else below.cache,
            batching=self.batching if self.batching is not None else below.batching,
        )


@attrs.frozen(kw_only=True)
class Batching:
    """A call whose model requests go through the provider's batch API (`atomtask batch --provider-batch`).

    Set by the batch engine on an item's options (`batch._provider`), never by users:
    - `capability`: the pydantic-ai `BatchModelRequests` every item of the batch shares, so their requests
      share provider batches;
    - `suspend`: a run ends as soon as its request waits in a provider batch (the handler raises
      `handlers.Suspended` with the run's messages, which the engine stores), instead of waiting in process;
    - `history`: the messages a suspended run stored, ending in the request still waiting: the run resumes
      from them (it waits for the same provider batch; nothing is sent again);
    - `reasks_left`: the re-asks the item may still make (the earlier rounds' ones taken off its `retries`);
    - `model`, `attempts`: the model (label) whose run suspended, and the ledger of the models tried before
      it (a template's fallbacks): the resumed call goes on with that model, its ledger whole.
    """

    capability: Any
    suspend: bool = True
    history: Sequence[Any] | None = None
    reasks_left: int | None = None
    model: str | None = None
    attempts: Sequence[Any] = ()


NO_OPTIONS = CallOptions()
"""A call that asks nothing: the templates decide (shared by every such call)."""


@attrs.frozen(kw_only=True)
class ProviderRetries:
    """How provider faults (429, 5xx, timeouts, dropped connections) are retried before giving up.

    The n-th retry waits `backoff * 2**(n-1)` seconds (or the provider's `Retry-After`), at most
    `max_backoff`. `attempts=0` turns retrying off; `backoff=0` retries at once (tests).
    """

    attempts: int = attrs.field(default=2, validator=attrs.validators.ge(0))
    backoff: float = attrs.field(default=0.5, validator=attrs.validators.ge(0))
    max_backoff: float = attrs.field(default=8.0, validator=attrs.validators.ge(0))

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number `retry` (1-based)."""
        if retry_after is not None:
            return min(self.max_backoff, max(0.0, retry_after))
        return min(self.max_backoff, self.backoff * 2.0 ** (retry - 1))


OTEL_ENV = "ATOMTASK_OTEL"
OTEL_CONTENT_ENV = "ATOMTASK_OTEL_CONTENT"

_ON = frozenset({"1", "true", "yes", "on"})
_OFF = frozenset({"", "0", "false", "no", "off"})


@attrs.frozen(kw_only=True)
class TraceSettings:
    """How a TaskSystem emits OpenTelemetry spans (the `otel` extra installs the SDK to export them).

    Args:
        tracer_provider: where the spans go; None uses the global tracer provider (the one your service
            configured with `opentelemetry.trace.set_tracer_provider` or `logfire.configure()`).
        include_content: put prompt and output text into spans (atomtask's and pydantic-ai's): the
            task inputs, the answer, the messages sent and received, failure messages. Off by default.

    Example:
        ```python
        from opentelemetry.sdk.trace import TracerProvider

        system = TaskSystem(instrument=TraceSettings(tracer_provider=TracerProvider()))
        ```
    """

    tracer_provider: TracerProvider | None = None
    include_content: bool = False


def trace_settings(instrument: bool | TraceSettings | None, environ: Mapping[str, str]) -> TraceSettings | None:
    """The settings `instrument=` asks for, None when tracing is off; `None` defers to `ATOMTASK_OTEL`.

    `True` (or `ATOMTASK_OTEL=1`) uses the global tracer provider, with content when
    `ATOMTASK_OTEL_CONTENT=1`; a `TraceSettings` is taken as it is. Anything else, or an environment
    value that is not a yes or a no, raises `ConfigurationError`.
    """
    if instrument is None:
        instrument = _flag(environ, OTEL_ENV)
    if isinstance(instrument, TraceSettings):
        return instrument
    if not isinstance(instrument, bool):
        raise ConfigurationError(
            f"Invalid `instrument=` {instrument!r}: pass True, False, or `TraceSettings(tracer_provider=..., "
            "include_content=...)`."
        )
    return TraceSettings(include_content=_flag(environ, OTEL_CONTENT_ENV)) if instrument else None


def _flag(environ: Mapping[str, str], name: str) -> bool:
    value: Any = environ.get(name, "")
    text = str(value).strip().lower()
    if text in _ON:
        return True
    if text in _OFF:
        return False
    raise ConfigurationError(f"Invalid `{name}={value}`: set it to 1 (on) or 0 (off), or unset it.")


#: The size (characters of system text and instructions, rendered) over which a prompt runs with a warning.
LARGE_PROMPT = 1_000_000
LARGE_PROMPT_ENV = "ATOMTASK_LARGE_PROMPT"


def large_prompt(value: int | None, environ: Mapping[str, str]) -> int:
    """The prompt size (characters) that draws a warning: `value`, else `ATOMTASK_LARGE_PROMPT`, else 1,000,000.

    0 turns the warning off. A negative number, or anything but an integer, raises `ConfigurationError`.
    """
    where = "`large_prompt=`"
    if value is None:
        text = environ.get(LARGE_PROMPT_ENV, "").strip().replace("_", "")
        if not text:
            return LARGE_PROMPT
        where = f"`{LARGE_PROMPT_ENV}`"
        try:
            value = int(text)
        except ValueError:
            value = None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        shown = environ.get(LARGE_PROMPT_ENV) if where != "`large_prompt=`" else value
        raise ConfigurationError(
            f"Invalid {where}: {shown!r} is not a number of characters. Pass a whole number such as 1000000 "
            "(0 turns the large-prompt warning off)."
        )
    return value


class SubtaskRequest(BaseModel):
    """Run template `name` with `inputs`, optionally on a specific `model`.

    Example:
        ```python
        system.execute(SubtaskRequest(name="classify_ticket", inputs={"text": "..."}))
        ```
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    inputs: dict[str, Any] = Field(default_factory=dict)
    model: str | None = None
