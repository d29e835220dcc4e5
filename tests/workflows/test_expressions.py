"""The workflow expression language: what it parses, refuses, evaluates, and how it type-checks."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from atomtask import WorkflowExpressionError
from atomtask.errors import ExpressionRuntimeError, ExpressionTypeError
from atomtask.workflows._expressions import PathRef, expression_type, narrowed, parse_expression
from atomtask.workflows._types import walk
from pydantic import BaseModel


class Inner(BaseModel):
    title: str


class State(BaseModel):
    score: int = 0
    ratio: float = 0.5
    topic: str = "tides"
    tags: list[str] = ["a", "b"]
    article: Inner | None = None
    label: Literal["billing", "other"] = "other"


class Partial(BaseModel):
    count: int


def _value(text: str, state: BaseModel | None = None, **env: Any) -> Any:
    return parse_expression(text, roots=("state", *env)).evaluate({"state": state or State(), **env})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("state.score < 7 and state.topic == 'tides'", True),
        ("not (state.score >= 0)", False),
        ("state.score + 2 * 3", 6),
        ("state.ratio / 2", 0.25),
        ("7 // 2 + 7 % 2", 4),
        ("-state.score - 1", -1),
        ("0 < state.ratio < 1", True),
        ("'a' in state.tags and 'z' not in state.tags", True),
        ("len(state.tags) + len(state.topic)", 7),
        ("state.topic + '!'", "tides!"),
        ("state.article is null", True),
        ("state.article == None or false", True),
        ("[state.score, 1]", [0, 1]),
        ("state.tags[1]", "b"),
        ("'big' if state.score > 5 else 'small'", "small"),
        ("true and True", True),
    ],
)
def test_expressions_evaluate_like_python_on_the_state(text: str, expected: Any) -> None:
    """Paths, literals, arithmetic, comparisons (chained), and/or/not, in, len, lists, ternaries."""
    assert expected == _value(text)


def test_a_loop_name_is_a_root() -> None:
    """`for_each` items are read through their `as` name."""
    assert "tides!" == _value("item + '!'", item="tides")


def test_and_or_give_booleans() -> None:
    """`and`/`or` are boolean, not Python's operand-returning forms."""
    assert (False, True) == (_value("state.score and state.topic"), _value("state.score or state.topic"))


def test_paths_are_collected_with_their_offsets() -> None:
    """Each path read, its root and parts, and where it starts in the text."""
    expr = parse_expression("len(state.tags) > state.score")
    assert [("state", ("tags",), 4), ("state", ("score",), 18)] == [(p.root, p.parts, p.offset) for p in expr.paths]
    assert ["tags", "score"] == [p.field for p in expr.paths]


@pytest.mark.parametrize(
    ("text", "message", "offset"),
    [
        ("state.score <", "Invalid expression 'state.score <'", None),
        ("__import__('os')", "Unknown function '__import__'", 0),
        ("state.topic.uppr()", "Unknown method 'uppr' in expression 'state.topic.uppr()'. Did you mean 'upper'?", 12),
        ("{x for x in state.tags}", "is not part of the expression language", 0),
        ("lambda: 1", "is not part of the expression language", 0),
        ("f'{state.topic}'", "is not part of the expression language", 0),
        ("state.score ** 2", "The operator in `state.score ** 2`", 0),
        ("state.tags[state.score]", "The index `state.tags[state.score]`", 0),
        ("state.score is 1", "`is` and `is not` compare with `null` only", 0),
        ("len(state.tags, 2)", "`len` takes one argument", 0),
        ("score > 1", "Unknown name 'score'", 0),
        ("state.score > itme", "Unknown name 'itme' in expression 'state.score > itme'. Did you mean 'item'?", 14),
        ("(1).real", "Only fields of `state` (or of a loop's variable) can be read", 0),
    ],
)
def test_anything_outside_the_language_is_refused(text: str, message: str, offset: int | None) -> None:
    """Refused with E112, the offending part named, and where it starts."""
    with pytest.raises(WorkflowExpressionError) as caught:
        parse_expression(text, roots=("state", "item"))
    assert message in caught.value.message
    if offset is not None:
        assert offset == caught.value.offset
    assert "E112" == caught.value.code


def test_a_bare_field_name_suggests_its_state_path() -> None:
    """`score` where `state.score` was meant says so."""
    with pytest.raises(WorkflowExpressionError, match=r"Did you mean `state.score`\?"):
        parse_expression("score > 1", fields=["score"])


@pytest.mark.parametrize(
    ("text", "state", "message"),
    [
        ("state.article.title == 'x'", State(), "`state.article` is null, so `title` cannot be read from it"),
        ("state.score / 0", State(), "division by zero"),
        ("state.tags[5]", State(), "`state.tags[5]` is out of range: it has 2 element(s)"),
        ("state.count > 1", Partial.model_construct(), "`state.count` has no value yet: no step has written it"),
    ],
)
def test_run_time_failures_are_expression_errors(text: str, state: BaseModel, message: str) -> None:
    """A value that does not fit at run time raises ExpressionRuntimeError naming it, never a bare Python error."""
    with pytest.raises(ExpressionRuntimeError) as caught:
        _value(text, state)
    assert message in str(caught.value)


def _type(text: str) -> Any:
    def path_type(ref: PathRef) -> Any:
        current: Any = State
        for part in ref.parts:
            current = walk(current, part)
        return current

    return expression_type(parse_expression(text), path_type)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("state.score + 1", int),
        ("state.score + state.ratio", float),
        ("state.score / 2", float),
        ("state.topic + 'x'", str),
        ("len(state.tags)", int),
        ("state.score > 1 or state.topic == 'x'", bool),
        ("state.tags[0]", str),
        ("state.article.title", str),
    ],
)
def test_expression_types_are_inferred(text: str, expected: Any) -> None:
    """The type of an expression follows its operands."""
    assert expected == _type(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("state.topic > 3", "`>` cannot compare `state.topic` (str) with `3` (int)"),
        ("state.topic == 3", "comparing `state.topic` (str) with `3` (int) is always false"),
        ("state.score != 'x'", "comparing `state.score` (int) with `'x'` (str) is always true"),
        ("state.topic + 1", "`+` joins two str or two lists, or adds numbers"),
        ("state.topic * 2", "`*` needs numbers"),
        ("-state.topic", "`-` needs a number, not `state.topic` (str)"),
        ("len(state.score)", "`len` needs a str, list or dict, not `state.score` (int)"),
        ("state.score in state.topic", "`state.score` (int) can never be in `state.topic` (str)"),
        ("1 in state.tags", "`1` (int) can never be in `state.tags` (list[str])"),
        ("'x' in state.score", "`in` needs a list, str or dict on its right"),
    ],
)
def test_type_errors_are_refused_at_load(text: str, message: str) -> None:
    """Operators whose operands can only fail, or always give the same answer, are errors."""
    with pytest.raises(ExpressionTypeError) as caught:
        _type(text)
    assert message in caught.value.message


def test_literal_fields_compare_with_their_strings_and_optionals_with_null() -> None:
    """A literal field compares with str; an optional field with null; ordering an optional number is allowed."""
    assert (bool, bool) == (_type("state.label == 'billing'"), _type("state.article == null"))


def test_a_literal_compared_with_a_value_outside_it_is_refused() -> None:
    """`state.label == 'biling'` can never be true: refused naming the allowed values and the near one."""
    with pytest.raises(ExpressionTypeError) as caught:
        _type("state.label == 'biling'")
    assert (
        "`state.label` is one of 'billing', 'other', never 'biling', so `==` is always false. Did you mean 'billing'?"
        in caught.value.message
    )
    assert bool is _type("state.label in ['billing', 'other']")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("state.article is not null and state.article.title == 'x'", {"state.article"}),
        ("state.article == null or state.article.title == 'x'", {"state.article"}),
        ("not (state.article is null) and state.article.title == 'x'", {"state.article"}),
        ("state.article.title == 'x' if state.article != null else false", {"state.article"}),
        ("state.article.title == 'x' and state.article is not null", set()),
        ("state.article is not null or state.article.title == 'x'", set()),
    ],
)
def test_narrowed_knows_what_a_guard_before_a_read_tested(text: str, expected: set[str]) -> None:
    """A null test that runs (and passed) before the read narrows it; one after it, or that failed, does not."""
    expr = parse_expression(text)
    read = next(p for p in expr.paths if p.parts == ("article", "title"))
    assert expected == narrowed(expr)[read.offset]


def test_a_guarded_read_through_null_evaluates_without_reading_it() -> None:
    """`and` stops at a false guard, so the read through null never runs."""
    assert False is _value("state.article is not null and state.article.title == 'x'")
