"""The provider compatibility analysis in a helper process, so `atomtask check` does not wait for pydantic-ai.

Importing pydantic-ai takes about a second, and a check needs it for two things only: the provider
prefixes a model string may use (`atomtask.loading.providers.known_providers`) and the P3xx analysis
of each output schema (`atomtask.lint.compat.analyse`). Everything else (reading, building the
classes, their JSON Schemas, the other rules) is atomtask's and pydantic's. So the command starts
`python -m atomtask.lint.compat_process` when it first has files to check; the helper imports
pydantic-ai while the check goes on, sends the known providers, then analyses each schema as it
arrives. The analysis is the very same function, on the same JSON Schema (JSON keeps it exactly),
so the findings are the ones an in-process check makes.

Nothing depends on the helper: if it cannot start, dies or answers nothing, the check asks
pydantic-ai in its own process, as `check()` does by default. Once pydantic-ai is imported (a test
run, an application), there is nothing to overlap and no helper is started.

The protocol is one JSON document per line. The helper writes `{"providers": [...]}` first, then
`[index, [[code, message, owner, field], ...]]` for each request `[index, schema, model, mode]` it
reads, until its input ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
from typing import IO, Any, Protocol

from atomtask.lint import compat

__all__ = ["Analyses", "InlineAnalyses", "ProcessAnalyses", "main"]

_WAIT = 300.0  # seconds to wait for the helper's last answers before analysing the rest here


class Analyses(Protocol):
    """Where `CheckRun.lint` sends each (schema, model, mode) to analyse; it reads every answer at the end."""

    def start(self) -> None:
        """Get ready: a check is about to run (the helper process starts importing pydantic-ai)."""

    def submit(self, schema: compat.JsonSchema, model: str, mode: str) -> int:
        """Ask for the issues of `schema` in `mode` for `model`; the index of the answer in `results()`."""

    def results(self) -> list[list[compat.CompatIssue]]:
        """The issues of every request, in the order they were submitted."""

    def close(self) -> None:
        """Release what `start` took, once every answer is in."""


class InlineAnalyses:
    """Each analysis made at once, in this process."""

    def __init__(self) -> None:
        self._done: list[list[compat.CompatIssue]] = []

    def start(self) -> None:
        pass

    def submit(self, schema: compat.JsonSchema, model: str, mode: str) -> int:
        self._done.append(compat.analyse(schema, model, mode))
        return len(self._done) - 1

    def results(self) -> list[list[compat.CompatIssue]]:
        return self._done

    def close(self) -> None:
        pass


class ProcessAnalyses:
    """Analyses made by a helper process, started at the first need; anything it does not answer is made here."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._started = False
        self._requests: list[tuple[compat.JsonSchema, str, str]] = []
        self._answers: dict[int, list[compat.CompatIssue]] = {}
        self._providers: frozenset[str] | None = None
        self._providers_known = threading.Event()
        self._outgoing: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []

    # -- the parent's side ------------------------------------------------------------------------------

    def providers(self) -> frozenset[str] | None:
        """The provider prefixes, as the helper's pydantic-ai knows them (None: it cannot say)."""
        self.start()
        self._providers_known.wait(_WAIT)
        return self._providers

    def submit(self, schema: compat.JsonSchema, model: str, mode: str) -> int:
        self.start()
        index = len(self._requests)
        self._requests.append((schema, model, mode))
        if self._process is not None:
            try:  # only what JSON carries exactly (a tuple, a non-string key, a NaN: analysed here)
                line = json.dumps([index, schema, model, mode])
                faithful = json.loads(line)[1] == schema
            except (TypeError, ValueError):
                faithful = False
            if faithful:
                self._outgoing.put(line.encode() + b"\n")
        return index

    def results(self) -> list[list[compat.CompatIssue]]:
        if self._requests:
            self.close()
        else:
            self.stop()  # nothing asked (`--select E`): no reason to wait for its import
        return [
            self._answers[i] if i in self._answers else compat.analyse(*request)
            for i, request in enumerate(self._requests)
        ]

    def stop(self) -> None:
        """End the helper now, whatever it was doing (after an error, or when no check needed it)."""
        process, self._process = self._process, None
        if process is None:
            return
        self._outgoing.put(None)
        process.kill()
        process.wait()

    def close(self) -> None:
        """Let the helper finish what it was sent, and wait for it (killing it after `_WAIT` seconds)."""
        process, self._process = self._process, None
        if process is None:
            return
        self._outgoing.put(None)
        for thread in self._threads:
            thread.join(_WAIT)
        if process.poll() is None:
            try:
                process.wait(_WAIT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def start(self) -> None:
        """Start the helper (once); without one, everything is analysed here."""
        if self._started:
            return
        self._started = True
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", "atomtask.lint.compat_process"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env={**os.environ, "PYDANTIC_AI_NO_BANNER": "1"},
            )
        except OSError:  # no helper: everything is analysed here
            self._providers_known.set()
            return
        self._process = process
        assert process.stdin is not None and process.stdout is not None
        self._threads = [
            threading.Thread(target=self._send, args=(process.stdin,), daemon=True),
            threading.Thread(target=self._receive, args=(process.stdout,), daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _send(self, stdin: IO[bytes]) -> None:
        try:
            while (line := self._outgoing.get()) is not None:
                stdin.write(line)
                stdin.flush()
        except OSError:  # the helper is gone: what it did not answer is analysed here
            pass
        finally:
            with contextlib.suppress(OSError):
                stdin.close()

    def _receive(self, stdout: IO[bytes]) -> None:
        try:
            first = json.loads(stdout.readline() or b"null")
            if isinstance(first, dict) and isinstance(first.get("providers"), list):
                self._providers = frozenset(first["providers"])
            self._providers_known.set()
            for line in stdout:
                index, issues = json.loads(line)
                self._answers[index] = [
                    compat.CompatIssue(code=code, message=message, owner=owner, field=field)
                    for code, message, owner, field in issues
                ]
        except (OSError, ValueError):  # a broken answer: the rest is analysed here
            pass
        finally:
            self._providers_known.set()


# -- the helper's side ----------------------------------------------------------------------------------


def main(stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None) -> int:
    """Import pydantic-ai, send the known providers, then answer each request line until the input ends."""
    from atomtask.loading.providers import known_providers

    source = stdin or sys.stdin.buffer
    out = stdout or sys.stdout.buffer

    def write(value: Any) -> None:
        out.write(json.dumps(value).encode() + b"\n")
        out.flush()

    write({"providers": sorted(known_providers())})
    for line in source:
        index, schema, model, mode = json.loads(line)
        issues = compat.analyse(schema, model, mode)
        write([index, [[i.code, i.message, i.owner, i.field] for i in issues]])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
