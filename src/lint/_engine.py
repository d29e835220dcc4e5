"""`check`: every declaration file and Python module given, through the registration code, all findings.

The checking itself is `atomtask.lint._session.CheckRun` (the registration code, each finding filed
under its file); workflows (from the files, and the systems of `--python` modules) are checked after
the templates, by `atomtask.lint._session`. Importing `--python` modules and locating
findings in Python source is `atomtask.lint._session`; `CheckReport` is defined with the findings.

With a `CheckCache` (the `atomtask check` command uses one unless `--no-cache`), a file whose
content and dependencies are unchanged is not read or compiled again: its findings come from the
cache (`atomtask.lint._cache` says what a file depends on). Only the changed files, the files that
depend on them, the files they use and the files checked every time go through `CheckRun`; when
that finds an error, every file goes through it, so a "did you mean" reads every declared name.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
from atomtask.errors import SourceLocation, UsageError
from atomtask.lint._cache import CheckCache, Entry, FileFacts, content_hash, dependencies, duplicated, fingerprint
from atomtask.lint._cache import mentioned as mentioned_names
from atomtask.lint._findings import CheckReport, Finding, Severity, matches
from atomtask.loading._providers import check_model_string, provider_of, providers_from
from atomtask.loading._readers import declaration_files
from atomtask.loading._servers import Endpoint

if TYPE_CHECKING:
    from atomtask.lint._compat import ProcessAnalyses
    from atomtask.lint._session import CheckRun

__all__ = ["check", "check_cache"]


def check(
    paths: Iterable[str | Path] = (),
    *,
    python: Iterable[str] = (),
    models: Sequence[str] = (),
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    cache: CheckCache | None = None,
    helper_process: bool = False,
    base_url: str | None = None,
    server: str | None = None,
) -> CheckReport:
    """Check declaration files and folders, and the templates of the Python modules named in `python`.

    Args:
        paths: files and folders of declarations (every suffix a reader is registered for).
        python: modules (`myapp.tasks`) or `.py` files; their module-level `TaskSystem`s and `Template`s
            are checked with everything else (and their schemas are known to the files' templates).
        models: model strings (or model aliases the files declare) to check provider compatibility against
            for templates that name no model (default: `$ATOMTASK_MODEL` when set).
        select: only report codes starting with one of these (default: all).
        ignore: do not report codes starting with one of these.
        cache: reuse the findings of unchanged files (see `check_cache`); not used with `python`
            modules, whose code the cache cannot see.
        base_url: the endpoint the models are sent to (`--base-url`): a local server's output modes are checked
            against its profile (P308, P309).
        server: the kind of server there (`--server`); default: asked of the server (`GET /models`) once.
        helper_process: make the provider compatibility analysis (P3xx) in a helper process that imports
            pydantic-ai while this one reads and builds (`atomtask.lint._compat`; what the
            `atomtask check` command does). Only when pydantic-ai is not imported yet; the same findings.

    The cycle collector pauses while the check runs: it allocates many long-lived objects (a class and
    a JSON Schema per schema) and next to no cyclic garbage, so its full passes cost ~20% and free
    nothing; it runs again (if it was on) when the check returns.
    """
    helper = _helper() if helper_process else None
    with _collector_paused(), contextlib.ExitStack() as stack:
        if helper is not None:
            stack.callback(helper.stop)  # closed already when the check read its answers: this is for an error
            stack.enter_context(providers_from(helper.providers))
        endpoint = Endpoint.of(base_url, server)
        return _check(list(paths), list(python), models, select, ignore, cache, helper, endpoint)


def _helper() -> ProcessAnalyses | None:
    if "pydantic_ai" in sys.modules:  # imported already: nothing to overlap
        return None
    from atomtask.lint._compat import ProcessAnalyses

    return ProcessAnalyses()


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _check(
    paths: list[str | Path],
    python: list[str],
    models: Sequence[str],
    select: Sequence[str],
    ignore: Sequence[str],
    cache: CheckCache | None,
    helper: ProcessAnalyses | None = None,
    endpoint: Endpoint | None = None,
) -> CheckReport:
    defaults = tuple(models) or _env_models()
    given = "the models to check against" if models else "the `ATOMTASK_MODEL` environment variable"
    for model in defaults:  # a bad argument, not a finding: raises ConfigurationError
        if provider_of(model) is not None or model == "test":  # else an alias the files may declare: see below
            check_model_string(model, where=given)
    files: list[Path] = []
    missing: list[Finding] = []
    for path in paths:
        try:
            files.extend(declaration_files([path]))
        except UsageError as exc:  # a missing path: the others are still checked
            where = exc.location or SourceLocation(file=str(path))
            missing.append(Finding(code="E101", severity=Severity.ERROR, message=exc.message, location=where))

    def wanted(code: str) -> bool:
        return (not select or matches(code, select)) and not matches(code, ignore)

    def new_run() -> CheckRun:
        return _new_run(defaults, helper, endpoint)

    run: CheckRun | _Unchecked
    if cache is None or python:
        run = new_run()
        for module in python:
            run.import_module(module)
        run.read_files(files)
        run.check_read([str(f) for f in files], wanted)
        reused: dict[str, Entry] = {}
    else:
        run, reused = _incremental(files, new_run, wanted, cache)
    if not isinstance(run, _Unchecked) and len(run.declared) == len(files):  # every file read: aliases known
        for model in defaults:
            check_model_string(model, where=given, aliases=run.model_aliases)
    findings = {(f.code, str(f.location), f.message): f for entry in reused.values() for f in entry.findings}
    findings.update(run.findings)
    findings.update({(f.code, str(f.location), f.message): f for f in missing})
    kept = reused.values()
    return CheckReport(
        findings=tuple(sorted((f for f in findings.values() if wanted(f.code)), key=Finding.sort_key)),
        files=len(files),
        templates=run.templates_seen + sum(len(e.facts.templates) for e in kept),
        schemas=run.schemas_seen + sum(e.facts.schema_count for e in kept),
        workflows=len(run.workflows),
        lenient=tuple(sorted([*run.lenient, *(n for e in kept for n in e.facts.lenient)])),
    )


def check_cache(
    directory: Path | None = None,
    *,
    models: Sequence[str] = (),
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    base_url: str | None = None,
    server: str | None = None,
) -> CheckCache:
    """The cache for a check with these options (its findings depend on them); `directory` defaults to `cache_dir()`."""
    context = {"models": list(models) or list(_env_models()), "select": list(select), "ignore": list(ignore)}
    if base_url is not None or server is not None:  # a check without them keeps the key it always had
        context["endpoint"] = [base_url or "", server or ""]
    return CheckCache(directory, context=context)


def _incremental(
    files: Sequence[Path], new_run: Callable[[], CheckRun], wanted: Callable[[str], bool], cache: CheckCache
) -> tuple[CheckRun | _Unchecked, dict[str, Entry]]:
    """Check what changed (and what that needs); take the rest from `cache`; refresh the entries checked."""
    order = [str(f) for f in files]
    contents: dict[str, str] = {}
    tokens: dict[str, set[str]] = {}
    for file in files:
        try:
            data = file.read_bytes()
        except OSError:
            continue  # checked, so the reader reports it
        contents[str(file)] = content_hash(data)
        tokens[str(file)] = mentioned_names(data.decode("utf-8", errors="replace"))
    entries: dict[str, Entry] = {}
    for name in order:
        entry = cache.load(name, contents[name]) if name in contents else None
        if entry is not None:
            entries[name] = entry
    unread = [f for f in files if str(f) not in entries]
    run = new_run() if unread else None  # every file in the cache: none of the registration code
    if run is not None:
        run.read_files(unread)
    facts = _facts(order, entries, run)
    closed = dependencies(order, facts, tokens)
    names = fingerprint(n for fact in facts.values() for n in fact.names)
    changed = set(order) - set(entries)
    changed |= duplicated(order, facts)
    for name in order:
        volatile = facts[name].volatile or any(facts[other].volatile for other in closed[name])
        entry = entries.get(name)
        if volatile or (entry is not None and not _still_valid(entry, closed[name], contents, names)):
            changed.add(name)
    needed = changed | {other for name in changed for other in closed[name]}
    if not needed:
        cache.stats.reused = list(order)
        return _Unchecked(), entries
    if run is None:
        run = new_run()
    run.read_files(Path(name) for name in order if name in needed and name not in run.declared)
    run.check_read([name for name in order if name in needed], wanted)
    if len(needed) < len(order) and any(f.severity is Severity.ERROR for f in run.findings.values()):
        # A "did you mean" or a list of known names must read every declared name: check everything.
        cache.stats.full = True
        run = new_run()
        run.read_files(files)
        run.check_read(order, wanted)
        needed = set(order)
    checked = _facts(order, {n: e for n, e in entries.items() if n not in needed}, run)
    if checked != facts:  # what the files declare changed since the cache's entries were made
        facts = checked
        closed = dependencies(order, facts, tokens)
        names = fingerprint(n for fact in facts.values() for n in fact.names)
    fresh: dict[str, Entry] = {}
    for name in order:
        if name in needed and name in contents and name in run.facts:
            found = tuple(run.by_file.get(name, {}).values())
            errors = any(f.severity is Severity.ERROR for f in found)
            deps = fingerprint(f"{other}:{contents.get(other)}" for other in closed[name])
            fresh[name] = Entry(
                content=contents[name],
                deps=deps,
                names=names if errors else None,
                facts=run.facts[name],
                findings=found,
            )
    cache.save_all(fresh)  # at the end, in one pass over the cache's directory
    cache.stats.checked = [name for name in order if name in needed]
    cache.stats.reused = [name for name in order if name not in needed]
    return run, {name: entries[name] for name in cache.stats.reused}


@attrs.define
class _Unchecked:
    """The part of a `CheckRun` a report reads, for a check that took every file from the cache."""

    findings: dict[tuple[str, str, str], Finding] = attrs.field(factory=dict)
    templates_seen: int = 0
    schemas_seen: int = 0
    workflows: list[object] = attrs.field(factory=list)
    lenient: list[str] = attrs.field(factory=list)


def _facts(order: Sequence[str], entries: dict[str, Entry], run: CheckRun | None) -> dict[str, FileFacts]:
    made = run.facts if run is not None else {}
    return {name: entries[name].facts if name in entries else made.get(name, FileFacts()) for name in order}


def _still_valid(entry: Entry, closed: set[str], contents: dict[str, str], names: str) -> bool:
    deps = fingerprint(f"{other}:{contents.get(other)}" for other in closed)
    return entry.deps == deps and (entry.names is None or entry.names == names)


def _new_run(defaults: tuple[str, ...], helper: ProcessAnalyses | None, endpoint: Endpoint | None) -> CheckRun:
    if helper is not None:
        helper.start()  # first: the helper imports pydantic-ai while this process imports the rest, reads and builds
    from atomtask.lint._session import CheckRun  # the registration code: only when a file is checked

    return CheckRun(default_models=defaults, analyses=helper, endpoint=endpoint)


def _env_models() -> tuple[str, ...]:
    model = os.environ.get("ATOMTASK_MODEL")
    return (model,) if model else ()
