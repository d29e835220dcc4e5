"""Scanning broken JSON text: strings, bare runs, brackets, comments, and the fixes with one reading."""

from __future__ import annotations

from atomtask.handlers.json_scan import scan, truncation_problem


def test_scan_records_strings_bare_runs_and_brackets() -> None:
    """Quoted strings are decoded, unquoted runs are kept with whether they are keys, containers counted."""
    scanned = scan("{name: 'Ada \\'A\\' L', tags: [x, \"y\\n\"], n: 3}")
    assert ("Ada 'A' L", "y\n") == scanned.strings
    assert (("name", True), ("tags", True), ("x", False), ("n", True), ("3", False)) == scanned.bare
    assert 2 == scanned.containers
    assert () == scanned.open_stack


def test_comments_are_removed_but_a_hash_inside_a_value_is_not_a_comment() -> None:
    """`//`, `/* */` and a line-leading `#` are comments; `#fff` after a key is text."""
    scanned = scan('{"a": 1, // one\n/* two */ "b": #fff\n# three\n}')
    assert 2 + 1 == scanned.comments
    assert "#fff" in scanned.without_comments
    assert "one" not in scanned.without_comments


def test_missing_colon_and_comma_are_inserted() -> None:
    """`"key" value` gets its `:`; two items side by side in an array get their `,` right after the first."""
    assert '{"a" :[{},{}]}' == scan('{"a" [{}{}]}').without_comments


def test_stop_at_end_finds_where_the_first_value_closes() -> None:
    """With `stop_at_end` the scan ends after the value's closing bracket; prose after it is not read."""
    text = '{"a": [1]} and then {"b": 2}'
    assert len('{"a": [1]}') == scan(text, stop_at_end=True).end


def test_truncation_is_safe_only_between_values() -> None:
    """A cut after a complete value is closable; a cut inside a string, number or after a key is not."""
    for text, safe in [('{"a": 1, ', True), ('{"a": "x"', True), ('{"a": tru', False), ('{"a": "x', False)]:
        scanned = scan(text)
        assert safe == (truncation_problem(text, scanned) is None), text
