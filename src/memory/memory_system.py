"""`MemorySystem`: stored documents, and an LLM task that judges which are relevant to a query.

The reference internal subsystem: it calls a task and trusts its type. A query pre-selects
candidates with SQLite full-text search (so the prompt stays bounded however large the store
grows), packs as many as fit the prompt budget, executes the shipped `associative_match` template
with `expect=AssociativeMatchResult`, and passes the validated answer on without validating it
again: only ids that were not among the candidates are dropped, and noted.

Each query is a fresh task run: no message history goes in, none is kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import attrs
from atomtask.executors.rendering import render
from atomtask.loading.checks import CompiledTemplate
from atomtask.memory.results import Document, DroppedMatch, MemoryContext, PromptReport
from atomtask.memory.store import DocumentLike, DocumentStore
from atomtask.schemas.builtins import AssociativeMatchResult, MatchItem
from atomtask.system.errors import ConfigurationError, UsageError
from atomtask.system.logs import get_logger
from atomtask.system.results import TaskResult

if TYPE_CHECKING:
    from atomtask.task_system import TaskSystem
    from pydantic_ai.models import Model

__all__ = ["CHARS_PER_TOKEN", "DEFAULT_TEMPLATE", "MemorySystem"]

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
            (`$ATOMTASK_MEMORY_DB`, else `~/.local/share/atomtask/memory.sqlite3`).
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
        from atomtask.task_system import bundled_templates_path

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
