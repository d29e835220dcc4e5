"""The batch record: finished items kept by batch, item, template fingerprint and model, across processes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from atomtask import BatchItemResult, BatchNotFoundError, TaskError, TaskStatus, UsageNotes
from atomtask.batch._record import BatchRecord, default_record_path


def _result(item_id: str, *, ok: bool = True) -> BatchItemResult:
    if ok:
        return BatchItemResult(id=item_id, status=TaskStatus.COMPLETE, output={"n": 1}, usage=UsageNotes(requests=1))
    error = TaskError(reason="provider_error", message="HTTP 500")
    return BatchItemResult(id=item_id, status=TaskStatus.FAILED, error=error, attempts=3)


def test_saved_items_are_read_back_by_fingerprint_and_model(tmp_path: Path) -> None:
    """An item saved for one fingerprint and model is finished for those only."""
    record = BatchRecord(tmp_path / "b.sqlite3")
    record.save("b1", "fp", "m", _result("a"))
    record.save("b1", "fp", "m", _result("b", ok=False))
    record.close()
    again = BatchRecord(tmp_path / "b.sqlite3")  # a new connection, as a re-run in a new process would
    finished = again.finished("b1", "fp", "m")
    assert {"a": TaskStatus.COMPLETE, "b": TaskStatus.FAILED} == {k: v.status for k, v in finished.items()}
    assert "provider_error" == finished["b"].error.reason  # type: ignore[union-attr]
    assert {} == again.finished("b1", "other-fp", "m")
    assert {} == again.finished("b1", "fp", "other-model")
    assert {} == again.finished("b2", "fp", "m")


def test_a_retried_item_replaces_its_row(tmp_path: Path) -> None:
    """Saving an item again (a retried failure) keeps one row, the newest."""
    record = BatchRecord(tmp_path / "b.sqlite3")
    record.save("b1", "fp", "m", _result("a", ok=False))
    record.save("b1", "fp", "m", _result("a"))
    assert TaskStatus.COMPLETE == record.finished("b1", "fp", "m")["a"].status
    rows = sqlite3.connect(tmp_path / "b.sqlite3").execute("SELECT count(*) FROM items").fetchone()
    assert (1,) == rows


def test_spec_of_a_batch_and_an_unknown_id(tmp_path: Path) -> None:
    """`start` keeps a batch's spec for `--resume`; an unknown id says the near one and how to start."""
    record = BatchRecord(tmp_path / "b.sqlite3")
    record.start("tag-123", "tag", {"input": "/x/items.jsonl", "concurrency": 4})
    assert {"input": "/x/items.jsonl", "concurrency": 4} == record.spec("tag-123")
    with pytest.raises(BatchNotFoundError) as caught:
        record.spec("tag-12")
    assert "Did you mean 'tag-123'?" in str(caught.value)
    assert "tag-12" == caught.value.batch_id


def test_default_path_is_under_atomtask_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a path the record is `$ATOMTASK_HOME/batches.sqlite3`, its folder created."""
    monkeypatch.setenv("ATOMTASK_HOME", str(tmp_path / "home"))
    record = BatchRecord()
    record.close()
    assert tmp_path / "home" / "batches.sqlite3" == default_record_path()
    assert default_record_path().exists()
