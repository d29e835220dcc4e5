"""Batch runs: one template or workflow over many items, with concurrency, rate limits and a durable record.

`_items` reads JSONL/CSV input, `_record` is the SQLite record of finished items (what resume skips),
`_pacing` the rate limits, the shared 429 backoff and the budget, `_target` the template or workflow
run per item, `_run` the local engine (`BatchRun`, an async iterator of `BatchItemResult`s, and what
`TaskSystem.batch` builds it from), `_provider` the provider batch APIs, and `_dbos` / `_worker` the
DBOS queue that `atomtask worker` processes take items from. The command is `atomtask.cli._batch`.
"""
