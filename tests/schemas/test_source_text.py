"""Reading declaration files as UTF-8, and refusing JSON nested too deep, before any parser sees it."""

from __future__ import annotations

from pathlib import Path

import pytest
from atomtask import SchemaError, TemplateError
from atomtask.schemas._sources import MAX_NESTING, json_too_deep, read_source


def test_utf8_text_is_returned(tmp_path: Path) -> None:
    """A UTF-8 file reads as its text."""
    path = tmp_path / "t.yaml"
    path.write_text("name: café\n", encoding="utf-8")
    assert "name: café\n" == read_source(path)


def test_a_file_that_is_not_utf8_names_the_file_the_byte_and_the_fix(tmp_path: Path) -> None:
    """A Latin-1 byte is reported with the file, its line and column, and how to fix it."""
    path = tmp_path / "t.yaml"
    path.write_bytes(b"name: t\ninstructions: caf\xe9\n")
    with pytest.raises(TemplateError) as raised:
        read_source(path)
    assert (str(path), 2, 18) == (raised.value.location.file, raised.value.location.line, raised.value.location.column)  # type: ignore[union-attr]  # located
    assert f"File {str(path)!r} is not valid UTF-8" in raised.value.message
    assert "byte 0xe9 at offset 25" in raised.value.message
    assert "Save the file as UTF-8." in raised.value.message


def test_a_utf16_file_is_named_as_such(tmp_path: Path) -> None:
    """A UTF-16 byte-order mark is pointed out, in the error class the caller asks for."""
    path = tmp_path / "s.json"
    path.write_bytes("{}".encode("utf-16"))
    with pytest.raises(SchemaError, match="it starts with a UTF-16 byte-order mark"):
        read_source(path, error=SchemaError)


def test_json_nested_past_the_limit_is_located() -> None:
    """One level more than `MAX_NESTING` is refused at the bracket that opens it."""
    text = "{\n" + '"a": [' * MAX_NESTING + "]" * MAX_NESTING + "}"
    error = json_too_deep(text, "s.json")
    assert error is not None
    assert (2, 1 + 6 * (MAX_NESTING - 1) + 5) == (error.location.line, error.location.column)  # type: ignore[union-attr]  # located
    assert f"nested more than {MAX_NESTING} levels deep" in error.message


def test_json_at_the_limit_and_brackets_in_strings_pass() -> None:
    """Exactly `MAX_NESTING` levels pass, and brackets inside strings (escaped quotes too) do not count."""
    assert None is json_too_deep("[" * MAX_NESTING + "]" * MAX_NESTING, "s.json")
    assert None is json_too_deep('{"a": "[[[[\\"[[[[' + "[" * 200 + '"}', "s.json")


def test_a_hundred_thousand_levels_are_refused_quickly() -> None:
    """The scan stops at the limit, so enormous nesting costs nothing more than the limit."""
    error = json_too_deep("[" * 100_000, "s.json")
    assert error is not None
    assert (1, MAX_NESTING + 1) == (error.location.line, error.location.column)  # type: ignore[union-attr]  # located
