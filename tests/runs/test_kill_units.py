"""kill -9 inside a `for_each`, a `parallel` group and a sub-workflow: resumed, only the units in flight are paid again.

Each answer of the fake provider is delayed. At the kill the test reads the store: the units recorded then must
never be asked again; the others (in flight, or not started) are asked once each on resume.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from atomtask.testing import FakeProviderServer, RecordedRequest, Reply, ServerReply

from tests.runs.run_helpers import child_env

FLOWS = """\
name: say
params: {word: str}
instructions: "Repeat {{word}}"
---
name: many
state:
  - {name: words, type: "list[str]"}
  - {name: said, type: "list[str]"}
  - {name: last, type: str, default: "-"}
steps:
  - {id: each, task: say, for_each: "state.words", as: w, inputs: {word: "{{w}}"}, collect: said, concurrency: 2}
  - {id: after, task: say, inputs: {word: "end"}, output: last}
---
name: fan
state:
  - {name: a, type: str}
  - {name: b, type: str}
  - {name: c, type: str}
  - {name: d, type: str}
  - {name: last, type: str, default: "-"}
steps:
  - id: all
    parallel:
      - {id: one, task: say, inputs: {word: "m1"}, output: a}
      - {id: two, task: say, inputs: {word: "m2"}, output: b}
      - {id: three, task: say, inputs: {word: "m3"}, output: c}
      - {id: four, task: say, inputs: {word: "m4"}, output: d}
  - {id: after, task: say, inputs: {word: "end"}, output: last}
---
name: inner
state:
  - {name: seed, type: str}
  - {name: x, type: str}
  - {name: y, type: str}
  - {name: z, type: str}
  - {name: v, type: str}
steps:
  - {id: s1, task: say, inputs: {word: "s1"}, output: x}
  - {id: s2, task: say, inputs: {word: "s2"}, output: y}
  - {id: s3, task: say, inputs: {word: "s3"}, output: z}
  - {id: s4, task: say, inputs: {word: "s4"}, output: v}
---
name: outer
state:
  - {name: seed, type: str}
  - {name: got, type: str}
  - {name: last, type: str, default: "-"}
steps:
  - {id: sub, workflow: inner, inputs: {seed: "{{state.seed}}"}, outputs: {got: v}}
  - {id: after, task: say, inputs: {word: "end"}, output: last}
"""

ATOMTASK = str(Path(sys.executable).parent / "atomtask")
#: How long after its answer was sent a unit counts as surely ended (reported, not asserted: a loaded machine may
#: take longer to write its record).
MARGIN = 1.0
#: Each kind of step: the workflow, its inputs, how long each unit's answer takes, and how many run at once.
CASES = {
    "for_each": ("many", {"words": [f"w{i}" for i in range(10)]}, {f"w{i}": 0.4 for i in range(10)}, 2),
    "parallel": ("fan", {}, {"m1": 0.3, "m2": 0.8, "m3": 2.4, "m4": 3.2}, 4),
    "sub-workflow": ("outer", {"seed": "s"}, {"s1": 0.4, "s2": 0.4, "s3": 0.4, "s4": 0.4}, 1),
}

#: What each run ends with, as a clean run does.
EXPECTED = {
    "for_each": {"said": [f"W{i}" for i in range(10)], "last": "END"},
    "parallel": {"a": "M1", "b": "M2", "c": "M3", "d": "M4", "last": "END"},
    "sub-workflow": {"got": "S4", "last": "END"},
}


class _Clock:
    """Answers each word upper-cased after its delay, noting when each request arrived (thread-safe)."""

    def __init__(self, delays: dict[str, float]) -> None:
        self.delays = delays
        self.arrived: list[tuple[str, float]] = []
        self.lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> ServerReply:
        word = _word(request)
        with self.lock:
            self.arrived.append((word, time.monotonic()))
        return Reply.delay(self.delays.get(word, 0.0), Reply.text(word.upper()))

    def ended_before(self, instant: float, margin: float = MARGIN) -> set[str]:
        """The words whose answer was sent at least `margin` seconds before `instant`."""
        with self.lock:
            return {w for w, at in self.arrived if at + self.delays.get(w, 0.0) + margin < instant}


def _word(request: RecordedRequest) -> str:
    """The word a chat request asks to repeat ("" for any other request: a server probe)."""
    messages = request.body.get("messages")
    return str(messages[-1]["content"]).removeprefix("Repeat ") if messages else ""


#: The word each unit's record stands for (`each@1/3` is element 3, `all@1/two` member `two`, ...).
_MEMBERS = {"one": "m1", "two": "m2", "three": "m3", "four": "m4"}


def _recorded(db: Path, run_id: str) -> set[str]:
    """The words of the units the store has a record of (read straight from the SQLite file, after the kill)."""
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT function_name FROM operation_outputs WHERE workflow_uuid = ?", (run_id,))
        names = [str(name) for (name,) in rows]
    words = set()
    for name in names:
        unit = name.partition("/")[2]
        if name.startswith("each@1/"):
            words.add(f"w{unit}")
        elif name.startswith("all@1/"):
            words.add(_MEMBERS[unit])
        elif name.startswith("sub@1/"):
            words.add(unit.partition("@")[0])
    return words


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


def _argv(action: str, *rest: str, server: FakeProviderServer, folder: Path) -> list[str]:
    endpoint = ["--base-url", server.openai_base_url] if action in ("run", "resume") else []
    where = ["--templates", str(folder), "--db", str(folder / "runs.sqlite")]
    return [ATOMTASK, "workflow", action, *rest, *endpoint, *where]


def kill_and_resume(
    server: FakeProviderServer, tmp_path: Path, case: str, kill_after: float, run_id: str
) -> dict[str, object]:
    """Run `case`, kill -9 it `kill_after` seconds after its first request, resume it; what was asked, when."""
    workflow, inputs, delays, _ = CASES[case]
    (tmp_path / "flows.yaml").write_text(FLOWS, encoding="utf-8")
    env = child_env(tmp_path)
    clock = _Clock(delays)
    server.respond_with(clock)
    given = [
        arg
        for k, v in inputs.items()
        for arg in ("-i", f"{k}:={json.dumps(v)}" if not isinstance(v, str) else f"{k}={v}")
    ]
    argv = _argv("run", workflow, *given, "--run-id", run_id, "--model", "openai-chat:fake", server=server,
                 folder=tmp_path)  # fmt: skip
    running = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not server.requests and running.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.requests, running.stderr.read() if running.poll() is not None else "no request"  # type: ignore[union-attr]
    time.sleep(kill_after)
    os.kill(running.pid, signal.SIGKILL)
    killed_at = time.monotonic()
    running.wait()
    running.stdout.close()  # type: ignore[union-attr]
    running.stderr.close()  # type: ignore[union-attr]
    before = [w for w in map(_word, server.requests) if w]
    ended, sent = clock.ended_before(killed_at), clock.ended_before(killed_at, margin=0.0)
    recorded = _recorded(tmp_path / "runs.sqlite", run_id)
    resumed = subprocess.run(_argv("resume", run_id, server=server, folder=tmp_path), env=env, capture_output=True,
                             text=True)  # fmt: skip
    assert 0 == resumed.returncode, resumed.stderr
    after = [w for w in map(_word, server.requests) if w][len(before) :]
    state = json.loads(resumed.stdout)
    return {"before": before, "ended": ended, "sent": sent, "recorded": recorded, "after": after, "state": state}


def check(case: str, seen: dict[str, object]) -> tuple[int, int]:
    """No unit recorded at the kill is asked again; one in flight at most once; every unit not yet asked, once.

    Returns (units paid twice, units asked before the kill but not recorded: in flight).
    """
    _, _, delays, at_once = CASES[case]
    before, recorded, after = list(seen["before"]), set(seen["recorded"]), list(seen["after"])  # type: ignore[call-overload]
    assert len(set(before) - set(seen["sent"])) <= at_once, seen  # type: ignore[call-overload]
    assert not recorded.intersection(after), f"units recorded at the kill were asked again: {seen}"
    units = [w for w in after if w != "end"]
    assert len(units) == len(set(units)), seen
    assert set(delays) - recorded == set(units), seen
    assert ["end"] == [w for w in after if w == "end"], seen
    assert EXPECTED[case].items() <= seen["state"].items(), seen  # type: ignore[attr-defined]
    return len(set(before).intersection(after)), len(set(before) - recorded)


@pytest.mark.slow
@pytest.mark.usefixtures("allow_model_requests")
@pytest.mark.parametrize(("case", "kill_after"), [("for_each", 1.9), ("parallel", 2.0), ("sub-workflow", 1.5)])
def test_a_kill_in_the_middle_of_a_step_pays_again_only_for_its_units_in_flight(
    server: FakeProviderServer, tmp_path: Path, case: str, kill_after: float
) -> None:
    """kill -9 with some units ended and some in flight; resumed: the ended ones are not asked again."""
    seen = kill_and_resume(server, tmp_path, case, kill_after, "k1")
    assert seen["recorded"], f"no unit was recorded at the kill: {seen}"  # the case is meaningful
    twice, in_flight = check(case, seen)
    assert twice <= in_flight
