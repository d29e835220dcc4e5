"""Scanning broken JSON text: strings, bare runs, brackets, comments, and the fixes with one reading."""

from __future__ import annotations

from atomtask.handlers._json_scan import scan, truncation_problem


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


def test_items_are_counted_per_container_in_opening_order() -> None:
    """An object counts its keys (also after a missing comma), an array its values; None after a stray closer."""
    assert (2, 3, 0) == scan('{"a": [1, "x", y] "b": {}}').items
    assert (2,) == scan("{'key1', 'key2'}").items
    assert None is scan('{"a": [1}').items


def test_quotes_with_two_readings_are_doubted() -> None:
    """Text right after a string, touching strings, a quote outside a string: where a string ends is unsure."""
    for text in ["['it's fine']", '{"a": """x"""}', "{a: O'Brien}", "['a' 'b']", '{"a": "say "hi" now"}']:
        assert scan(text).doubts, text
    for text in ['["a" 2]', "{'a' 'b'}", '{"a": "x""b": 1}', '["a", "b"] // the user\'s', "{'a': 'it\\'s'}"]:
        assert () == scan(text).doubts, text


def test_a_comment_that_swallows_a_closer_is_doubted_only_when_the_json_stays_open() -> None:
    """`// comment }` that leaves the value open may have eaten structure; `// see ]` inside a closed value did not."""
    assert scan('{"a": {"b": 1 // x }, "c": 2 }').doubts
    assert () == scan('{"a": 1 // see ]\n}').doubts
