"""Arithmetic, comparison and text builtins: numbers only where numbers are meant, located errors."""

from __future__ import annotations

from typing import Any

import pytest
from atomtask import SexpEvalError, SourceLocation, TaskSystem
from atomtask.sexp._builtins import text_of
from pydantic import BaseModel


def evaluate(source: str, **variables: Any) -> Any:
    return TaskSystem().defatom(source, file="o.sexp", variables=variables)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("(+)", 0),
        ("(+ 1 2 3)", 6),
        ("(+ 1 2.5)", 3.5),
        ("(- 3)", -3),
        ("(- 10 4 1)", 5),
        ("(*)", 1),
        ("(* 2 3 4)", 24),
        ("(/ 7 2)", 3.5),
        ("(/ 6 3)", 2),
        ("(/ 6.0 3)", 2.0),
        ("(/ 12 2 3)", 2),
        ("(< 1 2 3)", True),
        ("(< 1 3 2)", False),
        ("(<= 2 2)", True),
        ("(> 3 2.5)", True),
        ("(>= 1 2)", False),
        ('(< "apple" "banana")', True),
        ("(= 1 1.0 1)", True),
        ("(= 1 true)", False),
        ('(= (list 1 "a") (list 1 "a"))', True),
        ('(concat "Round " 2 ": " nil " " true)', "Round 2: nil true"),
        ("(concat)", ""),
        ('(concat (list 1 "a"))', '[1,"a"]'),
        ("(str 2.5)", "2.5"),
        ('(str "x")', "x"),
        ('(length "abc")', 3),
        ("(length (list 1 2))", 2),
        ("(append (list 1) 2 3)", [1, 2, 3]),
        ("(let ((a (list 1))) (append a 2) a)", [1]),  # a new list: the old one is unchanged
    ],
)
def test_operators_evaluate(source: str, expected: Any) -> None:
    """The builtins give these values; exact division of whole numbers stays whole."""
    value = evaluate(source)
    assert expected == value
    assert type(expected) is type(value)


@pytest.mark.parametrize(
    ("source", "column", "fragment"),
    [
        ('(+ 1 "a")', 6, "`+` works on numbers; argument 2 is the string 'a'. Join text with `(concat ...)`."),
        ("(* true 2)", 4, "`*` works on numbers; argument 1 is the boolean true."),
        ("(-)", 1, "`-` takes at least 1 argument"),
        ("(/ 1)", 1, "`/` takes at least 2 arguments"),
        ("(/ 1 0)", 6, "`/` divides by zero (argument 2)."),
        ('(< 1 "a")', 6, "`<` compares numbers with numbers or text with text; argument 2 is the string 'a'"),
        ("(< 1 nil)", 6, "argument 2 is nil."),
        ("(< 1)", 1, "`<` takes at least 2 arguments"),
        ("(str 1 2)", 1, "`str` takes exactly 1 argument"),
        ("(length 5)", 9, "`length` counts the items of a list"),
        ("(append 1 2)", 9, "`append` adds items to a list"),
    ],
)
def test_operator_errors_name_the_argument(source: str, column: int, fragment: str) -> None:
    """A wrong argument is an error at that argument, saying what the builtin takes."""
    with pytest.raises(SexpEvalError) as info:
        evaluate(source)
    assert fragment in info.value.message
    assert SourceLocation(file="o.sexp", line=1, column=column) == info.value.location


class Point(BaseModel):
    x: int


def test_text_of_writes_data_as_json_and_literals_as_written() -> None:
    """Models and mappings become JSON, literals the way the language writes them."""
    assert ['{"x":1}', '{"a":[1,null]}', "false", "nil"] == [
        text_of(Point(x=1)),
        text_of({"a": [1, None]}),
        text_of(False),
        text_of(None),
    ]
