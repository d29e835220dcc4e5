"""Reading S-expression source: nodes with locations, precise syntax errors, a nesting limit, fuzzing."""

from __future__ import annotations

import pytest
from atomtask import AtomTaskError, SexpSyntaxError, SourceLocation, UsageError
from atomtask.sexp._reader import MAX_DEPTH, Literal, SList, Symbol, read
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def loc(line: int, column: int) -> SourceLocation:
    return SourceLocation(file="f.sexp", line=line, column=column)


def test_atoms_read_as_literals_and_symbols() -> None:
    """Strings, ints, floats, true/false/nil are literals; anything else is a symbol."""
    forms = read('"a b" 42 -3 2.5 1e3 true false nil str? list[str] -x 1abc', "f.sexp")
    values = [f.value if isinstance(f, Literal) else f.name for f in forms if not isinstance(f, SList)]
    assert ["a b", 42, -3, 2.5, 1000.0, True, False, None, "str?", "list[str]", "-x", "1abc"] == values
    assert [Literal, Literal, Literal, Literal, Literal, Literal, Literal, Literal, Symbol, Symbol, Symbol, Symbol] == [
        type(f) for f in forms
    ]


def test_lists_and_atoms_carry_file_line_and_column() -> None:
    """Every node knows the 1-based line and column where it starts."""
    (form,) = read('; a comment\n(greet\n   (who "Ada"))', "f.sexp")
    assert isinstance(form, SList)
    assert loc(2, 1) == form.location
    assert loc(2, 2) == form.items[0].location
    inner = form.items[1]
    assert isinstance(inner, SList)
    assert loc(3, 4) == inner.location
    assert loc(3, 9) == inner.items[1].location


def test_quote_shorthand_reads_as_a_quote_form() -> None:
    """`'x` reads as `(quote x)`, located at the quote mark."""
    (form,) = read("'(a b)", "f.sexp")
    assert isinstance(form, SList)
    assert "quote" == form.head
    assert loc(1, 1) == form.location


def test_string_escapes_are_decoded_and_raw_newlines_kept() -> None:
    """`\\n \\t \\" \\\\` are decoded; a string may span lines."""
    (escaped, multiline) = read('"a\\n\\t\\"b\\\\" "x\ny"', "f.sexp")
    assert isinstance(escaped, Literal) and isinstance(multiline, Literal)
    assert 'a\n\t"b\\' == escaped.value
    assert "x\ny" == multiline.value


@pytest.mark.parametrize(
    ("source", "where", "fragment"),
    [
        ("(a (b c)", (1, 1), "This `(` is never closed"),
        ("(a)\n  b)", (2, 4), "Unexpected `)`: no `(` is open here"),
        ('(a "bc)', (1, 4), "This string is never closed"),
        ('(a "x\\qy")', (1, 6), "Unknown escape `\\q`"),
        ("(a ')", (1, 5), "`'` must be followed by a form"),
        ("1e999", (1, 1), "out of range"),
        ("9" * 5000, (1, 1), "out of range"),
    ],
)
def test_syntax_errors_name_line_and_column(source: str, where: tuple[int, int], fragment: str) -> None:
    """Each kind of unreadable input raises SexpSyntaxError at the offending character."""
    with pytest.raises(SexpSyntaxError) as info:
        read(source, "f.sexp")
    assert loc(*where) == info.value.location
    assert fragment in info.value.message
    assert str(info.value).startswith(f"f.sexp:{where[0]}:{where[1]}: ")


def test_unclosed_parens_point_at_the_outermost_one_and_count_them() -> None:
    """Several unclosed `(` are counted, and the error points at the first of them."""
    with pytest.raises(SexpSyntaxError) as info:
        read("(ok)\n(a (b (c", "f.sexp")
    assert loc(2, 1) == info.value.location
    assert "3 `(` are unclosed" in info.value.message


def test_syntax_errors_are_usage_errors() -> None:
    """SexpSyntaxError sits under UsageError (nothing ran) and AtomTaskError."""
    assert issubclass(SexpSyntaxError, UsageError)
    assert issubclass(SexpSyntaxError, AtomTaskError)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 100_000])
def test_deep_nesting_is_a_clear_error_not_a_recursion_error(depth: int) -> None:
    """Lists nested past MAX_DEPTH raise SexpSyntaxError at the first `(` too deep."""
    with pytest.raises(SexpSyntaxError) as info:
        read("(" * depth + ")" * depth, "f.sexp")
    assert loc(1, MAX_DEPTH + 1) == info.value.location
    assert f"more than {MAX_DEPTH} levels" in info.value.message


def test_deeply_nested_quotes_are_limited_too() -> None:
    """A long run of quote marks nests like lists and hits the same limit."""
    with pytest.raises(SexpSyntaxError, match="levels deep"):
        read("'" * 50_000 + "x", "f.sexp")


def test_nesting_up_to_the_limit_reads() -> None:
    """Exactly MAX_DEPTH levels is allowed."""
    (form,) = read("(" * MAX_DEPTH + ")" * MAX_DEPTH)
    assert isinstance(form, SList)
    assert MAX_DEPTH == form.depth


# A small alphabet makes the fuzzer hit the interesting characters (parens, quotes, escapes, `;`).
# Hypothesis spends most of its time per example, so each example draws one block of bytes and
# cuts it into TEXTS inputs: 300 examples x 20 = 6,000 texts per run.
_ALPHABET = "()'\"\\; \n\tab1.-+e?{}é"
TEXTS = 20
TEXT = 30


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.binary(min_size=TEXTS * TEXT, max_size=TEXTS * TEXT))
def test_fuzz_reader_raises_only_located_syntax_errors(block: bytes) -> None:
    """Arbitrary text either reads or raises SexpSyntaxError with a line and column; nothing else escapes."""
    for i in range(TEXTS):
        chunk = block[i * TEXT : (i + 1) * TEXT]
        source = "".join(_ALPHABET[b % len(_ALPHABET)] for b in chunk[: chunk[0] % TEXT])
        try:
            forms = read(source, "fuzz.sexp")
        except SexpSyntaxError as exc:
            assert exc.location is not None and exc.location.line is not None, source
            assert exc.location.column is not None, source
            continue
        assert all(isinstance(f, Symbol | Literal | SList) for f in forms)
