"""Expressions too long or too deep are refused before Python parses them (E125); every evaluation is bounded."""

from __future__ import annotations

import random
from typing import Any

import pytest
from atomtask.errors import (
    ExpressionRuntimeError,
    ExpressionTypeError,
    WorkflowExpressionError,
    WorkflowExpressionLimitError,
)
from atomtask.workflows._expressions import (
    MAX_DEPTH,
    MAX_INT_DIGITS,
    MAX_ITEMS,
    MAX_LENGTH,
    MAX_TEXT,
    expression_type,
    parse_expression,
)
from pydantic import BaseModel


def shapes(n: int) -> dict[str, str]:
    """Each way an expression can nest or grow, `n` terms or levels of it."""
    return {
        "sum": "+".join(["1"] * n),
        "not": "not " * n + "true",
        "minus": "-" * n + "1",
        "nested if": "1 if true else (" * n + "1" + ")" * n,
        "chained if": " if true else ".join(["1"] * n),
        "parentheses": "(" * n + "1" + ")" * n,
        "lists": "[" * n + "]" * n,
        "calls": "len(" * n + "'a'" + ")" * n,
        "objects": "{'a': " * n + "1" + "}" * n,
        "methods": "state.text" + ".lower()" * n,
        "indexes": "state.text" + "[0]" * n,
    }


CASES = [pytest.param(text, id=f"{name}-{n}") for n in (500, 100_000) for name, text in shapes(n).items()]
CASES.append(pytest.param(" and ".join(["true"] * 100_000), id="flat-and-100000"))


@pytest.mark.parametrize("text", CASES)
def test_a_deep_or_long_expression_is_e125_not_a_crash(text: str) -> None:
    """500 and 100,000 terms or levels of every shape: `WorkflowExpressionLimitError` (E125), never a crash."""
    with pytest.raises(WorkflowExpressionLimitError) as caught:
        parse_expression(text)
    assert "E125" == caught.value.code
    assert isinstance(caught.value, WorkflowExpressionError)  # callers catching E112's class still catch it
    assert len(caught.value.message) < 400  # the expression is named by its start, never repeated whole


def test_a_long_flat_expression_within_the_length_limit_is_read() -> None:
    """500 terms joined by `and` nest two levels deep: read and evaluated (only nesting counts toward depth)."""
    assert True is parse_expression(" and ".join(["true"] * 500)).evaluate({"state": {}})


def test_a_text_over_the_length_limit_is_refused_before_parsing() -> None:
    """A flat expression of 10,001 characters is refused with its length and the limit; 10,000 are read."""
    within = " and ".join(["true"] * 2000)[:MAX_LENGTH].rsplit(" and", 1)[0]
    parse_expression(within)
    over = within + " and " + "true" * ((MAX_LENGTH - len(within)) // 4 + 1)
    with pytest.raises(WorkflowExpressionLimitError) as caught:
        parse_expression(over)
    assert f"{len(over):,} characters long, over the limit of {MAX_LENGTH:,}" in caught.value.message
    assert caught.value.offset is None


def test_brackets_are_refused_at_the_opener_that_goes_too_deep() -> None:
    """101 nested brackets: the offset is the 101st opener's; brackets inside quoted text do not count."""
    text = "len(" + "'((((' + " + "[" * MAX_DEPTH + "1" + "]" * MAX_DEPTH + ")"
    with pytest.raises(WorkflowExpressionLimitError) as caught:
        parse_expression(text)
    assert text.index("[" * (MAX_DEPTH - 1)) + MAX_DEPTH - 1 == caught.value.offset
    assert "nests more than 100 levels deep here" in caught.value.message


def test_a_deep_operator_chain_is_refused_where_it_goes_too_deep() -> None:
    """`not` x 101: located at a `not`, inside the text (not at an unknown place)."""
    text = "state.ok and " + "not " * (MAX_DEPTH + 1) + "true"
    with pytest.raises(WorkflowExpressionLimitError) as caught:
        parse_expression(text)
    assert caught.value.offset is not None
    assert text[caught.value.offset :].startswith("not ")


def test_nesting_up_to_the_limit_is_read_checked_and_evaluated() -> None:
    """Exactly `MAX_DEPTH` levels of lists parse, type and evaluate (the limit refuses only what is past it)."""
    expr = parse_expression("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    expression_type(expr, lambda ref: Any)
    value = expr.evaluate({"state": {}})
    for _ in range(MAX_DEPTH - 1):
        value = value[0]
    assert [] == value


class Big(BaseModel):
    text: str = "ab"
    n: int = 3
    big: int = 10**4000 - 1
    items: list[str] = ["x", "yy"]
    long: str = "x" * (MAX_TEXT // 2 + 1)
    many: list[int] = list(range(MAX_ITEMS // 2 + 1))


def _run(text: str) -> Any:
    return parse_expression(text).evaluate({"state": Big()})


def _balanced_product(levels: int) -> str:
    return "state.big" if levels == 0 else f"({_balanced_product(levels - 1)}) * ({_balanced_product(levels - 1)})"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("state.long + state.long", "would make a str of 1,000,002 characters, over the limit of 1,000,000"),
        ("state.many + state.many", "would make a list of 100,002 elements, over the limit of 100,000"),
        ("state.long.replace('x', 'xx')", "would make a str of 1,000,002 characters, over the limit of 1,000,000"),
        ("', '.join([state.long, state.long])", "would make a str of 1,000,004 characters"),
        ("state.big * state.big", f"whole number of about 8,000 digits, over the limit of {MAX_INT_DIGITS:,}"),
        (_balanced_product(9), f"over the limit of {MAX_INT_DIGITS:,}"),
        ("state.text * 10000000000", "`*` needs numbers; got a str and an int"),
        ("'%0999999999d' % state.n", "`%` needs numbers; got a str and an int"),
        ("state.items * 10000000000", "`*` needs numbers; got a list and an int"),
    ],
)
def test_every_evaluation_refuses_to_grow_past_its_limits(text: str, message: str) -> None:
    """Each operation that could grow a str, a list or a whole number stops, naming itself and the limit."""
    with pytest.raises(ExpressionRuntimeError) as caught:
        _run(text)
    assert message in str(caught.value)


def test_whole_numbers_within_the_limit_are_computed() -> None:
    """A product of about 4,000 digits is computed as before: the limit is on size, not on `*`."""
    assert 10**40 == _run(" * ".join(["10"] * 40))
    assert (10**4000 - 1) * 7 == _run("state.big * 7")


@pytest.mark.parametrize("text", ["state.text * 10000000000", "'%0999999999d' % state.n", "state.items * 10000000000"])
def test_operations_that_only_grow_text_are_type_errors_when_registered(text: str) -> None:
    """`*` and `%` on a str or list are refused by the type check, before any run."""

    def path_type(ref: Any) -> Any:
        return Big.model_fields[ref.field].annotation

    with pytest.raises(ExpressionTypeError, match="needs numbers"):
        expression_type(parse_expression(text), path_type)


@pytest.mark.parametrize("text", ["10 ** 10 ** 10", "state.n ** 99999999", "pow(10, 10)"])
def test_powers_are_not_part_of_the_language(text: str) -> None:
    """There is no `**` (nor `pow`): `10 ** 10 ** 10` is refused when parsed (E112), never computed."""
    with pytest.raises(WorkflowExpressionError) as caught:
        parse_expression(text)
    assert "E112" == caught.value.code


LEAVES = ["1", "2.5", "'ab'", "true", "null", "state.text", "state.n", "state.big", "state.items", "x", "9" * 300]


def _random_expression(rng: random.Random, depth: int) -> str:
    """A random expression: a mix of every form, some long flat chains and deep runs of one shape."""
    if depth <= 0:
        return rng.choice(LEAVES)

    def sub() -> str:
        return _random_expression(rng, depth - 1)

    forms = [
        lambda: f"{sub()} {rng.choice(['+', '-', '*', '/', '//', '%'])} {sub()}",
        lambda: f"not {sub()}",
        lambda: f"-{sub()}",
        lambda: f"{sub()} if {sub()} else {sub()}",
        lambda: f"({sub()})",
        lambda: "[" + ", ".join(sub() for _ in range(rng.randrange(3))) + "]",
        lambda: "{'a': " + sub() + "}",
        lambda: f"{rng.choice(['len', 'str', 'int', 'float', 'round'])}({sub()})",
        lambda: f"({sub()}).{rng.choice(['lower()', 'upper()', 'strip()', 'split()'])}",
        lambda: f"({sub()}).replace({sub()}, {sub()})",
        lambda: f"', '.join({sub()})",
        lambda: f"[{sub()} for x in {sub()}]",
        lambda: f"{sub()} {rng.choice(['<', '==', 'in', 'and', 'or', 'is not'])} {sub()}",
        lambda: f"({sub()})[0]",
        lambda: f"({sub()}) * ({sub()})",
        lambda: rng.choice([" + ", " and ", " * "]).join(sub() for _ in range(rng.randrange(2, 60))),
        lambda: _deep_run(rng, sub()),
    ]
    return rng.choice(forms)()


def _deep_run(rng: random.Random, inner: str) -> str:
    m = rng.randrange(50, 3000)
    return rng.choice(
        [
            "not " * m + inner,
            "(" * m + inner + ")" * m,
            "[" * m + inner + "]" * m,
            "-" * m + inner,
            "len(" * m + inner + ")" * m,
            inner + ".lower()" * m,
            "1 if true else (" * m + inner + ")" * m,
        ]
    )


def fuzz(cases: int, seed: int) -> tuple[int, int, dict[str, int]]:
    """Parse, type and evaluate `cases` random expressions: (cases, typed errors, escaped exceptions by class)."""
    rng = random.Random(seed)
    typed = 0
    escaped: dict[str, int] = {}
    state = Big(long="", many=[])
    for _ in range(cases):
        text = _random_expression(rng, rng.randrange(1, 9))
        refused = False
        try:
            expr = parse_expression(text)
            try:
                expression_type(expr, lambda ref: Any)
            except ExpressionTypeError:
                refused = True
            expr.evaluate({"state": state})
        except (WorkflowExpressionError, ExpressionRuntimeError):
            refused = True
        except Exception as exc:  # what the fuzz looks for: anything else escaping
            escaped[type(exc).__name__] = escaped.get(type(exc).__name__, 0) + 1
        typed += refused
    return cases, typed, escaped


def test_a_small_fuzz_raises_only_the_typed_errors() -> None:
    """200 random deep, long and mixed expressions: nothing but the typed errors escapes."""
    cases, typed, escaped = fuzz(200, seed=1)
    assert {} == escaped
    assert 0 < typed < cases


@pytest.mark.slow
def test_a_larger_fuzz_raises_only_the_typed_errors() -> None:
    """3,000 random expressions over three seeds: nothing but the typed errors escapes."""
    for seed in (2, 3, 4):
        assert {} == fuzz(1000, seed=seed)[2]
