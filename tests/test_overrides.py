"""CallOverrides: what one call overrides in its template."""

from __future__ import annotations

import pytest
from atomtask.executors.overrides import NO_OVERRIDES, CallOverrides
from atomtask.system.errors import ConfigurationError
from atomtask.system.templates import RepairMode, TemplateLimits


def test_a_call_that_overrides_nothing_takes_the_templates_own() -> None:
    """No override: the shared `NO_OVERRIDES`, and the template's limits, a copy of its settings, its repair."""
    overrides = CallOverrides.of(None, None, None, None, None)
    limits = TemplateLimits(requests=3)
    settings = {"temperature": 0.2}
    resolved = overrides.resolve(limits, settings, RepairMode.LENIENT)
    assert NO_OVERRIDES is overrides
    assert (limits, settings, RepairMode.LENIENT) == resolved
    assert settings is not resolved[1]


def test_the_calls_overrides_go_on_top_of_the_templates() -> None:
    """Limits tighten the template's, settings merge key by key, repair replaces the template's."""
    overrides = CallOverrides.of(None, {"requests": 2}, "off", {"seed": 7}, None)
    limits, settings, repair = overrides.resolve(
        TemplateLimits(requests=5, input_tokens=100), {"temperature": 0.2}, RepairMode.SAFE
    )
    assert (2, 100) == (limits.requests if limits else None, limits.input_tokens if limits else None)
    assert {"temperature": 0.2, "seed": 7} == settings
    assert RepairMode.OFF == repair


def test_a_bad_override_is_a_configuration_error() -> None:
    """An unknown repair mode is refused with the values it may take."""
    with pytest.raises(ConfigurationError, match="repair"):
        CallOverrides.of(None, None, "maybe", None, None).resolve(None, None, RepairMode.SAFE)
