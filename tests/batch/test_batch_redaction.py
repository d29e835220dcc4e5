"""A workflow's `redact: true` values never reach the batch record nor the results unless asked.

The operator's scenario: a batch of a workflow with a redacted input, `-o` and the record read back
raw. The values are `[redacted]` in the item's output and cut out of every text quoting them (a later
step's answer, the error); `--include-redacted` (`include_redacted=True`) writes them to the results
only, never to the record.
"""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest
from atomtask import TaskStatus, TaskSystem
from atomtask.batch._api import collect
from atomtask.cli._main import main
from atomtask.handlers._blocking import run_blocking
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

FLOW = """\
name: say
params: {word: str}
instructions: "Repeat {{word}}"
---
name: guarded
version: "1.0"
state:
  - {name: word, type: str}
  - {name: key, type: str, redact: true}
  - {name: token, type: str, redact: true}
  - {name: two, type: str}
steps:
  - {id: first, task: say, inputs: {word: "{{state.key}}"}, output: token}
  - {id: second, task: say, inputs: {word: "{{state.token}} {{state.word}}"}, output: two}
"""
SECRETS = ("s3cr3t-key-AAA", "s3cr3t-key-BBB")


def _stored(db: Path) -> bytes:
    """Every byte of the record (the SQLite file and its write-ahead log)."""
    return b"".join(path.read_bytes() for path in db.parent.glob(db.name + "*"))


def _rows(db: Path) -> str:
    """Every row of the record, read back raw with sqlite3."""
    with sqlite3.connect(db) as conn:
        return json.dumps([conn.execute(f"SELECT * FROM {t}").fetchall() for t in ("items", "batches")])


def _echo(*, fail_on: str | None = None) -> FunctionModel:
    """A model answering each task with its own prompt (so a secret it was given is in its answer)."""

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = str(messages[-1].parts[-1].content)  # type: ignore[union-attr]
        if fail_on is not None and fail_on in prompt:
            raise RuntimeError(f"the provider choked on {prompt!r}")
        return ModelResponse(parts=[TextPart(prompt.removeprefix("Repeat "))])

    return FunctionModel(answer)


@pytest.fixture
def flows(tmp_path: Path) -> Path:
    (tmp_path / "flows.yaml").write_text(FLOW, encoding="utf-8")
    return tmp_path / "flows.yaml"


@pytest.fixture
def items(tmp_path: Path) -> Path:
    path = tmp_path / "items.jsonl"
    lines = [{"id": "a", "word": "w", "key": SECRETS[0]}, {"id": "b", "word": "v", "key": SECRETS[1]}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_the_secret_is_nowhere_in_the_output_nor_the_record(
    tmp_path: Path, flows: Path, items: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`atomtask batch guarded -o out.jsonl`: no secret in `-o`, in the record's rows or its bytes: `[redacted]`."""
    monkeypatch.setenv("ATOMTASK_HOME", str(tmp_path / "home"))
    db, out = tmp_path / "home" / "batches.sqlite3", tmp_path / "out.jsonl"
    argv = ["batch", "guarded", "--templates", str(flows), "--input", str(items), "-o", str(out)]
    assert 0 == main(argv, stderr=io.StringIO())
    written = out.read_text(encoding="utf-8")
    assert {"[redacted]"} == {json.loads(line)["output"]["key"] for line in written.splitlines()}
    for secret in SECRETS:
        assert (False, False, False) == (secret in written, secret in _rows(db), secret.encode() in _stored(db))


def test_include_redacted_writes_them_to_the_output_only(
    tmp_path: Path, flows: Path, items: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--include-redacted`: the secrets in clear in `-o`, still nowhere in the record; a re-run reads `[redacted]`."""
    monkeypatch.setenv("ATOMTASK_HOME", str(tmp_path / "home"))
    db, out = tmp_path / "home" / "batches.sqlite3", tmp_path / "out.jsonl"
    argv = ["batch", "guarded", "--templates", str(flows), "--input", str(items), "-o", str(out)]
    assert 0 == main([*argv, "--include-redacted"], stderr=io.StringIO())
    written = out.read_text(encoding="utf-8")
    assert {SECRETS[0], SECRETS[1]} == {json.loads(line)["output"]["key"] for line in written.splitlines()}
    for secret in SECRETS:
        assert (False, False) == (secret in _rows(db), secret.encode() in _stored(db))
    assert 0 == main([*argv, "--include-redacted"], stderr=io.StringIO())  # from the record: never in clear
    assert not any(secret in out.read_text(encoding="utf-8") for secret in SECRETS)


def test_values_quoted_by_later_answers_and_errors_are_cut_out(tmp_path: Path, flows: Path) -> None:
    """A later step's answer quoting a redacted value, and an error quoting one, keep their text without it."""
    db = tmp_path / "b.sqlite3"
    system = TaskSystem(templates=flows, model=_echo())
    given = [{"id": "a", "word": "w", "key": SECRETS[0]}]
    [item] = system.batch_sync("guarded", given, batch_id="red", db=db)
    assert {"word": "w", "key": "[redacted]", "token": "[redacted]", "two": "[redacted] w"} == item.output
    [clear] = run_blocking(collect(system.batch("guarded", given, include_redacted=True)))
    assert {"key": SECRETS[0], "token": SECRETS[0], "two": f"{SECRETS[0]} w"} == {
        name: clear.output[name] for name in ("key", "token", "two")
    }
    failing = TaskSystem(templates=flows, model=_echo(fail_on=" w"))  # the second step fails, quoting the token
    [failed] = failing.batch_sync("guarded", [{"id": "f", "word": "w", "key": SECRETS[1]}], batch_id="red", db=db)
    assert TaskStatus.FAILED == failed.status
    assert failed.error is not None and "[redacted] w" in failed.error.message
    assert SECRETS[1] not in failed.json_line()
    for secret in SECRETS:
        assert (False, False) == (secret in _rows(db), secret.encode() in _stored(db))


def test_the_dbos_engine_refuses_redacted_inputs_it_would_store_unless_asked(
    tmp_path: Path, flows: Path, items: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workers read an item's inputs from the queue's store: a redacted one would be kept there in clear.

    Refused before anything is queued (exit 2, naming the inputs, the store and both fixes); nothing of the
    secrets is in the store's files.
    """
    monkeypatch.setenv("ATOMTASK_HOME", str(tmp_path / "home"))
    store = tmp_path / "queue.sqlite"
    argv = ["batch", "guarded", "--input", str(items), "--templates", str(flows), "--engine", "dbos"]
    err = io.StringIO()
    assert 2 == main([*argv, "--db", str(store), "--model", "test"], stderr=err)
    message = " ".join(err.getvalue().split())
    assert "`redact: true` inputs (key)" in message and "queue.sqlite" in message
    assert "leave out `--engine dbos`" in message and "--include-redacted" in message
    stored = b"".join(path.read_bytes() for path in tmp_path.glob("queue.sqlite*"))
    assert not any(secret.encode() in stored for secret in SECRETS)
