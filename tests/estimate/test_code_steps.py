"""A dry run runs no code step: user code has effects. Each stands in with a synthetic value of its return type."""

from __future__ import annotations

from pathlib import Path

from atomtask import Workflow

from tests.workflow_fixtures import make_system
from tests.workflows.code_steps_funcs import REF


def test_a_dry_run_never_runs_a_code_step_and_prices_the_steps_after_it(tmp_path: Path) -> None:
    """`mark` appends to a file when it runs: after the dry run there is no file; the task after it is counted."""
    system = make_system("openai:gpt-4o-mini", importable=("tests",))
    written = tmp_path / "marks.txt"
    system.register_workflow(
        Workflow.model_validate(
            {
                "name": "marked",
                "state": [{"name": name, "type": "str"} for name in ("word", "loud", "out")],
                "steps": [
                    {"id": "mark", "call": f"{REF}:mark", "inputs": {"path": str(written), "text": "{{state.word}}"},
                     "output": "loud"},
                    {"id": "shout", "task": "shout", "inputs": {"word": "{{state.loud}}"}, "output": "out"},
                ],
            }
        )
    )  # fmt: skip
    estimate = system.estimate("marked", {"word": "tide"})
    assert not written.exists()
    assert ["shout"] == [row.template for row in estimate.rows]
    assert 1 == estimate.total.requests.expected
    assert estimate.total.input_tokens.expected > 0
