"""Which reader turns a declaration file into `Declarations`, chosen by the file's suffix.

One registry serves every front end. YAML and JSON Schema (`.json`) files are read here (a `.json`
file with no schema keyword is skipped, with a `json_file_skipped` warning); a front end adds its own
file type with one call:

    register_reader((".toml",), read_toml_declarations)

The loading layer never imports a front end. A front end that should be found without being imported
first (as `.sexp` is: `atomtask.sexp._evaluator.register`) names a function that makes that call in
the `atomtask.readers` entry-point group of its package's metadata; the registry calls each such
function once, on its first lookup. A reader registered in code wins over one found that way.

A reader gets the file's path and a list to append recoverable mistakes to (a reader that can go on
after an invalid declaration appends it and reads on; one that cannot simply raises a `UsageError`,
which then stands for the whole file). Every declaration it returns carries its `SourceLocation`.
Readers read their files with `atomtask.schemas._sources.read_source`, so a file that is not
UTF-8 is refused with its name, the line and column of the bad byte, and the fix.
"""

from __future__ import annotations

import shlex
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from atomtask._logs import get_logger
from atomtask.errors import ConfigurationError, SourceLocation, TemplateError, UsageError

if TYPE_CHECKING:
    from atomtask.loading._declarations import Declarations

__all__ = [
    "YAML_SUFFIXES",
    "Reader",
    "declaration_files",
    "load_paths",
    "read_file",
    "reader_for",
    "register_reader",
    "suffixes",
    "with_more",
]

log = get_logger(__name__)

YAML_SUFFIXES = (".yaml", ".yml")

Reader = Callable[[Path, list[UsageError]], "Declarations"]
"""`reader(path, errors) -> Declarations`; raises `UsageError` for a file it cannot read at all."""

ENTRY_POINT_GROUP = "atomtask.readers"

_READERS: dict[str, Reader] = {}
_plugins_loaded = False
_plugins_loading = False
_PLUGINS_LOCK = threading.RLock()


def register_reader(file_suffixes: Iterable[str], reader: Reader) -> None:
    """Read files ending in any of `file_suffixes` (`".sexp"`, with the dot) with `reader`."""
    _load_plugins()  # so that what is registered in code replaces a plugin's reader, never the reverse
    _add(file_suffixes, reader)


def _add(file_suffixes: Iterable[str], reader: Reader) -> None:
    for suffix in file_suffixes:
        _READERS[suffix.lower()] = reader


def _load_plugins() -> None:
    """Call each `atomtask.readers` entry point's registration function, once per process.

    Other threads wait until every plugin has registered; the registration functions themselves call
    `register_reader`, which comes back here on the same thread and returns at once.
    """
    global _plugins_loaded, _plugins_loading
    if _plugins_loaded:
        return
    with _PLUGINS_LOCK:
        if _plugins_loaded or _plugins_loading:
            return
        _plugins_loading = True
        try:
            from importlib.metadata import entry_points

            for entry_point in entry_points(group=ENTRY_POINT_GROUP):
                try:
                    entry_point.load()()
                except Exception as exc:
                    raise ConfigurationError(
                        f"The declaration reader {entry_point.name!r} ({entry_point.value}, entry point group "
                        f"{ENTRY_POINT_GROUP!r}) failed to register: {type(exc).__name__}: {exc}. Reinstall the "
                        "package that provides it, or uninstall it.",
                    ) from exc
            _plugins_loaded = True
        finally:
            _plugins_loading = False


def suffixes() -> list[str]:
    """The file suffixes a reader is registered for, sorted."""
    _load_plugins()
    return sorted(_READERS)


def reader_for(path: Path) -> Reader | None:
    """The reader registered for `path`'s suffix, if any."""
    _load_plugins()
    return _READERS.get(path.suffix.lower())


def read_file(path: Path, errors: list[UsageError]) -> Declarations:
    """Read one declaration file with the reader for its suffix."""
    reader = reader_for(path)
    if reader is None:
        raise TemplateError(
            f"No reader for {path.suffix or 'files without a suffix'!r} files ({str(path)!r}); "
            f"declaration files end in {', '.join(suffixes())}.",
        )
    return reader(path, errors)


def declaration_files(paths: Iterable[str | Path]) -> list[Path]:
    """The files to read: each file given, and the readable files (sorted) in each folder given.

    A missing path raises `TemplateError`.
    """
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            # Not recursive, like `TaskSystem.load`: check reads what the runtime would read.
            known = set(suffixes())
            files.extend(sorted(p for p in path.iterdir() if p.suffix.lower() in known and p.is_file()))
        elif path.is_file():
            files.append(path)
        else:
            raise TemplateError(
                f"No such file or folder: {str(path)!r}. Pass a declaration file ({', '.join(suffixes())}) "
                "or a folder of them."
            )
    return files


def load_paths(paths: Iterable[str | Path]) -> Declarations:
    """Read every declaration file given, or found (sorted, non-recursively) in the folders given.

    Each file is read by the reader registered for its suffix (`atomtask.loading._readers`: YAML, and
    whatever else is registered), the same files and readers `atomtask check` uses.
    """
    from atomtask.loading._declarations import Declarations, reject_duplicate_schemas

    given = list(paths)
    out = Declarations()
    errors: list[UsageError] = []
    for file in declaration_files(given):
        out.extend(read_file(file, errors))
    if errors:
        raise with_more(errors[0], len(errors) - 1, given, partial=bool(out.partial_templates))
    reject_duplicate_schemas(out.schemas)
    return out


def with_more(first: UsageError, more: int, paths: Iterable[str | Path], *, partial: bool = False) -> UsageError:
    """`first`, its message saying how many more mistakes the files hold and how to see them all.

    `partial`: a template with the mistakes may hold others that only registration finds (`atomtask check`
    reports those too). The error keeps its type, location and suggestions.
    """
    if not more and not partial:
        return first
    where = " ".join(shlex.quote(str(p)) for p in paths) or "templates"
    if more:
        noun = "mistake" if more == 1 else "mistakes"
        note = f"(and {'at least ' if partial else ''}{more} more {noun}; `atomtask check {where}` lists every one)"
    else:
        note = f"(`atomtask check {where}` lists every mistake of the template, not only this one)"
    clone = type(first).__new__(type(first))
    clone.__dict__.update(first.__dict__)
    clone.message = f"{first.message} {note}"
    Exception.__init__(clone, clone._render())
    return clone


def _read_yaml(path: Path, errors: list[UsageError]) -> Declarations:
    from atomtask.loading._yaml import load_yaml_text
    from atomtask.schemas._sources import read_source

    return load_yaml_text(read_source(path), str(path), errors=errors)


def _read_json_schema(path: Path, errors: list[UsageError]) -> Declarations:
    from atomtask.loading._declarations import Declarations, Skipped
    from atomtask.schemas._sources import json_schema_file_definition

    definition = json_schema_file_definition(path)
    if definition is not None:
        return Declarations(json_schemas=[definition])
    log.warning("json_file_skipped", file=str(path), reason="no_schema_keyword")
    message = (
        f"{path.name!r} is skipped: it holds a JSON object with no JSON Schema keyword (such as `type`, "
        "`properties`, `$ref` or `$schema`), so it is not a schema. Move the file out of the declarations "
        "folder, or add the keywords if it is meant to be a schema."
    )
    return Declarations(skipped=[Skipped(message=message, location=SourceLocation(file=str(path), line=1, column=1))])


# The built-in readers: plugins may replace them, and no plugin is looked for while this module loads.
_add(YAML_SUFFIXES, _read_yaml)
_add((".json",), _read_json_schema)
