"""The provider batches table: recorded before polling, found again by batch, template and model, then collected."""

from __future__ import annotations

from pathlib import Path

from atomtask.batch._provider import ProviderBatch, ProviderBatchRecord


def test_a_recorded_batch_is_pending_until_collected_and_survives_reopening(tmp_path: Path) -> None:
    """`add` commits: another connection sees the batch pending; once collected it is pending no more."""
    path = tmp_path / "record.db"
    record = ProviderBatchRecord(path)
    batch = ProviderBatch(provider_batch_id="batch_1", kind="openai", items={"item-0": "a", "item-1": "b"})
    record.add("b", "fp", "openai-chat:m", batch)
    record.close()
    again = ProviderBatchRecord(path)
    assert [batch] == again.pending("b", "fp", "openai-chat:m")
    assert [] == again.pending("b", "other-template", "openai-chat:m")
    assert [] == again.pending("b", "fp", "anthropic:m")
    again.collected("b", "batch_1")
    assert [] == again.pending("b", "fp", "openai-chat:m")
    assert ["batch_1"] == again.ids("b")
    again.close()
