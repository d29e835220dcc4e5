"""Reading `instrument=`, `ATOMTASK_OTEL` and `ATOMTASK_OTEL_CONTENT` into `TraceSettings` (off by default)."""

from __future__ import annotations

from typing import Any

import pytest
from atomtask import ConfigurationError, TaskSystem, TraceSettings
from atomtask.system._options import trace_settings


def test_tracing_is_off_without_instrument_or_environment() -> None:
    """No `instrument=` and no `ATOMTASK_OTEL`: no settings, so nothing is traced."""
    assert None is trace_settings(None, {})


@pytest.mark.parametrize("value", ["1", "true", "YES", " on "])
def test_the_environment_turns_tracing_on_without_content(value: str) -> None:
    """`ATOMTASK_OTEL=1` (or true/yes/on) traces to the global provider, without prompt or output text."""
    assert TraceSettings(include_content=False) == trace_settings(None, {"ATOMTASK_OTEL": value})


def test_the_content_variable_adds_content_to_environment_tracing() -> None:
    """`ATOMTASK_OTEL_CONTENT=1` opts in to prompt and output text."""
    environ = {"ATOMTASK_OTEL": "1", "ATOMTASK_OTEL_CONTENT": "1"}
    assert TraceSettings(include_content=True) == trace_settings(None, environ)


def test_instrument_true_reads_the_content_variable() -> None:
    """`instrument=True` traces whatever the environment says, and takes content from it."""
    assert TraceSettings(include_content=True) == trace_settings(True, {"ATOMTASK_OTEL_CONTENT": "1"})
    assert TraceSettings(include_content=False) == trace_settings(True, {})


def test_instrument_false_wins_over_the_environment() -> None:
    """`instrument=False` keeps tracing off although `ATOMTASK_OTEL=1`."""
    assert None is trace_settings(False, {"ATOMTASK_OTEL": "1"})


def test_given_settings_are_taken_as_they_are() -> None:
    """A `TraceSettings` wins over the environment, content included."""
    settings = TraceSettings(include_content=False)
    assert settings is trace_settings(settings, {"ATOMTASK_OTEL": "0", "ATOMTASK_OTEL_CONTENT": "1"})


@pytest.mark.parametrize("name", ["ATOMTASK_OTEL", "ATOMTASK_OTEL_CONTENT"])
def test_an_unreadable_environment_value_names_the_variable(name: str) -> None:
    """A value that is neither a yes nor a no raises, naming the variable and the values it takes."""
    with pytest.raises(ConfigurationError) as caught:
        trace_settings(None, {"ATOMTASK_OTEL": "1", name: "maybe"})
    assert f"Invalid `{name}=maybe`: set it to 1 (on) or 0 (off), or unset it." == caught.value.message


def test_a_wrong_instrument_value_is_refused_by_the_task_system() -> None:
    """`TaskSystem(instrument="yes")` raises before anything runs, saying what it takes."""
    wrong: Any = "yes"
    with pytest.raises(ConfigurationError, match=r"Invalid `instrument=` 'yes': pass True, False, or `TraceSettings"):
        TaskSystem(instrument=wrong)
