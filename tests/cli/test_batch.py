"""`atomtask batch` end to end over the fake provider: faults, kill -9, Ctrl-C, resume, CSV, stdin, order, budget.

The long ones run the command as a real process (`python -m atomtask.cli batch ...`) against a fake
provider server in this process, which answers each request by the item it names and logs every
request; the short ones call `main()` in this process.
"""

from __future__ import annotations

import io
import json
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from atomtask.cli._main import main
from atomtask.testing import Reply, ServerReply

from tests.batch_helpers import ItemServer, batch_command, lines, run_batch, write_items, write_templates

pytestmark = pytest.mark.usefixtures("allow_model_requests")

MODEL = ["--model", "openai-chat:gpt-4o-mini"]


def _faults(n: int, nth: int) -> ServerReply | None:
    """429 (with retry-after-ms) or 503 on a first request, malformed answers, and a provider that stays broken."""
    if n % 50 == 7 and nth == 1:
        return Reply.error(429, "Rate limit reached", {"retry-after-ms": "20"})
    if n % 50 == 13 and nth == 1:
        return Reply.error(503, "overloaded")
    if n % 50 == 29 and nth == 1:
        return Reply.tool_call(args='{"label": 3, "item": ')  # malformed once: repaired or re-asked
    if n % 100 == 21:
        return Reply.tool_call(args='{"label": "x", "item": ')  # malformed every time
    if n % 100 == 42:
        return Reply.error(500, "broken for good")
    return None


@pytest.fixture
def templates(tmp_path: Path) -> Path:
    return write_templates(tmp_path / "templates")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ATOMTASK_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[ItemServer]:
    with ItemServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
        yield server


def _recorded(home: Path) -> dict[str, str]:
    """The record's item ids and statuses (read while the batch may still be writing)."""
    path = home / "batches.sqlite3"
    if not path.exists():
        return {}
    try:
        with sqlite3.connect(path, timeout=5) as db:
            return dict(db.execute("SELECT item_id, status FROM items").fetchall())
    except sqlite3.OperationalError:  # the table is not there yet
        return {}


def _wait_for(home: Path, count: int, process: subprocess.Popen[str]) -> dict[str, str]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = _recorded(home)
        if len(found) >= count:
            return found
        assert process.poll() is None, process.communicate()
        time.sleep(0.02)
    raise AssertionError(f"fewer than {count} items recorded in 30 s")


@pytest.mark.slow
def test_two_thousand_items_with_faults_each_end_once(
    tmp_path: Path, templates: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """2,000 items through 429s, 5xx and malformed answers: one line each, COMPLETE or FAILED with a reason."""
    items = write_items(tmp_path / "items.jsonl", 2000)
    out = tmp_path / "results.jsonl"
    err = io.StringIO()
    with ItemServer(_faults) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
        args = ["batch", "tag", "--templates", str(templates), "--input", str(items), "-o", str(out)]
        status = main([*args, "--concurrency", "64", *MODEL], stderr=err)
    results = lines(out)
    assert 2000 == len(results)
    assert {f"i{n}" for n in range(2000)} == {r["id"] for r in results}
    statuses = Counter((r["status"], (r["error"] or {}).get("reason")) for r in results)
    assert {
        ("COMPLETE", None): 1960,
        ("FAILED", "output_validation_failure"): 20,
        ("FAILED", "provider_error"): 20,
    } == dict(statuses)
    by_id = {r["id"]: r for r in results}
    assert {"label": "label-7", "item": "item-7"} == by_id["i7"]["output"]  # answered after its 429
    assert 2 == by_id["i7"]["attempts"]
    assert "HTTP 500" in by_id["i42"]["error"]["message"] or "500" in by_id["i42"]["error"]["message"]
    assert 1 == status
    assert "1960 done, 40 failed (" in err.getvalue()
    assert "output_validation_failure 20" in err.getvalue()


@pytest.mark.slow
def test_kill_9_midway_then_rerun_asks_no_finished_item_again(tmp_path: Path, templates: Path) -> None:
    """After kill -9 a re-run asks the provider only for items not in the record; the results hold each once."""
    items = write_items(tmp_path / "items.jsonl", 300)
    out = tmp_path / "results.jsonl"
    home = tmp_path / "home"
    args = ["tag", "--templates", str(templates), "--input", str(items), "-o", str(out), "--concurrency", "8"]
    with ItemServer(delay=0.02) as server:
        process = subprocess.Popen(
            batch_command(*args), env=server.env(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        _wait_for(home, 60, process)
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=10)
        finished = _recorded(home)
        assert {r["id"] for r in lines(out)} <= set(finished)  # nothing written out before it was recorded
        asked_before = Counter(server.asked)
        again = run_batch(args, server.env(home))
    assert 0 == again.returncode, again.stderr
    asked_again = {f"i{n}" for n in server.asked if server.asked[n] > asked_before[n]}
    assert {f"i{n}" for n in range(300)} - set(finished) == asked_again
    results = lines(out)
    assert 300 == len(results)
    assert 300 == len({r["id"] for r in results})
    assert f"{len(finished)} from the record, not run again" in again.stderr


@pytest.mark.slow
def test_ctrl_c_keeps_finished_items_and_exits_130(tmp_path: Path, templates: Path) -> None:
    """SIGINT stops taking items; every finished item is in the record and the results; a re-run does the rest."""
    items = write_items(tmp_path / "items.jsonl", 400)
    out = tmp_path / "results.jsonl"
    home = tmp_path / "home"
    args = ["tag", "--templates", str(templates), "--input", str(items), "-o", str(out), "--concurrency", "8"]
    with ItemServer(delay=0.02) as server:
        process = subprocess.Popen(
            batch_command(*args), env=server.env(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        _wait_for(home, 40, process)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
        assert 130 == process.returncode, stderr
        finished = _recorded(home)
        written = lines(out)
        assert sorted(finished) == sorted(r["id"] for r in written)
        assert len(finished) < 400
        assert "stopped early (interrupted (Ctrl-C))" in stderr
        asked_before = Counter(server.asked)
        again = run_batch(args, server.env(home))
    assert 0 == again.returncode, again.stderr
    assert set() == {f"i{n}" for n in server.asked if server.asked[n] > asked_before[n]} & set(finished)
    assert 400 == len({r["id"] for r in lines(out)}) == len(lines(out))


def test_retry_failed_runs_only_the_failed_items(
    tmp_path: Path, templates: Path, home: Path, served: ItemServer
) -> None:
    """A re-run skips recorded failures; `--retry-failed` asks again for those only."""
    items = write_items(tmp_path / "items.jsonl", 10)
    out = tmp_path / "results.jsonl"
    args = ["batch", "tag", "--templates", str(templates), "--input", str(items), "-o", str(out), *MODEL]
    served.fault = lambda n, nth: Reply.error(500, "down") if n == 3 else None
    assert 1 == main(args, stderr=io.StringIO())
    served.fault = None
    asked = Counter(served.asked)
    assert 1 == main(args, stderr=io.StringIO())  # nothing asked: the failure is recorded
    assert asked == served.asked
    assert 0 == main([*args, "--retry-failed"], stderr=io.StringIO())
    assert {3} == {n for n in served.asked if served.asked[n] > asked[n]}
    results = lines(out)
    assert 10 == len(results)
    assert {"COMPLETE"} == {r["status"] for r in results}


def test_csv_input_with_an_id_field(tmp_path: Path, templates: Path, home: Path, served: ItemServer) -> None:
    """A CSV file's rows are the items; the `--id-field` column names them and is not sent as an input."""
    items = tmp_path / "items.csv"
    items.write_text("key,text\nr1,item-1\nr2,item-2\n", encoding="utf-8")
    out = tmp_path / "results.jsonl"
    args = ["batch", "tag", "--templates", str(templates), "--input", str(items), "-o", str(out), "--id-field", "key"]
    status = main([*args, *MODEL])
    assert 0 == status
    assert {"r1": "item-1", "r2": "item-2"} == {r["id"]: r["output"]["item"] for r in lines(out)}


def test_stdin_input_and_stdout_output(templates: Path, home: Path, served: ItemServer) -> None:
    """`--input -` reads JSONL from stdin; without `--output` the lines go to stdout; `-q` prints nothing else."""
    stdin = io.StringIO('{"id": "a", "text": "item-5"}\n{"id": "b", "text": "item-6"}\n')
    out, err = io.StringIO(), io.StringIO()
    status = main(
        ["batch", "tag", "--templates", str(templates), "--input", "-", "-q", *MODEL],
        stdout=out,
        stderr=err,
        stdin=stdin,
    )
    assert 0 == status
    assert {"a", "b"} == {json.loads(line)["id"] for line in out.getvalue().splitlines()}
    assert "" == err.getvalue()


def test_ordered_writes_in_input_order(tmp_path: Path, templates: Path, home: Path, served: ItemServer) -> None:
    """`--ordered` writes results in input order even when later items finish first."""
    items = write_items(tmp_path / "items.jsonl", 12)
    out = tmp_path / "results.jsonl"
    served.fault = lambda n, nth: Reply.delay(
        0.01 * (12 - n), Reply.tool_call(args={"label": "l", "item": f"item-{n}"})
    )
    args = ["batch", "tag", "--templates", str(templates), "--input", str(items), "-o", str(out), "--ordered"]
    assert 0 == main([*args, "--concurrency", "12", *MODEL], stderr=io.StringIO())
    assert [f"i{n}" for n in range(12)] == [r["id"] for r in lines(out)]


@pytest.mark.parametrize(
    ("cap", "reached"),
    [
        (["--max-total-tokens", "150"], "the batch's `--max-total-tokens` of 150"),
        (["--max-cost", "0.0001"], "the batch's `--max-cost` of $0.0001"),  # gpt-4o-mini's prices are known
    ],
)
def test_budget_stops_cleanly_and_a_rerun_goes_on(
    tmp_path: Path, templates: Path, home: Path, served: ItemServer, cap: list[str], reached: str
) -> None:
    """A budget stops taking items once spent; what finished is kept; a re-run runs only the rest."""
    items = write_items(tmp_path / "items.jsonl", 20)
    out = tmp_path / "results.jsonl"
    args = ["batch", "tag", "--templates", str(templates), "--input", str(items), "-o", str(out), *MODEL]
    err = io.StringIO()
    assert 1 == main([*args, "--concurrency", "1", *cap], stderr=err)
    first = lines(out)
    assert 0 < len(first) < 20
    assert f"stopped early (budget: {reached}" in err.getvalue()
    asked = Counter(served.asked)
    assert 0 == main(args, stderr=io.StringIO())
    assert set() == {n for n in served.asked if served.asked[n] > asked[n]} & set(asked)
    assert 20 == len({r["id"] for r in lines(out)}) == len(lines(out))


def test_resume_by_batch_id(tmp_path: Path, templates: Path, home: Path, served: ItemServer) -> None:
    """`--resume BATCH_ID` runs the recorded batch again with its own arguments."""
    items = write_items(tmp_path / "items.jsonl", 5)
    out = tmp_path / "results.jsonl"
    err = io.StringIO()
    args = ["batch", "tag", "--templates", str(templates), "--input", str(items), "-o", str(out), *MODEL]
    assert 0 == main([*args, "--batch-id", "mine"], stderr=err)
    out.unlink()
    err = io.StringIO()
    assert 0 == main(["batch", "--resume", "mine"], stderr=err)
    assert "5 from the record, not run again" in err.getvalue()
    assert 5 == len(lines(out))


def test_bad_input_line_is_a_usage_error(tmp_path: Path, templates: Path, home: Path) -> None:
    """A line that is not a JSON object stops the batch before any call: exit 2, the line and the fix."""
    items = tmp_path / "items.jsonl"
    items.write_text('{"text": "a"}\n{"text": "b",}\n', encoding="utf-8")
    err = io.StringIO()
    status = main(["batch", "tag", "--templates", str(templates), "--input", str(items)], stderr=err)
    assert 2 == status
    assert f"{items}:2: Line 2 is not JSON" in err.getvalue()
    assert "Write each line as one JSON object" in err.getvalue()


def test_a_mistyped_input_names_its_line_field_and_fix(tmp_path: Path, templates: Path, home: Path) -> None:
    """An item with an unknown or missing input is refused before any call: exit 2, file:line, the field, the fix."""
    items = tmp_path / "items.jsonl"
    items.write_text('{"text": "a"}\n{"txt": "b"}\n', encoding="utf-8")
    err = io.StringIO()
    status = main(["batch", "tag", "--templates", str(templates), "--input", str(items), *MODEL], stderr=err)
    assert 2 == status
    assert f"{items}:2: Line 2: missing input 'text' (str); unknown input 'txt'. Did you mean 'text'?" in err.getvalue()
    assert "Give every item the inputs of template 'tag': text (str)." in err.getvalue()
    assert not (home / "batches.sqlite3").exists() or not _recorded(home)


@pytest.mark.parametrize(
    ("flag", "said"),
    [
        (["--rpm", "0"], "argument --rpm: must be a number over 0, not 0"),
        (["--tpm", "-5"], "argument --tpm: must be a number over 0, not -5"),
        (["--max-cost", "-1"], "argument --max-cost: must be a number over 0, not -1"),
        (["--concurrency", "0"], "argument --concurrency: must be at least 1, not 0"),
    ],
)
def test_bad_pace_and_budget_flags_exit_2(
    templates: Path, home: Path, flag: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pace or budget flag that cannot be met is a usage error (exit 2) naming the flag."""
    with pytest.raises(SystemExit) as caught:
        main(["batch", "tag", "--templates", str(templates), "--input", "-", *flag])
    assert 2 == caught.value.code
    assert said in capsys.readouterr().err


def test_other_settings_run_the_items_again(tmp_path: Path, templates: Path, home: Path, served: ItemServer) -> None:
    """`--setting max_tokens=...` is part of the record's key: the items are asked again, then reused."""
    items = write_items(tmp_path / "items.jsonl", 3)
    out = tmp_path / "results.jsonl"
    args = ["batch", "tag", "--templates", str(templates), "--input", str(items), "-o", str(out), *MODEL]
    assert 0 == main(args, stderr=io.StringIO())
    assert 0 == main([*args, "--setting", "max_tokens=50"], stderr=io.StringIO())
    assert {0: 2, 1: 2, 2: 2} == dict(served.asked)
    err = io.StringIO()
    assert 0 == main([*args, "--setting", "max_tokens=50"], stderr=err)
    assert "3 from the record" in err.getvalue()
    assert {0: 2, 1: 2, 2: 2} == dict(served.asked)


def test_unknown_name_and_missing_input(templates: Path, home: Path) -> None:
    """An unknown template or workflow says the near name; a batch without `--input` says so."""
    err = io.StringIO()
    assert 2 == main(["batch", "tga", "--templates", str(templates), "--input", "-"], stderr=err, stdin=io.StringIO(""))
    assert "Did you mean 'tag'?" in err.getvalue()
    err = io.StringIO()
    assert 2 == main(["batch", "tag", "--templates", str(templates)], stderr=err)
    assert "needs `--input FILE`" in err.getvalue()


@pytest.mark.parametrize(
    ("flag", "expected"),
    [
        (["--tpm", "1000"], "`--tpm` is not available with `--engine dbos`"),
        (["--rpm", "0.5"], "`--rpm` must be at least 1"),
    ],
)
def test_the_dbos_engine_refuses_what_its_queue_cannot_limit(
    tmp_path: Path, templates: Path, home: Path, flag: list[str], expected: str
) -> None:
    """`--engine dbos` with `--tpm`, or an `--rpm` under one item a minute: exit 2, before anything is queued."""
    items = write_items(tmp_path / "items.jsonl", 2)
    argv = ["batch", "tag", "--templates", str(templates), "--input", str(items), "--engine", "dbos"]
    err = io.StringIO()
    assert 2 == main([*argv, "--db", str(tmp_path / "q.sqlite"), *flag], stderr=err)
    assert expected in err.getvalue()
    assert not (tmp_path / "q.sqlite").exists()


TAG_FLOW = """\
workflows:
  - name: tag_flow
    state:
      fields:
        - {name: text, type: str}
        - {name: tag, type: Tag?}
    steps:
      - {id: tag, task: tag, inputs: {text: "{{state.text}}"}, output: tag}
"""


def _asked(served: ItemServer) -> list[dict[str, Any]]:
    """The body of every chat request the provider received (in order)."""
    return [r.body for r in served.server.requests if r.path.endswith("/chat/completions")]


def _answer_limit(served: ItemServer) -> set[int | None]:
    """The per-answer token limit of every chat request the provider received (None: the request set none)."""
    return {body.get("max_completion_tokens", body.get("max_tokens")) for body in _asked(served)}


def _trailing_comma_first(n: int, nth: int) -> ServerReply | None:
    """Each item's first answer has a trailing comma (safe repair fixes it; without repair it is asked again)."""
    return Reply.tool_call(args=f'{{"label": "label-{n}", "item": "item-{n}",}}') if nth == 1 else None


def test_batch_help_tells_the_answer_cap_from_the_batch_total(capsys: pytest.CaptureFixture[str]) -> None:
    """`batch --help`: `--max-tokens` is per answer (as on `run`), `--max-total-tokens` the batch's total."""
    with pytest.raises(SystemExit):
        main(["batch", "--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert "--max-tokens N at most N tokens in each answer (the model's `max_tokens`; not a total)" in said
    assert "--max-total-tokens N the batch's total: stop taking items once this run spent N tokens" in said
    for flag in ("--retries N", "--repair {safe,lenient,off}", "--no-repair", "--temperature F", "--seed N"):
        assert flag in said


@pytest.mark.parametrize("kind", ["template", "workflow"])
def test_max_tokens_caps_each_answer_not_the_batch(
    tmp_path: Path, templates: Path, home: Path, served: ItemServer, kind: str
) -> None:
    """`batch --max-tokens 5` is the model setting of every item's request, as on `run`: no item is left unrun."""
    (templates / "tag_flow.yaml").write_text(TAG_FLOW, encoding="utf-8")
    items = write_items(tmp_path / "items.jsonl", 6)
    out = tmp_path / "results.jsonl"
    name = "tag" if kind == "template" else "tag_flow"
    args = ["batch", name, "--templates", str(templates), "--input", str(items), "-o", str(out), *MODEL]
    err = io.StringIO()
    assert 0 == main([*args, "--concurrency", "1", "--max-tokens", "5", "--temperature", "0"], stderr=err)
    assert "stopped early" not in err.getvalue()
    assert {"COMPLETE"} == {r["status"] for r in lines(out)}
    assert 6 == len(lines(out))
    assert {5} == _answer_limit(served)
    assert {0} == {body["temperature"] for body in _asked(served)}


def test_a_bad_per_answer_flag_exits_2(templates: Path, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--max-tokens 0` and `--retries -1` are usage errors naming the flag, before anything is read or run."""
    with pytest.raises(SystemExit) as caught:
        main(["batch", "tag", "--templates", str(templates), "--input", "-", "--max-tokens", "0"])
    assert 2 == caught.value.code
    assert "argument --max-tokens: must be at least 1, not 0" in capsys.readouterr().err
    err = io.StringIO()
    argv = ["batch", "tag", "--templates", str(templates), "--input", "-", "--retries", "-1", *MODEL]
    assert 2 == main(argv, stderr=err, stdin=io.StringIO('{"text": "item-1"}\n'))
    assert "Invalid `retries=` for this batch: -1" in err.getvalue()


@pytest.mark.parametrize("repair", [["--repair", "off"], ["--no-repair"]])
def test_repair_off_asks_again_what_safe_repair_fixes(
    tmp_path: Path, templates: Path, home: Path, served: ItemServer, repair: list[str]
) -> None:
    """Each item's first answer is repaired locally by default; with `--repair off` each item is asked again."""
    served.fault = _trailing_comma_first
    items = write_items(tmp_path / "items.jsonl", 3)
    out = tmp_path / "results.jsonl"
    args = ["batch", "tag", "--templates", str(templates), "--input", str(items), "-o", str(out), *MODEL]
    assert 0 == main(args, stderr=io.StringIO())
    assert {0: 1, 1: 1, 2: 1} == dict(served.asked)
    assert {1} == {r["attempts"] for r in lines(out)}
    served.asked.clear()
    err = io.StringIO()
    assert 0 == main([*args, *repair], stderr=err)  # the repair mode is in the record's key: asked again
    assert "from the record" not in err.getvalue()
    assert {0: 2, 1: 2, 2: 2} == dict(served.asked)
    assert {2} == {r["attempts"] for r in lines(out)}


def test_retries_bound_each_items_asks(tmp_path: Path, templates: Path, home: Path, served: ItemServer) -> None:
    """Without repair, `--retries 0` fails each item at its first bad answer; `--retries 1` asks it once more."""
    served.fault = _trailing_comma_first
    out = tmp_path / "results.jsonl"
    args = ["--templates", str(templates), "-o", str(out), "--no-repair", *MODEL]
    first = write_items(tmp_path / "first.jsonl", 3)
    assert 1 == main(["batch", "tag", "--input", str(first), *args, "--retries", "0"], stderr=io.StringIO())
    assert {("FAILED", "output_validation_failure")} == {(r["status"], r["error"]["reason"]) for r in lines(out)}
    assert {0: 1, 1: 1, 2: 1} == dict(served.asked)
    second = write_items(tmp_path / "second.jsonl", 3, start=3)
    assert 0 == main(["batch", "tag", "--input", str(second), *args, "--retries", "1"], stderr=io.StringIO())
    assert {"COMPLETE"} == {r["status"] for r in lines(out)}
    assert {3: 2, 4: 2, 5: 2} == {n: served.asked[n] for n in range(3, 6)}


def test_resume_keeps_the_per_answer_flags_and_takes_a_zero_given_again(
    tmp_path: Path, templates: Path, home: Path, served: ItemServer
) -> None:
    """`--resume ID` runs with the recorded `--max-tokens`, `--temperature`; `--temperature 0` given again wins."""
    items = write_items(tmp_path / "items.jsonl", 3)
    out = tmp_path / "results.jsonl"
    args = ["batch", "tag", "--templates", str(templates), "--input", str(items), "-o", str(out), *MODEL]
    assert 0 == main([*args, "--batch-id", "mine", "--max-tokens", "5", "--temperature", "0.5"], stderr=io.StringIO())
    err = io.StringIO()
    assert 0 == main(["batch", "--resume", "mine"], stderr=err)
    assert "3 from the record, not run again" in err.getvalue()  # the same settings: the same record key
    assert {0: 1, 1: 1, 2: 1} == dict(served.asked)
    err = io.StringIO()
    assert 0 == main(["batch", "--resume", "mine", "--temperature", "0"], stderr=err)
    assert "from the record" not in err.getvalue()
    assert {0: 2, 1: 2, 2: 2} == dict(served.asked)
    last = _asked(served)[-1]
    assert (0, 5) == (last["temperature"], last.get("max_completion_tokens", last.get("max_tokens")))


def test_a_provider_batch_takes_the_per_answer_flags(
    tmp_path: Path, templates: Path, home: Path, served: ItemServer
) -> None:
    """`--provider-batch`: safe repair fixes each batch answer; `--repair off --reask live` re-asks each live."""
    served.fault = _trailing_comma_first
    items = write_items(tmp_path / "items.jsonl", 3)
    out = tmp_path / "results.jsonl"
    args = ["batch", "tag", "--templates", str(templates), "--input", str(items), "-o", str(out), *MODEL]
    # `--server openai`: the fake provider on 127.0.0.1 is OpenAI here (else a local server, with no batch API)
    args += ["--provider-batch", "--poll-interval", "0.01", "--server", "openai"]
    assert 0 == main([*args, "--db", str(tmp_path / "safe.sqlite3")], stderr=io.StringIO())
    assert [] == _asked(served)
    served.asked.clear()
    flags = ["--repair", "off", "--max-tokens", "5", "--reask", "live"]
    assert 0 == main([*args, "--db", str(tmp_path / "off.sqlite3"), *flags], stderr=io.StringIO())
    assert {"COMPLETE"} == {r["status"] for r in lines(out)}
    assert 3 == len(_asked(served))  # each item's batch answer re-asked, as a normal call (chat completions)
    assert {5} == _answer_limit(served)
