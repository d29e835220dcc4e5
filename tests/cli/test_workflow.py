"""`atomtask workflow run|show|graph|list`, called as `main(argv)`: state JSON, status lines, exit status."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from atomtask.cli._main import main
from atomtask.testing import FakeProviderServer, Reply

ATOMTASK_CLI = str(Path(sys.executable).parent / "atomtask")

FOLDER = """\
name: Rating
fields:
  - {name: score, type: int, description: The score.}
---
name: say
params: {word: str}
instructions: "Repeat {{word}}"
---
name: rate
params: {text: str}
instructions: "Rate {{text}}"
output_format: {type: json, schema: Rating}
---
name: echo_twice
description: Say a word, then say it again.
state:
  fields:
    - {name: word, type: str}
    - {name: said, type: str}
    - {name: again, type: str}
steps:
  - id: say
    task: say
    inputs: {word: "{{state.word}}"}
    output: said
  - id: again
    task: say
    inputs: {word: "{{state.said}}"}
    output: again
---
name: rate_it
state:
  - {name: text, type: str}
  - {name: score, type: int, default: 0}
steps:
  - id: rate
    task: rate
    inputs: {text: "{{state.text}}"}
    outputs: {score: score}
"""

SHOW_AND_LIST = """
import io, sys
from atomtask.cli import main
for argv in (["workflow", "show", "echo_twice"], ["workflow", "graph", "echo_twice"], ["workflow", "list"]):
    assert 0 == main([*argv, "--templates", sys.argv[1]], stdout=io.StringIO(), stderr=io.StringIO())
print(sorted(m for m in ("pydantic_ai", "openai", "anthropic") if m in sys.modules))
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
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


def test_run_on_the_default_model_prints_the_state_and_a_line_per_step(folder: str) -> None:
    """End to end on `atomtask:synthetic`: the final state on stdout, one status line per step, then a final line."""
    code, out, err = run(["workflow", "run", "echo_twice", "-i", "word=hi", "--templates", folder])
    assert 0 == code, err
    state = json.loads(out)
    assert (["word", "said", "again"], "hi") == (list(state), state["word"])
    assert isinstance(state["said"], str) and isinstance(state["again"], str)
    lines = [line for line in err.splitlines() if line.startswith("atomtask: echo_twice")]
    assert 3 == len(lines), err
    assert lines[0].startswith("atomtask: echo_twice say #1: COMPLETE (atomtask:synthetic, 1 request, ")
    assert lines[1].startswith("atomtask: echo_twice again #1: COMPLETE (atomtask:synthetic, 1 request, ")
    assert lines[2].startswith("atomtask: echo_twice COMPLETE (2 step visits, 2 requests, ")
    assert "no model configured" in err  # the default-model notice, once


def test_quiet_leaves_only_the_state(folder: str) -> None:
    """`-q` prints no status lines and no notice; the state is still on stdout."""
    code, out, err = run(["workflow", "run", "echo_twice", "-i", "word=hi", "-q", "--templates", folder])
    assert (0, "", "hi") == (code, err, json.loads(out)["word"])


def test_output_file_and_whole_result(folder: str, tmp_path: Path) -> None:
    """`--result --output FILE` writes the whole WorkflowResult (status, every step visit) to the file."""
    target = tmp_path / "result.json"
    argv = ["workflow", "run", "rate_it", "-i", "text=ok", "--result", "-o", str(target), "--templates", folder]
    code, out, _ = run(argv)
    document = json.loads(target.read_text(encoding="utf-8"))
    assert (0, "") == (code, out)
    assert ("COMPLETE", ["rate"]) == (document["status"], [visit["step"] for visit in document["steps"]])
    assert isinstance(document["state"]["score"], int)


def test_an_unknown_workflow_exits_2_with_a_suggestion(folder: str) -> None:
    """A misspelt name could not start a run: exit 2, "did you mean", nothing on stdout."""
    code, out, err = run(["workflow", "run", "echo_twcie", "-i", "word=hi", "--templates", folder])
    assert (2, "") == (code, out)
    assert "No workflow named 'echo_twcie'. Did you mean 'echo_twice'?" in err


def test_bad_inputs_exit_2_naming_the_run_inputs(folder: str) -> None:
    """An unknown or missing run input is a usage mistake: exit 2, no status lines."""
    code, out, err = run(["workflow", "run", "echo_twice", "-i", "wrd=hi", "--templates", folder])
    assert (2, "") == (code, out)
    assert "atomtask: error: input_validation_failure: " in err
    assert "Did you mean 'word'?" in err
    assert "COMPLETE" not in err and "FAILED" not in err


def test_a_missing_api_key_exits_2_before_any_request(folder: str) -> None:
    """A step whose model cannot be used (no API key) never reached a model: exit 2, as `run` does."""
    argv = ["workflow", "run", "rate_it", "-i", "text=x", "--model", "openai-chat:gpt-4o", "--templates", folder]
    code, _, err = run(argv)
    assert 2 == code, err
    assert "OPENAI_API_KEY" in err


@pytest.mark.usefixtures("allow_model_requests")
def test_a_failed_run_exits_1_and_still_prints_the_state(folder: str, server: FakeProviderServer) -> None:
    """A step whose answer never validates fails the run (exit 1); the state as it was is printed."""
    server.script(*[Reply.tool_call(args={"score": "high"})] * 5)
    model = ["--model", "openai-chat:llama3.2", "--base-url", server.openai_base_url]
    code, out, err = run(["workflow", "run", "rate_it", "-i", "text=x", *model, "--templates", folder])
    assert 1 == code, err
    assert {"text": "x", "score": 0} == json.loads(out)
    lines = err.splitlines()
    failed = "step_failed: Step 'rate': task 'rate' failed (output_validation_failure"
    # The step's line gives the error; the run's last lines say where it stopped and how to go on, once.
    assert [line for line in lines if failed in line] == [line for line in lines if "rate #1: FAILED (" in line]
    assert 1 == len([line for line in lines if failed in line]), err
    assert "atomtask: error:" not in err
    assert lines[-2].startswith("atomtask: rate_it FAILED at step 'rate' ("), err
    assert lines[-1].startswith("atomtask: resume with `atomtask workflow resume "), err


@pytest.mark.usefixtures("allow_model_requests")
def test_a_quiet_failed_run_prints_the_error_once(folder: str, server: FakeProviderServer) -> None:
    """With `-q` no step lines are printed, so the run's error line is the one place the failure is told."""
    server.script(*[Reply.tool_call(args={"score": "high"})] * 5)
    model = ["--model", "openai-chat:llama3.2", "--base-url", server.openai_base_url]
    code, _, err = run(["-q", "workflow", "run", "rate_it", "-i", "text=x", *model, "--templates", folder])
    assert 1 == code, err
    told = "atomtask: error: step_failed: Step 'rate': task 'rate' failed (output_validation_failure"
    assert [True] == [line.startswith(told) for line in err.splitlines()], err


@pytest.mark.usefixtures("allow_model_requests")
def test_model_settings_reach_the_provider_request(folder: str, server: FakeProviderServer) -> None:
    """`--temperature 0 --setting seed=7` on a workflow run are in the body of each step's request."""
    server.script(Reply.tool_call(args={"score": 4}))
    model = ["--model", "openai-chat:llama3.2", "--base-url", server.openai_base_url]
    settings = ["--temperature", "0", "--setting", "seed=7"]
    code, out, err = run(["workflow", "run", "rate_it", "-i", "text=x", *model, *settings, "--templates", folder])
    assert 0 == code, err
    assert 4 == json.loads(out)["score"]
    body = server.requests[0].body
    assert (0, 7) == (body["temperature"], body["seed"])


def test_run_limits_stop_the_run(folder: str) -> None:
    """`--max-requests 1` holds across the steps: the second step is not called and the run fails (exit 1)."""
    argv = ["workflow", "run", "echo_twice", "-i", "word=hi", "--max-requests", "1", "--templates", folder]
    code, out, err = run(argv)
    assert 1 == code
    assert "usage_limit_exceeded" in err
    assert "hi" == json.loads(out)["word"]


def test_show_prints_the_steps_and_their_data_flow(folder: str) -> None:
    """`show` lists the state (run inputs marked) and, per step, what it reads and writes."""
    code, out, _ = run(["workflow", "show", "echo_twice", "--templates", folder])
    assert 0 == code
    assert "  word: str  (run input, required)" in out
    again = "  2. again: task say\n     reads: state.said\n     writes: again <- (the whole answer)\n     next: end\n"
    assert again in out


def test_graph_prints_a_mermaid_flowchart(folder: str) -> None:
    """`graph` prints a Mermaid flowchart from start to end."""
    code, out, _ = run(["workflow", "graph", "echo_twice", "--templates", folder])
    assert 0 == code
    assert out.startswith("flowchart TD\n    start((start)) --> s_say\n")
    assert "    s_again --> stop((end))\n" in out


def test_list_prints_each_workflow_with_its_description(folder: str) -> None:
    """`list` prints `name<TAB>description`, sorted."""
    assert (0, "echo_twice\tSay a word, then say it again.\nrate_it\n", "") == run(
        ["workflow", "list", "--templates", folder]
    )


def test_show_of_an_unknown_workflow_exits_2(folder: str) -> None:
    """`show` of a misspelt name is a usage error with a suggestion."""
    code, _, err = run(["workflow", "graph", "rate_iy", "--templates", folder])
    assert 2 == code
    assert "Did you mean 'rate_it'?" in err


def test_a_workflow_file_with_a_typo_exits_2_at_its_line_and_column(folder: str) -> None:
    """A mistake in a workflow file stops every `workflow` command with file:line:col of the path."""
    path = Path(folder) / "flows.yaml"
    text = FOLDER.replace("output: again\n", "output: again\n    when: \"state.sadi != ''\"\n")
    path.write_text(text, encoding="utf-8")
    lines = text.splitlines()
    line = next(i for i, t in enumerate(lines, start=1) if "state.sadi" in t)
    column = lines[line - 1].index("state.sadi") + 1
    code, _, err = run(["workflow", "list", "--templates", folder])
    assert 2 == code
    assert f"atomtask: error: {path}:{line}:{column}: Unknown path `state.sadi`" in err
    assert "Did you mean `state.said`?" in err


def test_show_graph_and_list_do_not_import_pydantic_ai(folder: str) -> None:
    """Reading and drawing workflows stays light: pydantic-ai and provider SDKs are never imported."""
    done = subprocess.run([sys.executable, "-c", SHOW_AND_LIST, folder], capture_output=True, text=True, check=True)
    assert "[]" == done.stdout.strip()


def test_a_run_prints_its_run_id_and_runs_and_show_read_it_back(folder: str, tmp_path: Path) -> None:
    """`run --run-id` is durable: `runs` lists it COMPLETE at its last step, `show RUN_ID` gives each step's state."""
    db = ["--db", str(tmp_path / "runs.sqlite")]
    code, out, err = run(
        ["workflow", "run", "echo_twice", "-i", "word=hi", "--run-id", "cli-1", *db, "--templates", folder]
    )
    assert 0 == code, err
    assert "atomtask: run cli-1 of echo_twice\n" in err
    assert "resume" not in err  # a COMPLETE run needs no resume hint
    code, listed, err = run(["workflow", "runs", *db, "--templates", folder])
    assert 0 == code, err
    assert ["RUN", "cli-1"] == [line.split()[0] for line in listed.splitlines()]
    assert ["cli-1", "echo_twice", "-", "COMPLETE", "again", "-"] == listed.splitlines()[1].split()[:6]
    code, shown, err = run(["workflow", "show", "cli-1", "--json", *db, "--templates", folder])
    assert 0 == code, err
    document = json.loads(shown)
    assert ["say", "again"] == [step["step"] for step in document["steps"]]
    assert ["word", "said"] == list(document["steps"][0]["state"])
    assert json.loads(out) == document["steps"][1]["state"]


def test_resuming_an_unknown_run_exits_2_naming_the_fix(folder: str, tmp_path: Path) -> None:
    """`resume` of a run id not in the store: exit 2, and the message says how to list the runs."""
    code, _, err = run(["workflow", "resume", "nope", "--db", str(tmp_path / "runs.sqlite"), "--templates", folder])
    assert 2 == code
    assert "No run 'nope'" in err and "atomtask workflow runs" in err


def test_resuming_a_finished_run_exits_2(folder: str, tmp_path: Path) -> None:
    """`resume` of a COMPLETE run: exit 2, nothing to resume."""
    db = ["--db", str(tmp_path / "runs.sqlite")]
    assert (
        0 == run(["workflow", "run", "echo_twice", "-i", "word=hi", "--run-id", "done", *db, "--templates", folder])[0]
    )
    code, _, err = run(["workflow", "resume", "done", *db, "--templates", folder])
    assert 2 == code
    assert "has ended (COMPLETE)" in err


def test_show_of_a_mistyped_run_id_suggests_the_close_run(folder: str, tmp_path: Path) -> None:
    """`show` of a name neither a workflow nor a run: exit 2, saying so, with the close run id."""
    db = ["--db", str(tmp_path / "runs.sqlite")]
    assert (
        0
        == run(["workflow", "run", "echo_twice", "-i", "word=hi", "--run-id", "cli-42", *db, "--templates", folder])[0]
    )
    code, _, err = run(["workflow", "show", "cli-43", *db, "--templates", folder])
    assert 2 == code
    assert "'cli-43' is neither a workflow nor a run in" in err
    assert "Did you mean run 'cli-42'?" in err


def test_a_used_run_id_says_complete_and_no_resume(folder: str, tmp_path: Path) -> None:
    """`run --run-id` of a COMPLETE run: exit 2, atomtask's status (not DBOS's), no resume suggested."""
    args = ["workflow", "run", "echo_twice", "-i", "word=hi", "--run-id", "twice", "--db", str(tmp_path / "r.sqlite")]
    assert 0 == run([*args, "--templates", folder])[0]
    code, _, err = run([*args, "--templates", folder])
    assert 2 == code
    error = err.splitlines()[-1]
    assert "already exists (COMPLETE)" in error and "resume" not in error


def test_a_store_that_cannot_be_opened_exits_2_in_one_line_without_the_password(folder: str, tmp_path: Path) -> None:
    """A PostgreSQL store nobody serves, a missing folder: one line naming the store (password masked), exit 2."""
    url = "postgresql://u:hunter2@127.0.0.1:1/db"
    argv = [ATOMTASK_CLI, "workflow", "run", "echo_twice", "-i", "word=x", "--db", url, "-q", "--templates", folder]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert 2 == done.returncode
    assert 1 == len(done.stderr.strip().splitlines()), done.stderr
    assert "The run store postgresql://u:***@127.0.0.1:1/db cannot be opened" in done.stderr
    assert "hunter2" not in done.stderr
    code, _, err = run(["workflow", "runs", "--db", str(tmp_path / "gone" / "r.sqlite"), "--templates", folder])
    assert 2 == code
    assert f"its folder {tmp_path / 'gone'} does not exist" in err
