"""Batch runs: one template or workflow over many items, with concurrency, rate limits and a durable record.

`items` reads JSONL/CSV input, `record` is the SQLite record of finished items (what resume skips),
`pacing` the rate limits, the shared 429 backoff and the budget, `target` the template or workflow
run per item, `engine` the run itself (`BatchRun`, an async iterator of `BatchItemResult`s), `api`
what `TaskSystem.batch` builds it from, `progress` the bar or periodic line, and `arguments` /
`command` the `atomtask batch` command (wired in by `cli_args` and `cli_commands`).
"""
