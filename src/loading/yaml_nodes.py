"""Where each mapping of a YAML document is (`YamlNode`), and pydantic's errors turned into located usage errors.

The YAML reader (`yaml_files`) records a `YamlNode` for every mapping it constructs, keyed by the
mapping's `id()`; the declaration readers (templates, schemas, workflows) use them to point each
mistake at its key's line and column.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs
from atomtask.system.errors import SourceLocation, UsageError
from pydantic import ValidationError

__all__ = ["DeclarationProblems", "ErrorFactory", "YamlNode", "validation_errors"]

#: Makes the usage error of one mistake: `factory(message, location=...)` (an error class, or a partial of one).
ErrorFactory = Callable[..., UsageError]


@attrs.frozen(kw_only=True)
class YamlNode:
    """Where one mapping and each of its keys' values start.

    For a quoted scalar value (`"..."`, `'...'`), the key's location is the first character inside
    the quotes, so an offset into the value's text lands on the right column.
    """

    start: SourceLocation
    keys: dict[str, SourceLocation]
    block_keys: frozenset[str]


class DeclarationProblems(Exception):
    """Every mistake found in one declaration (raised as the first one when errors are not collected)."""

    def __init__(self, problems: list[UsageError]) -> None:
        super().__init__(str(problems[0]))
        self.problems = problems


def validation_errors(
    kind: ErrorFactory,
    what: str,
    doc: Mapping[str, Any],
    exc: ValidationError,
    nodes: Mapping[int, YamlNode],
    location: SourceLocation,
    keys: Iterable[str],
    keys_at: Callable[[Sequence[Any]], Iterable[str] | None] | None = None,
) -> list[UsageError]:
    """Turn pydantic's errors into messages pointing at the offending keys' lines, one per key.

    `keys` are the valid top-level keys (listed for an unknown one); `keys_at(path)` gives the valid
    keys of the nested mapping at `path` (`("steps", 2)`), when the declaration knows them.
    """
    name = doc.get("name")
    label = f"{what} {name!r}" if isinstance(name, str) else what
    out: dict[tuple[Any, ...], UsageError] = {}
    for err in exc.errors():
        loc_path = [p for p in err["loc"] if not isinstance(p, str) or not p.startswith("function-")]
        where: SourceLocation | None = location
        container: Any = doc
        walked: list[Any] = []  # the part of the path that is in the document (not union members' tags)
        for part in loc_path:
            node = nodes.get(id(container)) if isinstance(container, dict) else None
            if node is not None and isinstance(part, str) and part in node.keys:
                where = node.keys[part]
            try:
                container = container[part]
            except (KeyError, IndexError, TypeError):
                break
            walked.append(part)
            if isinstance(part, int) and isinstance(container, dict):  # an item of a list: where it starts
                item = nodes.get(id(container))
                where = item.start if item is not None else where
        if tuple(walked) in out:
            continue  # one message per key: the alternatives of a union each report the same mistake
        dotted = ".".join(str(p) for p in loc_path)
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            valid = list(keys) if len(loc_path) == 1 else (keys_at(loc_path[:-1]) if keys_at is not None else None)
            if valid is not None:
                message = f"unknown key; valid keys: {', '.join(valid)}"
        elif err["type"] == "missing":
            message = "required key is missing"
        out[tuple(walked)] = kind(f"Invalid {label}: `{dotted}`: {message}.", location=where)
    return sorted(out.values(), key=lambda e: (e.location.line or 0, e.location.column or 0) if e.location else (0, 0))
