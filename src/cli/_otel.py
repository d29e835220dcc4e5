"""The command's OpenTelemetry exporter, from the standard `OTEL_*` environment variables.

A library leaves exporting to its application: `TaskSystem(instrument=True)` (or `ATOMTASK_OTEL=1`)
sends spans to the global tracer provider, which the application configures. The `atomtask` command is
the application, so with `ATOMTASK_OTEL=1` it makes a tracer provider of its own for the command's task
systems, as the OpenTelemetry SDK's auto-configuration would:

- `OTEL_TRACES_EXPORTER`: `console` (the spans as JSON on stderr: stdout is the command's output),
  `otlp`, `none`, or any exporter an installed package registers under the SDK's
  `opentelemetry_traces_exporter` entry points (comma-separated for several). Unset: `otlp` when an
  `OTEL_EXPORTER_OTLP_ENDPOINT` (or `..._TRACES_ENDPOINT`) is set, else `console`.
- `otlp` is sent as `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` / `OTEL_EXPORTER_OTLP_PROTOCOL` says:
  `http/protobuf` (the specification's default) or `grpc`; the exporter package is optional (the `otlp`
  extra) and reads its own variables (`OTEL_EXPORTER_OTLP_ENDPOINT`, `..._HEADERS`, `..._TIMEOUT`).
- The resource is the SDK's (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`; the service is `atomtask`
  when neither names one), the sampler too (`OTEL_TRACES_SAMPLER`), and spans are batched as the SDK
  does (`OTEL_BSP_*`), flushed when the command ends. `OTEL_SDK_DISABLED=true` exports nothing.

When the process already has a tracer provider (`opentelemetry-instrument atomtask ...`), it is used as
it is. A mistake (an unknown exporter, a missing exporter package) is a `ConfigurationError`, exit 2.
Nothing here is imported unless `ATOMTASK_OTEL` is on.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

__all__ = ["EXPORTER_GROUP", "command_tracing", "exporter_names"]

#: The entry-point group the OpenTelemetry SDK loads span exporters from (its own `console` is there).
EXPORTER_GROUP = "opentelemetry_traces_exporter"
_OTLP_BY_PROTOCOL = {"http/protobuf": "otlp_proto_http", "grpc": "otlp_proto_grpc"}
_PACKAGES = {
    "otlp_proto_http": "opentelemetry-exporter-otlp-proto-http",
    "otlp_proto_grpc": "opentelemetry-exporter-otlp-proto-grpc",
}


@contextlib.contextmanager
def command_tracing(args: argparse.Namespace, err: TextIO) -> Iterator[None]:
    """While the command runs: `args.instrument` is the `TraceSettings` its task systems get (unset: as the
    environment says), and the spans are flushed to the exporters when it ends."""
    from atomtask.system._options import trace_settings

    settings = trace_settings(None, os.environ)  # `ATOMTASK_OTEL`, `ATOMTASK_OTEL_CONTENT`, as the library reads them
    provider = _command_provider(err, os.environ) if settings is not None else None
    if settings is None or provider is None:
        yield
        return
    import attrs

    args.instrument = attrs.evolve(settings, tracer_provider=provider)
    try:
        yield
    finally:
        provider.shutdown()  # flushes every batched span


def _command_provider(err: TextIO, environ: Mapping[str, str]) -> TracerProvider | None:
    """The command's own tracer provider, or None: disabled, exported nowhere, or the process has one already."""
    from opentelemetry import trace

    try:
        from opentelemetry.sdk.environment_variables import OTEL_SDK_DISABLED
    except ImportError:
        from atomtask.errors import ConfigurationError

        raise ConfigurationError(
            "`ATOMTASK_OTEL=1` on the command line exports spans with the OpenTelemetry SDK, which is not installed: "
            "install it with `pip install 'atomtask[otel]'`, or unset `ATOMTASK_OTEL`."
        ) from None
    if environ.get(OTEL_SDK_DISABLED, "").strip().lower() == "true":
        return None
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return None  # configured by the application around the command (`opentelemetry-instrument`)
    exporters = [_exporter(name, err) for name in exporter_names(environ)]
    if not exporters:
        return None
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create()  # `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: "atomtask"}))
    provider = TracerProvider(resource=resource)  # `OTEL_TRACES_SAMPLER`
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))  # `OTEL_BSP_*`
    return provider


def exporter_names(environ: Mapping[str, str]) -> list[str]:
    """The entry-point names of the exporters `OTEL_TRACES_EXPORTER` asks for (`otlp` by its protocol)."""
    from atomtask.errors import ConfigurationError
    from opentelemetry.environment_variables import OTEL_TRACES_EXPORTER
    from opentelemetry.sdk.environment_variables import (
        OTEL_EXPORTER_OTLP_ENDPOINT,
        OTEL_EXPORTER_OTLP_PROTOCOL,
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
    )

    raw = environ.get(OTEL_TRACES_EXPORTER, "").strip()
    if not raw:
        raw = (
            "otlp"
            if environ.get(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or environ.get(OTEL_EXPORTER_OTLP_ENDPOINT)
            else "console"
        )
    names: list[str] = []
    for name in (n.strip().lower() for n in raw.split(",")):
        if name in ("", "none"):
            continue
        if name == "otlp":
            protocol = (
                environ.get(OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) or environ.get(OTEL_EXPORTER_OTLP_PROTOCOL) or ""
            ).strip() or "http/protobuf"
            if protocol not in _OTLP_BY_PROTOCOL:
                variable = (
                    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
                    if environ.get(OTEL_EXPORTER_OTLP_TRACES_PROTOCOL)
                    else OTEL_EXPORTER_OTLP_PROTOCOL
                )
                raise ConfigurationError(
                    f"`{variable}={protocol}` is not an OTLP protocol atomtask can send spans with; set it to "
                    f"{' or '.join(f'`{p}`' for p in _OTLP_BY_PROTOCOL)}."
                )
            name = _OTLP_BY_PROTOCOL[protocol]
        names.append(name)
    return names


def _exporter(name: str, err: TextIO) -> SpanExporter:
    """The span exporter registered as `name`; `console` writes to the command's stderr."""
    from importlib.metadata import entry_points

    from atomtask.errors import ConfigurationError, did_you_mean
    from opentelemetry.environment_variables import OTEL_TRACES_EXPORTER
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SpanExporter

    found = entry_points(group=EXPORTER_GROUP, name=name)
    if not found:
        if name in _PACKAGES:
            install = (
                f"`pip install 'atomtask[otlp]'` (or `pip install {_PACKAGES[name]}`)"
                if name == "otlp_proto_http"
                else f"`pip install {_PACKAGES[name]}` (`atomtask[otlp]` brings the http/protobuf one)"
            )
            raise ConfigurationError(
                f"`{OTEL_TRACES_EXPORTER}=otlp` sends spans with the OTLP exporter package "
                f"`{_PACKAGES[name]}`, which is not installed: install it with {install}, or set "
                f"`{OTEL_TRACES_EXPORTER}=console`."
            )
        known = sorted({"console", "otlp", "none", *(e.name for e in entry_points(group=EXPORTER_GROUP))})
        hint = did_you_mean(name, known) or f" Known exporters: {', '.join(known)}."
        raise ConfigurationError(f"Unknown span exporter {name!r} in `{OTEL_TRACES_EXPORTER}`.{hint}")
    try:
        exporter_class: Any = next(iter(found)).load()
    except ImportError as exc:  # an exporter package installed without what it needs
        package = _PACKAGES.get(name, f"the package of exporter {name!r}")
        raise ConfigurationError(
            f"The span exporter {name!r} (`{OTEL_TRACES_EXPORTER}`) cannot be imported ({type(exc).__name__}: "
            f"{exc}); reinstall {package} with its dependencies (`pip install 'atomtask[otlp]'` for OTLP)."
        ) from None
    if not (isinstance(exporter_class, type) and issubclass(exporter_class, SpanExporter)):
        raise ConfigurationError(
            f"{name!r} in `{OTEL_TRACES_EXPORTER}` is not a span exporter ({exporter_class!r}); name a traces exporter."
        )
    if issubclass(exporter_class, ConsoleSpanExporter):
        return exporter_class(out=err)  # stdout is the command's JSON output
    return exporter_class()  # it reads its own `OTEL_EXPORTER_*` variables
