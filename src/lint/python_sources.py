"""The Python side of `check --python`: importing the modules named, and finding lines in Python source.

A module is imported by name (`myapp.tasks`, with the working directory on `sys.path` as
`python -m` has it) or from a `.py` file. Findings about Python code are located in it: the user's
line that raised during the import, the line that quotes a template's name, the line of a schema
class and of its field.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from atomtask.system.errors import SourceLocation, TemplateError
from pydantic import BaseModel

__all__ = ["class_location", "find_in_file", "import_python", "raising_line"]

_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)
_IMPORTLIB_DIR = str(Path(importlib.__file__).resolve().parent)


def import_python(name: str) -> Any:
    """Import a dotted module name (with the current folder on `sys.path`) or a `.py` file, for `--python`.

    A module that calls `sys.exit` (or raises any other `BaseException` but `KeyboardInterrupt`) while
    being imported raises `RuntimeError` (reported as a finding) instead of ending the check.
    """
    try:
        return _import_python(name)
    except SystemExit as exc:
        raise RuntimeError(
            f"the module called `sys.exit({exc.code!r})` while being imported (exit code {exc.code!r}); put its "
            'script part under `if __name__ == "__main__":`'
        ).with_traceback(exc.__traceback__) from None
    except (KeyboardInterrupt, Exception):
        raise
    except BaseException as exc:  # e.g. `GeneratorExit` or a custom `BaseException`: it must not end the check
        raise RuntimeError(
            f"the module raised {type(exc).__name__}: {exc} while being imported; fix the module"
        ).with_traceback(exc.__traceback__) from None


def _import_python(name: str) -> Any:
    if name.endswith(".py") or os.sep in name or "/" in name:
        path = Path(name).resolve()
        if not path.is_file():
            raise TemplateError(f"No such Python file: {name!r}.")
        module_name = f"_atomtask_check_{path.stem}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise TemplateError(f"Cannot import {name!r} as a Python module.")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
        return module
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` does, so the project's own modules import
    return importlib.import_module(name)


def raising_line(exc: BaseException) -> SourceLocation | None:
    """The innermost frame of the traceback outside atomtask and the import machinery."""
    found: SourceLocation | None = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename.startswith((_PACKAGE_DIR, _IMPORTLIB_DIR, "<frozen")):
            continue
        found = SourceLocation(file=frame.filename, line=frame.lineno)
    return found


def find_in_file(file: str, name: str) -> SourceLocation:
    """The first line of `file` that quotes `name` (where a Python template is declared), else the file."""
    try:
        lines = Path(file).read_text(encoding="utf-8").splitlines()
    except OSError:
        return SourceLocation(file=file)
    for quote in ('"', "'"):
        needle = f"{quote}{name}{quote}"
        for number, line in enumerate(lines, start=1):
            column = line.find(needle)
            if column >= 0:
                return SourceLocation(file=file, line=number, column=column + 1)
    return SourceLocation(file=file)


def class_location(cls: type[BaseModel], field: str | None) -> SourceLocation | None:
    """Where a Python class (and its field, when found) is defined."""
    import inspect

    try:
        file = inspect.getsourcefile(cls)
        lines, start = inspect.getsourcelines(cls)
    except (OSError, TypeError):
        return None
    if file is None:
        return None
    if field is not None:
        for offset, line in enumerate(lines):
            stripped = line.lstrip()
            if stripped.startswith(f"{field}:") or stripped.startswith(f"{field} :"):
                return SourceLocation(file=file, line=start + offset, column=len(line) - len(stripped) + 1)
    return SourceLocation(file=file, line=start)
