"""A batch record that is damaged, not SQLite, or stops taking writes mid-run; and its file's mode.

At open a damaged file is a `ConfigurationError` naming it and the fix (exit 2 from the command); a
write that fails after an item was paid for keeps the item's answer in the results and says so; the
record file is created owner-only (it holds every item's answer).
"""

from __future__ import annotations

import io
import json
import random
import sqlite3
import stat
from collections import Counter
from pathlib import Path

import pytest
from atomtask import BatchItemResult, BatchNotFoundError, ConfigurationError, TaskStatus, TaskSystem
from atomtask.batch._api import collect
from atomtask.batch._record import BatchRecord
from atomtask.cli._main import main
from atomtask.handlers._blocking import run_blocking

from tests.batch_helpers import write_items, write_templates


def _result(item_id: str) -> BatchItemResult:
    return BatchItemResult(id=item_id, status=TaskStatus.COMPLETE, output={"text": f"answer of {item_id} " * 20})


def _filled(path: Path, items: int = 200) -> Path:
    """A sound record of two batches over several pages, its write-ahead log folded in (one file)."""
    record = BatchRecord(path)
    for batch in ("b1", "b2"):
        record.start(batch, "tag", {"input": "/x/items.jsonl", "concurrency": 4})
        for n in range(items):
            record.save(batch, "fp", "m", _result(f"i{n}"))
    record.close()
    assert not Path(f"{path}-wal").exists()
    return path


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_record_file_and_its_new_folder_are_owner_only(tmp_path: Path) -> None:
    """A new record is created 0600 in a new folder 0700, its write-ahead log 0600."""
    path = tmp_path / "new" / "home" / "batches.sqlite3"
    record = BatchRecord(path)
    record.save("b", "fp", "m", _result("a"))
    assert (0o600, 0o700, 0o700) == (_mode(path), _mode(path.parent), _mode(path.parent.parent))
    assert 0o600 == _mode(Path(f"{path}-wal"))
    record.close()


def test_an_existing_record_keeps_its_mode(tmp_path: Path) -> None:
    """A record an operator made group-readable on purpose is left so."""
    path = tmp_path / "batches.sqlite3"
    BatchRecord(path).close()
    path.chmod(0o640)
    BatchRecord(path).close()
    assert 0o640 == _mode(path)


def test_a_file_that_is_not_sqlite_is_refused_with_the_fix(tmp_path: Path) -> None:
    """A text file given as the record: `ConfigurationError` naming the file, moving it aside, or `--db`."""
    path = tmp_path / "notes.txt"
    path.write_text("these are my notes, not a database\n" * 200, encoding="utf-8")
    with pytest.raises(ConfigurationError) as caught:
        BatchRecord(path)
    said = str(caught.value)
    assert f"Cannot use the batch record {str(path)!r}" in said
    assert f"mv {path} {path}.damaged" in said and "`--db`" in said


def test_a_damaged_page_is_refused_at_open(tmp_path: Path) -> None:
    """Pages overwritten in the middle of the file: refused when opened (`quick_check`), not at the first read."""
    path = _filled(tmp_path / "b.sqlite3")
    size = path.stat().st_size
    with path.open("r+b") as f:
        f.seek(size // 2 // 4096 * 4096)
        f.write(bytes(random.Random(1).getrandbits(8) for _ in range(3 * 4096)))
    with pytest.raises(ConfigurationError, match="damaged, not a batch record, or not writable"):
        BatchRecord(path)


def test_a_row_that_is_not_a_result_is_refused(tmp_path: Path) -> None:
    """A row whose result is not a result's JSON: a `ConfigurationError` when the batch reads the record back."""
    path = _filled(tmp_path / "b.sqlite3", items=3)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE items SET result = '{\"id\": 1' WHERE item_id = 'i1'")
    record = BatchRecord(path)
    with pytest.raises(ConfigurationError, match="Cannot use the batch record"):
        record.finished("b1", "fp", "m")


def test_a_damaged_record_exits_2_with_the_path_and_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`atomtask batch --db DAMAGED`: exit 2, the file and what to do; nothing run."""
    monkeypatch.setenv("ATOMTASK_HOME", str(tmp_path / "home"))
    templates = write_templates(tmp_path / "templates")
    db = tmp_path / "b.sqlite3"
    db.write_bytes(b"SQLite format 3\x00" + b"\xff" * 8000)
    items = write_items(tmp_path / "items.jsonl", 3)
    err = io.StringIO()
    argv = ["batch", "tag", "--templates", str(templates), "--input", str(items), "--db", str(db)]
    assert 2 == main(argv, stderr=err)
    assert f"atomtask: error: Cannot use the batch record {str(db)!r}" in err.getvalue()
    assert "Move it aside" in err.getvalue()
    assert "--resume" not in err.getvalue()


def _refuse_writes(db: Path, *item_ids: str) -> None:
    """Make the record refuse to write these items' rows, as a damaged or full file would (another connection)."""
    BatchRecord(db).close()
    listed = ", ".join(f"'{item_id}'" for item_id in item_ids)
    with sqlite3.connect(db) as conn:
        conn.execute(
            f"CREATE TRIGGER refuse BEFORE INSERT ON items WHEN NEW.item_id IN ({listed}) "
            "BEGIN SELECT RAISE(ABORT, 'database disk image is malformed'); END"
        )


def test_a_write_that_fails_after_the_item_ran_keeps_its_answer(tmp_path: Path) -> None:
    """Items whose row cannot be written are still yielded with their answers; the batch goes on; a re-run runs them."""
    templates = write_templates(tmp_path / "templates")
    system = TaskSystem(templates=templates)  # the synthetic model: offline
    db = tmp_path / "b.sqlite3"
    _refuse_writes(db, "i2", "i4")
    items = [{"id": f"i{n}", "text": f"item-{n}"} for n in range(6)]
    run = system.batch("tag", items, batch_id="b", db=db, concurrency=2)
    results = run_blocking(collect(run))
    assert {f"i{n}" for n in range(6)} == {r.id for r in results}
    assert {TaskStatus.COMPLETE} == {r.status for r in results}
    assert ["i2", "i4"] == sorted(run.unrecorded)
    assert "IntegrityError: database disk image is malformed" == run.record_error
    assert 6 == run.done
    rerun = run_blocking(collect(system.batch("tag", items, batch_id="b", db=db)))
    assert {"i2", "i4"} == {r.id for r in rerun if not r.resumed}


def test_the_command_warns_once_and_counts_the_unrecorded_items(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`atomtask batch`: every item in `-o`, one warning when the first write fails, the summary's count; exit 0."""
    monkeypatch.setenv("ATOMTASK_HOME", str(tmp_path / "home"))
    templates = write_templates(tmp_path / "templates")
    db = tmp_path / "b.sqlite3"
    _refuse_writes(db, "i1", "i3", "i5")
    items, out, err = write_items(tmp_path / "items.jsonl", 8), tmp_path / "out.jsonl", io.StringIO()
    argv = ["batch", "tag", "--templates", str(templates), "--input", str(items), "--db", str(db), "-o", str(out)]
    assert 0 == main(argv, stderr=err)
    written = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert {f"i{n}" for n in range(8)} == {line["id"] for line in written}
    said = err.getvalue()
    assert 1 == said.count("atomtask: warning: item 'i1' could not be written")  # the first one, as it happens
    assert "3 finished items could not be written to the batch record" in said  # the summary
    assert "8 done, 0 failed" in said
    quiet = io.StringIO()
    assert 0 == main([*argv, "-q", "--batch-id", "other"], stderr=quiet)
    assert "3 finished items could not be written" in quiet.getvalue()  # `-q` hides the summary, not this


def test_fuzzed_record_files_raise_only_typed_errors(tmp_path: Path) -> None:
    """Byte-flipped and truncated record files, opened and read as a batch run does: a typed error or a sound record."""
    sound = _filled(tmp_path / "sound.sqlite3", items=60)
    data = sound.read_bytes()
    rng = random.Random(20261127)
    outcomes: Counter[str] = Counter()
    escaped: list[str] = []
    for case in range(250):
        broken = bytearray(data)
        if case % 4 == 0:
            broken = broken[: rng.randrange(0, len(data))]
        else:
            for _ in range(rng.choice((1, 4, 32))):
                where = rng.randrange(0, len(broken))
                broken[where] ^= 1 << rng.randrange(8)
        path = tmp_path / f"case-{case}.sqlite3"
        path.write_bytes(bytes(broken))
        try:
            record = BatchRecord(path)
            try:
                record.batch_ids()
                record.spec("b1")
                record.finished("b1", "fp", "m")
                record.start("b3", "tag", {"input": "x"})
            finally:
                record.close()
            outcomes["sound"] += 1
        except (ConfigurationError, BatchNotFoundError) as exc:
            outcomes[type(exc).__name__] += 1
        except Exception as exc:  # what this test counts
            escaped.append(f"case {case}: {type(exc).__name__}: {exc}")
        for leftover in tmp_path.glob(f"case-{case}.sqlite3*"):
            leftover.unlink()
    assert [] == escaped
    assert outcomes["ConfigurationError"] > 80  # most damage is seen (a flip in free space or a text is not)
