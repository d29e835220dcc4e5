"""The cache of `atomtask check`: each declaration file's findings, kept by its content, as linters do.

A file is checked again only when something its findings depend on changed:

- its own bytes (the key is a hash of the content, not a modification time);
- a file it depends on: one that declares a name this file's text mentions (a schema its templates
  answer with, a schema its schemas use, a template its workflows run, a model alias it names), and so
  on transitively; a JSON Schema file depends on every JSON Schema file (they `$ref` each other by file
  name);
- for a file with errors, the set of every declared name (its "did you mean" and "known schemas"
  read them);
- atomtask itself, pydantic and pydantic-ai, the models checked against and `--select`/`--ignore`:
  these name the cache's directory, so a change starts an empty one.

Some files are checked every time: those that declare workflows (workflow findings are made across
files), Python classes by import path or templates with tools (their code is not in the file), and the
files those depend on.
A name declared in two files sends both through the check, so the duplicate is reported as without
the cache. The check itself is in `atomtask.lint._engine`; this module only reads and writes entries,
so a check that finds every file unchanged imports none of the registration code.

Entries live under `$ATOMTASK_CACHE_DIR`, else `$XDG_CACHE_HOME/atomtask`, else `~/.cache/atomtask`,
in `check/<context>/`: one JSON file per folder of declaration files, holding the entries of its files
by path (a file per entry cost a create and a rename each: for 1,000 files, more system time than the
check's own hashing and bookkeeping). Each is written to a temporary file and renamed into place, so
concurrent checks never read half of one; it keeps the folder's entries this check did not make, as
read at its start, while their files exist (two checks of one folder at once: the last one's entries
stay, which are whole). An entry, or a folder's file, that cannot be read is ignored. The files hold
what the declaration files declare and the findings' messages (which quote them), so they are written
owner-only (0600), in folders created owner-only (0700).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
from atomtask.errors import SourceLocation
from atomtask.lint._findings import RULES, Finding

if TYPE_CHECKING:
    from atomtask.loading._declarations import Declarations

__all__ = ["CACHE_ENV", "CacheStats", "CheckCache", "Entry", "FileFacts", "cache_dir", "dependencies", "facts_of"]

CACHE_ENV = "ATOMTASK_CACHE_DIR"
_FORMAT = 2  # the entries' layout; bump when it changes
_SEQUENCE = itertools.count()
_TOKEN = re.compile(r"[\w.\-]+")
_NAME = re.compile(r"^[\w.\-]+$")


def cache_dir() -> Path:
    """`$ATOMTASK_CACHE_DIR`, else `$XDG_CACHE_HOME/atomtask`, else `~/.cache/atomtask` (read at each call)."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "atomtask"


@attrs.frozen(kw_only=True)
class FileFacts:
    """What one declaration file declares: the names others may use, and what it adds to the report's counts."""

    templates: tuple[str, ...] = ()
    schemas: tuple[str, ...] = ()  # YAML schemas, JSON Schemas (by name and `title`) and Python classes
    workflows: tuple[str, ...] = ()
    json_schemas: bool = False
    python_schemas: bool = False
    schema_count: int = 0
    lenient: tuple[str, ...] = ()
    tools: bool = False  # a template names tools: code outside the file, and the importable packages, decide
    models: tuple[str, ...] = ()  # the model aliases it declares (`models:`), which templates and steps name

    @property
    def names(self) -> tuple[str, ...]:
        return (*self.templates, *self.schemas, *self.workflows, *self.models)

    @property
    def volatile(self) -> bool:
        """Checked every time: workflows are checked across files, Python classes and tools come from elsewhere."""
        return bool(self.workflows) or self.python_schemas or self.tools


_FACT_FIELDS = attrs.fields(FileFacts)


@attrs.frozen(kw_only=True)
class Entry:
    """One file's cached check: the content and the dependencies it was made for, its facts and findings."""

    content: str
    deps: str
    names: str | None  # the fingerprint of every declared name, for a file with errors
    facts: FileFacts
    findings: tuple[Finding, ...]


@attrs.define
class CacheStats:
    """What one check took from the cache (`reused`), checked again (`checked`) and could not read (`ignored`)."""

    reused: list[str] = attrs.field(factory=list)
    checked: list[str] = attrs.field(factory=list)
    ignored: list[str] = attrs.field(factory=list)
    full: bool = False  # an error in a changed file sent every file through the check


class CheckCache:
    """Per-file entries for one context (atomtask's code, its libraries, the models and codes asked for).

    Args:
        directory: where to keep entries (default: `cache_dir()`); created on the first write.
        context: everything else the findings depend on, as JSON-able values.
    """

    def __init__(self, directory: Path | None = None, *, context: Mapping[str, Any] | None = None) -> None:
        key = _digest(json.dumps({"format": _FORMAT, **_environment(), **(context or {})}, sort_keys=True))
        self.directory = (directory if directory is not None else cache_dir()) / "check" / key[:16]
        self.stats = CacheStats()
        self._packs: dict[str, dict[str, Any] | None] = {}  # folder -> its entries' data by path; None: unreadable

    def load(self, path: str, content: str) -> Entry | None:
        """The entry for `path` if it was made for this `content`; None when absent, stale or unreadable."""
        pack = self._pack(os.path.dirname(path))
        if pack is None:
            self.stats.ignored.append(path)
            return None
        data = pack.get(path)
        if data is None:
            return None
        try:
            if data["content"] != content:
                return None
            return Entry(
                content=data["content"],
                deps=data["deps"],
                names=data["names"],
                facts=_facts(data["facts"]),
                findings=tuple(_finding(item) for item in data["findings"]),
            )
        except Exception:  # a corrupted or foreign entry is a miss, never a crash
            self.stats.ignored.append(path)
            return None

    def save(self, path: str, entry: Entry) -> None:
        """Write `path`'s entry atomically (its folder's file renamed into place); a failure is not an error."""
        self.save_all({path: entry})

    def save_all(self, entries: Mapping[str, Entry]) -> None:
        """Write the entries, one file per folder, atomically (no fsync: losing one is a miss)."""
        if not entries:
            return
        by_folder: dict[str, dict[str, Entry]] = {}
        for path, entry in entries.items():
            by_folder.setdefault(os.path.dirname(path), {})[path] = entry
        try:
            missing = [d for d in (self.directory, *self.directory.parents) if not d.exists()]
            for new in reversed(missing):  # each new folder owner-only; existing ones keep their modes
                new.mkdir(mode=0o700, exist_ok=True)
        except OSError:  # a cache that cannot be written (read-only, full) only makes the next check slower
            return
        for folder, made in by_folder.items():
            kept = {
                path: data
                for path, data in (self._pack(folder) or {}).items()
                if path not in made and os.path.exists(path)  # a deleted file's entry goes
            }
            pack = {**kept, **{path: _data(entry) for path, entry in made.items()}}
            self._packs[folder] = pack
            self._write(folder, pack)

    def _pack(self, folder: str) -> dict[str, Any] | None:
        """The entries' data of `folder`'s files, read once per check ({} when there is none yet)."""
        if folder not in self._packs:
            try:
                raw = (self.directory / _pack_name(folder)).read_bytes()
            except OSError:
                self._packs[folder] = {}
            else:
                try:
                    data = json.loads(raw)
                    entries = data["entries"] if data["folder"] == folder else None
                    self._packs[folder] = entries if isinstance(entries, dict) else None
                except Exception:  # a corrupted or foreign file: its entries are misses
                    self._packs[folder] = None
        return self._packs[folder]

    def _write(self, folder: str, pack: dict[str, Any]) -> None:
        name = _pack_name(folder)
        # Unique per process and write, created exclusively: two checks never write the same file.
        temporary = str(self.directory / f".{name.removesuffix('.json')}.{os.getpid()}.{next(_SEQUENCE)}.tmp")
        name = str(self.directory / name)
        try:
            # Owner-only: an entry holds what a declaration file declares, and findings that quote it.
            handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                data = json.dumps({"folder": folder, "entries": pack}, ensure_ascii=False).encode("utf-8")
                view = memoryview(data)
                while view:
                    view = view[os.write(handle, view) :]
            finally:
                os.close(handle)
            os.replace(temporary, name)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def facts_of(declarations: Declarations) -> FileFacts:
    """What a file declares (from what its reader returned), for the cache's bookkeeping."""
    from atomtask.system._templates import RepairMode

    json_names: list[str] = []
    for definition in declarations.json_schemas:
        title = definition.json_schema.get("title") if isinstance(definition.json_schema, dict) else None
        json_names.extend(n for n in (definition.name, title) if isinstance(n, str))
    return FileFacts(
        templates=(
            *(t.name for t in declarations.templates),
            *(p.template.name for p in declarations.partial_templates),
        ),
        schemas=(*(s.name for s in declarations.schemas), *json_names, *(s.name for s in declarations.python_schemas)),
        workflows=tuple(w.name for w in declarations.workflows),
        json_schemas=bool(declarations.json_schemas),
        python_schemas=bool(declarations.python_schemas),
        schema_count=len(declarations.schemas) + len(declarations.json_schemas) + len(declarations.python_schemas),
        lenient=tuple(t.name for t in declarations.templates if t.repair is RepairMode.LENIENT),
        tools=any(t.tools for t in declarations.templates),
        models=tuple(alias.name for alias in declarations.model_aliases),
    )


def content_hash(data: bytes) -> str:
    """The key of a file's content."""
    return hashlib.blake2b(data, digest_size=20).hexdigest()


def mentioned(text: str) -> set[str]:
    """Every name-like word of `text`, and the parts of dotted ones: what the file may refer to."""
    tokens = set(_TOKEN.findall(text))
    for token in [t for t in tokens if "." in t]:
        tokens.update(token.split("."))
    return tokens


def dependencies(
    files: Sequence[str], facts: Mapping[str, FileFacts], tokens: Mapping[str, set[str]]
) -> dict[str, set[str]]:
    """For each file, the other files it depends on, transitively (see the module's docstring)."""
    declared: dict[str, set[str]] = {}
    everywhere: set[str] = set()  # files declaring a name no word could match: depended on by every file
    json_files = {f for f in files if facts[f].json_schemas}
    for file in files:
        for name in facts[file].names:
            declared.setdefault(name, set()).add(file)
            if not _NAME.match(name):
                everywhere.add(file)
    direct: dict[str, set[str]] = {}
    for file in files:
        found = set(everywhere)
        for token in tokens.get(file, ()):
            found |= declared.get(token, set())
        if found & json_files or facts[file].json_schemas:
            found |= json_files
        found.discard(file)
        direct[file] = found
    closed: dict[str, set[str]] = {}
    for file in files:
        seen: set[str] = set()
        stack = list(direct[file])
        while stack:
            other = stack.pop()
            if other in seen or other == file:
                continue
            seen.add(other)
            stack.extend(direct.get(other, ()))
        closed[file] = seen
    return closed


def fingerprint(parts: Iterable[str]) -> str:
    """One digest of `parts` (sorted, so the order they were found in does not matter)."""
    return _digest("\n".join(sorted(parts)))


def duplicated(files: Sequence[str], facts: Mapping[str, FileFacts]) -> set[str]:
    """The files declaring a template, schema or workflow name that another file declares too."""
    owners: dict[tuple[str, str], list[str]] = {}
    for file in files:
        fact = facts[file]
        kinds = (("template", fact.templates), ("schema", fact.schemas), ("workflow", fact.workflows))
        for kind, names in (*kinds, ("model alias", fact.models)):
            for name in set(names):
                owners.setdefault((kind, name), []).append(file)
    return {file for found in owners.values() if len(found) > 1 for file in found}


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=20).hexdigest()


def _pack_name(folder: str) -> str:
    return _digest(folder) + ".json"


def _data(entry: Entry) -> dict[str, Any]:
    return {
        "content": entry.content,
        "deps": entry.deps,
        "names": entry.names,
        "facts": {field.name: getattr(entry.facts, field.name) for field in _FACT_FIELDS},
        "findings": [_row(f) for f in entry.findings],
    }


def _facts(data: dict[str, Any]) -> FileFacts:
    return FileFacts(
        templates=tuple(data["templates"]),
        schemas=tuple(data["schemas"]),
        workflows=tuple(data["workflows"]),
        json_schemas=bool(data["json_schemas"]),
        python_schemas=bool(data["python_schemas"]),
        schema_count=int(data["schema_count"]),
        lenient=tuple(data["lenient"]),
        tools=bool(data.get("tools", False)),
        models=tuple(data.get("models", ())),
    )


def _row(finding: Finding) -> list[Any]:
    loc = finding.location
    return [finding.code, finding.message, [loc.file, loc.line, loc.column] if loc is not None else None]


def _finding(row: list[Any]) -> Finding:
    code, message, where = row
    location = SourceLocation(file=where[0], line=where[1], column=where[2]) if where is not None else None
    return Finding(code=code, severity=RULES[code].severity, message=message, location=location)


_ENVIRONMENT: dict[str, Any] = {}


def _environment() -> dict[str, Any]:
    """atomtask's own code (sizes and times of its modules: a changed checkout counts) and its libraries' versions."""
    if not _ENVIRONMENT:
        from importlib import metadata

        package = Path(__file__).resolve().parent.parent
        stamps = sorted(
            f"{p.relative_to(package)}:{s.st_size}:{s.st_mtime_ns}" for p in package.rglob("*.py") if (s := p.stat())
        )
        versions: dict[str, str | None] = {}
        for dist in ("pydantic", "pydantic-ai-slim", "pyyaml"):
            try:
                versions[dist] = metadata.version(dist)
            except metadata.PackageNotFoundError:
                versions[dist] = None
        _ENVIRONMENT.update(code=_digest("\n".join(stamps)), versions=versions, python=sys.version)
    return _ENVIRONMENT
