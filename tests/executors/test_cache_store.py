"""`ResponseCache`: the SQLite store of answers, its figures, clearing, TTLs, and two processes on one file."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from atomtask import ConfigurationError, ResponseCache
from atomtask.executors._cache_store import default_cache_path


def put(store: ResponseCache, key: str, template: str = "t", tokens: int = 10) -> None:
    store.put(key, template=template, model="m", content="{}", output='{"a": 1}', tokens=tokens, cost=0.5)


def test_a_stored_answer_comes_back() -> None:
    """`get` returns what `put` stored, and None for an unknown key."""
    store = ResponseCache(":memory:", clock=lambda: 100.0)
    put(store, "k1")
    entry = store.get("k1")
    assert entry is not None
    assert ("t", "m", "{}", '{"a": 1}', 10, 0.5, 100.0) == (
        entry.template,
        entry.model,
        entry.content,
        entry.output,
        entry.tokens,
        entry.cost,
        entry.created,
    )
    assert store.get("k2") is None


def test_an_entry_older_than_the_ttl_is_not_served() -> None:
    """An entry is served while younger than `ttl` seconds, and not from then on."""
    now = [1000.0]
    store = ResponseCache(":memory:", clock=lambda: now[0])
    put(store, "k")
    now[0] += 59.9
    assert store.get("k", ttl=60) is not None
    now[0] += 0.1
    assert store.get("k", ttl=60) is None
    assert store.get("k") is not None  # without a TTL any age is good


def test_stats_count_entries_hits_and_saved_tokens_per_template() -> None:
    """Every hit is counted; saved tokens are hits times the tokens the answer took."""
    store = ResponseCache(":memory:")
    put(store, "a1", "alpha", tokens=100)
    put(store, "a2", "alpha", tokens=7)
    put(store, "b1", "beta", tokens=3)
    for _ in range(3):
        store.get("a1")
    store.get("b1")
    stats = store.stats()
    assert (3, 4, 303) == (stats.entries, stats.hits, stats.saved_tokens)
    assert [("alpha", 2, 3, 300), ("beta", 1, 1, 3)] == [
        (t.template, t.entries, t.hits, t.saved_tokens) for t in stats.templates
    ]
    assert (1, 1) == (store.stats("beta").entries, store.stats("beta").hits)


def test_clear_removes_one_templates_entries_or_all() -> None:
    """`clear(template)` removes only that template's answers; `clear()` the rest."""
    store = ResponseCache(":memory:")
    put(store, "a1", "alpha")
    put(store, "a2", "alpha")
    put(store, "b1", "beta")
    assert 2 == store.clear("alpha")
    assert (None, 1) == (store.get("a1"), store.stats().entries)
    assert 0 == store.clear("alpha")
    assert 1 == store.clear()
    assert 0 == store.stats().entries


def test_a_put_replaces_the_entry_and_its_age() -> None:
    """Storing under an existing key replaces the answer and restarts its TTL."""
    now = [0.0]
    store = ResponseCache(":memory:", clock=lambda: now[0])
    put(store, "k")
    now[0] = 100.0
    store.put("k", template="t", model="m2", content=None, output='"x"')
    entry = store.get("k", ttl=10)
    assert entry is not None
    assert ("m2", None, '"x"', 100.0) == (entry.model, entry.content, entry.output, entry.created)


def test_memory_caches_are_separate() -> None:
    """Each `:memory:` cache is its own: nothing is shared between two instances."""
    one, two = ResponseCache(":memory:"), ResponseCache(":memory:")
    put(one, "k")
    assert (True, None) == (one.get("k") is not None, two.get("k"))


def test_a_file_is_opened_in_wal_mode_and_reopened_with_its_entries(tmp_path: Path) -> None:
    """The file is in WAL mode (readers never block the writer) and keeps its answers across opens."""
    path = tmp_path / "cache.sqlite3"
    store = ResponseCache(path)
    put(store, "k")
    store.close()
    assert "wal" == sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    assert ResponseCache(path).get("k") is not None
    assert ResponseCache(path).stats().size_bytes > 0


def test_a_missing_folder_or_a_file_that_is_not_a_database_is_a_configuration_error(tmp_path: Path) -> None:
    """Both say what is wrong with the path and what to do."""
    with pytest.raises(ConfigurationError, match="its folder does not exist; create it"):
        ResponseCache(tmp_path / "nowhere" / "c.sqlite3")
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"this is not sqlite" * 64)
    with pytest.raises(ConfigurationError, match="remove the file or pass another path"):
        ResponseCache(junk)


def test_the_default_path_is_in_atomtask_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`$ATOMTASK_HOME/cache.sqlite3`; opening the default creates the folder."""
    monkeypatch.setenv("ATOMTASK_HOME", str(tmp_path / "h"))
    assert tmp_path / "h" / "cache.sqlite3" == default_cache_path()
    assert str(tmp_path / "h" / "cache.sqlite3") == ResponseCache().path


_WORKER = textwrap.dedent(
    """
    import sys
    from atomtask import ResponseCache

    path, me, other, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    store = ResponseCache(path)
    seen = 0
    for i in range(count):
        store.put(f"{me}-{i}", template=me, model="m", content=None, output=str(i), tokens=1)
        seen += store.get(f"{other}-{i // 2}") is not None
        assert store.get(f"{me}-{i}") is not None
    print(seen)
    """
)


def test_two_processes_share_one_file(tmp_path: Path) -> None:
    """Two processes writing and reading the same file at once both finish, and every answer is there."""
    path = tmp_path / "shared.sqlite3"
    ResponseCache(path).close()  # the schema and WAL mode exist before both start
    count = 300
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(path), me, other, str(count)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for me, other in (("alpha", "beta"), ("beta", "alpha"))
    ]
    outputs = [worker.communicate(timeout=120) for worker in workers]
    assert [0, 0] == [worker.returncode for worker in workers], [err for _, err in outputs]
    stats = ResponseCache(path).stats()
    assert (2 * count, [count, count]) == (stats.entries, [t.entries for t in stats.templates])
    # Each read the other's answers as they appeared; the count varies, every row is intact.
    assert all(int(out) >= 0 for out, _ in outputs)
    assert stats.hits >= 2 * count
