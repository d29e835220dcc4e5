"""`CallOptions`: one typed value for what a call asks, checked once (`check_options`), stacked with `over`."""

from __future__ import annotations

import pytest
from atomtask import CachePolicy, ConfigurationError, RepairMode, TemplateLimits
from atomtask.loading._providers import check_options
from atomtask.system._options import NO_OPTIONS, CallOptions


def test_a_call_that_asks_nothing_shares_one_value() -> None:
    """No keyword given: the shared `NO_OPTIONS`, so the usual call allocates nothing."""
    assert NO_OPTIONS is check_options()
    assert NO_OPTIONS is check_options(where="this run")


def test_the_keywords_are_checked_into_typed_values() -> None:
    """A limits mapping becomes `TemplateLimits`, a repair word a `RepairMode`, a cache mapping a `CachePolicy`."""
    options = check_options(
        model="openai-chat:gpt-4o-mini",
        retries=2,
        limits={"requests": 3},
        repair="false",
        model_settings={"temperature": 0.2},
        cache={"ttl": "1h"},
    )
    assert "openai-chat:gpt-4o-mini" == options.model
    assert 2 == options.retries
    assert TemplateLimits(requests=3) == options.limits
    assert RepairMode.OFF == options.repair
    assert {"temperature": 0.2} == options.model_settings
    assert isinstance(options.cache, CachePolicy)
    assert 3600.0 == options.cache.ttl_seconds


@pytest.mark.parametrize(
    ("keywords", "expected"),
    [
        ({"repair": "maybe"}, "Invalid `repair=` for this run"),
        ({"retries": -1}, "Invalid `retries=` for this run: -1"),
        ({"retries": True}, "Invalid `retries=` for this run"),
        ({"limits": {"requests": 0}}, "Invalid `limits=` for this run"),
        ({"model_settings": {"temprature": 0}}, "temprature"),
        ({"cache": "yes"}, "Invalid `cache=` for this run"),
        ({"model": "opnai:gpt-4o"}, "`model=` of this run"),
    ],
)
def test_a_bad_keyword_is_a_configuration_error_naming_it(keywords: dict[str, object], expected: str) -> None:
    """Each bad value raises `ConfigurationError` saying which argument, where it was given, and the fix."""
    with pytest.raises(ConfigurationError) as raised:
        check_options(**keywords, where="this run")  # type: ignore[arg-type]  # bad on purpose
    assert expected in str(raised.value)


def test_an_upper_layer_wins_field_by_field() -> None:
    """`over`: the upper layer's model, retries, repair and cache where it names them, the lower's elsewhere."""
    upper = CallOptions(model="openai-chat:a", repair=RepairMode.OFF)
    lower = CallOptions(model="openai-chat:b", retries=4, repair=RepairMode.LENIENT, cache=True)
    merged = upper.over(lower)
    assert ("openai-chat:a", 4, RepairMode.OFF, True) == (merged.model, merged.retries, merged.repair, merged.cache)


def test_limits_of_every_layer_hold_and_settings_merge_key_by_key() -> None:
    """`over`: the tightest of each limit, and the upper layer's settings over the lower's, key by key."""
    upper = CallOptions(limits=TemplateLimits(requests=2), model_settings={"seed": 7, "temperature": 0.1})
    lower = CallOptions(limits=TemplateLimits(requests=5, input_tokens=100), model_settings={"temperature": 0.9})
    merged = upper.over(lower)
    assert merged.limits is not None
    assert (2, 100) == (merged.limits.requests, merged.limits.input_tokens)
    assert {"temperature": 0.1, "seed": 7} == merged.model_settings


def test_over_nothing_is_the_same_value() -> None:
    """Stacking over (or under) `NO_OPTIONS` returns the other value itself."""
    options = CallOptions(retries=1)
    assert options is options.over(NO_OPTIONS)
    assert options is NO_OPTIONS.over(options)
