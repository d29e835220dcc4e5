"""How long the `atomtask` commands take to start, against the imports they cannot do without.

Each command runs in a fresh interpreter, as a user types it, on the shipped templates (or
`--templates DIR`). The baselines are timed the same way: `python -c "import pydantic, yaml"` (what
reading and checking templates needs at the least), the same plus one pydantic model class (pydantic
imports its schema machinery lazily, on the first class: no command that reads a template into a model
starts faster) and `python -c "import pydantic_ai"` (what running a task needs at the least). The
targets (issue 27):

- `atomtask --help` (`help`), `list`, `check`, `show` and `workflow list|show|graph`: at most 2x
  `import pydantic, yaml`;
- `atomtask run` on the synthetic model: at most 1.2x `import pydantic_ai` plus the task itself. The
  task's own time is measured in one process that has already run it once (imports done, agent built),
  as the second `TaskSystem.execute` with the response cache off. The same call written in bare
  pydantic-ai (an `Agent` on its `TestModel`, run once) is timed too, for the fairer comparison: a
  pydantic-ai user's first call also pays for loading the price data and building the output schema.

Runs are interleaved (one of each command in turn, `--repeat` rounds) so that a busy moment on a
shared machine falls on every command alike; each figure is the median, of wall time (what the targets
are about) and of CPU time (user + system, which a busy machine disturbs less). The children write
their bytecode to a temporary `PYTHONPYCACHEPREFIX` (as an installed package has its `.pyc` files,
even where `PYTHONDONTWRITEBYTECODE` is set), keep their state in a temporary `ATOMTASK_HOME` (so
`check` runs with a warm cache after the warm-up round, as it does on a second run) and start from an
empty folder. The last lines name the heavy modules each command imported. `show` and `run` name the
template `extract_contact`, `workflow show|graph` the workflow `article_writer`: with a `--templates DIR`
that has neither, those commands are reported as failed and left out of the ratios.

    python benchmarks/startup.py [--repeat 7] [--templates DIR] [--only list show]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Imported by a command only if it needs them: reading templates should not pay for these.
HEAVY = ("pydantic_ai", "openai", "anthropic", "dbos", "jsonschema", "opentelemetry", "httpx", "sqlalchemy")

_CLI = "import sys; from atomtask.cli import main; sys.exit(main(sys.argv[1:]))"
_HEAVY_PROBE = (
    "import io, json, sys; from atomtask.cli import main\n"
    "try:\n    main(sys.argv[1:], stdout=io.StringIO(), stderr=io.StringIO())\nexcept SystemExit:\n    pass\n"
    f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
)
_TASK = """
import json, sys, time
from atomtask import TaskSystem
system = TaskSystem(templates=[sys.argv[1]])
inputs = json.loads(sys.argv[3])
system.execute(sys.argv[2], inputs, cache=False).unwrap()
started, cpu = time.perf_counter(), time.process_time()
system.execute(sys.argv[2], inputs, cache=False).unwrap()
print(time.perf_counter() - started, time.process_time() - cpu)
"""


def commands(templates: str) -> dict[str, list[str]]:
    """Each measured command's `atomtask` arguments."""
    where = ["--templates", templates]
    return {
        "help": ["--help"],
        "list": ["list", *where],
        "check": ["check", templates],
        "show": ["show", "extract_contact", *where],
        "workflow list": ["workflow", "list", *where],
        "workflow show": ["workflow", "show", "article_writer", *where],
        "workflow graph": ["workflow", "graph", "article_writer", *where],
        "run": ["run", "extract_contact", "-i", f"text={_TEXT}", "--no-cache", *where],
    }


_TEXT = "Ann Lee, ann@example.com, +1 555 0100"
# `import pydantic` is lazy: the first model class pays for pydantic's schema machinery (~0.07 s).
# Reading a template into a model cannot start faster than this, so the read commands are also
# reported against it.
_ONE_MODEL = "import pydantic, yaml\nclass Template(pydantic.BaseModel):\n    name: str\nTemplate(name='x')"
# The same call in bare pydantic-ai (its TestModel, the `Contact` schema), first call and all: what a
# pydantic-ai user pays for one answer, pricing data and the output schema's validator included.
_PYDANTIC_AI_CALL = """
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel

class Contact(BaseModel):
    name: str
    email: str | None
    phone: str | None
    company: str | None

agent = Agent(TestModel(), output_type=Contact, instructions="Extract the contact details.")
agent.run_sync("Ann Lee, ann@example.com, +1 555 0100")
"""
_BASELINES = {
    "import pydantic, yaml": "import pydantic, yaml",
    "+ one pydantic model": _ONE_MODEL,
    "import pydantic_ai": "import pydantic_ai",
    "pydantic-ai, one call": _PYDANTIC_AI_CALL,
}
_TARGET_RUN = "run"


def _environment(home: str, pycache: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ATOMTASK_", "OTEL_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(PYDANTIC_AI_NO_BANNER="1", PYTHONPYCACHEPREFIX=pycache, ATOMTASK_HOME=home)
    return env


def _measure(command: list[str], env: dict[str, str], cwd: str) -> tuple[float, float] | str:
    """The command's wall and CPU time (user + system) in seconds, or why it failed (its last line of stderr)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines() or [""]
        return f"exit {done.returncode}: {lines[-1]}"
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _task_time(python: str, templates: str, env: dict[str, str], cwd: str) -> tuple[float, float]:
    """The wall and CPU time of the task `run` runs, once imports and the agent are ready (median of 3)."""
    runs = [
        subprocess.run(
            [python, "-c", _TASK, templates, "extract_contact", json.dumps({"text": _TEXT})],
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        for _ in range(3)
    ]
    return statistics.median(float(wall) for wall, _ in runs), statistics.median(float(cpu) for _, cpu in runs)


def _heavy_imports(python: str, argv: list[str], env: dict[str, str], cwd: str) -> list[str]:
    done = subprocess.run([python, "-c", _HEAVY_PROBE, *argv], env=env, cwd=cwd, capture_output=True, text=True)
    return list(json.loads(done.stdout.splitlines()[-1]))  # the last line: after `--help`'s text on `sys.stdout`


def main() -> None:
    """Time every command and both baselines, interleaved; print the medians, the ratios and the heavy imports."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=7, help="rounds (the median of each command is reported)")
    parser.add_argument("--templates", help="template folder (default: the shipped templates)")
    parser.add_argument("--only", nargs="+", metavar="COMMAND", help="measure only these commands (e.g. list run)")
    args = parser.parse_args()
    python = sys.executable
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as pycache:
        env = _environment(home, pycache)
        templates = (
            args.templates
            or subprocess.run(
                [python, "-c", "from atomtask import bundled_templates_path as p; print(p())"],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        )
        templates = str(Path(templates).resolve())
        measured = {name: argv for name, argv in commands(templates).items() if not args.only or name in args.only}
        runs = {name: [python, "-c", code] for name, code in _BASELINES.items()}
        runs |= {name: [python, "-c", _CLI, *argv] for name, argv in measured.items()}
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
        failed: dict[str, str] = {}
        for round_ in range(args.repeat + 1):  # round 0 warms the bytecode, the file cache and `check`'s cache
            for name, command in runs.items():
                if name in failed:
                    continue
                result = _measure(command, env, home)
                if isinstance(result, str):
                    failed[name] = result
                elif round_:
                    times[name].append(result)
        measured = {name: argv for name, argv in measured.items() if name not in failed}
        wall = {name: statistics.median(t[0] for t in times[name]) for name in runs if name not in failed}
        cpu = {name: statistics.median(t[1] for t in times[name]) for name in runs if name not in failed}
        task = _task_time(python, templates, env, home) if _TARGET_RUN in measured else None
        heavy = {name: _heavy_imports(python, argv, env, home) for name, argv in measured.items()}
    print(f"median of {args.repeat} interleaved runs, a fresh interpreter each (templates: {templates})")
    print(f"  {'':24} {'wall':>7} {'CPU':>7}")
    for name in wall:
        print(f"  {name:24} {wall[name]:6.3f}s {cpu[name]:6.3f}s")
    for name, why in failed.items():
        print(f"  {name:24} failed ({why})")
    if task is not None:
        print(f"  {'(the task in-process)':24} {task[0]:6.3f}s {task[1]:6.3f}s")
    print("ratio to the target's baseline, wall (CPU: steadier on a shared machine):")
    for name in measured:
        if name == _TARGET_RUN and task is not None:
            target, label = 1.2, "import pydantic_ai + the task"
            floor = (wall["import pydantic_ai"] + task[0], cpu["import pydantic_ai"] + task[1])
            ratios = (wall[name] / floor[0], cpu[name] / floor[1])
        else:
            target, label = 2.0, "import pydantic, yaml"
            ratios = (wall[name] / wall["import pydantic, yaml"], cpu[name] / cpu["import pydantic, yaml"])
        verdict = "met" if ratios[0] <= target else "not met"
        print(f"  {name:16} {ratios[0]:5.2f}x ({ratios[1]:5.2f}x) {label}: target {target}x {verdict}")
        if name not in (_TARGET_RUN, "help"):
            floor_ratios = (wall[name] / wall["+ one pydantic model"], cpu[name] / cpu["+ one pydantic model"])
            print(f"  {'':16} {floor_ratios[0]:5.2f}x ({floor_ratios[1]:5.2f}x) import pydantic, yaml + one model")
        if name == _TARGET_RUN:
            bare = (wall[name] / wall["pydantic-ai, one call"], cpu[name] / cpu["pydantic-ai, one call"])
            print(f"  {'':16} {bare[0]:5.2f}x ({bare[1]:5.2f}x) the same call in bare pydantic-ai")
    print("heavy modules imported:")
    for name, modules in heavy.items():
        print(f"  {name:16} {', '.join(modules) or 'none'}")


if __name__ == "__main__":
    main()
