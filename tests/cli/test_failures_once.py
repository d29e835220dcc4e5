"""Each failure is reported once, in the command's words: log records (JSON off a terminal) only with `-v`.

The first tests run the command as a real process with stderr on a pipe (not a terminal), as a user's
script or CI sees it; the rest call `main()` with captured stderr, also not a terminal.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from atomtask.cli._main import main
from atomtask.testing import FakeProviderServer, Reply

COMMAND = [sys.executable, "-m", "atomtask.cli"]
MODEL = ["--model", "openai-chat:gpt-4o-mini"]
UNAUTHORIZED = Reply.error(401, "Incorrect API key provided")


@pytest.fixture
def refusing() -> Iterator[FakeProviderServer]:
    """A provider that refuses every request (401: not retried)."""
    with FakeProviderServer() as server:
        server.script(*[UNAUTHORIZED] * 20)
        yield server


def _process(argv: list[str], server: FakeProviderServer) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-not-a-real-key", "PYDANTIC_AI_NO_BANNER": "1"}
    return subprocess.run(
        [*COMMAND, *argv, *MODEL, "--base-url", server.openai_base_url],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _records(err: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in err.splitlines() if line.startswith("{")]


def _errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("atomtask: error:")]


def test_a_failed_run_says_so_once_and_prints_no_record(refusing: FakeProviderServer, templates_dir: Path) -> None:
    """A failed `run` off a terminal: its status line and one error line; no JSON log record before them."""
    done = _process(["run", "extract_contact", "-i", "text=Ada", "--templates", str(templates_dir)], refusing)
    lines = done.stderr.splitlines()
    assert (1, [], "") == (done.returncode, _records(done.stderr), done.stdout)
    assert 2 == len(lines), done.stderr
    assert lines[0].startswith("atomtask: extract_contact FAILED on openai-chat:gpt-4o-mini (")
    assert lines[1].startswith("atomtask: error: provider_error: ")


def test_quiet_prints_the_error_line_alone(refusing: FakeProviderServer, templates_dir: Path) -> None:
    """With `-q` stderr is exactly the one error line."""
    done = _process(["run", "extract_contact", "-i", "text=Ada", "-q", "--templates", str(templates_dir)], refusing)
    assert 1 == done.returncode
    assert [done.stderr.rstrip("\n")] == _errors(done.stderr)
    assert 1 == len(done.stderr.splitlines())


def test_v_shows_the_log_records(refusing: FakeProviderServer, templates_dir: Path) -> None:
    """With `-v` the records are there, as JSON off a terminal, and the error line still once."""
    done = _process(["run", "extract_contact", "-i", "text=Ada", "-v", "--templates", str(templates_dir)], refusing)
    assert 1 == done.returncode
    assert {"task_started", "task_failed"} <= {str(r["event"]) for r in _records(done.stderr)}
    assert 1 == len(_errors(done.stderr))


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.usefixtures("allow_model_requests")
def test_a_failed_workflow_step_prints_no_step_failed_record(
    refusing: FakeProviderServer, templates_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A workflow whose first step fails: no `step_failed` or `task_failed` record, one error line."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    argv = ["workflow", "run", "article_writer", "-i", "topic=tides", "--no-durable", *MODEL]
    code, _, err = run([*argv, "--base-url", refusing.openai_base_url, "--templates", str(templates_dir)])
    assert (1, []) == (code, _records(err))
    # The failed step's status line tells the error; the run's own error line does not repeat it.
    assert 1 == sum("Incorrect API key provided" in line for line in err.splitlines()), err
    assert [] == _errors(err), err
    assert "task_failed" not in err and '"event"' not in err


@pytest.mark.usefixtures("allow_model_requests")
def test_a_batch_prints_no_record_per_failed_item(
    refusing: FakeProviderServer, templates_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed items are counted in the summary and written in the results, not logged one by one on stderr."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("ATOMTASK_HOME", str(tmp_path / "home"))
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"id": n, "text": f"person {n}"}) + "\n" for n in range(3)))
    argv = ["batch", "extract_contact", "--input", str(items), *MODEL, "--base-url", refusing.openai_base_url]
    code, out, err = run([*argv, "--templates", str(templates_dir)])
    assert (1, []) == (code, _records(err))
    assert 3 == sum(1 for line in out.splitlines() if json.loads(line)["status"] == "FAILED")
    assert "task_failed" not in err
    assert any("3 failed (provider_error 3)" in line for line in err.splitlines()), err


@pytest.mark.usefixtures("allow_model_requests")
def test_a_failed_memory_query_prints_no_record(
    refusing: FakeProviderServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`memory query` that fails: the error line once, no `memory_query_failed` or `task_failed` record."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    (tmp_path / "a.txt").write_text("Refunds are paid within 14 days.")
    db = str(tmp_path / "m.sqlite3")
    assert 0 == run(["memory", "add", str(tmp_path / "a.txt"), "--db", db])[0]
    code, _, err = run(["memory", "query", "refunds", "--db", db, *MODEL, "--base-url", refusing.openai_base_url])
    assert (1, [], 1) == (code, _records(err), len(_errors(err)))
    assert [] == [line for line in err.splitlines() if "memory_" in line or "task_failed" in line]


def test_a_single_brace_is_a_warning_in_the_command_s_words(tmp_path: Path) -> None:
    """A `{param}` sent as written: one `atomtask: warning:` line naming the place and the fix, no record."""
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "t.yaml").write_text(
        "name: greet\nparams:\n  text: {type: str}\ninstructions: 'Summarize {text}: {{text}}'\n", encoding="utf-8"
    )
    code, _, err = run(["run", "greet", "-i", "text=hi", "--model", "test", "--templates", str(folder)])
    assert (0, []) == (code, _records(err))
    [warning] = [line for line in err.splitlines() if line.startswith("atomtask: warning:")]
    assert warning == (
        f"atomtask: warning: template 'greet' ({folder / 't.yaml'}:4:26): '{{text}}' in its instructions was sent "
        "to the model as written; write `{{text}}` to insert the parameter (`atomtask check` lists them)"
    )
    assert "" == run(["run", "greet", "-i", "text=hi", "--model", "test", "-q", "--templates", str(folder)])[2]


WORKFLOW = """\
name: greet
params: {text: str}
instructions: 'Greet {text}: {{text}}'
---
name: greet_twice
state:
  - {name: text, type: str}
steps:
  - {id: first, task: greet, inputs: {text: "{{state.text}}"}}
  - {id: again, task: greet, inputs: {text: "{{state.text}}"}}
"""


def test_a_workflow_run_says_its_steps_warnings_once_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`workflow run` prints what `run` prints: the template's single brace once, each step's own warning once."""
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "greet.yaml").write_text(WORKFLOW, encoding="utf-8")
    monkeypatch.setenv("ATOMTASK_LARGE_PROMPT", "10")
    argv = ["workflow", "run", "greet_twice", "-i", "text=hi", "--model", "test", "--no-durable"]
    code, _, err = run([*argv, "--templates", str(folder)])
    warnings = [line for line in err.splitlines() if line.startswith("atomtask: warning:")]
    assert (0, []) == (code, _records(err))
    assert 3 == len(warnings), err
    assert warnings[0].startswith("atomtask: warning: template 'greet' (")
    assert "'{text}' in its instructions was sent to the model as written" in warnings[0]
    assert [w.split(": ", 3)[2] for w in warnings[1:]] == ["step 'first'", "step 'again'"]
    assert all("characters long" in w for w in warnings[1:])
    assert [] == [line for line in run([*argv, "-q", "--templates", str(folder)])[2].splitlines() if line]
