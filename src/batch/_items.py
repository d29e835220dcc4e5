"""A batch's input items: JSONL (one JSON object a line) or CSV (a header, then one row an item), file or stdin.

Each item gets an id: its `id` field (or the `--id-field` named), else `item-<hash of its inputs>`
(`-2`, `-3` added for the second, third line with exactly the same inputs), so an item keeps its id
across runs of the same file, and lines inserted, removed or reordered leave the others' ids alone.
A line that cannot be an item raises a `BatchInputError` naming the file, the line and the fix,
before any model is called.

CSV is read strictly (a stray quote, `1,"a"b`, or a quote never closed is an error, not a cell that
quietly swallows the lines after it) and a cell may be as long as the file: the `csv` module's field
size limit (131,072 characters by default, a guard for streams) is lifted while the text, already in
memory, is parsed, and put back afterwards (`_field_limit`). A NUL byte is refused: a text CSV holds
none (the file is binary, or UTF-16).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

import attrs
from atomtask.errors import BatchInputError

__all__ = ["BatchItem", "DefaultIds", "ItemSource", "default_id", "read_items"]

_JSONL_FIX = 'Write each line as one JSON object of the item\'s inputs, e.g. `{"id": "a1", "text": "..."}`.'


@attrs.frozen(kw_only=True)
class BatchItem:
    """One input item: its position, its line in the input, its id and its inputs (the id field included)."""

    index: int
    line: int
    id: str
    inputs: Mapping[str, Any]


@attrs.frozen(kw_only=True)
class ItemSource:
    """Where the items came from: the input's name (a path or `-`), its format, and a digest identifying it."""

    name: str
    format: str
    identity: str


def default_id(inputs: Mapping[str, Any], occurrence: int = 1) -> str:
    """`item-<12 hex digits of the inputs' SHA-256>`: the id of an item that names none.

    `occurrence` is 2, 3, ... for a later item with exactly the same inputs (`item-<hex>-2`).
    """
    text = json.dumps(inputs, sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":"))
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return f"item-{digest}" if occurrence <= 1 else f"item-{digest}-{occurrence}"


class DefaultIds:
    """Gives content ids to items in order, counting exact repeats (`default_id`'s `occurrence`)."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def __call__(self, inputs: Mapping[str, Any]) -> str:
        base = default_id(inputs)
        self._seen[base] = self._seen.get(base, 0) + 1
        return default_id(inputs, self._seen[base])


def read_items(
    source: str, *, id_field: str | None = None, fmt: str | None = None, stdin: TextIO | None = None
) -> tuple[list[BatchItem], ItemSource]:
    """The items of `source` (a file path, or `-` for stdin) and where they came from.

    `fmt` is `jsonl` or `csv`; by default a `.csv` file is CSV, any other file JSONL, and stdin is
    JSONL when its first character is `{`, else CSV.
    """
    name = "<stdin>" if source == "-" else source
    text = _read_text(source, name, stdin)
    if fmt is None:
        if source == "-":
            fmt = "jsonl" if text.lstrip()[:1] in ("{", "") else "csv"
        else:
            fmt = "csv" if source.lower().endswith(".csv") else "jsonl"
    rows = _csv_rows(text, name) if fmt == "csv" else _jsonl_rows(text, name)
    items = _with_ids(rows, name, id_field)
    if source == "-":
        identity = "stdin:" + hashlib.sha256(text.encode()).hexdigest()
    else:
        identity = "file:" + str(Path(source).resolve())
    return items, ItemSource(name=name, format=fmt, identity=identity)


def _read_text(source: str, name: str, stdin: TextIO | None) -> str:
    if source == "-":
        import sys

        stream = stdin if stdin is not None else sys.stdin
        buffer = getattr(stream, "buffer", None)
        data: bytes | str = buffer.read() if buffer is not None else stream.read()
    else:
        try:
            data = Path(source).read_bytes()
        except OSError as exc:
            raise BatchInputError(
                f"Cannot read the batch input ({exc.strerror}).",
                file=name,
                line=None,
                fix="Pass an existing JSONL or CSV file with `--input`, or `-` for stdin.",
            ) from None
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise BatchInputError(
            f"The input is not UTF-8 text (byte 0x{data[exc.start]:02x}).",
            file=name,
            line=line,
            fix="Convert it to UTF-8 (e.g. `iconv -t utf-8`).",
        ) from None


def _jsonl_rows(text: str, name: str) -> Iterable[tuple[int, dict[str, Any]]]:
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise BatchInputError(
                f"Line {number} is not JSON ({exc.msg} at column {exc.colno}).", file=name, line=number, fix=_JSONL_FIX
            ) from None
        if not isinstance(value, dict):
            raise BatchInputError(
                f"Line {number} is a JSON {type(value).__name__}, not an object.",
                file=name,
                line=number,
                fix=_JSONL_FIX,
            )
        yield number, value


_CSV_FIX = 'Quote a cell that holds commas, quotes or line breaks, doubling its quotes: `"say ""hi"""`.'
_LIMIT_LOCK = threading.Lock()


@contextlib.contextmanager
def _field_limit(size: int) -> Iterator[None]:
    """`csv.field_size_limit` at least `size` while the block runs, then as it was.

    The limit is the process's (one C global): raised only for the parse of text already in memory and
    put back, so other CSV readers in the process keep their guard. Two batch inputs read at once in
    two threads take turns (`_LIMIT_LOCK`); a reader of another library in another thread meanwhile
    may only see a higher limit, never a lower one.
    """
    with _LIMIT_LOCK:
        before = csv.field_size_limit()
        csv.field_size_limit(max(before, size))
        try:
            yield
        finally:
            csv.field_size_limit(before)


def _csv_rows(text: str, name: str) -> Iterable[tuple[int, dict[str, Any]]]:
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise BatchInputError(
            f"Line {line} holds a NUL byte: a CSV file is text, with none.",
            file=name,
            line=line,
            fix="Export the file again as UTF-8 CSV (a NUL byte means a binary or UTF-16 file), or fix that line.",
        )
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows: list[tuple[int, list[str]]] = []
    start = 1  # the first line of the row being read: where an unclosed quote opened
    with _field_limit(len(text) + 1):
        try:
            for row in reader:
                rows.append((reader.line_num, row))
                start = reader.line_num + 1
        except csv.Error as exc:
            raise BatchInputError(
                f"The row at line {start} is not valid CSV ({exc}).", file=name, line=start, fix=_CSV_FIX
            ) from None
    header: list[str] | None = None
    for number, row in rows:
        if not row or not any(cell.strip() for cell in row):
            continue
        if header is None:
            header = [cell.strip() for cell in row]
            if "" in header or len(set(header)) != len(header):
                raise BatchInputError(
                    f"The CSV header {header!r} has an empty or repeated column name.",
                    file=name,
                    line=number,
                    fix="Name every column once in the first row: the names of the item's inputs.",
                )
            continue
        if len(row) != len(header):
            raise BatchInputError(
                f"Row {number} has {len(row)} cells; the header has {len(header)} columns.",
                file=name,
                line=number,
                fix="Give every row one cell per column (quote cells that hold commas).",
            )
        yield number, dict(zip(header, row, strict=True))


def _with_ids(rows: Iterable[tuple[int, dict[str, Any]]], name: str, id_field: str | None) -> list[BatchItem]:
    field = id_field or "id"
    seen: dict[str, int] = {}
    content_id = DefaultIds()
    items: list[BatchItem] = []
    for number, inputs in rows:
        if field in inputs and inputs[field] not in (None, ""):
            item_id = str(inputs[field])
        elif id_field is not None:
            raise BatchInputError(
                f"Line {number} has no {id_field!r} field (`--id-field {id_field}`).",
                file=name,
                line=number,
                fix=f"Give every item an {id_field!r}, or leave out `--id-field` to name them by their inputs.",
            )
        else:
            item_id = content_id(inputs)
        if item_id in seen:
            raise BatchInputError(
                f"Line {number} repeats the id {item_id!r} of line {seen[item_id]}.",
                file=name,
                line=number,
                fix="Give every item its own id: the record of finished items is kept by id.",
            )
        seen[item_id] = number
        items.append(BatchItem(index=len(items), line=number, id=item_id, inputs=inputs))
    return items
