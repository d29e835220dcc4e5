"""Static type rules of workflows: what may be passed where, and what a path reaches."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from atomtask.workflows._types import (
    compatible,
    describe,
    item_type,
    kinds,
    literal_values,
    may_be_none,
    walk,
)
from pydantic import BaseModel, BeforeValidator, ConfigDict


class Contact(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    email: str | None = None


class Person(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str


class Named(BaseModel):
    name: str
    age: int


class Loose(BaseModel):
    name: str


@pytest.mark.parametrize(
    ("source", "target", "expected"),
    [
        (int, float, True),
        (float, int, False),
        (str, int, False),
        (bool, int, False),
        (int, int | None, True),
        (int | None, int, False),
        (Any, int, True),
        (str, Any, True),
        (list[int], list[float], True),
        (list[str], list[int], False),
        (dict[str, int], dict[str, float], True),
        (Literal["a", "b"], str, True),
        (str, Literal["a", "b"], True),
        (int, Literal["a"], False),
        (Literal["a", "c"], Literal["a", "b"], False),
        (Person, Contact, True),
        (Contact, Person, False),
        (Named, Person, False),
        (Named, Loose, True),
        (Person, dict[str, Any], True),
        (dict[str, Any], Person, True),
        (Person, str, False),
    ],
)
def test_compatible_follows_what_a_developer_expects(source: Any, target: Any, expected: bool) -> None:
    """Widening and structural fits pass; a str never goes into a number, nor extra fields into a closed class."""
    assert expected == compatible(source, target)


def test_walk_reaches_fields_and_names_what_is_missing() -> None:
    """Class fields, list indexes and dict values; a missing field is a LookupError naming the class."""
    assert (str, int, Any) == (walk(Contact | None, "name"), walk(list[int], 0), walk(dict[str, Any], "k"))
    with pytest.raises(LookupError, match="Contact has no field 'nmae'"):
        walk(Contact, "nmae")
    with pytest.raises(LookupError, match="a str has no fields"):
        walk(str, "x")


def test_describe_and_item_type() -> None:
    """Readable type names; the element type of a list, None for anything else."""
    assert "list[Contact] | None" == describe(list[Contact] | None)
    assert (str, None) == (item_type(list[str] | None), item_type(str))


Integer = Annotated[int, BeforeValidator(lambda v: v)]


class Counted(BaseModel):
    n: Integer | None = None
    m: int | None = 3


def test_annotated_metadata_is_seen_through() -> None:
    """JSON Schema classes' `Annotated[int, validator] | None` is an `int | None`: readable, and fits like one."""
    assert "int | None" == describe(Counted.model_fields["n"].annotation)
    assert (True, True, False) == (
        compatible(int, Integer | None),
        compatible(Integer, float),
        compatible(str, Integer),
    )
    assert ({"number", "none"}, "list[int]") == (kinds(Integer | None), describe(list[Integer]))


def test_a_field_with_a_value_default_reads_as_not_null() -> None:
    """`m: int | None = 3` reads as `int`; `n: ... = None` may still be null."""
    assert (int, True) == (walk(Counted, "m"), may_be_none(walk(Counted, "n")))


def test_literal_values_lists_what_a_literal_allows() -> None:
    """The values of a literal (null stripped); None for a type that admits more."""
    assert (("a", "b"), None) == (literal_values(Literal["a", "b"] | None), literal_values(str))


def test_a_describe_picks_the_article() -> None:
    """Types are named with their article: "an int", "a str"."""
    from atomtask.workflows._types import a_describe

    assert ("an int", "a str") == (a_describe(int), a_describe(str))
