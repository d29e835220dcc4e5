"""`MemorySystem`: stored documents, and an LLM task that judges which are relevant to a query.

The reference internal subsystem: it calls a task and trusts its type. A query pre-selects
candidates with SQLite full-text search (so the prompt stays bounded however large the store
grows), packs as many as fit the prompt budget, executes the shipped `associative_match` template
with `expect=AssociativeMatchResult`, and passes the validated answer on without validating it
again: only ids that were not among the candidates are dropped, and noted (`MemoryContext`). Each
query is a fresh task run: no message history goes in, none is kept.

`DocumentStore` keeps the documents in SQLite with an FTS5 index. The schema is created idempotently
(`IF NOT EXISTS`) and versioned with `PRAGMA user_version`, so a store opened again after a restart
finds its documents. The full-text index is an external content FTS5 table kept in step by triggers;
queries are built from arbitrary text by quoting each word, so quotes and FTS operators in the text are
searched for, never interpreted. The file is created owner-only (`private_file`). A damaged file is a
`ConfigurationError` naming it and the ways to recover (found when it is opened, `_paths.store_damage`, or
by any statement that meets damage later); a document whose row cannot be read is left out of searches and
listings with a warning, and `get` of it is that `ConfigurationError`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self

import attrs
from atomtask._logs import get_logger
from atomtask._paths import atomtask_home, private_file, store_damage
from atomtask.errors import ConfigurationError, UsageError
from atomtask.executors._prompts import render
from atomtask.loading._template_registry import CompiledTemplate
from atomtask.schemas._model_registry import AssociativeMatchResult, MatchItem
from atomtask.system._results import TaskError, TaskResult
from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from atomtask._task_system import TaskSystem
    from pydantic_ai.models import Model

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_TEMPLATE",
    "Document",
    "DocumentStore",
    "DroppedMatch",
    "MemoryContext",
    "MemorySystem",
    "PromptReport",
    "default_memory_path",
    "fts_query",
]


class Document(BaseModel):
    """A document in the store: a caller-chosen id, its text, and JSON metadata."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(min_length=1)
    text: str
    metadata: dict[str, Any] = Field(default_factory=dict)


class DroppedMatch(BaseModel):
    """A match the model gave that the memory system did not pass on, and why."""

    model_config = ConfigDict(frozen=True)

    item: MatchItem
    why: Literal["not_a_candidate", "duplicate", "over_limit"]


class PromptReport(BaseModel):
    """How the candidates were fitted into the prompt budget; `cut` says whether anything was left out.

    Attributes:
        budget_chars: the budget for the system text plus the prompt.
        prompt_chars: their length as rendered (at most the budget; pydantic-ai may strip a few
            surrounding blanks, so the model can receive slightly fewer).
        candidates_found: full-text matches considered (at most `max_candidates`).
        sent_ids: the candidates in the prompt, best rank first; only these ids can be matches.
        omitted_ids: candidates left out because they did not fit.
        truncated_ids: candidates sent shortened (over `max_document_chars`, or cut to fit).
        query_truncated: the query was over a quarter of the budget and was shortened.
    """

    budget_chars: int
    prompt_chars: int = 0
    candidates_found: int = 0
    sent_ids: list[str] = Field(default_factory=list)
    omitted_ids: list[str] = Field(default_factory=list)
    truncated_ids: list[str] = Field(default_factory=list)
    query_truncated: bool = False

    @property
    def cut(self) -> bool:
        """True when a candidate, part of one, or part of the query was left out to stay in budget."""
        return bool(self.omitted_ids or self.truncated_ids or self.query_truncated)


class MemoryContext(AssociativeMatchResult):
    """The answer of `MemorySystem.get_relevant_context_for`: an `AssociativeMatchResult` plus what happened.

    `context_summary` and `matches` are the model's validated answer (the `MatchItem` instances the
    task returned, not copies), less the matches listed in `dropped`. `error` is set when the task
    failed (then `matches` is empty); `task_result` is the task's whole `TaskResult` with every
    attempt's raw output and the usage (None when no candidate was found and no model was called).
    """

    matches: list[MatchItem] = Field(default_factory=list)  # empty when the task failed or found nothing
    dropped: list[DroppedMatch] = Field(default_factory=list)
    prompt: PromptReport
    error: TaskError | None = None
    task_result: TaskResult[AssociativeMatchResult] | None = Field(default=None, exclude=True, repr=False)

    @property
    def ok(self) -> bool:
        """True unless the task failed."""
        return self.error is None

    @property
    def dropped_ids(self) -> list[str]:
        """The ids of the dropped matches, in the model's order."""
        return [d.item.id for d in self.dropped]


SCHEMA_VERSION = 1
MEMORY_DB_ENV = "ATOMTASK_MEMORY_DB"
MEMORY_FILE = "memory.sqlite3"
MAX_QUERY_TERMS = 32
"""Words of a query sent to FTS5 (the rest are ignored), so a pasted page does not make a huge query."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    id TEXT PRIMARY KEY NOT NULL,
    text TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}'
);
CREATE VIRTUAL TABLE IF NOT EXISTS documents_fts USING fts5(
    text, content='documents', content_rowid='rowid', tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS documents_ai AFTER INSERT ON documents BEGIN
    INSERT INTO documents_fts(rowid, text) VALUES (new.rowid, new.text);
END;
CREATE TRIGGER IF NOT EXISTS documents_ad AFTER DELETE ON documents BEGIN
    INSERT INTO documents_fts(documents_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
END;
CREATE TRIGGER IF NOT EXISTS documents_au AFTER UPDATE ON documents BEGIN
    INSERT INTO documents_fts(documents_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
    INSERT INTO documents_fts(rowid, text) VALUES (new.rowid, new.text);
END;
"""

_UPSERT = (
    "INSERT INTO documents (id, text, metadata) VALUES (?, ?, ?) "
    "ON CONFLICT(id) DO UPDATE SET text = excluded.text, metadata = excluded.metadata"
)

_WORD = re.compile(r"\w+")

DocumentLike = Document | tuple[str, str] | tuple[str, str, Mapping[str, Any]]
"""What `add_many` takes: a `Document`, or `(id, text)` / `(id, text, metadata)`."""


def default_memory_path() -> Path:
    """`$ATOMTASK_MEMORY_DB`, else `memory.sqlite3` in `atomtask_home()`, the one folder of atomtask's state
    (`$ATOMTASK_HOME`, else `$XDG_DATA_HOME/atomtask`, else `~/.local/share/atomtask`), beside the response
    cache, durable runs and batches. Read at each call."""
    explicit = os.environ.get(MEMORY_DB_ENV)
    if explicit:
        return Path(explicit).expanduser()
    return atomtask_home() / MEMORY_FILE


def fts_query(text: str, *, max_terms: int = MAX_QUERY_TERMS) -> str | None:
    """An FTS5 query matching any word of `text` (each quoted, so no operator is ever interpreted).

    Returns None when `text` has no word at all. Example: `fts_query('refund "NOT" x*')` is
    `'"refund" OR "not" OR "x"'`.
    """
    words = dict.fromkeys(w.lower() for w in _WORD.findall(text))
    terms = ['"' + w.replace('"', '""') + '"' for w in list(words)[:max_terms]]
    return " OR ".join(terms) or None


class DocumentStore:
    """Documents (id, text, metadata) in one SQLite database, searchable with FTS5.

    `path` is a file path, `":memory:"` (gone when closed), or None for `default_memory_path()`.
    Safe to share between threads (one connection behind a lock).
    """

    def __init__(self, path: str | Path | None = None) -> None:
        if path is None:
            path = default_memory_path()
            if not path.parent.exists():
                path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.path = str(path)
        self._lock = threading.Lock()
        self._conn = _connect(self.path)

    def close(self) -> None:
        """Close the database (a `:memory:` store is gone after this)."""
        with self._lock:
            self._conn.close()

    def add(self, id: str, text: str, metadata: Mapping[str, Any] | None = None) -> None:
        """Store a document, replacing the one with the same id."""
        self.add_many([Document(id=id, text=text, metadata=dict(metadata or {}))])

    def add_many(self, documents: Iterable[DocumentLike]) -> int:
        """Store many documents in one transaction (one `executemany`); returns how many."""
        rows = [_row(d) for d in documents]
        with self._lock, self._typed_errors(), self._conn:
            self._conn.executemany(_UPSERT, rows)
        return len(rows)

    def get(self, id: str) -> Document | None:
        """The document stored under `id`, or None."""
        with self._lock, self._typed_errors():
            row = self._conn.execute("SELECT id, text, metadata FROM documents WHERE id = ?", (id,)).fetchone()
        if row is None:
            return None
        document = _document(row, self.path)
        if document is None:
            raise ConfigurationError(
                f"Document {id!r} in memory store {self.path!r} is damaged (its row cannot be read); add it again "
                "(`atomtask memory add`, `DocumentStore.add`) or remove it (`DocumentStore.remove`)."
            )
        return document

    def remove(self, id: str) -> bool:
        """Delete the document `id`; returns whether there was one."""
        with self._lock, self._typed_errors(), self._conn:
            cursor = self._conn.execute("DELETE FROM documents WHERE id = ?", (id,))
        return cursor.rowcount > 0

    def search(self, query: str, *, limit: int = 50) -> list[Document]:
        """Up to `limit` documents sharing a word with `query`, best BM25 rank first (any text is safe)."""
        match = fts_query(query)
        if match is None or limit <= 0:
            return []
        with self._lock, self._typed_errors():
            rows = self._conn.execute(
                "SELECT d.id, d.text, d.metadata FROM documents_fts f JOIN documents d ON d.rowid = f.rowid "
                "WHERE documents_fts MATCH ? ORDER BY f.rank LIMIT ?",
                (match, limit),
            ).fetchall()
        return [d for d in (_document(row, self.path) for row in rows) if d is not None]

    def ids(self) -> list[str]:
        """Every stored id, sorted."""
        with self._lock, self._typed_errors():
            return [
                row[0] for row in self._conn.execute("SELECT id FROM documents ORDER BY id") if isinstance(row[0], str)
            ]

    def tables(self) -> list[str]:
        """The names of the tables in the database (to check what the store writes)."""
        with self._lock, self._typed_errors():
            rows = self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            return [row[0] for row in rows]

    def __len__(self) -> int:
        with self._lock, self._typed_errors():
            (count,) = self._conn.execute("SELECT count(*) FROM documents").fetchone()
        return int(count)

    def __contains__(self, id: object) -> bool:
        return isinstance(id, str) and self.get(id) is not None

    def __iter__(self) -> Iterator[Document]:
        with self._lock, self._typed_errors():
            rows = self._conn.execute("SELECT id, text, metadata FROM documents ORDER BY id").fetchall()
        return (d for d in (_document(row, self.path) for row in rows) if d is not None)

    @contextlib.contextmanager
    def _typed_errors(self) -> Iterator[None]:
        """What SQLite says of a damaged or unusable file, as the `ConfigurationError` that names it and the fix."""
        try:
            yield
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise _unusable(self.path, exc) from None


def _connect(path: str) -> sqlite3.Connection:
    where = "the in-memory store" if path == ":memory:" else f"memory store {path!r}"
    if path != ":memory:" and not Path(path).parent.is_dir():
        raise ConfigurationError(
            f"Cannot open {where}: the folder {str(Path(path).parent)!r} does not exist. "
            "Create it, or pass another `path` / `--db`."
        )
    conn: sqlite3.Connection | None = None
    try:
        if path != ":memory:":
            private_file(path)  # owner-only from its first byte: it holds the user's documents
        conn = sqlite3.connect(path, check_same_thread=False)
        conn.text_factory = _text  # a row whose text is not UTF-8 is one damaged document, not a failed query
        damage = store_damage(conn, path, often=True)
        if damage:
            raise sqlite3.DatabaseError(f"database disk image is malformed ({'; '.join(damage)})")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise ConfigurationError(
                f"The {where} has schema version {version}, newer than this atomtask's {SCHEMA_VERSION}; "
                "upgrade atomtask to open it."
            )
        with conn:
            conn.executescript(_SCHEMA)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException as exc:
        if conn is not None:
            conn.close()
        if not isinstance(exc, sqlite3.Error | UnicodeDecodeError | OSError):
            raise
        if "no such module: fts5" in str(exc):
            raise ConfigurationError(
                f"This Python's SQLite ({sqlite3.sqlite_version}) has no FTS5 full-text search, which the "
                "memory system needs; use a Python built with a standard SQLite (FTS5 is on by default)."
            ) from exc
        raise _unusable(path, exc) from None
    return conn


#: What SQLite's errors about a damaged file say (an `OperationalError` may be damage or a locked, read-only file).
_DAMAGE_WORDS = ("malformed", "decode", "corrupt", "vtable")


class _Undecodable(bytes):
    """The bytes of a text column that are not UTF-8: a damaged row, which `_document` leaves out."""


def _text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return _Undecodable(data)  # type: ignore[return-value]  # told apart from text by `_document`


def _unusable(path: str, exc: BaseException) -> ConfigurationError:
    """The error for a memory store SQLite cannot use (`exc`: what it said), naming the file and what to do."""
    where = "the in-memory store" if path == ":memory:" else f"memory store {path!r}"
    said = str(exc).encode("utf-8", "backslashreplace").decode()[:200]  # SQLite may quote undecodable bytes
    damaged = isinstance(exc, UnicodeDecodeError) or (
        isinstance(exc, sqlite3.DatabaseError)
        and "not a database" not in said  # a file of another kind: not damaged, not ours
        and (not isinstance(exc, sqlite3.OperationalError) or any(w in said for w in _DAMAGE_WORDS))
    )
    if damaged:
        return ConfigurationError(
            f"Cannot use {where}: it is damaged ({type(exc).__name__}: {said}). It holds your documents: restore "
            f"it from a backup, or recover what is left (`sqlite3 {path} .recover | sqlite3 recovered.sqlite3`) and "
            "pass that file (`--db`, `path=`); or delete it and add the documents again."
        )
    if isinstance(exc, sqlite3.OperationalError | OSError):
        return ConfigurationError(f"Cannot open {where}: {said}. Check the path and its permissions.")
    return ConfigurationError(
        f"Cannot open {where}: {said}. It is not an atomtask memory database; pass another path (`--db`, `path=`)."
    )


def _row(document: DocumentLike) -> tuple[str, str, str]:
    if not isinstance(document, Document):
        id_, text, *rest = document
        document = Document(id=id_, text=text, metadata=dict(rest[0]) if rest else {})
    try:
        metadata = json.dumps(document.metadata)
    except (TypeError, ValueError) as exc:
        raise UsageError(
            f"Metadata of document {document.id!r} is not JSON-serialisable ({exc}); "
            "store strings, numbers, booleans, lists and dicts only."
        ) from None
    return (document.id, document.text, metadata)


def _document(row: tuple[Any, ...], path: str) -> Document | None:
    """The document of a row, or None (with a warning) when the row is damaged: a column of the wrong type, metadata
    that is not a JSON object."""
    id_, text, metadata = row
    try:
        if not (isinstance(id_, str) and isinstance(text, str) and isinstance(metadata, str)):
            raise TypeError("a column holds another type")
        parsed = json.loads(metadata)
        if not isinstance(parsed, dict):
            raise TypeError("its metadata is not a JSON object")
        return Document(id=id_, text=text, metadata=parsed)
    except (TypeError, ValueError) as exc:
        log.warning("memory_document_damaged", id=repr(id_)[:80], path=path, error=str(exc)[:200])
        return None


log = get_logger(__name__)

DEFAULT_TEMPLATE = "associative_match"
DEFAULT_PROMPT_CHARS = 12_000
CHARS_PER_TOKEN = 3
"""Token budgets are turned into characters at this rate: a conservative estimate (English text
averages about 4 characters per token on GPT-style tokenizers), so a token budget is not overrun."""
MIN_CANDIDATE_ROOM = 200
"""The fewest characters of candidates a budget must leave room for, or the budget is rejected."""
MIN_PARTIAL = 200
"""A candidate that does not fit is cut to the room left if at least this much is left, else omitted."""
CUT_MARK = " […]"


@attrs.frozen(kw_only=True)
class _Plan:
    inputs: dict[str, Any]
    limit: int
    report: PromptReport


class MemorySystem:
    """Documents in SQLite, and `get_relevant_context_for(query)` answered by an atomic task.

    Example:
        ```python
        memory = MemorySystem(TaskSystem(model="openai-chat:gpt-4o-mini"), path="memory.sqlite3")
        memory.add("refunds", "Refunds are paid within 14 days of the request.")
        context = memory.get_relevant_context_for("How long do refunds take?")
        for match in context.matches:  # MatchItem instances, validated by the task
            print(match.id, match.relevance_score, match.reason)
        ```

    Args:
        task_system: runs the task; the shipped `associative_match` template is loaded into it if
            it has no template of that name.
        path: the SQLite file, `":memory:"`, or None for `default_memory_path()`
            (`$ATOMTASK_MEMORY_DB`, else `$ATOMTASK_HOME/memory.sqlite3`).
        template: the template to run; it must answer the built-in `AssociativeMatchResult` (or a
            subclass; `schema: atomtask.AssociativeMatchResult` names it even when a schema of your own
            is called `AssociativeMatchResult`) and take `query` and `candidates` (and `limit`, if it
            declares it).
        model: the model for the task (else the template's, the system's, ... as for `execute`).
        max_prompt_chars: the budget for the system text plus the prompt, in characters.
        max_prompt_tokens: the same budget in tokens, at `CHARS_PER_TOKEN` characters a token;
            with both, the smaller wins; with neither, 12,000 characters.
        max_candidates: how many full-text matches are considered for the prompt.
        max_document_chars: a longer document is cut to this many characters in the prompt.
    """

    def __init__(
        self,
        task_system: TaskSystem,
        path: str | Path | None = None,
        *,
        template: str = DEFAULT_TEMPLATE,
        model: Model | str | None = None,
        max_prompt_chars: int | None = None,
        max_prompt_tokens: int | None = None,
        max_candidates: int = 50,
        max_document_chars: int = 2_000,
    ) -> None:
        self.task_system = task_system
        self.template = template
        self.model = model
        self.max_candidates = max_candidates
        self.max_document_chars = max_document_chars
        self.budget_chars = _budget(max_prompt_chars, max_prompt_tokens)
        self._compiled = _compiled_template(task_system, template)
        self._candidate_slots = _candidate_slots(self._compiled)
        fixed = self._fixed_chars("", 1)
        if (self.budget_chars - self.budget_chars // 4 - fixed) // self._candidate_slots < MIN_CANDIDATE_ROOM:
            needed = (fixed + MIN_CANDIDATE_ROOM * self._candidate_slots) * 4 // 3 + 1
            raise ConfigurationError(
                f"A prompt budget of {self.budget_chars} characters leaves no room for candidates: template "
                f"{template!r} alone takes {fixed}. Raise `max_prompt_chars` to at least {needed}."
            )
        self.store = DocumentStore(path)

    # -- the store ---------------------------------------------------------------------------

    def add(self, id: str, text: str, metadata: Mapping[str, Any] | None = None) -> None:
        """Store a document (replacing the one with the same id)."""
        self.store.add(id, text, metadata)

    def add_many(self, documents: Iterable[DocumentLike]) -> int:
        """Store many documents in one transaction; returns how many."""
        return self.store.add_many(documents)

    def get(self, id: str) -> Document | None:
        """The document `id`, or None."""
        return self.store.get(id)

    def remove(self, id: str) -> bool:
        """Delete the document `id`; returns whether there was one."""
        return self.store.remove(id)

    def __len__(self) -> int:
        return len(self.store)

    def close(self) -> None:
        """Close the database."""
        self.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- queries -----------------------------------------------------------------------------

    def get_relevant_context_for(self, query: str, *, limit: int = 5) -> MemoryContext:
        """The stored documents relevant to `query`, judged by the task; never raises for a failed task.

        Returns a `MemoryContext`, which is an `AssociativeMatchResult` (`context_summary`, `matches`)
        plus `dropped` (matches whose id was not a candidate, duplicates, matches past `limit`),
        `prompt` (what fitted the budget and what was cut), `error` (set when the task failed) and
        `task_result` (the task's `TaskResult`, with every attempt's raw output and the usage).
        """
        plan = self._plan(query, limit)
        if isinstance(plan, MemoryContext):
            return plan
        result = self.task_system.execute(self.template, plan.inputs, model=self.model, expect=AssociativeMatchResult)
        return self._finish(plan, result)

    async def get_relevant_context_for_async(self, query: str, *, limit: int = 5) -> MemoryContext:
        """The async form of `get_relevant_context_for` (`TaskSystem.execute_async` underneath)."""
        plan = self._plan(query, limit)
        if isinstance(plan, MemoryContext):
            return plan
        result = await self.task_system.execute_async(
            self.template, plan.inputs, model=self.model, expect=AssociativeMatchResult
        )
        return self._finish(plan, result)

    def _plan(self, query: str, limit: int) -> _Plan | MemoryContext:
        if limit < 1:
            raise UsageError(f"`limit` must be at least 1, got {limit}.")
        report = PromptReport(budget_chars=self.budget_chars)
        candidates = self.store.search(query, limit=self.max_candidates)
        report.candidates_found = len(candidates)
        if not candidates:
            log.info("memory_no_candidates", query_chars=len(query))
            return MemoryContext.model_construct(context_summary="", matches=[], dropped=[], prompt=report)
        query_cap = self.budget_chars // 4
        if len(query) > query_cap:
            query, report.query_truncated = query[:query_cap] + CUT_MARK, True
        fixed = self._fixed_chars(query, limit)
        room = (self.budget_chars - fixed) // self._candidate_slots
        text = self._pack(candidates, room, report)
        report.prompt_chars = fixed + len(text) * self._candidate_slots
        if not report.sent_ids:
            return MemoryContext.model_construct(context_summary="", matches=[], dropped=[], prompt=report)
        if report.cut:
            log.info(
                "memory_prompt_cut",
                budget_chars=self.budget_chars,
                sent=len(report.sent_ids),
                omitted=len(report.omitted_ids),
                truncated=len(report.truncated_ids),
                query_truncated=report.query_truncated,
            )
        return _Plan(inputs=self._inputs(query, text, limit), limit=limit, report=report)

    def _pack(self, candidates: list[Document], room: int, report: PromptReport) -> str:
        blocks: list[str] = []
        used = 0
        for doc in candidates:
            text, cut = doc.text, False
            if len(text) > self.max_document_chars:
                text, cut = text[: self.max_document_chars] + CUT_MARK, True
            block = _block(doc.id, text)
            sep = 1 if blocks else 0
            if used + sep + len(block) > room:
                spare = room - used - sep - len(_block(doc.id, "")) - len(CUT_MARK)
                # The first candidate is always sent (cut to fit); later ones only if a useful part fits.
                if spare < (MIN_PARTIAL if blocks else 1):
                    report.omitted_ids.append(doc.id)
                    continue
                text, cut = doc.text[:spare] + CUT_MARK, True
                block = _block(doc.id, text)
            blocks.append(block)
            used += sep + len(block)
            report.sent_ids.append(doc.id)
            if cut:
                report.truncated_ids.append(doc.id)
        return "\n".join(blocks)

    def _finish(self, plan: _Plan, result: TaskResult[AssociativeMatchResult]) -> MemoryContext:
        if not result.ok or result.parsedContent is None:
            assert result.error is not None  # a result that is not COMPLETE always carries its error
            log.warning("memory_query_failed", reason=result.error.reason.value, template=self.template)
            return MemoryContext.model_construct(
                context_summary="", matches=[], dropped=[], prompt=plan.report, error=result.error, task_result=result
            )
        answer = result.parsedContent
        candidates = set(plan.report.sent_ids)
        kept: list[MatchItem] = []
        dropped: list[DroppedMatch] = []
        seen: set[str] = set()
        for item in answer.matches:
            if item.id not in candidates:
                dropped.append(DroppedMatch(item=item, why="not_a_candidate"))
            elif item.id in seen:
                dropped.append(DroppedMatch(item=item, why="duplicate"))
            elif len(kept) >= plan.limit:
                dropped.append(DroppedMatch(item=item, why="over_limit"))
            else:
                kept.append(item)
                seen.add(item.id)
        if dropped:
            log.warning("memory_matches_dropped", ids=[d.item.id for d in dropped], why=[d.why for d in dropped])
        # The answer was validated by the task; the context is assembled from it without validating again.
        return MemoryContext.model_construct(
            context_summary=answer.context_summary,
            matches=kept,
            dropped=dropped,
            prompt=plan.report,
            error=None,
            task_result=result,
        )

    def _inputs(self, query: str, candidates: str, limit: int) -> dict[str, Any]:
        inputs: dict[str, Any] = {"query": query, "candidates": candidates}
        if "limit" in self._compiled.template.params:
            inputs["limit"] = limit
        return inputs

    def _fixed_chars(self, query: str, limit: int) -> int:
        """Characters of the system text and prompt with no candidates (rendered as the executor will)."""
        compiled = self._compiled
        values = {**compiled.defaults, **self._inputs(query, "", limit)}
        system = (
            render(compiled.template.system, compiled.system_placeholders, values) if compiled.template.system else ""
        )
        return len(system) + len(render(compiled.template.instructions, compiled.instruction_placeholders, values))


def _candidate_slots(compiled: CompiledTemplate) -> int:
    placeholders = (*compiled.system_placeholders, *compiled.instruction_placeholders)
    slots = sum(1 for ph in placeholders if ph.param == "candidates")
    if not slots:
        raise ConfigurationError(
            f"Template {compiled.name!r} never shows the candidates; put `{{{{candidates}}}}` in its instructions."
        )
    return slots


def _block(id: str, text: str) -> str:
    return f'<document id="{id}">\n{text}\n</document>'


def _budget(chars: int | None, tokens: int | None) -> int:
    limits = [n for n in (chars, None if tokens is None else tokens * CHARS_PER_TOKEN) if n is not None]
    for name, value in (("max_prompt_chars", chars), ("max_prompt_tokens", tokens)):
        if value is not None and value <= 0:
            raise ConfigurationError(f"`{name}` must be positive, got {value}.")
    return min(limits) if limits else DEFAULT_PROMPT_CHARS


def _compiled_template(task_system: TaskSystem, name: str) -> CompiledTemplate:
    if name not in task_system.templates and name == DEFAULT_TEMPLATE:
        from atomtask._task_system import bundled_templates_path

        task_system.load(bundled_templates_path() / f"{DEFAULT_TEMPLATE}.yaml")
    compiled = task_system.templates.compiled(name)
    output = compiled.output_cls
    if output is None or not issubclass(output, AssociativeMatchResult):
        declared = output.__name__ if output is not None else "text"
        raise ConfigurationError(
            f"Template {name!r} answers {declared}, but the memory system needs atomtask's `AssociativeMatchResult`; "
            "set its `output_format.schema` to `atomtask.AssociativeMatchResult` (the built-in class, whatever "
            "your own schemas are called)."
        )
    missing = {"query", "candidates"} - set(compiled.template.params)
    if missing:
        raise ConfigurationError(
            f"Template {name!r} must declare the parameters `query` and `candidates` (missing: "
            f"{', '.join(sorted(missing))})."
        )
    return compiled
