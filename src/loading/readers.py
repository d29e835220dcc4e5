"""Which reader turns a declaration file into `Declarations`, chosen by the file's suffix.

One registry serves every front end: YAML is registered here; the S-expression (`.sexp`) and JSON
Schema (`.json`) readers register themselves with one call each:

    register_reader((".sexp",), lambda path, errors: load_sexp_text(path.read_text(encoding="utf-8"), str(path)))

A reader gets the file's path and a list to append recoverable mistakes to (a reader that can go on
after an invalid declaration appends it and reads on; one that cannot simply raises a `UsageError`,
which then stands for the whole file). Every declaration it returns carries its `SourceLocation`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from atomtask.system.errors import TemplateError, UsageError
from atomtask.system.loader import YAML_SUFFIXES, Declarations, load_yaml_text

__all__ = ["Reader", "declaration_files", "read_file", "reader_for", "register_reader", "suffixes"]

Reader = Callable[[Path, list[UsageError]], Declarations]
"""`reader(path, errors) -> Declarations`; raises `UsageError` for a file it cannot read at all."""

_READERS: dict[str, Reader] = {}


def register_reader(file_suffixes: Iterable[str], reader: Reader) -> None:
    """Read files ending in any of `file_suffixes` (`".sexp"`, with the dot) with `reader`."""
    for suffix in file_suffixes:
        _READERS[suffix.lower()] = reader


def suffixes() -> list[str]:
    """The file suffixes a reader is registered for, sorted."""
    return sorted(_READERS)


def reader_for(path: Path) -> Reader | None:
    """The reader registered for `path`'s suffix, if any."""
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
            files.extend(sorted(p for p in path.iterdir() if p.suffix.lower() in _READERS and p.is_file()))
        elif path.is_file():
            files.append(path)
        else:
            raise TemplateError(
                f"No such file or folder: {str(path)!r}. Pass a declaration file ({', '.join(suffixes())}) "
                "or a folder of them."
            )
    return files


def _read_yaml(path: Path, errors: list[UsageError]) -> Declarations:
    return load_yaml_text(path.read_text(encoding="utf-8"), str(path), errors=errors)


def _read_json_schema(path: Path, errors: list[UsageError]) -> Declarations:
    from atomtask.system.schema_sources import json_schema_file_definition

    return Declarations(json_schemas=[json_schema_file_definition(path)])


register_reader(YAML_SUFFIXES, _read_yaml)


def _read_sexp(path: Path, errors: list[UsageError]) -> Declarations:
    from atomtask.sexp.loading import read_declarations  # lark loads only when a .sexp file is read

    return read_declarations(path, errors)


register_reader((".json",), _read_json_schema)
register_reader((".sexp",), _read_sexp)
