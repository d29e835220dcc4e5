"""What the batch tests share: a `tag` template, item files, and a fake provider that answers per item.

`ItemServer` wraps a `FakeProviderServer` whose responder finds the item's marker (`item-N`) in each
request and answers with a tool call naming it, or with the fault a test injects for that item's
n-th request (429 with `retry-after-ms`, 503, a malformed answer, a delay).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from atomtask.testing import FakeProviderServer, RecordedRequest, Reply, ServerReply

SCHEMAS = """\
schemas:
  - name: Tag
    fields:
      - {name: label, type: str}
      - {name: item, type: str}
"""
TEMPLATE = """\
name: tag
params:
  text: {type: str}
instructions: "Tag this: {{text}}"
output_format: {type: json, schema: Tag, mode: tool}
"""
MARKER = re.compile(r"item-(\d+)\b")

#: A fault for an item's n-th request (1-based), or None for a good answer.
Fault = Callable[[int, int], ServerReply | None]


def write_templates(folder: Path) -> Path:
    """The `tag` template (input `text`, output `Tag`) in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "schemas.yaml").write_text(SCHEMAS, encoding="utf-8")
    (folder / "tag.yaml").write_text(TEMPLATE, encoding="utf-8")
    return folder


def write_items(path: Path, count: int, *, start: int = 0) -> Path:
    """`count` JSONL items `{"id": "iN", "text": "item-N"}`."""
    with path.open("w", encoding="utf-8") as f:
        for n in range(start, start + count):
            f.write(json.dumps({"id": f"i{n}", "text": f"item-{n}"}) + "\n")
    return path


def good_answer(n: int) -> ServerReply:
    """The answer for item `n`: a valid `Tag` naming it."""
    return Reply.tool_call(args={"label": f"label-{n}", "item": f"item-{n}"})


class ItemServer:
    """A fake provider answering each item by its marker; `asked` counts each item's requests."""

    def __init__(self, fault: Fault | None = None, *, delay: float = 0.0) -> None:
        self.fault = fault
        self.delay = delay
        self.asked: Counter[int] = Counter()
        self.times: list[tuple[float, int, int]] = []  # (when, item, its n-th request)
        self._lock = threading.Lock()
        self.server = FakeProviderServer()

    def __enter__(self) -> ItemServer:
        self.server.start()
        self.server.respond_with(self._respond)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.close()

    def _respond(self, request: RecordedRequest) -> ServerReply:
        found = MARKER.search(json.dumps(request.body.get("messages", request.body)))
        if found is None:
            return Reply.error(400, "no item marker in the request")
        n = int(found.group(1))
        with self._lock:
            self.asked[n] += 1
            nth = self.asked[n]
            self.times.append((time.monotonic(), n, nth))
        reply = (self.fault(n, nth) if self.fault else None) or good_answer(n)
        return Reply.delay(self.delay, reply) if self.delay else reply

    def env(self, home: Path) -> dict[str, str]:
        """The environment of an `atomtask batch` subprocess talking to this server."""
        env = dict(os.environ)
        env.update(
            OPENAI_BASE_URL=self.server.openai_base_url,
            OPENAI_API_KEY="sk-test-not-a-real-key",
            ATOMTASK_HOME=str(home),
            PYDANTIC_AI_NO_BANNER="1",
        )
        return env


def batch_command(*args: str) -> list[str]:
    """`python -m atomtask.cli batch ARGS...` with the openai-chat model of the fake server."""
    return [sys.executable, "-m", "atomtask.cli", "batch", *args, "--model", "openai-chat:gpt-4o-mini"]


def run_batch(args: list[str], env: Mapping[str, str], *, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the batch command to its end (a guard against a hang: 300 s at most)."""
    return subprocess.run(
        batch_command(*args), env=dict(env), input=stdin, capture_output=True, text=True, timeout=300, check=False
    )


def lines(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of a results file."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
