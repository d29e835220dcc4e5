"""Where each part of a JSON document is: line and column by JSON Pointer, for findings in `.json` files.

The document itself is read by the `json` module, exactly; this only locates its parts, using
PyYAML's event stream (JSON is, for this purpose, YAML flow syntax, and every event carries its
line and column). The stream is walked with an explicit stack, never recursively. When PyYAML
cannot read the text (rare corners such as surrogate-pair escapes, which are neutralised first),
no part is located and findings point at the file.
"""

from __future__ import annotations

import re
from typing import Any

from atomtask.system.errors import SourceLocation

__all__ = ["json_places"]

# `\ud83d` and the like: same length, so every position after them is unchanged.
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def json_places(text: str, file: str) -> dict[str, SourceLocation]:
    """Each member and item of the JSON `text` by unescaped JSON Pointer (`/properties/age`; `""` is the root).

    A member is located at its key (what a message about it points at), an item at its start.
    """
    import yaml

    try:
        from yaml import CSafeLoader as Loader
    except ImportError:  # pragma: no cover - PyYAML built without libyaml
        from yaml import SafeLoader as Loader  # type: ignore[assignment]  # same interface, pure Python

    places: dict[str, SourceLocation] = {}
    # Per open collection: [pointer, is_mapping, next index or key, expecting a key]
    stack: list[list[Any]] = []

    def loc(mark: Any) -> SourceLocation:
        return SourceLocation(file=file, line=mark.line + 1, column=mark.column + 1)

    try:
        for event in yaml.parse(_SURROGATE.sub(r"\\u0020", text), Loader=Loader):
            if isinstance(event, yaml.CollectionEndEvent):
                stack.pop()
                continue
            if not isinstance(event, yaml.NodeEvent):
                continue
            if not stack:
                pointer = ""
                places.setdefault(pointer, loc(event.start_mark))
            else:
                top = stack[-1]
                if top[1] and top[3]:  # a key
                    top[2], top[3] = str(getattr(event, "value", "")), False
                    places[f"{top[0]}/{top[2]}"] = loc(event.start_mark)
                    continue
                if top[1]:
                    pointer = f"{top[0]}/{top[2]}"
                    top[3] = True
                else:
                    pointer = f"{top[0]}/{top[2]}"
                    places[pointer] = loc(event.start_mark)
                    top[2] += 1
            if isinstance(event, yaml.MappingStartEvent):
                stack.append([pointer, True, None, True])
            elif isinstance(event, yaml.SequenceStartEvent):
                stack.append([pointer, False, 0, False])
    except yaml.YAMLError:
        return {}
    return places
