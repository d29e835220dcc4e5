"""A damaged response cache: a typed error naming the file and the fix, a damaged entry a miss; its file's modes."""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path

import pytest
from atomtask import ConfigurationError, OutputFormat, ParamSpec, ResponseCache, TaskSystem, Template
from atomtask.cli import main
from pydantic import BaseModel
from structlog.testing import capture_logs

from tests.helpers import Recorder

ADA = {"name": "Ada Lovelace", "email": "ada@example.com"}
GRACE = {"name": "Grace Hopper", "email": "grace@example.com"}


class Contact(BaseModel):
    name: str
    email: str | None = None


def _system(rec: Recorder, path: Path | str) -> TaskSystem:
    system = TaskSystem(model=rec.model, cache=True, cache_path=path)
    system.models.register(Contact)
    system.register(
        Template(
            name="extract",
            params={"text": ParamSpec(type="str")},
            instructions="Extract: {{text}}",
            output_format=OutputFormat(type="json", schema="Contact"),
        )
    )
    return system


def _filled(path: Path) -> Path:
    """A cache file holding one answer (for "Ada"), its write-ahead log merged into it."""
    system = _system(Recorder(ADA), path)
    assert system.execute("extract", {"text": "Ada"}).ok
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


def _damage_schema(path: Path) -> None:
    """Bytes that are not UTF-8 written over the table's name in the schema: SQLite's own message cannot be decoded."""
    data = path.read_bytes()
    at = data.index(b"CREATE TABLE responses")
    path.write_bytes(data[:at] + b"CREATE TABLE \xff\xfe\xfd" + data[at + len(b"CREATE TABLE \xff\xfe\xfd") :])


def test_a_schema_that_is_not_utf8_is_a_configuration_error_naming_the_file_and_the_fix(tmp_path: Path) -> None:
    """A damaged schema (SQLite's message undecodable: a UnicodeDecodeError) raises ConfigurationError at open."""
    path = _filled(tmp_path / "cache.sqlite3")
    _damage_schema(path)
    with pytest.raises(ConfigurationError) as caught:
        _system(Recorder(ADA), path)
    message = caught.value.message
    assert str(path) in message
    assert "damaged" in message
    assert f"atomtask cache clear --db {path}" in message


def test_a_truncated_file_is_found_when_opened(tmp_path: Path) -> None:
    """A file cut short fails `PRAGMA quick_check` when opened: ConfigurationError, not a crash at the first call."""
    path = _filled(tmp_path / "cache.sqlite3")
    for _ in range(5):  # more pages, so that cutting some off leaves a file SQLite opens
        _system(Recorder(GRACE), path).execute("extract", {"text": "x" * 3000 + str(_)})
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ConfigurationError, match="it is damaged"):
        ResponseCache(path)


@pytest.mark.parametrize(
    "damage",
    [
        'UPDATE responses SET output = \'{"name": "Ada\'',  # not JSON
        "UPDATE responses SET content = x'00ff'",  # a blob, not text
        "UPDATE responses SET content = CAST(x'ff41' AS TEXT)",  # not UTF-8
        "UPDATE responses SET created = 'yesterday'",
    ],
    ids=["not-json", "wrong-type", "not-utf8", "bad-time"],
)
def test_a_damaged_entry_is_a_miss_with_a_warning_and_the_next_answer_replaces_it(tmp_path: Path, damage: str) -> None:
    """The model is asked again (no crash), a warning names the cache, and the good answer replaces the entry."""
    path = _filled(tmp_path / "cache.sqlite3")
    with sqlite3.connect(path) as db:
        db.execute(damage)
    rec = Recorder(GRACE)
    system = _system(rec, path)
    with capture_logs() as logs:
        result = system.execute("extract", {"text": "Ada"}, cache={"ttl": "1h"})
    assert (True, False, 1) == (result.ok, result.notes.cached, len(rec.calls))
    assert GRACE == result.unwrap().model_dump()
    warned = [entry for entry in logs if entry["log_level"] == "warning"]
    assert [str(path)] == [entry["path"] for entry in warned]
    again = system.execute("extract", {"text": "Ada"}, cache={"ttl": "1h"})
    assert (True, GRACE, 1) == (again.notes.cached, again.unwrap().model_dump(), len(rec.calls))


def test_cache_stats_on_a_damaged_file_exits_2_and_clear_starts_it_afresh(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`cache stats` says the file is damaged and how to fix it (exit 2, no "unexpected"); `cache clear` fixes it."""
    path = _filled(tmp_path / "cache.sqlite3")
    _damage_schema(path)
    assert 2 == main(["cache", "stats", "--db", str(path)])
    said = capsys.readouterr().err
    assert "unexpected" not in said
    assert "damaged" in said
    assert 0 == main(["cache", "clear", "--db", str(path)])
    assert 0 == main(["cache", "stats", "--db", str(path)])
    assert "0 entries" in capsys.readouterr().out
    rec = Recorder(ADA)
    assert _system(rec, path).execute("extract", {"text": "Ada"}).ok


def test_a_call_with_cache_false_neither_reads_nor_writes_the_cache(tmp_path: Path) -> None:
    """`cache=False` on a call over a TaskSystem with the cache on: the model is asked each time, nothing is stored."""
    path = tmp_path / "cache.sqlite3"
    rec = Recorder({"name": "S3CR3T-ANSWER"}, {"name": "S3CR3T-ANSWER"}, ADA)
    system = _system(rec, path)
    for _ in range(2):
        assert system.execute("extract", {"text": "Ada"}, cache=False).ok
    assert 2 == len(rec.calls)
    assert system.execute("extract", {"text": "Bea"}).ok  # the cache works: this answer is stored
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("cache.sqlite3*"))
    assert (False, True) == (b"S3CR3T-ANSWER" in stored, b"Ada Lovelace" in stored)


def test_the_cache_file_and_its_new_folder_are_owner_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default `$ATOMTASK_HOME/cache.sqlite3` is created 0600 (its WAL too) in a folder created 0700."""
    home = tmp_path / "home"
    monkeypatch.setenv("ATOMTASK_HOME", str(home))
    system = TaskSystem(model=Recorder("plain text").model, cache=True)
    system.register(Template(name="t", instructions="Say: {{text}}", params={"text": ParamSpec(type="str")}))
    assert system.execute("t", {"text": "Ada"}).ok
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in home.iterdir()}
    assert 0o600 == modes["cache.sqlite3"]
    assert 0o600 == modes["cache.sqlite3-wal"]
    assert 0o700 == stat.S_IMODE(home.stat().st_mode)


def test_an_explicit_cache_file_is_created_owner_only(tmp_path: Path) -> None:
    """`cache_path=` a new file: created 0600 before SQLite writes to it."""
    path = tmp_path / "mine.sqlite3"
    ResponseCache(path).close()
    assert 0o600 == stat.S_IMODE(path.stat().st_mode)


def test_cache_clear_never_deletes_a_file_that_is_not_sqlite(tmp_path: Path) -> None:
    """`atomtask cache clear --db notes.txt` by mistake: exit 2, and the file is left as it was."""
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes, not a cache\n" * 50)
    assert 2 == main(["cache", "clear", "--db", str(notes)])
    assert "my notes, not a cache\n" * 50 == notes.read_text()
