"""Reading a batch's items: JSONL, CSV and stdin; item ids; bad lines as typed errors naming the line and the fix."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from atomtask import BatchInputError
from atomtask.batch._items import default_id, read_items


def test_jsonl_items_keep_their_id_field_and_line(tmp_path: Path) -> None:
    """Each JSONL line is one item; its `id` names it; blank lines are skipped but counted."""
    path = tmp_path / "items.jsonl"
    path.write_text('{"id": "a", "text": "x"}\n\n{"id": 7, "text": "y"}\n', encoding="utf-8")
    items, source = read_items(str(path))
    assert [("a", 1), ("7", 3)] == [(item.id, item.line) for item in items]
    assert {"id": "a", "text": "x"} == dict(items[0].inputs)
    assert "jsonl" == source.format


def test_items_without_an_id_are_named_by_their_inputs(tmp_path: Path) -> None:
    """Without an id field an item is `item-<hash of its inputs>`, whatever its line."""
    path = tmp_path / "items.jsonl"
    path.write_text('{"text": "x"}\n{"text": "y"}\n', encoding="utf-8")
    items, _ = read_items(str(path))
    assert default_id({"text": "x"}) == items[0].id
    assert items[0].id.startswith("item-")
    assert items[0].id != default_id({"text": "other"})


def test_a_line_inserted_on_top_keeps_the_other_items_ids(tmp_path: Path) -> None:
    """Ids are content-based: a new first line leaves every other item's id alone."""
    path = tmp_path / "items.jsonl"
    path.write_text('{"text": "x"}\n{"text": "y"}\n', encoding="utf-8")
    before = [item.id for item in read_items(str(path))[0]]
    path.write_text('{"text": "new"}\n{"text": "x"}\n{"text": "y"}\n', encoding="utf-8")
    after = [item.id for item in read_items(str(path))[0]]
    assert before == after[1:]


def test_exact_duplicate_lines_get_an_occurrence_number(tmp_path: Path) -> None:
    """The second line with exactly the same inputs is `item-<hash>-2`: both run, neither is an error."""
    path = tmp_path / "items.jsonl"
    path.write_text('{"text": "x"}\n{"text": "x"}\n', encoding="utf-8")
    items, _ = read_items(str(path))
    assert [default_id({"text": "x"}), default_id({"text": "x"}) + "-2"] == [item.id for item in items]


def test_id_field_names_items(tmp_path: Path) -> None:
    """`--id-field` picks another field as the id; an item without it is an error naming its line."""
    path = tmp_path / "items.jsonl"
    path.write_text('{"key": "k1", "text": "x"}\n{"text": "y"}\n', encoding="utf-8")
    with pytest.raises(BatchInputError) as caught:
        read_items(str(path), id_field="key")
    assert 2 == caught.value.line
    assert "'key'" in str(caught.value)
    assert f"{path}:2:" in str(caught.value)


def test_csv_items_from_header_and_rows(tmp_path: Path) -> None:
    """A `.csv` file: the header names the inputs, each row is an item (quoted commas kept)."""
    path = tmp_path / "items.csv"
    path.write_text('id,text\nr1,"a, b"\nr2,c\n', encoding="utf-8")
    items, source = read_items(str(path))
    assert [("r1", {"id": "r1", "text": "a, b"}), ("r2", {"id": "r2", "text": "c"})] == [
        (item.id, dict(item.inputs)) for item in items
    ]
    assert "csv" == source.format
    assert 2 == items[0].line


def test_stdin_is_sniffed_jsonl_or_csv() -> None:
    """`-` reads stdin: JSONL when it starts with `{`, CSV otherwise."""
    jsonl, source = read_items("-", stdin=io.StringIO('{"text": "x"}\n'))
    csv_items, csv_source = read_items("-", stdin=io.StringIO("text\nx\n"))
    assert ("jsonl", "csv") == (source.format, csv_source.format)
    assert dict(jsonl[0].inputs) == dict(csv_items[0].inputs)
    assert source.identity.startswith("stdin:")


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ('{"text": "x"}\n{"text": \n', 2, "is not JSON"),
        ('{"text": "x"}\n[1, 2]\n', 2, "JSON list, not an object"),
        ('{"id": "a"}\n{"id": "a"}\n', 2, "repeats the id 'a' of line 1"),
    ],
)
def test_bad_jsonl_lines_name_the_line_and_the_fix(tmp_path: Path, text: str, line: int, words: str) -> None:
    """A line that cannot be an item raises `BatchInputError` with its line, what is wrong and the fix."""
    path = tmp_path / "items.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BatchInputError) as caught:
        read_items(str(path))
    assert line == caught.value.line
    assert words in str(caught.value)
    assert caught.value.fix in str(caught.value)


def test_csv_row_of_the_wrong_width(tmp_path: Path) -> None:
    """A CSV row with more cells than the header names its line."""
    path = tmp_path / "items.csv"
    path.write_text("id,text\nr1,a,extra\n", encoding="utf-8")
    with pytest.raises(BatchInputError) as caught:
        read_items(str(path))
    assert 2 == caught.value.line
    assert "3 cells; the header has 2 columns" in str(caught.value)


def test_unreadable_and_non_utf8_inputs(tmp_path: Path) -> None:
    """A missing file and bytes that are not UTF-8 are input errors with the fix."""
    with pytest.raises(BatchInputError, match="Cannot read the batch input"):
        read_items(str(tmp_path / "missing.jsonl"))
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"text": "ok"}\n{"text": "caf\xe9"}\n')
    with pytest.raises(BatchInputError) as caught:
        read_items(str(path))
    assert 2 == caught.value.line
    assert "iconv" in str(caught.value)
