"""`ATOMTASK_OTEL=1 atomtask ...`: spans exported as the standard `OTEL_*` variables say (`cli/_otel.py`)."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from atomtask.cli._main import main
from atomtask.cli._otel import exporter_names
from atomtask.errors import ConfigurationError

COMMAND = [sys.executable, "-m", "atomtask.cli"]


def _spans(err: str) -> list[dict[str, Any]]:
    """The console exporter's spans: pretty-printed JSON objects, each from a `{` line to a `}` line."""
    spans, block = [], None
    for line in err.splitlines():
        if line == "{":
            block = [line]
        elif block is not None:
            block.append(line)
            if line == "}":
                spans.append(json.loads("\n".join(block)))
                block = None
    return spans


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_atomtask_otel_alone_prints_the_spans_on_stderr(templates_dir: Path) -> None:
    """A real `atomtask run` on the embedded model: its task, agent and model spans on stderr, stdout the answer."""
    env = {**os.environ, "ATOMTASK_OTEL": "1", "OTEL_SERVICE_NAME": "contacts", "PYDANTIC_AI_NO_BANNER": "1"}
    for name in ("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        env.pop(name, None)
    done = subprocess.run(
        [*COMMAND, "run", "extract_contact", "-i", "text=Ada", "--model", "test", "--templates", str(templates_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert 0 == done.returncode, done.stderr
    assert "name" in json.loads(done.stdout)  # the answer alone: the spans are not on stdout
    spans = _spans(done.stderr)
    names = {span["name"] for span in spans}
    assert {"task extract_contact", "chat test"} <= names
    assert any(name.startswith("invoke_agent") for name in names)
    assert {"contacts"} == {span["resource"]["attributes"]["service.name"] for span in spans}
    task = next(span for span in spans if span["name"] == "task extract_contact")
    assert ("extract_contact", "UNSET") == (task["attributes"]["gen_ai.agent.name"], task["status"]["status_code"])


def test_console_from_main_goes_to_its_stderr_each_time(templates_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`main()` called twice: each call exports its own spans to its own stderr (no process-wide provider is set)."""
    monkeypatch.setenv("ATOMTASK_OTEL", "1")
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    argv = ["run", "summarize", "-i", "document=x", "--model", "test", "-q", "--templates", str(templates_dir)]
    first, second = run(argv), run(argv)
    assert [["task summarize"], ["task summarize"]] == [
        [s["name"] for s in _spans(err) if s["name"].startswith("task")] for _, _, err in (first, second)
    ]
    from opentelemetry import trace

    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def test_none_exports_nothing_and_without_atomtask_otel_nothing_is_traced(
    templates_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`OTEL_TRACES_EXPORTER=none` prints no span; so does an exporter named without `ATOMTASK_OTEL=1`."""
    argv = ["run", "summarize", "-i", "document=x", "--model", "test", "-q", "--templates", str(templates_dir)]
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    assert (0, "") == (lambda r: (r[0], r[2]))(run(argv))
    monkeypatch.setenv("ATOMTASK_OTEL", "1")
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    assert (0, "") == (lambda r: (r[0], r[2]))(run(argv))


def test_an_unknown_exporter_exits_2_with_did_you_mean(templates_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A misspelt `OTEL_TRACES_EXPORTER` is a configuration error before anything runs."""
    monkeypatch.setenv("ATOMTASK_OTEL", "1")
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "consle")
    code, out, err = run(["run", "summarize", "-i", "document=x", "--model", "test", "--templates", str(templates_dir)])
    assert (2, "") == (code, out)
    assert "atomtask: error: Unknown span exporter 'consle' in `OTEL_TRACES_EXPORTER`. Did you mean 'console'" in err


@pytest.mark.parametrize(
    ("environ", "names"),
    [
        ({}, ["console"]),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, ["otlp_proto_http"]),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, ["otlp_proto_http"]),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, ["otlp_proto_grpc"]),
        (
            {"OTEL_TRACES_EXPORTER": "otlp,console", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"},
            ["otlp_proto_grpc", "console"],
        ),
        ({"OTEL_TRACES_EXPORTER": "none"}, []),
    ],
)
def test_exporter_names_follow_the_standard_variables(environ: dict[str, str], names: list[str]) -> None:
    """Unset: console, or otlp when an endpoint is set; `otlp` by its protocol (http/protobuf by default)."""
    assert names == exporter_names(environ)


def test_an_unknown_otlp_protocol_is_refused() -> None:
    """`http/json` (no Python exporter sends it) names the variable and the protocols that work."""
    with pytest.raises(ConfigurationError, match=r"`OTEL_EXPORTER_OTLP_PROTOCOL=http/json` is not an OTLP protocol"):
        exporter_names({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})


class _Receiver(BaseHTTPRequestHandler):
    """An OTLP/HTTP collector that keeps what it is sent."""

    received: list[tuple[str, str, bytes]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        self.received.append((self.path, self.headers.get("content-type", ""), body))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[tuple[str, list[tuple[str, str, bytes]]]]:
    received: list[tuple[str, str, bytes]] = []
    handler = type("Receiver", (_Receiver,), {"received": received})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


def test_otlp_sends_the_spans_to_the_collector(
    templates_dir: Path, monkeypatch: pytest.MonkeyPatch, collector: tuple[str, list[tuple[str, str, bytes]]]
) -> None:
    """`OTEL_EXPORTER_OTLP_ENDPOINT` alone: the spans reach the collector's `/v1/traces` as protobuf."""
    endpoint, received = collector
    monkeypatch.setenv("ATOMTASK_OTEL", "1")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    code, _, err = run(["run", "summarize", "-i", "document=x", "--model", "test", "--templates", str(templates_dir)])
    assert 0 == code, err
    assert [] == _spans(err)
    assert {("/v1/traces", "application/x-protobuf")} == {(path, kind) for path, kind, _ in received}
    assert any(b"task summarize" in body for _, _, body in received)


def test_otlp_without_its_package_names_the_package(templates_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """OTLP over gRPC, whose exporter package is not installed: exit 2 before anything runs, naming the package."""
    assert importlib.util.find_spec("opentelemetry.exporter.otlp.proto.grpc") is None  # the `test` extra lacks it
    monkeypatch.setenv("ATOMTASK_OTEL", "1")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    code, out, err = run(["run", "summarize", "-i", "document=x", "--model", "test", "--templates", str(templates_dir)])
    assert (2, "") == (code, out)
    assert "`opentelemetry-exporter-otlp-proto-grpc`, which is not installed" in err
    assert "`pip install opentelemetry-exporter-otlp-proto-grpc`" in err
