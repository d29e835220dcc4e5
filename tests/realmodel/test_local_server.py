"""SmolLM2-135M-Instruct on llama-cpp-python (`scripts/local-model.sh`): what the issue's new user met, fixed.

Run with `ATOMTASK_REALMODEL_URL=http://127.0.0.1:8011/v1 pytest -m realmodel -n 0`. The model is tiny: the
assertions are about what atomtask sends and records (the server detected, grammar-constrained forms accepted,
`max_tokens` honoured, a refused mode named before any call), and about a valid answer within the template's
retries where the grammar makes one reachable, not about the quality of its values.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from atomtask import FailureReason, TaskSystem
from atomtask._task_system import bundled_templates_path
from atomtask.loading._servers import detect_server, forget_detected
from atomtask.system._templates import OutputMode

pytestmark = pytest.mark.realmodel

TEXT = "Ada Lovelace, ada@example.com, phone 555-1234, works at Analytical Engines Ltd"


def _system(url: str, mode: str, **settings: object) -> TaskSystem:
    system = TaskSystem(
        model="openai-chat:smollm2",
        templates=bundled_templates_path(),
        base_url=url,
        model_settings={"max_tokens": 200, "temperature": 0.0, **settings},  # type: ignore[typeddict-item]
    )
    template = system.templates.get("extract_contact")
    output = template.output_format.model_copy(update={"mode": OutputMode(mode)})
    system.register(template.model_copy(update={"name": "contact", "output_format": output, "location": None}))
    return system


def test_the_server_is_detected_as_llama_cpp_python(realmodel_url: str) -> None:
    forget_detected()
    assert "llama-cpp-python" == detect_server(realmodel_url).name


@pytest.mark.parametrize("mode", ["tool", "native", "prompted"])
def test_every_mode_gets_a_valid_contact_within_the_templates_retries(realmodel_url: str, mode: str) -> None:
    result = _system(realmodel_url, mode).execute("contact", {"text": TEXT})
    assert result.ok, result.error
    assert result.parsedContent.name
    # No attempt was a refused request: every form sent is one the server takes.
    assert all(a.fault is None for a in result.notes.attempts), result.notes.attempts


def test_max_tokens_is_honoured_and_named_in_the_failure(realmodel_url: str) -> None:
    result = _system(realmodel_url, "prompted", max_tokens=5).execute("contact", {"text": TEXT}, retries=0)
    first = result.notes.attempts[0]
    assert (first.usage.output_tokens or 0) <= 5  # `max_tokens`, not the ignored `max_completion_tokens`
    assert "length" == first.finish_reason
    assert FailureReason.OUTPUT_VALIDATION_FAILURE == result.error.reason
    assert "max_tokens=5" in result.error.message


def test_tool_mode_beside_tools_is_refused_before_any_call(realmodel_url: str, tmp_path: Path) -> None:
    (tmp_path / "quote.yaml").write_text(
        "name: quote\nparams: {path: str}\ninstructions: 'Read {{path}}.'\n"
        "tools: [{function: 'atomtask.tools:read_text', root: '.'}]\n"
        "output_format: {type: json, schema: Contact}\n",
        encoding="utf-8",
    )
    system = TaskSystem(
        model="openai-chat:smollm2", templates=[bundled_templates_path(), tmp_path], base_url=realmodel_url
    )
    result = system.execute("quote", {"path": "x"})
    assert FailureReason.CONFIGURATION_ERROR == result.error.reason
    assert "llama-cpp-python" in result.error.message
    assert [] == result.notes.attempts
