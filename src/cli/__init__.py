"""The `atomtask` command line: `main(argv) -> int`, testable without a subprocess.

`_main` is the entry point and its guard (exit statuses, no traceback, a closed pipe) and how log
events are printed; `_args` the parser shared by every command; `_commands` runs `run`, `eval`,
`list`, `show` and `cache` and hands the others to their modules: `_workflow`, `_batch` (batch and
worker), `_check`, `_memory` and `_test`; `--stream` draws in `_stream`.
"""

from atomtask.cli._main import main

__all__ = ["main"]
