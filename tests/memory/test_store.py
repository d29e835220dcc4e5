"""The SQLite document store: persistence, full-text pre-selection, safe queries, clear errors."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from atomtask import ConfigurationError, UsageError
from atomtask.memory import Document, DocumentStore, default_memory_path, fts_query

NASTY_QUERIES = [
    '"unbalanced',
    "NEAR(refund policy)",
    "refund AND OR NOT",
    "text:refund",
    "*",
    "^refund",
    "-refund",
    "refund*",
    "'; DROP TABLE documents; --",
    "(refund",
    "{text}: refund",
    "",
    "   ",
]


@pytest.fixture
def store() -> DocumentStore:
    s = DocumentStore(":memory:")
    s.add_many(
        [
            ("refunds", "Refunds are paid within 14 days of the request."),
            ("office", "Our office is in Paris, near the river."),
            Document(
                id="shipping", text="Shipping takes 3 days; refunds for lost parcels are automatic.", metadata={"n": 1}
            ),
        ]
    )
    return s


def test_fts_query_quotes_every_word() -> None:
    """Each word becomes a quoted FTS5 string, lowercased and deduplicated, joined with OR."""
    assert '"refund" OR "not" OR "x"' == fts_query('refund "NOT" x* Refund')
    assert fts_query("?!") is None


@pytest.mark.parametrize("query", NASTY_QUERIES)
def test_any_text_is_a_safe_query(store: DocumentStore, query: str) -> None:
    """Quotes, operators, column filters and SQL in a query never raise and never change the store."""
    found = store.search(query)
    assert 3 == len(store)
    assert all(isinstance(d, Document) for d in found)


def test_operators_are_searched_as_words(store: DocumentStore) -> None:
    """`-refund` and `refund*` still find the documents that mention refunds."""
    assert {"refunds", "shipping"} == {d.id for d in store.search("-refund")}
    assert {"refunds", "shipping"} == {d.id for d in store.search("refund*")}


def test_search_ranks_and_stems(store: DocumentStore) -> None:
    """Stemming matches word forms; the document with more query words ranks first."""
    assert ["shipping", "refunds"] == [d.id for d in store.search("refunded shipping")]


def test_add_replaces_and_the_index_follows(store: DocumentStore) -> None:
    """Adding an existing id replaces its text, and the old words no longer match it."""
    store.add("office", "Our office moved to Lyon.", {"moved": True})
    assert [] == store.search("Paris")
    assert ["office"] == [d.id for d in store.search("Lyon")]
    assert Document(id="office", text="Our office moved to Lyon.", metadata={"moved": True}) == store.get("office")
    assert 3 == len(store)


def test_remove_updates_the_index(store: DocumentStore) -> None:
    """A removed document is gone from lookups and from search."""
    assert store.remove("refunds")
    assert not store.remove("refunds")
    assert ["shipping"] == [d.id for d in store.search("refunds")]
    assert "refunds" not in store


def test_reopening_a_file_keeps_documents_and_index(tmp_path: Path) -> None:
    """A file store closed and opened again has the same documents, still searchable."""
    path = tmp_path / "memory.sqlite3"
    first = DocumentStore(path)
    first.add("a", "Alpha centauri is close.", {"kind": "star"})
    first.close()
    second = DocumentStore(path)
    assert [Document(id="a", text="Alpha centauri is close.", metadata={"kind": "star"})] == list(second)
    assert ["a"] == [d.id for d in second.search("centauri")]
    second.close()


def test_metadata_must_be_json(store: DocumentStore) -> None:
    """Metadata that is not JSON-serialisable is a usage error naming the document."""
    with pytest.raises(UsageError, match="Metadata of document 'x' is not JSON-serialisable"):
        store.add("x", "text", {"when": object()})
    assert "x" not in store


def test_default_path_honours_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """ATOMTASK_MEMORY_DB wins; else the file lives in ATOMTASK_HOME, created on first use."""
    monkeypatch.delenv("ATOMTASK_MEMORY_DB", raising=False)
    monkeypatch.setenv("ATOMTASK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert tmp_path / "home" / "memory.sqlite3" == default_memory_path()
    DocumentStore().close()
    assert (tmp_path / "home" / "memory.sqlite3").is_file()
    assert not (tmp_path / "data").exists()
    monkeypatch.delenv("ATOMTASK_HOME")
    assert tmp_path / "data" / "atomtask" / "memory.sqlite3" == default_memory_path()  # atomtask_home()'s default
    monkeypatch.setenv("ATOMTASK_MEMORY_DB", str(tmp_path / "m.db"))
    assert tmp_path / "m.db" == default_memory_path()


def test_missing_folder_is_a_configuration_error(tmp_path: Path) -> None:
    """A path in a folder that does not exist says which folder and what to do."""
    with pytest.raises(ConfigurationError, match=r"does not exist\. Create it, or pass another `path` / `--db`"):
        DocumentStore(tmp_path / "nope" / "m.db")


def test_a_file_that_is_not_a_database_is_rejected(tmp_path: Path) -> None:
    """Opening a non-SQLite file is a configuration error naming it."""
    path = tmp_path / "notes.txt"
    path.write_text("just text, long enough to not look like an empty database file" * 10)
    with pytest.raises(ConfigurationError, match=r"notes.txt'.*not an atomtask memory database"):
        DocumentStore(path)


def test_a_newer_schema_version_is_rejected(tmp_path: Path) -> None:
    """A store written by a newer atomtask is refused rather than misread."""
    path = tmp_path / "m.db"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(ConfigurationError, match="schema version 99"):
        DocumentStore(path)


def test_store_tables_are_documents_and_their_index(store: DocumentStore) -> None:
    """The store creates only the documents table and its FTS5 index (with FTS5's shadow tables)."""
    tables = store.tables()
    assert {"documents", "documents_fts"} <= set(tables)
    assert all(t == "documents" or t.startswith("documents_fts") for t in tables)
