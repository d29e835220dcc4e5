"""Field-by-field differences of outputs and partial matches."""

from __future__ import annotations

from atomtask.template_tests._replay import differences, subset_misses


def test_differences_name_each_changed_field() -> None:
    """Changed, removed and new fields each give one line, nested paths dotted."""
    before = {"name": "Ada", "phone": "555", "address": {"city": "London"}, "tags": ["a", "b"]}
    after = {"name": "Ada", "address": {"city": "Paris"}, "tags": ["a", "c"], "country": "UK"}
    assert [
        'field `phone` was "555", now absent',
        'field `address.city` was "London", now "Paris"',
        'field `tags[1]` was "b", now "c"',
        'field `country` is new: "UK"',
    ] == [str(d) for d in differences(before, after)]


def test_true_is_not_one_but_one_is_one_point_zero() -> None:
    """JSON's booleans differ from numbers; 1 and 1.0 are the same number."""
    assert (["field `x` was 1, now true"], []) == (
        [str(d) for d in differences({"x": 1}, {"x": True})],
        [str(d) for d in differences({"x": 1}, {"x": 1.0})],
    )


def test_subset_checks_only_the_given_keys() -> None:
    """Keys not given are ignored; given ones must match, lists item by item."""
    actual = {"name": "Ada", "email": None, "tags": [{"k": 1, "v": 2}]}
    assert [] == subset_misses({"name": "Ada", "tags": [{"k": 1}]}, actual)
    assert ['`name` is "Ada", expected "Grace"', "`phone` is absent (expected null)"] == subset_misses(
        {"name": "Grace", "phone": None}, actual
    )
