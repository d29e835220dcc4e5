"""The response cache in the executor: whether a call uses it, its exact key, a hit as a result, a store.

The key is a SHA-256 of everything that decides the answer: the template name, the model (and its
fallbacks, and the endpoint), the model settings as sent (the TaskSystem's under the template's and
the call's), the rendered system text and prompt, the SHA-256 (or the URL) of each image, document or
audio value sent beside it, the output class's JSON Schema (sorted; so a schema change is a miss), the
output mode and the repair mode. Nothing here is imported into a run that does
not use the cache beyond this module itself: the SQLite store (`_cache_store`) opens on the first
cached call, and no key is computed while the cache is off. The store is called on the caller's
thread (tens of microseconds a statement); only a file another process is writing makes it wait, up to
the store's busy timeout.

A call whose policy is off (`cache=False`, which a workflow step that writes a `redact: true` field is
given) neither reads nor writes the store: no key, no statement. A stored entry that cannot be read
(damaged: not UTF-8, not JSON, a column of the wrong type) is a miss with a warning, and the model's
answer replaces it; a store that cannot be opened fails the call with `configuration_error`.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
from atomtask._logs import get_logger
from atomtask.errors import ConfigurationError
from atomtask.system._results import FailureReason, TaskError, TaskNotes, TaskResult, TaskStatus
from atomtask.system._templates import CachePolicy, cache_choice
from pydantic import BaseModel, ValidationError

if TYPE_CHECKING:
    from atomtask.executors._cache_store import ResponseCache
    from atomtask.handlers._base import BaseHandler
    from atomtask.handlers._llm import ModelCall

__all__ = ["CacheChoice", "CacheConfig", "CachePlan", "cache_key", "schema_fingerprint"]

log = get_logger(__name__)

#: What a call (or the CLI) may pass as `cache=`: on, off, a policy, or None (the template decides).
CacheChoice = bool | CachePolicy | Mapping[str, Any] | None
#: Bumped when the key's ingredients or the stored form change, so old rows are misses, not misreads.
KEY_VERSION = "atomtask-cache-1"
# Parametrised once: pydantic's `TaskResult[Any]` lookup costs about a millisecond inside a run.
_Result = TaskResult[Any]
_FINGERPRINTS: weakref.WeakKeyDictionary[type[BaseModel], str] = weakref.WeakKeyDictionary()


def schema_fingerprint(output_cls: type[BaseModel] | None) -> str:
    """A SHA-256 of the output class's JSON Schema (keys sorted), `"text"` for text output; memoised per class."""
    if output_cls is None:
        return "text"
    found = _FINGERPRINTS.get(output_cls)
    if found is None:
        schema = json.dumps(output_cls.model_json_schema(), sort_keys=True, default=repr)
        found = _FINGERPRINTS[output_cls] = hashlib.sha256(schema.encode()).hexdigest()
    return found


def cache_key(call: ModelCall, handler: BaseHandler) -> str:
    """The exact key of one fully rendered call (see the module docstring for what goes in)."""
    settings = {**(handler.model_settings or {}), **(call.model_settings or {})}
    material: list[Any] = [
        KEY_VERSION,
        call.template,
        call.model.label,
        [choice.label for choice in call.fallbacks],
        handler.base_url,
        settings,
        call.system,
        call.prompt,
        schema_fingerprint(call.output_cls),
        call.mode.value if call.output_cls is not None else "text",
        str(call.repair),
    ]
    if call.media:  # what it was shown: each image's, document's or audio's hash (or URL), not its bytes
        material.append([[param, *media.fingerprint()] for param, media in call.media])
    if call.tools is not None:  # what the model could call: the functions' schemas, the servers
        material.append([tool.tool_def.parameters_json_schema | {"name": tool.name} for tool in call.tools.functions])
        material.append([spec.model_dump() for spec in call.tools.mcp])
    text = json.dumps(material, sort_keys=True, default=repr, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@attrs.frozen(kw_only=True)
class CachePlan:
    """A call that uses the cache: its key and how old a stored answer may be (seconds; None: any age)."""

    key: str
    ttl: float | None


class CacheConfig:
    """A TaskSystem's cache: on or off over every template (None: each template decides), and its store.

    Args:
        enabled: True or False overrides every template's `cache:` (a call's `cache=` still wins);
            None leaves it to the templates (off where they say nothing).
        store: where answers are kept: a file path, `":memory:"`, an open `ResponseCache`, or None for
            `$ATOMTASK_HOME/cache.sqlite3`. A path is opened now (a bad one raises `ConfigurationError`);
            the default file is opened on the first call that uses the cache.
    """

    def __init__(self, enabled: bool | None = None, store: str | Path | ResponseCache | None = None) -> None:
        if enabled is not None and not isinstance(enabled, bool):
            raise ConfigurationError(
                f"Invalid `cache=` for the TaskSystem: {enabled!r}. Pass True, False or None (each template "
                "decides); a TTL goes on a template (`cache: {ttl: 1h}`) or a call (`cache={'ttl': '1h'}`)."
            )
        self.enabled = enabled
        self._store: ResponseCache | None = None
        self._opening = threading.Lock()
        if store is not None:
            from atomtask.executors._cache_store import ResponseCache

            self._store = store if isinstance(store, ResponseCache) else ResponseCache(store)

    @property
    def store(self) -> ResponseCache:
        """The `ResponseCache` (opened on first use); raises `ConfigurationError` when it cannot be opened."""
        if self._store is None:
            with self._opening:  # tasks on several threads: one connection, not one each
                if self._store is None:
                    from atomtask.executors._cache_store import ResponseCache

                    self._store = ResponseCache()
        return self._store

    def policy(
        self, call: CacheChoice, template: CachePolicy | None, *, side_effects: bool = False
    ) -> CachePolicy | None:
        """The policy of one call (call > TaskSystem > template), or None when the cache is off for it.

        `side_effects` (a template with tools): only the call or the template itself turns the cache on, never
        the TaskSystem's (whose off still holds). A bad `cache=` (`"yes"`, `1`, `{"ttl": "soon"}`) raises
        `ConfigurationError`.
        """
        if call is None or call is True or call is False:
            on = call if call is not None else None if side_effects and self.enabled else self.enabled
            if on is None:
                return template if template is not None and template.enabled else None
            if not on:
                return None
            return template if template is not None and template.ttl is not None else CachePolicy()
        chosen = cache_choice(call, what="`cache=` for this call")
        assert isinstance(chosen, CachePolicy)  # a bool or None was handled above
        return chosen if chosen.enabled else None

    def plan(self, call: ModelCall, policy: CachePolicy, handler: BaseHandler) -> CachePlan:
        """The key and TTL of a call that uses the cache."""
        return CachePlan(key=cache_key(call, handler), ttl=policy.ttl_seconds)

    def lookup(self, plan: CachePlan, call: ModelCall, started: float) -> TaskResult[Any] | None:
        """The stored answer as a COMPLETE result (re-validated, zero usage, `notes.cached`), or None on a miss.

        A cache that cannot be opened fails the task (configuration_error); one that cannot be read is a miss.
        """
        try:
            store = self.store
        except ConfigurationError as exc:
            notes = TaskNotes(template=call.template, duration_ms=(time.perf_counter() - started) * 1000)
            error = TaskError(reason=FailureReason.CONFIGURATION_ERROR, message=exc.message)
            return _Result(status=TaskStatus.FAILED, notes=notes, error=error)
        import sqlite3  # already imported by the store

        try:
            entry = store.get(plan.key, ttl=plan.ttl, count=False)  # counted below, once it validates
        except (sqlite3.Error, UnicodeDecodeError) as exc:  # a locked, full or damaged file: the model is asked
            # A damaged entry is a miss; the answer the model gives now replaces it (`save`).
            said = str(exc).encode("utf-8", "backslashreplace").decode()[:200]
            log.warning("cache_read_failed", template=call.template, key=plan.key[:16], path=store.path, error=said)
            return None
        if entry is None:
            log.debug("cache_miss", template=call.template, key=plan.key[:16])
            return None
        try:
            output: Any = (
                call.output_cls.model_validate_json(entry.output)
                if call.output_cls is not None
                else json.loads(entry.output)
            )
        except (ValidationError, ValueError) as exc:
            damaged = not isinstance(exc, ValidationError) or any(e["type"] == "json_invalid" for e in exc.errors())
            if damaged:  # not JSON: the stored answer was damaged; asked again, the model's answer replaces it
                log.warning("cache_entry_damaged", template=call.template, key=plan.key[:16], path=store.path)
            else:  # a class whose validators changed without its schema
                log.info("cache_entry_invalid", template=call.template, key=plan.key[:16], error=str(exc)[:200])
            return None
        try:
            store.count_hit(plan.key)
        except sqlite3.Error as exc:  # the answer is good; only the figure for `cache stats` is lost
            log.warning("cache_hit_not_counted", template=call.template, error=f"{type(exc).__name__}: {exc}")
        notes = TaskNotes(
            template=call.template,
            model=entry.model,
            model_source=call.model.source,
            output_mode=call.mode.value if call.output_cls is not None else "text",
            duration_ms=(time.perf_counter() - started) * 1000,
            cached=True,
            cache_key=plan.key,
            media=[media.note(param) for param, media in call.media],
        )
        log.info("task_cache_hit", template=call.template, key=plan.key[:16], model=entry.model)
        return _Result(status=TaskStatus.COMPLETE, content=entry.content, parsedContent=output, notes=notes)

    def save(self, plan: CachePlan, result: TaskResult[Any]) -> None:
        """Store a COMPLETE result under the plan's key; a failed one never. A store fault is logged, not raised."""
        if not result.ok:
            return
        import sqlite3

        import pydantic_core

        usage = result.notes.usage
        try:
            self.store.put(
                plan.key,
                template=result.notes.template,
                model=result.notes.model,
                content=result.content,
                output=pydantic_core.to_json(result.parsedContent, by_alias=True).decode(),
                tokens=usage.total_tokens,
                cost=usage.cost,
            )
        except (sqlite3.Error, ValueError) as exc:  # the answer was paid for and is valid: return it regardless
            log.warning("cache_write_failed", template=result.notes.template, error=f"{type(exc).__name__}: {exc}")
            return
        result.notes.cache_key = plan.key
