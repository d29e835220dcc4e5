"""`atomtask memory add|query`: the memory system from the shell.

Only argparse is imported at module level, so building the parser costs nothing; the store and
the task system load inside the commands.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

__all__ = ["add_memory_parser", "run_memory"]

EXIT_OK = 0
EXIT_TASK_FAILED = 1
MODEL_ENV = "ATOMTASK_MODEL"

_DB_HELP = (
    "the SQLite file (default: $ATOMTASK_MEMORY_DB, else memory.sqlite3 in $ATOMTASK_HOME, the folder of the "
    "cache, runs and batches: ~/.local/share/atomtask by default)"
)


def add_memory_parser(sub: Any, *, parents: Sequence[argparse.ArgumentParser] = ()) -> None:
    """Add the `memory` command and its `add` / `query` actions to the CLI's subparsers.

    `parents` are the CLI's options every action accepts after it (`-v`, `--log-format`, ...).
    """
    memory = sub.add_parser("memory", help="store documents, and ask a model which are relevant to a query")
    actions = memory.add_subparsers(dest="memory_command", required=True, metavar="ACTION")
    add = actions.add_parser("add", parents=list(parents), help="store text files as documents (id: the path as given)")
    add.add_argument("files", nargs="+", metavar="FILE")
    add.add_argument("--db", metavar="PATH", help=_DB_HELP)
    query = actions.add_parser(
        "query", parents=list(parents), help="print the stored documents relevant to TEXT as JSON"
    )
    query.add_argument("text")
    query.add_argument("--db", metavar="PATH", help=_DB_HELP)
    query.add_argument("--model", help="pydantic-ai model string, e.g. openai-chat:gpt-4o-mini")
    query.add_argument("--base-url", help="the provider's endpoint (openai-chat:, ollama:, anthropic:, ...)")
    query.add_argument("--limit", type=int, default=5, help="the most documents to return (default: 5)")
    query.add_argument(
        "--max-prompt-chars", type=int, metavar="N", help="the prompt budget in characters (default: 12000)"
    )


def run_memory(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run `memory add` or `memory query`; usage errors propagate to the CLI's handler (exit 2)."""
    if args.memory_command == "add":
        return _add(args, out)
    return _query(args, out, err)


def _add(args: argparse.Namespace, out: TextIO) -> int:
    from atomtask.errors import UsageError
    from atomtask.memory._memory import DocumentStore

    documents: list[tuple[str, str, dict[str, Any]]] = []
    for name in args.files:
        path = Path(name)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"Cannot read {name!r} ({exc.strerror}); pass an existing text file.") from None
        except UnicodeDecodeError:
            raise UsageError(f"{name!r} is not UTF-8 text; only text files can be stored.") from None
        documents.append((name, text, {"path": str(path.resolve()), "chars": len(text)}))
    store = DocumentStore(args.db)
    try:
        store.add_many(documents)
        print(f"added {len(documents)} document(s) to {store.path} ({len(store)} stored)", file=out)
    finally:
        store.close()
    return EXIT_OK


def _query(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from atomtask._task_system import TaskSystem
    from atomtask.errors import UsageError
    from atomtask.loading._providers import check_model_string
    from atomtask.memory._memory import MemorySystem, default_memory_path

    path = Path(args.db) if args.db is not None else default_memory_path()
    if str(path) != ":memory:" and not path.is_file():
        # Opening it would create an empty database, and the query would answer "nothing" with exit 0.
        raise UsageError(
            f"No memory database at {str(path)!r}: the file does not exist. Store documents first with "
            f"`atomtask memory add FILE ... --db {path}`, or fix `--db`."
        )
    if args.model is not None:
        check_model_string(args.model, where="`--model`")
    elif os.environ.get(MODEL_ENV):
        check_model_string(os.environ[MODEL_ENV], where=f"the `{MODEL_ENV}` environment variable")
    system = TaskSystem(model=args.model, base_url=args.base_url, instrument=getattr(args, "instrument", None))
    with MemorySystem(system, path=path, max_prompt_chars=args.max_prompt_chars) as memory:
        context = memory.get_relevant_context_for(args.text, limit=args.limit)
    result = context.task_result
    if result is not None and result.notes.default_model_notice and not getattr(args, "quiet", False):
        print(result.notes.default_model_notice, file=err)
    document = context.model_dump(mode="json")
    print(json.dumps(document, indent=2, ensure_ascii=False), file=out)
    if context.error is not None:
        print(f"atomtask: error: {context.error.reason.value}: {context.error.message}", file=err)
        return EXIT_TASK_FAILED
    return EXIT_OK
