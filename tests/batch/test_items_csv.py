"""CSV inputs the `csv` module refuses: a cell past its field size limit is read; bad CSV names its line (exit 2)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from atomtask import BatchInputError
from atomtask.batch._items import read_items
from atomtask.cli._main import main

from tests.batch_helpers import write_templates

BIG = 300_000  # over the `csv` module's default limit of 131,072 characters a field


def test_a_cell_over_the_csv_field_limit_is_read_whole(tmp_path: Path) -> None:
    """A 300,000-character cell is one item's input, and the process's CSV limit is as it was after."""
    before = csv.field_size_limit()
    path = tmp_path / "items.csv"
    path.write_text(f'id,text\na,"{"x" * BIG}"\nb,short\n', encoding="utf-8")
    items, _ = read_items(str(path))
    assert [("a", BIG), ("b", 5)] == [(item.id, len(item.inputs["text"])) for item in items]
    assert before == csv.field_size_limit()


def test_a_big_cell_from_stdin_is_read_whole() -> None:
    """The same through stdin (sniffed as CSV)."""
    items, source = read_items("-", stdin=io.StringIO(f"text\n{'y' * BIG}\n"))
    assert ("csv", BIG) == (source.format, len(items[0].inputs["text"]))


@pytest.mark.parametrize(
    ("text", "line", "said"),
    [
        ('id,text\na,ok\nb,"say "hi" now"\n', 3, "',' expected after '\"'"),
        ('id,text\na,ok\nb,"never closed\nc,more\n', 3, "unexpected end of data"),
        ("id,text\na,ok\nb,nul\x00here\n", 3, "NUL byte"),
    ],
    ids=["stray-quote", "unclosed-quote", "nul-byte"],
)
def test_bad_csv_is_a_typed_error_naming_its_line(tmp_path: Path, text: str, line: int, said: str) -> None:
    """A stray quote, a quote never closed (where it opened) or a NUL byte: a `BatchInputError` with the line."""
    path = tmp_path / "items.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BatchInputError) as caught:
        read_items(str(path))
    assert line == caught.value.line
    assert said in str(caught.value)
    assert f"{path}:{line}:" in str(caught.value)


def test_the_command_runs_a_big_cell_and_refuses_bad_csv_with_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`atomtask batch` over a CSV with a 300,000-character cell runs it (exit 0); a stray quote: exit 2, the line."""
    monkeypatch.setenv("ATOMTASK_HOME", str(tmp_path / "home"))
    templates = write_templates(tmp_path / "templates")  # the synthetic model: offline
    good = tmp_path / "items.csv"
    good.write_text(f'id,text\na,"{"x" * BIG}"\n', encoding="utf-8")
    out, err = tmp_path / "out.jsonl", io.StringIO()
    assert 0 == main(["batch", "tag", "--templates", str(templates), "--input", str(good), "-o", str(out)], stderr=err)
    assert ["a"] == [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()]
    bad = tmp_path / "bad.csv"
    bad.write_text('id,text\na,"x"y\n', encoding="utf-8")
    err = io.StringIO()
    assert 2 == main(["batch", "tag", "--templates", str(templates), "--input", str(bad)], stderr=err)
    assert f"{bad}:2: The row at line 2 is not valid CSV" in err.getvalue()
    assert "unexpected Error" not in err.getvalue()
