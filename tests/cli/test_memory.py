"""`atomtask memory add|query`, called as `main(argv)`; queries reach the local fake provider server."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from atomtask.cli._main import main
from atomtask.testing import FakeProviderServer, Reply


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


@pytest.fixture
def db(tmp_path: Path) -> str:
    """A store holding two text files, added through the CLI."""
    (tmp_path / "refunds.txt").write_text("Refunds are paid within 14 days of the request.", encoding="utf-8")
    (tmp_path / "office.txt").write_text("Our office is in Paris.", encoding="utf-8")
    path = str(tmp_path / "memory.sqlite3")
    code, out, _ = run(["memory", "add", str(tmp_path / "refunds.txt"), str(tmp_path / "office.txt"), "--db", path])
    assert 0 == code
    assert f"added 2 document(s) to {path} (2 stored)" == out.strip()
    return path


def test_add_keeps_the_files_under_their_paths(db: str, tmp_path: Path) -> None:
    """Added files are stored with the path as given as their id, and adding again replaces them."""
    code, out, _ = run(["memory", "add", str(tmp_path / "office.txt"), "--db", db])
    assert (0, f"added 1 document(s) to {db} (2 stored)") == (code, out.strip())


def test_add_a_missing_file_exits_2_and_stores_nothing(tmp_path: Path) -> None:
    """A file that cannot be read is a usage error, and no file of the command is stored."""
    (tmp_path / "ok.txt").write_text("fine")
    path = str(tmp_path / "m.db")
    code, _, err = run(["memory", "add", str(tmp_path / "ok.txt"), str(tmp_path / "nope.txt"), "--db", path])
    assert 2 == code
    assert "nope.txt' (No such file or directory); pass an existing text file." in err
    assert not Path(path).exists()


@pytest.mark.usefixtures("allow_model_requests")
def test_query_prints_the_typed_matches(db: str, tmp_path: Path, server: FakeProviderServer) -> None:
    """`query` sends the candidates to the model and prints the kept matches and what was dropped."""
    refunds = str(tmp_path / "refunds.txt")
    server.script(
        Reply.tool_call(
            args={
                "context_summary": "Refunds take 14 days.",
                "matches": [
                    {"id": refunds, "relevance_score": 0.9, "reason": "states the delay"},
                    {"id": "made-up", "relevance_score": 0.5, "reason": "invented"},
                ],
            }
        )
    )
    model = ["--model", "openai-chat:llama3.2", "--base-url", server.openai_base_url]
    code, out, err = run(["memory", "query", "how long for refunds?", "--db", db, *model])
    assert 0 == code, err
    shown = json.loads(out)
    assert [refunds] == [m["id"] for m in shown["matches"]]
    assert [{"item": {"id": "made-up", "relevance_score": 0.5, "reason": "invented"}, "why": "not_a_candidate"}] == (
        shown["dropped"]
    )
    assert [refunds] == shown["prompt"]["sent_ids"]
    sent = json.dumps(server.requests[0].body["messages"])
    assert "Refunds are paid within 14 days" in sent
    assert "Paris" not in sent


@pytest.mark.usefixtures("allow_model_requests")
def test_query_failure_exits_1_with_the_reason(db: str, server: FakeProviderServer) -> None:
    """Scores out of range on every attempt fail the task: exit 1, the reason on stderr."""
    bad = {"context_summary": "", "matches": [{"id": "x", "relevance_score": 3, "reason": "r"}]}
    server.script(Reply.tool_call(args=bad), Reply.tool_call(args=bad))
    model = ["--model", "openai-chat:llama3.2", "--base-url", server.openai_base_url]
    code, out, err = run(["memory", "query", "refunds", "--db", db, *model])
    assert 1 == code
    assert "output_validation_failure" == json.loads(out)["error"]["reason"]
    assert "atomtask: error: output_validation_failure:" in err


def test_query_on_the_embedded_test_model_runs_offline(db: str) -> None:
    """Without a model the query runs on the embedded test model and says so."""
    code, out, err = run(["memory", "query", "refunds", "--db", db])
    assert 0 == code
    assert {"context_summary", "matches", "dropped", "prompt", "error"} == set(json.loads(out))
    assert [line for line in err.splitlines() if line.startswith("atomtask: no model configured")]


def test_query_budget_flag_bounds_the_prompt(db: str) -> None:
    """`--max-prompt-chars` sets the budget reported with the answer; too small a budget exits 2."""
    code, out, _ = run(["memory", "query", "refunds", "--db", db, "--max-prompt-chars", "2000"])
    assert (0, 2000) == (code, json.loads(out)["prompt"]["budget_chars"])
    code, _, err = run(["memory", "query", "refunds", "--db", db, "--max-prompt-chars", "100"])
    assert 2 == code
    assert "Raise `max_prompt_chars` to at least" in err


def test_query_with_a_bad_db_exits_2(tmp_path: Path) -> None:
    """A database path in a missing folder is a usage error naming it."""
    code, _, err = run(["memory", "query", "x", "--db", str(tmp_path / "no" / "m.db")])
    assert 2 == code
    assert "does not exist" in err


def test_memory_help_exits_zero() -> None:
    """`atomtask memory query --help` exits 0."""
    with pytest.raises(SystemExit) as raised:
        main(["memory", "query", "--help"])
    assert 0 == raised.value.code


def test_query_on_a_missing_database_exits_2_and_creates_nothing(tmp_path: Path) -> None:
    """Querying a database file that does not exist is an error, not a new empty database and exit 0."""
    path = tmp_path / "typo.sqlite3"
    code, out, err = run(["memory", "query", "refunds", "--db", str(path)])
    assert (2, "") == (code, out)
    assert f"atomtask: error: No memory database at {str(path)!r}: the file does not exist." in err
    assert "`atomtask memory add FILE ... --db" in err
    assert not path.exists()


def test_query_with_a_bad_model_names_the_flag(db: str) -> None:
    """A bad `--model` is refused in the CLI's terms before the store is opened."""
    code, _, err = run(["memory", "query", "refunds", "--db", db, "--model", "gpt-4o", "-q"])
    assert 2 == code
    assert "Model 'gpt-4o' in `--model` has no provider prefix" in err


def test_memory_lives_in_atomtask_home_with_the_rest_of_the_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without `--db`, `memory add` and `memory query` use `$ATOMTASK_HOME/memory.sqlite3`, as the cache and runs do."""
    home = tmp_path / "home"
    monkeypatch.setenv("ATOMTASK_HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("ATOMTASK_MEMORY_DB", raising=False)
    (tmp_path / "refunds.txt").write_text("Refunds are paid within 14 days.", encoding="utf-8")
    code, out, _ = run(["memory", "add", str(tmp_path / "refunds.txt")])
    assert (0, f"added 1 document(s) to {home / 'memory.sqlite3'} (1 stored)") == (code, out.strip())
    code, out, _ = run(["memory", "query", "refunds", "-q"])
    assert (0, [str(tmp_path / "refunds.txt")]) == (code, json.loads(out)["prompt"]["sent_ids"])
    assert not (tmp_path / "xdg").exists()
