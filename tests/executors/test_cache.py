"""The response cache in the executor: what is a hit, what a hit looks like, what is never stored."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
from atomtask import (
    CachePolicy,
    ConfigurationError,
    FailureReason,
    OutputFormat,
    OutputMode,
    ParamSpec,
    RepairMode,
    ResponseCache,
    TaskSystem,
    Template,
)
from atomtask.executors._cache import CacheConfig, cache_key, schema_fingerprint
from atomtask.handlers import BaseHandler, ModelChoice
from atomtask.handlers._llm import ModelCall
from pydantic import BaseModel, field_validator

from tests.helpers import Recorder

ADA = {"name": "Ada Lovelace", "email": "ada@example.com"}


class Contact(BaseModel):
    name: str
    email: str | None = None


class Clock:
    """Seconds since the epoch that a test moves by hand."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def make_system(
    recorder: Recorder, store: ResponseCache | None = None, *, cache: Any = True, **system_kw: Any
) -> TaskSystem:
    system = TaskSystem(model=recorder.model, cache_path=store or ResponseCache(":memory:"), **system_kw)
    system.models.register(Contact)
    system.register(
        Template(
            name="extract",
            params={"text": ParamSpec(type="str")},
            system="You are a careful clerk.",
            instructions="Extract: {{text}}",
            output_format=OutputFormat(type="json", schema="Contact"),
            cache=cache,
        )
    )
    return system


def test_a_repeated_call_is_served_from_the_cache() -> None:
    """The second identical call asks no model and returns an equal, re-validated Contact."""
    rec = Recorder(ADA)
    system = make_system(rec)
    first = system.execute("extract", {"text": "Ada"})
    second = system.execute("extract", {"text": "Ada"})
    assert 1 == len(rec.calls)
    assert (True, True) == (first.ok, second.ok)
    assert isinstance(second.parsedContent, Contact)
    assert first.parsedContent == second.parsedContent
    assert first.content == second.content


def test_a_hit_is_marked_cached_with_zero_usage() -> None:
    """A hit's notes say cached, carry the key it was stored under, no attempts and zero usage."""
    rec = Recorder(ADA)
    system = make_system(rec)
    first = system.execute("extract", {"text": "Ada"})
    second = system.execute("extract", {"text": "Ada"})
    assert (False, True) == (first.notes.cached, second.notes.cached)
    assert first.notes.cache_key is not None
    assert first.notes.cache_key == second.notes.cache_key
    assert (0, 0, 0, None) == (
        second.notes.usage.requests,
        second.notes.usage.total_tokens,
        len(second.notes.attempts),
        second.notes.usage.cost,
    )
    assert 1 == first.notes.usage.requests
    assert ("function:recorder", "extract") == (second.notes.model, second.notes.template)


async def test_the_async_path_uses_the_cache_too() -> None:
    """`execute_async` stores and serves like `execute`."""
    rec = Recorder(ADA)
    system = make_system(rec)
    await system.execute_async("extract", {"text": "Ada"})
    hit = await system.execute_async("extract", {"text": "Ada"})
    assert (1, True) == (len(rec.calls), hit.notes.cached)


def test_different_inputs_are_a_miss() -> None:
    """Another rendered prompt is another key."""
    rec = Recorder(ADA, {"name": "Bo"})
    system = make_system(rec)
    system.execute("extract", {"text": "Ada"})
    other = system.execute("extract", {"text": "Bo"})
    assert (2, False, "Bo") == (len(rec.calls), other.notes.cached, other.unwrap().name)


def test_a_model_settings_change_is_a_miss() -> None:
    """The same prompt with another temperature asks the model again; the same settings hit."""
    rec = Recorder(ADA, ADA)
    system = make_system(rec)
    system.execute("extract", {"text": "Ada"}, model_settings={"temperature": 0})
    warmer = system.execute("extract", {"text": "Ada"}, model_settings={"temperature": 0.7})
    again = system.execute("extract", {"text": "Ada"}, model_settings={"temperature": 0})
    assert (2, False, True) == (len(rec.calls), warmer.notes.cached, again.notes.cached)


def test_the_task_systems_model_settings_are_part_of_the_key() -> None:
    """Two systems that differ only in their own model settings do not share answers."""
    store = ResponseCache(":memory:")
    rec = Recorder(ADA, ADA)
    make_system(rec, store, model_settings={"seed": 1}).execute("extract", {"text": "Ada"})
    other = make_system(rec, store, model_settings={"seed": 2}).execute("extract", {"text": "Ada"})
    assert (2, False) == (len(rec.calls), other.notes.cached)


def test_a_schema_change_is_a_miss() -> None:
    """The same template over a changed output class (same name) asks the model again."""

    class Contact(BaseModel):  # the class of a later release: one field more
        name: str
        email: str | None = None
        phone: str | None = None

    store = ResponseCache(":memory:")
    rec = Recorder(ADA, {**ADA, "phone": "555"})
    make_system(rec, store).execute("extract", {"text": "Ada"})
    system = TaskSystem(model=rec.model, cache_path=store)
    system.models.register(Contact)
    system.register(
        Template(
            name="extract",
            params={"text": ParamSpec(type="str")},
            system="You are a careful clerk.",
            instructions="Extract: {{text}}",
            output_format=OutputFormat(type="json", schema="Contact"),
            cache=True,
        )
    )
    result = system.execute("extract", {"text": "Ada"})
    assert (2, False, "555") == (len(rec.calls), result.notes.cached, result.unwrap().phone)


def test_a_failed_task_is_never_cached() -> None:
    """An answer that never validated is not stored: the next call asks the model again."""
    rec = Recorder({"email": "no name"}, ADA)
    system = make_system(rec)
    failed = system.execute("extract", {"text": "Ada"}, retries=0)
    later = system.execute("extract", {"text": "Ada"})
    assert (False, None) == (failed.ok, failed.notes.cache_key)
    assert (2, True, False) == (len(rec.calls), later.ok, later.notes.cached)


def test_an_answer_expires_after_its_ttl() -> None:
    """With `ttl: 60s` an answer is served at 30 s and asked for again at 61 s (an injected clock)."""
    clock = Clock()
    rec = Recorder(ADA, ADA)
    system = make_system(rec, ResponseCache(":memory:", clock=clock), cache={"ttl": "60s"})
    system.execute("extract", {"text": "Ada"})
    clock.now += 30
    assert system.execute("extract", {"text": "Ada"}).notes.cached
    clock.now += 31
    late = system.execute("extract", {"text": "Ada"})
    assert (2, False) == (len(rec.calls), late.notes.cached)
    clock.now += 30  # the fresh answer was stored at 61 s: good until 121 s
    assert system.execute("extract", {"text": "Ada"}).notes.cached


def test_the_cache_is_off_unless_asked_for() -> None:
    """A template that says nothing about `cache` asks the model every time, and no key is computed."""
    rec = Recorder(ADA, ADA)
    system = make_system(rec, cache=None)
    first = system.execute("extract", {"text": "Ada"})
    second = system.execute("extract", {"text": "Ada"})
    assert (2, None, False) == (len(rec.calls), first.notes.cache_key, second.notes.cached)


@pytest.mark.parametrize(
    ("template", "system_cache", "call", "cached"),
    [
        (True, None, False, False),  # the call turns it off
        (None, None, True, True),  # the call turns it on
        (False, None, {"ttl": "1h"}, True),  # a call's mapping is a policy
        (True, False, None, False),  # the TaskSystem turns it off (`--no-cache`)
        (None, True, None, True),  # the TaskSystem turns it on (`--cache`)
        (True, False, True, True),  # the call wins over the TaskSystem
        (False, None, None, False),  # the template says no
    ],
)
def test_call_over_system_over_template(template: Any, system_cache: Any, call: Any, cached: bool) -> None:
    """Whether a call uses the cache: its own `cache=`, else the TaskSystem's, else the template's."""
    rec = Recorder(ADA, ADA)
    system = TaskSystem(model=rec.model, cache_path=ResponseCache(":memory:"), cache=system_cache)
    system.models.register(Contact)
    system.register(
        Template(
            name="extract",
            params={"text": "str"},
            instructions="Extract: {{text}}",
            output_format=OutputFormat(type="json", schema="Contact"),
            cache=template,
        )
    )
    system.execute("extract", {"text": "Ada"}, cache=call)
    assert cached == system.execute("extract", {"text": "Ada"}, cache=call).notes.cached


def test_a_bad_cache_argument_fails_the_call_as_a_configuration_error() -> None:
    """`cache={"ttl": "soon"}` is a FAILED configuration_error naming the argument; no model is called."""
    rec = Recorder()
    result = make_system(rec).execute("extract", {"text": "Ada"}, cache={"ttl": "soon"})
    assert result.error is not None
    assert FailureReason.CONFIGURATION_ERROR == result.error.reason
    assert "Invalid `cache=` for this call: `ttl`: 'soon' is not a duration" in result.error.message
    assert [] == rec.calls


def test_a_repair_mode_change_is_a_miss() -> None:
    """The same call with `repair="off"` is another key."""
    rec = Recorder(ADA, ADA)
    system = make_system(rec)
    system.execute("extract", {"text": "Ada"})
    off = system.execute("extract", {"text": "Ada"}, repair="off")
    assert (2, False) == (len(rec.calls), off.notes.cached)


def test_text_answers_are_cached_as_text() -> None:
    """A text template's answer comes back from the cache as the same string."""
    rec = Recorder("Hello, Ada!")
    system = TaskSystem(model=rec.model, cache_path=":memory:")
    system.register(Template(name="greet", params={"who": "str"}, instructions="Greet {{who}}", cache=True))
    system.execute("greet", {"who": "Ada"})
    hit = system.execute("greet", {"who": "Ada"})
    assert (1, True, "Hello, Ada!") == (len(rec.calls), hit.notes.cached, hit.parsedContent)


def test_a_stored_answer_the_class_now_rejects_is_a_miss() -> None:
    """A stored answer that no longer validates (a validator changed, not the schema) is asked for again."""

    class Contact(BaseModel):  # the same schema, a stricter validator
        name: str
        email: str | None = None

        @field_validator("name")
        @classmethod
        def _no_ada(cls, value: str) -> str:
            if value.startswith("Ada"):
                raise ValueError("no Ada")
            return value

    store = ResponseCache(":memory:")
    rec = Recorder(ADA, {"name": "Bo"})
    key = make_system(rec, store).execute("extract", {"text": "Ada"}).notes.cache_key
    system = TaskSystem(model=rec.model, cache_path=store)
    system.models.register(Contact)
    assert schema_fingerprint(Contact) == schema_fingerprint(globals()["Contact"])
    system.register(
        Template(
            name="extract",
            params={"text": "str"},
            system="You are a careful clerk.",
            instructions="Extract: {{text}}",
            output_format=OutputFormat(type="json", schema="Contact"),
            cache=True,
        )
    )
    result = system.execute("extract", {"text": "Ada"})
    assert (2, False, "Bo", key) == (len(rec.calls), result.notes.cached, result.unwrap().name, result.notes.cache_key)


def test_the_default_store_is_a_file_in_atomtask_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without `cache_path` the answers go to `$ATOMTASK_HOME/cache.sqlite3`, created on first use."""
    monkeypatch.setenv("ATOMTASK_HOME", str(tmp_path / "home"))
    rec = Recorder(ADA)
    system = TaskSystem(model=rec.model)
    system.models.register(Contact)
    system.register(
        Template(
            name="extract",
            params={"text": "str"},
            instructions="{{text}}",
            output_format=OutputFormat(type="json", schema="Contact"),
        )
    )
    assert not (tmp_path / "home").exists()
    system.execute("extract", {"text": "Ada"}, cache=True)
    assert (tmp_path / "home" / "cache.sqlite3").is_file()
    assert 1 == ResponseCache(tmp_path / "home" / "cache.sqlite3").stats().entries


def test_a_cache_path_in_a_missing_folder_raises_at_construction(tmp_path: Path) -> None:
    """`TaskSystem(cache_path=...)` opens the file at once: a missing folder is a ConfigurationError."""
    with pytest.raises(ConfigurationError, match="its folder does not exist"):
        TaskSystem(cache_path=tmp_path / "missing" / "cache.sqlite3")


def test_an_unusable_default_store_fails_the_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When `$ATOMTASK_HOME/cache.sqlite3` is not a database, a cached call is a FAILED configuration_error."""
    (tmp_path / "cache.sqlite3").write_bytes(b"not a database at all" * 100)
    monkeypatch.setenv("ATOMTASK_HOME", str(tmp_path))
    rec = Recorder()
    system = TaskSystem(model=rec.model)
    system.register(Template(name="greet", instructions="Hi", cache=True))
    result = system.execute("greet")
    assert result.error is not None
    assert FailureReason.CONFIGURATION_ERROR == result.error.reason
    assert "Cannot open the response cache" in result.error.message
    assert [] == rec.calls


def test_a_run_without_the_cache_imports_no_sqlite(tmp_path: Path) -> None:
    """With the cache off, neither `sqlite3` nor the store module is imported (no cost when off)."""
    code = (
        "import sys\n"
        "from atomtask import TaskSystem, Template\n"
        "s = TaskSystem(model='test')\n"
        "s.register(Template(name='t', instructions='hi'))\n"
        "assert s.execute('t').ok\n"
        "print(sorted(m for m in ('sqlite3', 'atomtask.executors._cache_store') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert (0, "[]") == (done.returncode, done.stdout.strip()), done.stderr


# ---------------------------------------------------------------------------------------------
# the key


def _call(**changes: Any) -> ModelCall:
    call = ModelCall(
        template="extract",
        model=ModelChoice(spec="openai-chat:a", label="openai-chat:a", source="call"),
        system="sys",
        prompt="prompt",
        output_cls=Contact,
        mode=OutputMode.TOOL,
        repair=RepairMode.SAFE,
        model_settings={"temperature": 0},
    )
    return attrs.evolve(call, **changes)


class Other(BaseModel):
    name: str


@pytest.mark.parametrize(
    "change",
    [
        {"template": "other"},
        {"model": ModelChoice(spec="openai-chat:b", label="openai-chat:b", source="call")},
        {"fallbacks": (ModelChoice(spec="openai-chat:b", label="openai-chat:b", source="fallback"),)},
        {"system": "another system text"},
        {"system": None},
        {"prompt": "another prompt"},
        {"output_cls": Other},
        {"output_cls": None},
        {"mode": OutputMode.NATIVE},
        {"repair": RepairMode.OFF},
        {"model_settings": {"temperature": 1}},
        {"model_settings": None},
    ],
    ids=lambda change: "-".join(f"{k}={v}" for k, v in change.items())[:40],
)
def test_each_ingredient_changes_the_key(change: dict[str, Any]) -> None:
    """Model, fallbacks, settings, system text, prompt, schema, mode, repair mode and template all count."""
    handler = BaseHandler()
    assert cache_key(_call(), handler) != cache_key(_call(**change), handler)


def test_the_key_ignores_what_does_not_decide_the_answer() -> None:
    """Retries and limits are not in the key; the key is stable across calls and settings' key order."""
    handler = BaseHandler()
    base = cache_key(_call(model_settings={"temperature": 0, "seed": 1}), handler)
    assert base == cache_key(_call(model_settings={"seed": 1, "temperature": 0}, retries=5), handler)
    assert 64 == len(base)


def test_the_handlers_endpoint_and_settings_are_in_the_key() -> None:
    """Another `base_url` or TaskSystem-wide setting is another key."""
    call = _call()
    assert cache_key(call, BaseHandler()) != cache_key(call, BaseHandler(base_url="http://localhost:1/v1"))
    assert cache_key(call, BaseHandler()) != cache_key(call, BaseHandler(model_settings={"seed": 3}))


def test_policy_resolution_keeps_the_templates_ttl() -> None:
    """`cache=True` over a template with a TTL keeps that TTL; a call's own policy replaces it."""
    hour = CachePolicy(ttl="1h")
    assert hour == CacheConfig().policy(True, hour)
    assert hour == CacheConfig(enabled=True).policy(None, hour)
    assert CachePolicy() == CacheConfig(enabled=True).policy(None, CachePolicy(enabled=False))
    assert 60.0 == (CacheConfig().policy({"ttl": 60}, hour) or CachePolicy()).ttl_seconds
    assert CacheConfig().policy(CachePolicy(enabled=False), hour) is None


async def test_concurrent_calls_share_one_file_store(tmp_path: Path) -> None:
    """Twenty concurrent calls over five prompts all complete; every prompt is stored once, the rest are hits."""
    rec = Recorder(*[ADA] * 20)
    system = make_system(rec, ResponseCache(tmp_path / "cache.sqlite3"))
    texts = [f"Ada {i}" for i in range(5)]
    await asyncio.gather(*(system.execute_async("extract", {"text": t}) for t in texts))
    results = await asyncio.gather(*(system.execute_async("extract", {"text": texts[i % 5]}) for i in range(20)))
    assert (True, 5, 20) == (all(r.notes.cached for r in results), len(rec.calls), len(results))
    assert 5 == ResponseCache(tmp_path / "cache.sqlite3").stats().entries


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("yes", "'yes' is not a cache setting"),
        (1, "1 is not a cache setting"),
        ({"tll": "1d"}, "did you mean 'ttl'"),
    ],
)
def test_a_cache_argument_of_the_wrong_type_fails_the_call(value: Any, message: str) -> None:
    """`cache="yes"`, `cache=1`, a typo'd key: a FAILED configuration_error with the accepted forms, no model call."""
    rec = Recorder()
    result = make_system(rec).execute("extract", {"text": "Ada"}, cache=value)
    assert result.error is not None
    assert FailureReason.CONFIGURATION_ERROR == result.error.reason
    assert message in result.error.message
    assert "Pass True, False, None, a `CachePolicy`, or a mapping like" in result.error.message
    assert [] == rec.calls


@pytest.mark.parametrize("value", ["no", "yes", 1, {"ttl": "1h"}])
def test_a_task_system_cache_that_is_not_a_bool_raises(value: Any) -> None:
    """`TaskSystem(cache="no")` does not turn the cache on: it raises a ConfigurationError naming the value."""
    with pytest.raises(ConfigurationError, match=r"Invalid `cache=` for the TaskSystem: .*Pass True, False or None"):
        TaskSystem(cache=value)


@pytest.mark.parametrize("value", [123, b"cache.sqlite3", "", 1.5])
def test_a_cache_path_that_is_not_a_path_raises(value: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`cache_path=123` creates no file named `123`: a ConfigurationError naming the value and the forms."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError, match=r"Invalid cache path .*pass a file path \(str or os\.PathLike\)"):
        TaskSystem(cache=True, cache_path=value)
    assert [] == list(tmp_path.iterdir())


def test_a_stored_answer_that_fails_revalidation_is_not_counted_as_a_hit() -> None:
    """Only an answer that validates counts in `cache stats`; a rejected one is a miss, not a hit."""

    class Contact(BaseModel):  # the same schema, a stricter validator
        name: str
        email: str | None = None

        @field_validator("name")
        @classmethod
        def _no_ada(cls, value: str) -> str:
            if value.startswith("Ada"):
                raise ValueError("no Ada")
            return value

    store = ResponseCache(":memory:")
    make_system(Recorder(ADA), store).execute("extract", {"text": "Ada"})
    system = TaskSystem(model=Recorder(*[ADA] * 10).model, cache_path=store)
    system.models.register(Contact)
    system.register(
        Template(
            name="extract",
            params={"text": "str"},
            system="You are a careful clerk.",
            instructions="Extract: {{text}}",
            output_format=OutputFormat(type="json", schema="Contact"),
            cache=True,
        )
    )
    assert not system.execute("extract", {"text": "Ada"}, repair="off").ok
    assert (1, 0) == (store.stats().entries, store.stats().hits)
    make_system(Recorder(), store).execute("extract", {"text": "Ada"})
    assert 1 == store.stats().hits
