"""Tests for type strings: parsing, rendering, references and annotations."""

from __future__ import annotations

import datetime
from typing import Any, Literal, Optional, Union

import pytest
from atomtask import SchemaError, SourceLocation
from atomtask.schemas._type_strings import (
    BUILTIN_TYPE_NAMES,
    DictType,
    ListType,
    LiteralType,
    OptionalType,
    ScalarType,
    SchemaRef,
    TypeExpr,
    UnionType,
    is_optional,
    near_type_names,
    parse_type,
    referenced_names,
    to_annotation,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter

STR = ScalarType(name="str")
INT = ScalarType(name="int")
FLOAT = ScalarType(name="float")
BOOL = ScalarType(name="bool")


class Contact(BaseModel):
    name: str


def _no_refs(name: str) -> Any:
    raise AssertionError(f"unexpected reference {name!r}")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("str", STR),
        ("string", STR),
        ("int", INT),
        ("integer", INT),
        ("float", FLOAT),
        ("number", FLOAT),
        ("bool", BOOL),
        ("boolean", BOOL),
        ("any", ScalarType(name="any")),
        ("date", ScalarType(name="date")),
        ("datetime", ScalarType(name="datetime")),
    ],
)
def test_scalars_and_their_aliases(text: str, expected: TypeExpr) -> None:
    """Every scalar name and alias parses to its canonical scalar."""
    assert expected == parse_type(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("list[int]", ListType(item=INT)),
        ("dict[str, int]", DictType(key=STR, value=INT)),
        ("dict[int, list[str]]", DictType(key=INT, value=ListType(item=STR))),
        ("str?", OptionalType(inner=STR)),
        ("list[str]?", OptionalType(inner=ListType(item=STR))),
        ("list[str?]", ListType(item=OptionalType(inner=STR))),
        ("int | str", UnionType(options=(INT, STR))),
        ("int | str?", UnionType(options=(INT, OptionalType(inner=STR)))),
        ("(int | str)?", OptionalType(inner=UnionType(options=(INT, STR)))),
        ("(int | str) | bool", UnionType(options=(INT, STR, BOOL))),
        ("((str))", STR),
        ("str??", OptionalType(inner=STR)),
        ("Contact", SchemaRef(name="Contact")),
        ("list[Contact]", ListType(item=SchemaRef(name="Contact"))),
        (
            "dict[str, list[Contact?]]",
            DictType(key=STR, value=ListType(item=OptionalType(inner=SchemaRef(name="Contact")))),
        ),
        ("dict[literal['a', 'b'], int]", DictType(key=LiteralType(values=("a", "b")), value=INT)),
    ],
)
def test_composite_forms(text: str, expected: TypeExpr) -> None:
    """Lists, dicts, `?`, unions, parentheses and references build the expected tree."""
    assert expected == parse_type(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("list", "list[any]"),
        ("dict", "dict[str, any]"),
        ("list?", "list[any]?"),
        ("list[dict]", "list[dict[str, any]]"),
    ],
)
def test_bare_list_and_dict_hold_anything(text: str, expected: str) -> None:
    """A bare `list` is `list[any]` and a bare `dict` is `dict[str, any]`, as configuration-first users mean them."""
    assert expected == str(parse_type(text))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("array", "list[any]"),
        ("object", "dict[str, any]"),
        ("list[object]", "list[dict[str, any]]"),
        ("dict[string, array]", "dict[str, list[any]]"),
        ("object?", "dict[str, any]?"),
        ("list[integer] | boolean", "list[int] | bool"),
    ],
)
def test_json_schema_container_names_are_aliases(text: str, expected: str) -> None:
    """JSON Schema's `array` and `object` are the bare `list` and `dict`, wherever a type string is."""
    assert expected == str(parse_type(text))


def test_object_is_a_nested_schema_only_where_asked() -> None:
    """`nested_objects=True` (a schema field with `fields:` under it) keeps `object` as a reference to replace."""
    assert ListType(item=SchemaRef(name="object")) == parse_type("list[object]", nested_objects=True)
    assert ListType(item=DictType(key=STR, value=ScalarType(name="any"))) == parse_type("list[object]")


def test_array_with_type_arguments_suggests_list() -> None:
    """`array[int]` is not a form of its own: the fix is `list[int]`."""
    with pytest.raises(SchemaError) as raised:
        parse_type("array[int]")
    assert ["list[int]"] == raised.value.suggestions


@pytest.mark.parametrize(
    ("typo", "expected"),
    [
        ("integr", "int"),
        ("Integer", "int"),
        ("strng", "str"),
        ("boolen", "bool"),
        ("flaot", "float"),
        ("nubmer", "number"),
    ],
)
def test_near_type_names_prefer_the_canonical_name(typo: str, expected: str) -> None:
    """A misspelt type suggests the canonical name when it is near too, else the alias it is near."""
    assert [expected] == near_type_names(typo)[:1]


def test_a_name_near_no_type_gets_no_type_suggested() -> None:
    """A schema name that looks like no type (`Contct`) is not told about types."""
    assert [] == near_type_names("Contct")


def test_an_unknown_name_near_a_type_is_told_the_type() -> None:
    """`integr` fails as an unknown schema, and the message suggests `int` (before the resolver's own words)."""
    with pytest.raises(SchemaError) as raised:
        to_annotation(parse_type("list[integr]"), {}.__getitem__)
    assert raised.value.message.startswith("Unknown type 'integr'. Did you mean 'int'? Unknown schema 'integr'")
    assert ["int"] == raised.value.suggestions


def test_whitespace_is_ignored() -> None:
    """Spaces, tabs and newlines anywhere between tokens do not change the result."""
    assert parse_type("dict[str,list[int?]]|str") == parse_type(" dict [ str ,\n\tlist [ int ? ] ] | str ")


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("literal['a', \"b\"]", ("a", "b")),
        ("literal[1, -2, +3]", (1, -2, 3)),
        ("literal[2.5, 1e3, .5]", (2.5, 1000.0, 0.5)),
        ("literal[true, False]", (True, False)),
        ("literal['it\\'s', \"say \\\"hi\\\"\", 'a\\nb', '\\u00e9']", ("it's", 'say "hi"', "a\nb", "é")),
        ("literal['x', 1, true, 1.0]", ("x", 1, True, 1.0)),
    ],
)
def test_literal_values(text: str, values: tuple[object, ...]) -> None:
    """Literal values keep their type: quoted strings (with escapes), ints, floats and booleans."""
    expr = parse_type(text)
    assert isinstance(expr, LiteralType)
    assert [(type(v), v) for v in values] == [(type(v), v) for v in expr.values]


def test_literal_values_of_different_types_differ() -> None:
    """`literal[1]`, `literal[true]` and `literal[1.0]` are three different types."""
    assert 3 == len({parse_type("literal[1]"), parse_type("literal[true]"), parse_type("literal[1.0]")})


@pytest.mark.parametrize(
    "text",
    [
        "str",
        "list[dict[str, int?]]",
        "(int | str)?",
        "int | str?",
        'literal["a", 1, 2.5, true]',
        "dict[literal[1, 2], Contact]",
        "list[(Contact | str)?]",
    ],
)
def test_str_renders_a_string_that_parses_back(text: str) -> None:
    """`str(expr)` is a canonical type string for the same type."""
    expr = parse_type(text)
    assert expr == parse_type(str(expr))


def test_referenced_names() -> None:
    """Every schema name in the tree is reported, once."""
    expr = parse_type("dict[str, list[Contact?]] | Team | (Contact | int)?")
    assert {"Contact", "Team"} == referenced_names(expr)
    assert set() == referenced_names(parse_type("list[dict[str, int]]"))


def test_reference_remembers_where_it_is() -> None:
    """A `SchemaRef` carries its offsets in the text, which equality ignores."""
    expr = parse_type("list[Contact]")
    assert isinstance(expr, ListType)
    assert isinstance(expr.item, SchemaRef)
    assert (5, 12) == expr.item.span
    assert SchemaRef(name="Contact", span=None) == expr.item


@pytest.mark.parametrize(
    ("text", "expected"),
    [("str?", True), ("int | str?", True), ("(int | str)?", True), ("str", False), ("any", False)],
)
def test_is_optional(text: str, expected: bool) -> None:
    """A `?` at the top or on a top-level union member admits None."""
    assert expected == is_optional(parse_type(text))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("str", str),
        ("int", int),
        ("float", float),
        ("bool", bool),
        ("any", Any),
        ("date", datetime.date),
        ("datetime", datetime.datetime),
        ("list[int]", list[int]),
        ("dict[str, list[float]]", dict[str, list[float]]),
        ("str?", Optional[str]),  # noqa: UP045 - the annotation typing.Optional builds
        ("int | str", Union[int, str]),  # noqa: UP007 - the annotation typing.Union builds
        ("literal['a', 1]", Literal["a", 1]),
        ("list[Contact?]", list[Optional[Contact]]),  # noqa: UP045 - as above
    ],
)
def test_to_annotation(text: str, expected: Any) -> None:
    """Each form becomes the matching Python annotation; references go through `resolve`."""
    assert expected == to_annotation(parse_type(text), {"Contact": Contact}.__getitem__)


def test_annotation_validates_dates_and_references() -> None:
    """The annotation validates with Pydantic: ISO strings become dates, mappings become models."""
    annotation = to_annotation(parse_type("dict[str, list[date | Contact]]"), {"Contact": Contact}.__getitem__)
    value = TypeAdapter(annotation).validate_python({"a": ["2024-05-01", {"name": "Ann"}]})
    assert {"a": [datetime.date(2024, 5, 1), Contact(name="Ann")]} == value


def test_literal_annotation_rejects_other_values() -> None:
    """A literal accepts exactly its values."""
    adapter = TypeAdapter(to_annotation(parse_type("literal['low', 'high']"), _no_refs))
    assert "low" == adapter.validate_python("low")
    with pytest.raises(ValueError, match="'low' or 'high'"):
        adapter.validate_python("medium")


def test_resolver_errors_propagate_and_key_errors_become_schema_errors() -> None:
    """A resolver's `SchemaError` passes through; a plain `KeyError` is reported as an unknown schema."""

    def resolve(name: str) -> Any:
        raise SchemaError(f"nope {name!r}", suggestions=["Contact"])

    with pytest.raises(SchemaError, match="nope 'Contct'") as raised:
        to_annotation(parse_type("list[Contct]"), resolve)
    assert ["Contact"] == raised.value.suggestions
    with pytest.raises(SchemaError, match="Unknown schema 'Contct'"):
        to_annotation(parse_type("Contct?"), {}.__getitem__)


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("lisst[str]", ["unknown type 'lisst'", "column 1", "Did you mean 'list[str]'?"]),
        ("List[int]", ["unknown type 'List'", "Did you mean 'list[int]'?"]),
        ("dict[str, Lisst[int]]", ["column 11", "Did you mean 'dict[str, list[int]]'?"]),
        ("Literal['a']", ["Did you mean \"literal['a']\"?"]),
        ("Optional[list[str]]", ["`Optional[T]` is written `T?`", "Did you mean 'list[str]?'?"]),
        ("Union[int, str]", ["`Union[A, B]` is written `A | B`", "Did you mean 'int | str'?"]),
        ("str | None", ["write `T?`", "column 7", "Did you mean 'str?'?"]),
        ("None | int", ["Did you mean 'int?'?"]),
        ("list[str | null]", ["Did you mean 'list[str?]'?"]),
        ("None", ["'None' is not a type here", "`str?`"]),
        ("true", ["'true' is a value, not a type", "literal[true]"]),
        ("list[str", ["missing ']'", "'[' at column 5", "column 9", "Did you mean 'list[str]'?"]),
        ("(str", ["missing ')'", "Did you mean '(str)'?"]),
        ("list[str]]", ["unmatched ']'", "column 10"]),
        ("list[str)", ["')' does not close the '[' at column 5", "expected ']'"]),
        ("(str]", ["']' does not close the '(' at column 1"]),
        ("list[]", ["`list[]` is empty", "column 5", "list[str]"]),
        ("dict[]", ["`dict[]` is empty", "dict[str, int]"]),
        ("literal[]", ["`literal[]` is empty"]),
        ("dict[str]", ["`dict` takes two type arguments", "got 1"]),
        ("dict[str, int, int]", ["`dict` takes two type arguments", "got 3"]),
        ("list[str, int]", ["`list` takes one item type, got 2", "Did you mean 'list[str | int]'?"]),
        ("optional", ["`optional` is not a type", "`str?`"]),
        ("literal", ["`literal` needs values"]),
        ("str[int]", ["'str' takes no type arguments", "column 4"]),
        ("Contact[str]", ["'Contact' takes no type arguments", "only `list`, `dict` and `literal`"]),
        ("dict[float, int]", ["dict keys must be `str`, `int`", "got 'float'", "column 6"]),
        ("dict[ str?, int]", ["dict keys", "got 'str?'", "column 7"]),
        ("dict[literal[true], int]", ["dict keys", "literal[true]"]),
        ("literal[a]", ["literal values are quoted strings", "got 'a'", "Did you mean 'literal[\"a\"]'?"]),
        ("literal['a', 'a']", ['literal value "a" is repeated', "column 14"]),
        ("literal[true, True]", ["literal value true is repeated"]),
        ("literal['a\\q']", ["unknown escape '\\q'", "column 11"]),
        ("literal[1e999]", ["out of range"]),
        ("literal[" + "9" * 5000 + "]", ["too long"]),
        ("'abc'", ["a quoted value is not a type", "Did you mean \"literal['abc']\"?"]),
        ("42", ["a number is not a type"]),
        ("'abc", ["unterminated string"]),
        ("str int", ["unexpected 'int' after a complete type", "column 5", "`|`"]),
        ("str$", ["unexpected character '$'", "column 4"]),
        ("", ["the type is empty"]),
        ("   ", ["the type is empty"]),
        ("()", ["empty parentheses"]),
        ("str |", ["expected a type, got the end", "column 6"]),
        ("| str", ["expected a type, got '|'", "column 1"]),
        ("(" * 40 + "str" + ")" * 40, ["nested more than 32 deep"]),
    ],
)
def test_parse_errors_are_precise(text: str, fragments: list[str]) -> None:
    """Each malformed type names the problem, its column and, where one exists, the corrected string."""
    with pytest.raises(SchemaError) as raised:
        parse_type(text)
    message = str(raised.value)
    assert message.startswith("Invalid type ")
    for fragment in fragments:
        assert fragment in message


def test_parse_error_carries_location_and_suggestions() -> None:
    """With a location the message starts with `file:line`; the fixes are in `suggestions`."""
    where = SourceLocation(file="schemas.yaml", line=7)
    with pytest.raises(SchemaError) as raised:
        parse_type("lisst[str]", location=where)
    assert where == raised.value.location
    assert str(raised.value).startswith("schemas.yaml:7: Invalid type 'lisst[str]' at column 1:")
    assert ["list[str]"] == raised.value.suggestions


def test_long_text_is_clipped_in_messages() -> None:
    """A huge type string does not flood the message."""
    with pytest.raises(SchemaError) as raised:
        parse_type("str " + "x" * 10_000)
    assert len(str(raised.value)) < 400


def test_builtin_names_cover_every_keyword() -> None:
    """Schemas may not be named like a scalar, an alias or a generic."""
    assert {"str", "string", "number", "date", "list", "dict", "literal", "array", "object"} <= BUILTIN_TYPE_NAMES


# ---------------------------------------------------------------------------------------------
# Fuzzing

_PIECES = [
    "str", "int", "float", "bool", "any", "date", "list", "dict", "literal", "Contact", "lisst",
    "Optional", "None", "true", "[", "]", "(", ")", ",", "|", "?", " ", "'a'", '"b', "\\", "1",
    "-2.5", "1e999", "é", "\n",
]  # fmt: skip


def _check_total(text: str) -> None:
    try:
        expr = parse_type(text)
    except SchemaError:
        return
    assert expr == parse_type(str(expr))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_arbitrary_text_parses_or_raises_schema_error(text: str) -> None:
    """Any text gives a `TypeExpr` or a `SchemaError`, never another exception."""
    _check_total(text)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=25).map("".join))
def test_token_soup_parses_or_raises_schema_error(text: str) -> None:
    """Near-valid token sequences give a `TypeExpr` or a `SchemaError`, never another exception."""
    _check_total(text)


_NAMES = st.from_regex(r"[A-Z][A-Za-z0-9_]{0,8}", fullmatch=True).filter(lambda n: n not in BUILTIN_TYPE_NAMES)
_VALUES = st.one_of(
    st.text(max_size=8),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
)


def _literal(values: list[Any]) -> LiteralType:
    unique = {(type(v), v): v for v in values}
    return LiteralType(values=tuple(unique.values()))


_LEAVES = st.one_of(
    st.sampled_from([STR, INT, FLOAT, BOOL, ScalarType(name="any"), ScalarType(name="date")]),
    _NAMES.map(lambda n: SchemaRef(name=n)),
    st.lists(_VALUES, min_size=1, max_size=4).map(_literal),
)
_KEYS = st.one_of(
    st.sampled_from([STR, INT]),
    st.lists(st.one_of(st.text(max_size=5), st.integers()), min_size=1, max_size=3).map(_literal),
)


def _optional(expr: TypeExpr) -> TypeExpr:
    return expr if isinstance(expr, OptionalType) else OptionalType(inner=expr)


def _union(options: list[TypeExpr]) -> TypeExpr:
    flat = [m for o in options for m in (o.options if isinstance(o, UnionType) else (o,))]
    return UnionType(options=tuple(flat))


_EXPRS = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        inner.map(lambda e: ListType(item=e)),
        st.builds(lambda k, v: DictType(key=k, value=v), _KEYS, inner),
        inner.map(_optional),
        st.lists(inner, min_size=2, max_size=3).map(_union),
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(_EXPRS)
def test_rendered_trees_parse_back_and_build_annotations(expr: TypeExpr) -> None:
    """Any tree renders to a string that parses back to it, and its annotation builds a validator."""
    assert expr == parse_type(str(expr))
    TypeAdapter(to_annotation(expr, lambda _name: Contact))
