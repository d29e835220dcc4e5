"""Start-up: `--help` and the commands that only read templates leave the heavy packages unimported.

What a command imports is what it costs to start (`benchmarks/startup.py` times it); these tests pin
the modules, not the time. Each runs the command in a fresh interpreter.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# Not needed to read, check, list or draw templates and workflows: a model call, durable runs, the other
# declaration languages, tracing, and the logging stack (imported only when a record is shown, `-v`).
HEAVY = (
    "pydantic_ai",
    "openai",
    "anthropic",
    "httpx",
    "dbos",
    "sqlalchemy",
    "jsonschema",
    "opentelemetry",
    "structlog",
    "rich",
    "asyncio",
)

# Runs each command in turn and prints, after each, its exit status and the heavy modules imported so far.
PROBE = f"""
import io, json, sys
from atomtask.cli import main
for argv in json.loads(sys.argv[1]):
    try:
        status = main(argv, stdout=io.StringIO(), stderr=io.StringIO())
    except SystemExit as exc:  # `--help`
        status = exc.code
    print(json.dumps([argv, status, sorted(m for m in {HEAVY!r} + ("pydantic", "yaml") if m in sys.modules)]))
"""

FOLDER = """\
name: Rating
fields:
  - {name: score, type: int, description: The score.}
---
name: rate
description: Rate a text.
params: {text: str}
instructions: "Rate {{text}}"
output_format: {type: json, schema: Rating}
---
name: rate_twice
description: Rate a text, then rate it again.
state:
  - {name: text, type: str}
  - {name: first, type: int, default: 0}
  - {name: second, type: int, default: 0}
steps:
  - id: first
    task: rate
    inputs: {text: "{{state.text}}"}
    outputs: {first: score}
  - id: second
    task: rate
    inputs: {text: "{{state.text}}"}
    outputs: {second: score}
"""


def imported_after(commands: list[list[str]], home: Path) -> list[tuple[list[str], int, list[str]]]:
    """Each command's argv, exit status and the modules of `HEAVY` (and pydantic, yaml) imported once it ran."""
    env = {"ATOMTASK_HOME": str(home), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(commands)], capture_output=True, text=True, env=env)
    assert 0 == done.returncode, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("[")]
    return [(argv, status, modules) for argv, status, modules in lines]


def test_help_imports_neither_pydantic_nor_the_heavy_packages(tmp_path: Path) -> None:
    """`atomtask --help` and `atomtask batch --help` build the parser only: not even pydantic is imported."""
    results = imported_after([["--help"], ["batch", "--help"]], tmp_path)
    assert [(["--help"], 0, []), (["batch", "--help"], 0, [])] == results


def test_reading_templates_imports_none_of_the_heavy_packages(tmp_path: Path) -> None:
    """`list`, `check` and `workflow list|show|graph` on YAML templates import pydantic and yaml, nothing heavy."""
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "rating.yaml").write_text(FOLDER, encoding="utf-8")
    where = ["--templates", str(folder)]
    commands = [
        ["list", *where],
        ["check", str(folder)],
        ["workflow", "list", *where],
        ["workflow", "show", "rate_twice", *where],
        ["workflow", "graph", "rate_twice", *where],
    ]
    results = imported_after(commands, tmp_path)
    assert [(argv, 0, ["pydantic", "yaml"]) for argv in commands] == results


RUN_PROBE = """
import sys
from atomtask.cli import main
status = main(sys.argv[1:])
print("structlog imported:", "structlog" in sys.modules, file=sys.stderr)
sys.exit(status)
"""


def test_log_records_still_appear_with_v_when_structlog_was_never_imported(tmp_path: Path) -> None:
    """In a fresh process `-v` loads the logging stack and shows the task's records; without it, neither."""
    (tmp_path / "rating.yaml").write_text(FOLDER, encoding="utf-8")
    env = {"ATOMTASK_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    argv = ["run", "rate", "-i", "text=fine", "--templates", str(tmp_path)]
    stderr = {}
    for flags in ([], ["-v"]):
        done = subprocess.run([sys.executable, "-c", RUN_PROBE, *argv, *flags], capture_output=True, text=True, env=env)
        assert 0 == done.returncode, done.stderr
        stderr[bool(flags)] = done.stderr
    assert '"event": "task_started"' not in stderr[False]
    assert "structlog imported: False" in stderr[False]
    assert '"event": "task_started"' in stderr[True]
    assert "structlog imported: True" in stderr[True]
