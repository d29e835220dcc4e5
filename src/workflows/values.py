"""Step input values: literals, whole-value placeholders (`"{{state.x}}"`, typed) and text with placeholders.

A string that is exactly one placeholder passes the typed value it names (a list stays a list, a
class instance stays an instance); a string with text around placeholders is rendered as text
(strings as they are, everything else as JSON, never a Python repr); any other value is a literal,
searched for placeholders inside lists and mappings.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

import attrs
from atomtask.executors.rendering import format_value
from atomtask.system.errors import did_you_mean
from atomtask.system.templates import find_placeholders
from atomtask.system.workflow_errors import WorkflowExpressionError
from atomtask.workflows.expressions import PathRef, read_path
from atomtask.workflows.type_rules import NONE
from pydantic import BaseModel

__all__ = ["Value", "parse_value", "to_plain"]


@attrs.frozen(kw_only=True)
class Value:
    """One input value, parsed: `kind` is `whole`, `text`, `literal`, `list` or `dict`."""

    kind: str
    raw: Any
    refs: tuple[PathRef, ...] = ()
    #: For `text`: (start, end) of each placeholder, in order, matching `refs`.
    spans: tuple[tuple[int, int], ...] = ()
    children: tuple[tuple[str, Value], ...] = ()

    def all_refs(self) -> list[PathRef]:
        """Every path this value reads, nested values included."""
        found = list(self.refs)
        for _, child in self.children:
            found.extend(child.all_refs())
        return found

    def static_type(self, path_type: Callable[[PathRef], Any]) -> Any:
        """The type of the value the step will receive, given each path's type."""
        if self.kind == "whole":
            return path_type(self.refs[0])
        for ref in self.all_refs():
            path_type(ref)  # every path must exist, even inside text
        if self.kind == "text":
            return str
        if self.kind == "list":
            return list[Any]
        if self.kind == "dict":
            return dict[str, Any]
        return NONE if self.raw is None else type(self.raw)

    def render(self, env: Mapping[str, Any]) -> Any:
        """The value on `env` (`{"state": ..., "item": ...}`); raises `ExpressionRuntimeError` for a missing path."""
        if self.kind == "whole":
            ref = self.refs[0]
            return read_path(env[ref.root], ref.parts, ref.root)
        if self.kind == "text":
            pieces: list[str] = []
            cursor = 0
            for ref, (start, end) in zip(self.refs, self.spans, strict=True):
                pieces.append(self.raw[cursor:start])
                pieces.append(format_value(read_path(env[ref.root], ref.parts, ref.root)))
                cursor = end
            pieces.append(self.raw[cursor:])
            return "".join(pieces)
        if self.kind == "list":
            return [child.render(env) for _, child in self.children]
        if self.kind == "dict":
            return {key: child.render(env) for key, child in self.children}
        return self.raw


def parse_value(raw: Any, *, roots: Collection[str] = ("state",)) -> Value:
    """Parse an input value; raises `WorkflowExpressionError` (with `offset`) for a malformed placeholder."""
    if isinstance(raw, str):
        return _parse_text(raw, roots)
    if isinstance(raw, list):
        return Value(
            kind="list", raw=raw, children=tuple((str(i), parse_value(v, roots=roots)) for i, v in enumerate(raw))
        )
    if isinstance(raw, dict):
        return Value(
            kind="dict", raw=raw, children=tuple((str(k), parse_value(v, roots=roots)) for k, v in raw.items())
        )
    return Value(kind="literal", raw=raw)


def _parse_text(text: str, roots: Collection[str]) -> Value:
    placeholders, malformed = find_placeholders(text)
    if malformed:
        offset, bad = malformed[0]
        raise _error(
            f"Malformed placeholder {bad!r} in {text!r}; placeholders are `{{{{state.field}}}}` "
            "or `{{item.field}}` with identifier names.",
            offset,
        )
    refs: list[PathRef] = []
    for ph in placeholders:
        if ph.param not in roots:
            hint = did_you_mean(ph.param, roots) or f" Placeholders start with {' or '.join(sorted(roots))}."
            raise _error(f"Unknown name {ph.param!r} in placeholder {ph.text!r}.{hint}", ph.start)
        refs.append(PathRef(root=ph.param, parts=ph.path, offset=ph.start))
    if not refs:
        return Value(kind="literal", raw=text)
    only = placeholders[0]
    if len(placeholders) == 1 and not text[: only.start].strip() and not text[only.end :].strip():
        return Value(kind="whole", raw=text, refs=tuple(refs))
    return Value(kind="text", raw=text, refs=tuple(refs), spans=tuple((p.start, p.end) for p in placeholders))


def _error(message: str, offset: int) -> WorkflowExpressionError:
    error = WorkflowExpressionError(message)
    error.offset = offset
    return error


def to_plain(value: Any) -> Any:
    """`value` with every Pydantic instance in it turned into a dict, to validate against another class."""
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    return value
