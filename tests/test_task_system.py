"""TaskSystem: the facade's own behaviour (lazy parts, system-wide model settings)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from atomtask import ConfigurationError, TaskSystem, Template
from atomtask.task_system import bundled_templates_path

from tests.helpers import Recorder

LIST_TEMPLATES = """
import sys
from atomtask.task_system import TaskSystem, bundled_templates_path
system = TaskSystem(templates=[bundled_templates_path()])
assert system.templates.names()
print(sorted(m for m in ("pydantic_ai", "openai", "anthropic") if m in sys.modules))
"""


def test_loading_and_listing_templates_does_not_import_pydantic_ai() -> None:
    """Constructing a system, loading the shipped templates and listing them leaves pydantic-ai unimported."""
    listed = subprocess.run([sys.executable, "-c", LIST_TEMPLATES], capture_output=True, text=True, check=True)
    assert "[]" == listed.stdout.strip()


def test_the_executor_and_manager_are_built_once_on_first_use() -> None:
    """`system.executor` and `system.manager` are built when first needed and the same afterwards."""
    rec = Recorder("hi")
    system = TaskSystem(model=rec.model, templates=[bundled_templates_path()])
    system.register(Template(name="say", instructions="Say hi."))
    assert system.executor is system.executor
    assert system.manager is system.executor.manager
    assert system.handler is system.manager.handler
    assert "hi" == system.execute("say").unwrap()


def test_system_model_settings_are_checked_at_construction() -> None:
    """`TaskSystem(model_settings=...)` with an unknown key raises a ConfigurationError suggesting the key."""
    with pytest.raises(ConfigurationError) as info:
        TaskSystem(model_settings={"max_token": 10})  # type: ignore[typeddict-unknown-key]  # the mistake under test
    assert "Unknown model setting 'max_token' in the TaskSystem (`model_settings=`)" in info.value.message
    assert "Did you mean 'max_tokens'?" in info.value.message
