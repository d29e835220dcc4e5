"""A damaged memory store: a typed error naming the file and how to recover; a damaged document; the file's modes."""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path

import pytest
from atomtask import ConfigurationError
from atomtask.cli import main
from atomtask.memory import DocumentStore
from structlog.testing import capture_logs


def _filled(path: Path) -> Path:
    store = DocumentStore(path)
    store.add_many((f"doc-{n}", f"refund number {n} " + "shipping delay " * 200) for n in range(20))
    store.close()
    return path


def test_a_schema_that_is_not_utf8_is_a_configuration_error(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 over the schema's text (SQLite's message undecodable) raise ConfigurationError."""
    path = _filled(tmp_path / "memory.sqlite3")
    data = path.read_bytes()
    at = data.index(b"CREATE TABLE documents")
    path.write_bytes(data[:at] + b"CREATE TABLE \xff\xfe\xfd" + data[at + 16 :])
    with pytest.raises(ConfigurationError) as caught:
        DocumentStore(path)
    assert str(path) in caught.value.message
    assert "damaged" in caught.value.message
    assert ".recover" in caught.value.message


def test_a_truncated_store_is_found_when_opened_and_by_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file cut short fails the check at open; `atomtask memory add` exits 2 naming it, no "unexpected"."""
    path = _filled(tmp_path / "memory.sqlite3")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ConfigurationError, match="it is damaged"):
        DocumentStore(path)
    note = tmp_path / "note.txt"
    note.write_text("a refund note")
    assert 2 == main(["memory", "add", str(note), "--db", str(path)])
    said = capsys.readouterr().err
    assert "unexpected" not in said
    assert str(path) in said


def test_a_damaged_page_met_by_a_query_is_a_configuration_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Damage the check at open does not look for (a file over its size limit) is typed when a search meets it."""
    monkeypatch.setattr("atomtask._paths.QUICK_CHECK_OFTEN_UP_TO", 0)
    path = _filled(tmp_path / "memory.sqlite3")
    with sqlite3.connect(path) as db:  # the full-text index's pages
        pages = [page for (page,) in db.execute("SELECT rootpage FROM sqlite_master WHERE name LIKE 'documents_fts%'")]
    data = bytearray(path.read_bytes())
    for page in (p for p in pages if p):
        data[(page - 1) * 4096 : page * 4096] = bytes(4096)
    path.write_bytes(bytes(data))
    store = DocumentStore(path)
    with pytest.raises(ConfigurationError, match="it is damaged"):
        store.search("refund")


def test_a_damaged_document_is_left_out_of_searches_and_get_of_it_is_typed(tmp_path: Path) -> None:
    """Metadata that is not JSON: searches skip the document with a warning; `get` of it says how to fix it."""
    path = _filled(tmp_path / "memory.sqlite3")
    with sqlite3.connect(path) as db:
        db.execute("UPDATE documents SET metadata = '{not json' WHERE id = 'doc-3'")
        db.execute("UPDATE documents SET text = CAST(x'ff' AS TEXT) || text WHERE id = 'doc-4'")
    store = DocumentStore(path)
    with capture_logs() as logs:
        found = [d.id for d in store.search("refund", limit=50)]
        listed = [d.id for d in store]
    assert ("doc-3", "doc-4") not in (found, listed) and 18 == len(listed)
    assert {"doc-3", "doc-4"}.isdisjoint(found) and {"doc-3", "doc-4"}.isdisjoint(listed)
    assert {"memory_document_damaged"} == {entry["event"] for entry in logs if entry["log_level"] == "warning"}
    with pytest.raises(ConfigurationError, match=r"Document 'doc-3' in memory store .* is damaged"):
        store.get("doc-3")


def test_the_store_file_and_its_new_folder_are_owner_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default store is created 0600 in a folder created 0700; an explicit new file is 0600 too."""
    home = tmp_path / "home"
    monkeypatch.setenv("ATOMTASK_HOME", str(home))
    monkeypatch.delenv("ATOMTASK_MEMORY_DB", raising=False)
    store = DocumentStore()
    store.add("a", "some text")
    store.close()
    assert 0o600 == stat.S_IMODE((home / "memory.sqlite3").stat().st_mode)
    assert 0o700 == stat.S_IMODE(home.stat().st_mode)
    DocumentStore(tmp_path / "mine.sqlite3").close()
    assert 0o600 == stat.S_IMODE((tmp_path / "mine.sqlite3").stat().st_mode)
