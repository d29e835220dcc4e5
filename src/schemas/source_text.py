"""The text of a declaration file, and the limits every reader applies to it before parsing.

Every reader (YAML, `.json`, `.sexp`) reads its file with `read_source`: a file that is not UTF-8
is refused with its name, the line and column of the first bad byte, and the fix, rather than a
bare `UnicodeDecodeError`. `MAX_NESTING` is how deep lists and mappings may nest in a declaration
file: parsers (libyaml's, the `json` module's) and everything that walks their result recurse, so
deeper input is refused with its location before it can exhaust the stack.
"""

from __future__ import annotations

import re
from pathlib import Path

from atomtask.system.errors import SourceLocation, TemplateError, UsageError

__all__ = ["MAX_NESTING", "json_too_deep", "read_source", "too_deep"]

MAX_NESTING = 100
"""The deepest nesting of lists and mappings (objects, arrays) a declaration file may have."""

_BOMS = {b"\xff\xfe": "UTF-16", b"\xfe\xff": "UTF-16"}
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.DOTALL)


def read_source(path: Path, *, error: type[UsageError] = TemplateError) -> str:
    """The UTF-8 text of the file at `path`; raises `error` (a `UsageError`) when it is not UTF-8."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = exc.start
        line = data.count(b"\n", 0, start) + 1
        column = start - (data.rfind(b"\n", 0, start) + 1) + 1
        encoding = next((name for bom, name in _BOMS.items() if data.startswith(bom)), None)
        seems = f" (it starts with a {encoding} byte-order mark)" if encoding else ""
        raise error(
            f"File {str(path)!r} is not valid UTF-8{seems}: byte 0x{data[start]:02x} at offset {start} "
            f"(line {line}, column {column}) cannot be decoded. Save the file as UTF-8.",
            location=SourceLocation(file=str(path), line=line, column=column),
        ) from None


def too_deep(location: SourceLocation, what: str, error: type[UsageError] = TemplateError) -> UsageError:
    """The error for input nested deeper than `MAX_NESTING` (`what`: "YAML", "JSON", ...), at `location`."""
    return error(
        f"{what} nested more than {MAX_NESTING} levels deep here; declarations may nest at most {MAX_NESTING} "
        "levels of lists and mappings. Flatten the structure (e.g. declare a nested schema by name and refer to it).",
        location=location,
    )


def json_too_deep(text: str, file: str, error: type[UsageError] = TemplateError) -> UsageError | None:
    """The error for JSON `text` nested deeper than `MAX_NESTING`, else None (scans brackets outside strings)."""
    depth = 0
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_NESTING:
                offset = match.start()
                line = text.count("\n", 0, offset) + 1
                column = offset - (text.rfind("\n", 0, offset) + 1) + 1
                return too_deep(SourceLocation(file=file, line=line, column=column), "JSON", error)
        elif token in "]}":
            depth -= 1
    return None
