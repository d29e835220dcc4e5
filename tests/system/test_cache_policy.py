"""`CachePolicy`: `cache: true | false | {ttl: ...}` and the durations it reads."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from atomtask import CachePolicy, ConfigurationError
from atomtask.system._templates import cache_choice, format_duration, parse_duration
from pydantic import ValidationError


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("30m", 1800),
        ("1h", 3600),
        ("1h30m", 5400),
        ("7d", 604800),
        ("2w", 1209600),
        ("1.5h", 5400),
        (45, 45),
        (0.5, 0.5),
        ("1H 30M", 5400),
    ],
)
def test_durations_are_read_in_seconds_minutes_hours_days_and_weeks(text: Any, seconds: float) -> None:
    """Units s, m, h, d, w (combinable, any case) or a bare number of seconds."""
    assert timedelta(seconds=seconds) == parse_duration(text)


@pytest.mark.parametrize("text", ["soon", "1y", "", "h", 0, -5, "0s", True])
def test_a_bad_or_non_positive_duration_is_refused(text: Any) -> None:
    """Anything else raises ValueError with the accepted forms."""
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


@pytest.mark.parametrize("seconds", [90, 3600, 5400, 694861, 1.5])
def test_a_duration_prints_as_it_is_read(seconds: float) -> None:
    """`format_duration` writes what `parse_duration` reads back to the same value."""
    value = timedelta(seconds=seconds)
    assert value == parse_duration(format_duration(value))


def test_booleans_and_mappings_become_policies() -> None:
    """`true` is on without a TTL, `false` off, `{ttl: 1h}` on for an hour."""
    assert CachePolicy(enabled=True) == CachePolicy.model_validate(True)
    assert CachePolicy(enabled=False) == CachePolicy.model_validate(False)
    assert 3600.0 == CachePolicy.model_validate({"ttl": "1h"}).ttl_seconds
    assert CachePolicy().ttl_seconds is None


def test_a_policy_dumps_its_ttl_as_text() -> None:
    """The JSON form (what `atomtask show` prints) writes the TTL as a duration string."""
    assert {"enabled": True, "ttl": "1h30m"} == CachePolicy(ttl="90m").model_dump(mode="json")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("soon", "is not a cache setting"),
        ({"tll": "1h"}, "unknown cache setting 'tll'; did you mean 'ttl'"),
        ({"ttl": "x"}, "is not a duration"),
    ],
)
def test_a_bad_policy_is_refused_with_the_forms_it_takes(value: Any, message: str) -> None:
    """A string, an unknown key, a bad TTL: each a validation error saying what is accepted."""
    with pytest.raises(ValidationError, match=message):
        CachePolicy.model_validate(value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        (True, True),
        (False, False),
        ({"ttl": "1h"}, CachePolicy(ttl="1h")),
        (CachePolicy(enabled=False), CachePolicy(enabled=False)),
    ],
)
def test_cache_choice_takes_a_bool_none_a_policy_or_a_mapping(value: Any, expected: Any) -> None:
    """The accepted `cache=` forms come back as a bool, None or a `CachePolicy`."""
    assert expected == cache_choice(value)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("yes", "'yes' is not a cache setting"),
        ("no", "'no' is not a cache setting"),
        (1, "1 is not a cache setting"),
        ([("ttl", "1h")], "is not a cache setting"),
        ({"tll": "1d"}, "did you mean 'ttl'"),
        ({"ttl": "soon"}, "`ttl`: 'soon' is not a duration"),
    ],
)
def test_cache_choice_refuses_anything_else_naming_the_accepted_forms(value: Any, message: str) -> None:
    """A string, a number, a sequence, a typo'd key or a bad TTL: a ConfigurationError with the forms."""
    with pytest.raises(ConfigurationError, match=message) as caught:
        cache_choice(value)
    assert "Pass True, False, None, a `CachePolicy`, or a mapping like" in caught.value.message
