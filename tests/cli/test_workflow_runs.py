"""`atomtask workflow` durable runs from the command line: the endpoint kept for resume, inputs checked before a
run id exists, durability on and off, `show RUN_ID` as text, the resume hint only where resuming helps."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from atomtask.cli._main import main
from atomtask.testing import FakeProviderServer, Reply

from tests.runs.run_helpers import child_env

ATOMTASK = str(Path(sys.executable).parent / "atomtask")

FOLDER = """\
name: say
params: {word: str}
instructions: "Repeat {{word}}"
---
name: echo_twice
state:
  - {name: word, type: str}
  - {name: said, type: str}
  - {name: again, type: str}
steps:
  - {id: say, task: say, inputs: {word: "{{state.word}}"}, output: said}
  - {id: again, task: say, inputs: {word: "{{state.said}}"}, output: again}
---
name: refuse
state:
  - {name: word, type: str}
steps:
  - {id: stop, fail: {reason: refused, message: "no {{state.word}}"}}
"""


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def folder(tmp_path: Path) -> str:
    (tmp_path / "flows.yaml").write_text(FOLDER, encoding="utf-8")
    return str(tmp_path)


@pytest.fixture
def db(tmp_path: Path) -> list[str]:
    return ["--db", str(tmp_path / "runs.sqlite")]


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeProviderServer, FakeProviderServer]]:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with FakeProviderServer() as first, FakeProviderServer() as second:
        yield first, second


def _listed(db: list[str], folder: str) -> list[str]:
    code, listed, err = run(["workflow", "runs", *db, "--templates", folder])
    assert 0 == code, err
    return [line.split()[0] for line in listed.splitlines()[1:]]


@pytest.mark.usefixtures("allow_model_requests")
def test_a_resume_sends_the_remaining_steps_to_the_endpoint_the_run_was_started_with(
    folder: str, db: list[str], servers: tuple[FakeProviderServer, FakeProviderServer]
) -> None:
    """Started with `--base-url`, a FAILED run resumed without one asks the same server, not the public endpoint."""
    server, _ = servers
    server.script(Reply.text("one"))  # the second step gets the server's "no scripted reply left" 500
    start = ["workflow", "run", "echo_twice", "-i", "word=w", "--run-id", "e1", "--model", "openai-chat:fake"]
    code, _, started = run([*start, "--base-url", server.openai_base_url, *db, "--templates", folder])
    assert 1 == code, started
    server.script(Reply.text("two"))
    code, out, err = run(["workflow", "resume", "e1", *db, "--templates", folder])
    assert 0 == code, err
    assert "two" == json.loads(out)["again"]
    assert 0 == server.pending
    assert "was started with" not in err
    assert "atomtask: resume with `atomtask workflow resume e1` to go on from step 'again'" in started
    code, shown, err = run(["workflow", "show", "e1", "--json", *db, "--templates", folder])
    assert (0, server.openai_base_url) == (code, json.loads(shown)["base_url"])


@pytest.mark.usefixtures("allow_model_requests")
def test_a_resume_with_another_endpoint_says_so_and_uses_it(
    folder: str, db: list[str], servers: tuple[FakeProviderServer, FakeProviderServer]
) -> None:
    """`resume --base-url` other than the run's: one line names both, and the new endpoint gets the steps."""
    first, second = servers
    first.script(Reply.text("one"))
    start = ["workflow", "run", "echo_twice", "-i", "word=w", "--run-id", "e2", "--model", "openai-chat:fake"]
    assert 1 == run([*start, "--base-url", first.openai_base_url, *db, "--templates", folder])[0]
    second.script(Reply.text("two"))
    resume = ["workflow", "resume", "e2", "--base-url", second.openai_base_url, "--model", "openai-chat:other"]
    code, _, err = run([*resume, *db, "--templates", folder])
    assert 0 == code, err
    assert (
        f"atomtask: run e2 was started with --base-url {first.openai_base_url}; its remaining steps go to "
        f"--base-url {second.openai_base_url}"
    ) in err
    assert "atomtask: run e2 was started with --model openai-chat:fake; its remaining steps use --model " in err
    assert (0, 1) == (second.pending, len(second.requests))


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (["-i", "wrod=hi"], "unknown input 'wrod'. Did you mean 'word'?"),
        ([], "missing required input 'word'"),
        (["-i", "word:=[1, 2]"], "`state.word` cannot be [1, 2]"),
    ],
)
def test_inputs_that_cannot_start_a_run_leave_no_run_behind(
    folder: str, db: list[str], given: list[str], said: str
) -> None:
    """A misspelt, missing or mistyped run input: exit 2 naming it, no run id printed, nothing in `workflow runs`."""
    code, out, err = run(["workflow", "run", "echo_twice", *given, "--durable", *db, "--templates", folder])
    assert 2 == code
    assert "" == out
    assert "atomtask: error: input_validation_failure: Invalid inputs for workflow 'echo_twice'" in err
    assert said in err and "Run inputs: word." in err
    assert "atomtask: run " not in err and "resume" not in err
    assert [] == _listed(db, folder)


def test_asking_for_a_durable_run_without_dbos_fails_before_a_run_id(
    folder: str, db: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--run-id` without the `durable` extra: exit 2 saying how to install it; no run id printed."""
    monkeypatch.setitem(sys.modules, "dbos", None)  # what `import dbos` meets without the extra
    code, _, err = run(["workflow", "run", "echo_twice", "-i", "word=w", "--run-id", "x", "--templates", folder])
    assert 2 == code
    assert "pip install 'atomtask[durable]'" in err
    assert "atomtask: run x" not in err


def test_no_durable_and_atomtask_durable_0_make_a_plain_run(
    folder: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--no-durable` and `ATOMTASK_DURABLE=0`: no run id, nothing stored; `--durable` stores the run."""
    monkeypatch.setenv("ATOMTASK_HOME", str(tmp_path / "home"))
    argv = ["workflow", "run", "echo_twice", "-i", "word=w", "--templates", folder]
    code, _, err = run([*argv, "--no-durable"])
    assert (0, False) == (code, "atomtask: run " in err), err
    monkeypatch.setenv("ATOMTASK_DURABLE", "0")
    code, _, err = run(argv)
    assert (0, False) == (code, "atomtask: run " in err), err
    assert not (tmp_path / "home" / "runs.sqlite").exists()
    code, _, err = run([*argv, "--durable"])
    assert (0, True) == (code, "atomtask: run " in err), err
    assert 1 == len(_listed([], folder))


def test_no_durable_with_a_run_id_or_an_unknown_setting_is_a_usage_error(
    folder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--no-durable --run-id` contradict each other; `ATOMTASK_DURABLE=maybe` is neither on nor off: exit 2."""
    argv = ["workflow", "run", "echo_twice", "-i", "word=w", "--templates", folder]
    code, _, err = run([*argv, "--no-durable", "--run-id", "r"])
    assert 2 == code
    assert "`--no-durable` and `--run-id` contradict each other" in err
    monkeypatch.setenv("ATOMTASK_DURABLE", "maybe")
    code, _, err = run(argv)
    assert 2 == code
    assert "ATOMTASK_DURABLE='maybe' is neither on nor off" in err


def test_a_run_a_fail_step_ended_prints_no_resume_hint(folder: str, db: list[str]) -> None:
    """A durable run ended on purpose by `fail:`: exit 1, the failure, and no resume hint (it would fail again)."""
    code, _, err = run(["workflow", "run", "refuse", "-i", "word=w", "--run-id", "f1", *db, "--templates", folder])
    assert 1 == code
    assert "atomtask: run f1 of refuse" in err
    assert "failed_by_step" in err
    assert "resume" not in err
    code, shown, err = run(["workflow", "show", "f1", *db, "--templates", folder])
    assert 0 == code, err
    assert "  failure: failed_by_step: " in shown
    assert "workflow resume" not in shown


def test_show_of_a_run_id_is_readable_text_and_json_with_json(folder: str, db: list[str]) -> None:
    """`show RUN_ID`: status, workflow, each step with its status, the state after the last step; `--json`: JSON."""
    assert 0 == run(["workflow", "run", "echo_twice", "-i", "word=hi", "--run-id", "s1", *db, "--templates", folder])[0]
    code, shown, err = run(["workflow", "show", "s1", *db, "--templates", folder])
    assert 0 == code, err
    lines = shown.splitlines()
    assert "run s1: workflow echo_twice" == lines[0]
    assert "  status: COMPLETE" == lines[1]
    assert ["say #1: COMPLETE", "again #1: COMPLETE"] == [
        line.strip().split(" (")[0] for line in lines if line.startswith("  ") and "#1" in line
    ]
    assert "state after 'again':" in lines
    assert '  word: "hi"' in lines
    assert len(lines) < 30
    code, shown, err = run(["workflow", "show", "s1", "--json", *db, "--templates", folder])
    assert 0 == code, err
    assert ["say", "again"] == [step["step"] for step in json.loads(shown)["steps"]]


@pytest.mark.slow
@pytest.mark.usefixtures("allow_model_requests")
def test_ctrl_c_in_a_durable_run_names_the_run_to_resume_and_exits_130(
    folder: str, tmp_path: Path, servers: tuple[FakeProviderServer, FakeProviderServer]
) -> None:
    """SIGINT during a step of `workflow run`: exit 130 and "interrupted: resume with ..."; the resume finishes it."""
    server, _ = servers
    env = child_env(tmp_path)
    server.script(Reply.text("one"), Reply.delay(600, Reply.text("never sent")))
    where = ["--base-url", server.openai_base_url, "--db", str(tmp_path / "runs.sqlite"), "--templates", folder]
    argv = [ATOMTASK, "workflow", "run", "echo_twice", "-i", "word=w", "--run-id", "c1", "--model", "openai-chat:x"]
    running = subprocess.Popen([*argv, *where], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while len(server.requests) < 2 and running.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    running.send_signal(signal.SIGINT)  # in the middle of step `again`: its answer is still delayed
    _, stderr = running.communicate(timeout=60)
    assert 130 == running.returncode, stderr
    assert "atomtask: interrupted: resume with `atomtask workflow resume c1`" == stderr.strip().splitlines()[-1]
    server.script(Reply.text("two"))
    resumed = subprocess.run(
        [ATOMTASK, "workflow", "resume", "c1", *where[2:]], env=env, capture_output=True, text=True
    )
    assert 0 == resumed.returncode, resumed.stderr
    assert "two" == json.loads(resumed.stdout)["again"]


def test_a_run_id_with_a_tilde_is_refused_before_its_line_and_show_of_one_names_its_run(
    folder: str, db: list[str]
) -> None:
    """`--run-id q~2`: exit 2 before any run line, nothing stored; `show`/`resume q~2` say it is segment 2 of `q`."""
    argv = ["workflow", "run", "echo_twice", "-i", "word=w", *db, "--templates", folder]
    code, _, err = run([*argv, "--run-id", "q~2"])
    assert 2 == code
    assert "atomtask: run q~2" not in err
    assert "Run id 'q~2' cannot be used: `~` separates a run from its later segments" in err
    assert [] == _listed(db, folder)
    assert 0 == run([*argv, "--run-id", "q"])[0]
    for action in ("show", "resume"):
        code, _, err = run(["workflow", action, "q~2", *db, "--templates", folder])
        assert 2 == code, err
        assert "'q~2' names segment 2 of run 'q'" in err
        assert f"`atomtask workflow {action} q`" in err


def test_runs_lists_a_run_whose_row_cannot_be_read_as_corrupt_beside_the_others(folder: str, db: list[str]) -> None:
    """A status row DBOS cannot decode: `runs` exits 0 with that run CORRUPT, the other COMPLETE; `show` exits 2."""
    import contextlib
    import sqlite3

    for run_id in ("fine", "broken"):
        argv = ["workflow", "run", "echo_twice", "-i", "word=w", "--run-id", run_id, *db, "--templates", folder]
        assert 0 == run(argv)[0]
    from atomtask.runs import _store

    _store.shutdown()
    with contextlib.closing(sqlite3.connect(db[1], isolation_level=None)) as connection:
        connection.execute("UPDATE workflow_status SET authenticated_roles = 'not json' WHERE workflow_uuid = 'broken'")
    code, listed, err = run(["workflow", "runs", *db, "--templates", folder])
    assert 0 == code, err
    statuses = {line.split()[0]: line.split()[3] for line in listed.splitlines()[1:]}
    assert {"fine": "COMPLETE", "broken": "CORRUPT"} == statuses
    code, _, err = run(["workflow", "show", "broken", *db, "--templates", folder])
    assert 2 == code
    assert "The checkpoint of run 'broken' cannot be read (its status: JSONDecodeError" in err
