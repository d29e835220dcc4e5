"""What a TaskSystem is told about OpenTelemetry: `TraceSettings`, and `instrument=` or `ATOMTASK_OTEL` read into it.

Tracing is off unless asked for, by `TaskSystem(instrument=True)`, `instrument=TraceSettings(...)` or
the environment variable `ATOMTASK_OTEL=1`. The spans themselves (`atomtask.handlers.tracing_spans`)
and OpenTelemetry are imported only when it is on; nothing here imports either.

Spans never carry an API key. Prompt and output text (the rendered prompts, the model's answers, the
task inputs, failure messages that quote them) go into spans only when the user opts in:
`TraceSettings(include_content=True)`, or `ATOMTASK_OTEL_CONTENT=1` with `instrument=True` or
`ATOMTASK_OTEL=1`. The same switch decides for pydantic-ai's spans nested inside atomtask's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs
from atomtask.system.errors import ConfigurationError

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = ["OTEL_CONTENT_ENV", "OTEL_ENV", "TraceSettings", "trace_settings"]

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
