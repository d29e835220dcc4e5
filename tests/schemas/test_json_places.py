"""Line and column of each part of a JSON document, by JSON Pointer."""

from __future__ import annotations

from atomtask import SourceLocation
from atomtask.schemas._sources import json_places

SCHEMA = """{
  "type": "object",
  "properties": {
    "age": {"type": "integer", "minimun": 0},
    "tags": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}
  }
}"""


def at(line: int, column: int) -> SourceLocation:
    return SourceLocation(file="s.json", line=line, column=column)


def test_members_are_located_at_their_keys_and_items_at_their_start() -> None:
    """Object members point at their key; array items at the item."""
    places = json_places(SCHEMA, "s.json")
    assert at(1, 1) == places[""]
    assert at(3, 3) == places["/properties"]
    assert at(4, 5) == places["/properties/age"]
    assert at(4, 32) == places["/properties/age/minimun"]
    assert at(5, 41) == places["/properties/tags/items/0"]
    assert at(5, 61) == places["/properties/tags/items/1"]


def test_surrogate_escapes_do_not_stop_the_locating() -> None:
    """An escaped emoji (a surrogate pair PyYAML refuses) leaves the positions after it right."""
    places = json_places('{"d": "\\ud83d\\ude00", "e": 1}', "s.json")
    assert at(1, 23) == places["/e"]


def test_text_that_cannot_be_located_gives_no_places() -> None:
    """Text PyYAML cannot read yields no places (findings then point at the file)."""
    assert {} == json_places('{"a": [1, 2}', "s.json")
