"""The clause readers shared by `defatom`, `defschema`, `defworkflow` and `director-evaluator`."""

from __future__ import annotations

import pytest
from atomtask import SexpEvalError, SourceLocation, TemplateError
from atomtask.sexp._forms import clauses, datum, describe, entries, field_spec, pairs, single
from atomtask.sexp._reader import SList, read


def node(source: str) -> SList:
    (found,) = read(source, "f.sexp")
    assert isinstance(found, SList)
    return found


def test_datum_reads_literals_symbols_and_lists_without_evaluating() -> None:
    """Symbols read as their names, lists as lists; nothing is looked up."""
    assert ["a", ["b", "c", 1, 2.5, True, None]] == datum(node('(a (b "c" 1 2.5 true nil))'))


def test_describe_names_each_kind_of_node() -> None:
    """Messages show a symbol, a list by its head, a string clipped, literals as written."""
    parts = node('(s (head x) () "a very long string that goes on and on" nil)').items
    assert [
        "the symbol `s`",
        "the list `(head ...)`",
        "the empty list `()`",
        "the string 'a very long string that goes o...'",
        "`nil`",
    ] == [describe(part) for part in parts]


def test_clauses_raise_the_callers_error_class() -> None:
    """Unknown clauses suggest near names, in the error class the caller chose, at the clause."""
    form = node("(form (instructions 1) (modle 2))")
    with pytest.raises(SexpEvalError) as info:
        clauses(form.items[1:], ("instructions", "model"), "the form", SexpEvalError, what="clause")
    assert "Unknown clause 'modle' in the form. Did you mean 'model'?" in info.value.message
    assert SourceLocation(file="f.sexp", line=1, column=24) == info.value.location
    found = clauses(form.items[1:2], ("instructions",), "the form", TemplateError, what="clause")
    assert ["instructions"] == list(found)


def test_entries_take_both_spellings_and_single_checks_the_count() -> None:
    """`((k v) (k v))` and `(k v) (k v)` read the same; a key with two values is refused."""
    wrapped = entries(node("(x ((a 1) (b 2)))").items[1:], ("a", "b"), "x", TemplateError)
    flat = entries(node("(x (a 1) (b 2))").items[1:], ("a", "b"), "x", TemplateError)
    assert list(wrapped) == list(flat) == ["a", "b"]
    clause = node("(a 1 2)")
    with pytest.raises(TemplateError, match=r"`\(a ...\)` in x takes exactly one value, got 2"):
        single(clause.items[1:], clause, "x", TemplateError)


def test_field_spec_is_the_yaml_field_mapping() -> None:
    """`(name type "description" (option value))` becomes `{name, type, description, option}`."""
    field = field_spec(node('(score int "The score" (default 0) (ge 0))'), "state", TemplateError)
    assert {"name": "score", "type": "int", "description": "The score", "default": 0, "ge": 0} == field


def test_pairs_reads_both_spellings_and_refuses_a_repeated_name() -> None:
    """`(k v) ...` and `((k v) ...)` give the same pairs; a name given twice is an error at its form."""
    flat = [
        (name, datum(value))
        for name, value, _ in pairs(
            node("(x (a 1) (b 2))").items[1:], "k", "t", TemplateError, noun="key", example="(k (a 1))"
        )
    ]
    nested = [
        (name, datum(value))
        for name, value, _ in pairs(
            node("(x ((a 1) (b 2)))").items[1:], "k", "t", TemplateError, noun="key", example="(k (a 1))"
        )
    ]
    assert [("a", 1), ("b", 2)] == flat == nested

    with pytest.raises(TemplateError) as raised:
        pairs(node("(x (a 1) (a 2))").items[1:], "k", "t", TemplateError, noun="key", example="(k (a 1))")
    assert "'a' is repeated in `k` of t; give it once." == raised.value.message
    assert (1, 10) == (raised.value.location.line, raised.value.location.column)  # type: ignore[union-attr]
