"""W110-W112: a valid workflow whose values go unused (the bugs found in real examples), reported by `check`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from atomtask import Workflow
from atomtask.lint import Severity, check

from tests.workflow_fixtures import make_system
from tests.workflows.code_steps_funcs import REF


def _warnings(doc: dict[str, Any], system: Any = None) -> list[tuple[str, str | None, str]]:
    checked = (system or make_system()).workflows.check(Workflow.model_validate(doc))
    assert () == checked.errors
    return [(w.code, w.step, w.message) for w in checked.warnings]


def _flow(*steps: dict[str, Any], extra: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    state = [
        {"name": "topic", "type": "str"},
        {"name": "research", "type": "str"},
        {"name": "label", "type": "str"},
        *extra,
    ]
    return {"name": "flow", "state": state, "steps": list(steps)}


_RESEARCH = {"id": "research", "task": "research_topic", "inputs": {"topic": "{{state.topic}}"},
             "outputs": {"research": "summary"}}  # fmt: skip


def _classify(text: str) -> dict[str, Any]:
    return {"id": "classify", "task": "classify", "inputs": {"text": text}, "outputs": {"label": "label"}}


def test_a_clean_flow_has_no_warnings() -> None:
    assert [] == _warnings(_flow(_RESEARCH, _classify("{{state.research}}")))


def test_a_field_written_and_read_by_no_later_step_is_w110() -> None:
    found = _warnings(_flow(_RESEARCH, _classify("{{state.topic}}")))
    assert [("W110", "research")] == [(c, s) for c, s, _ in found]
    assert "Step 'research' writes `state.research`, but no step after it reads it." in found[0][2]


def test_what_the_last_step_writes_is_a_result_not_a_warning() -> None:
    doc = _flow(_RESEARCH)
    doc["state"].pop()  # no `label`: it would be an input no step reads
    assert [] == _warnings(doc)


def test_a_step_that_stores_its_answer_nowhere_is_w111() -> None:
    dropped = {"id": "classify", "task": "classify", "inputs": {"text": "{{state.research}}"}}
    found = _warnings(_flow(_RESEARCH, dropped))
    assert [("W111", "classify"), ("W112", None)] == [(c, s) for c, s, _ in found]
    assert "Run input `label` is read by no step" in found[1][2]
    assert "runs task 'classify' but stores its answer nowhere" in found[0][2]


def test_a_function_that_returns_nothing_may_drop_its_answer() -> None:
    system = make_system(importable=("tests",))
    note = {"id": "note", "call": f"{REF}:note_down", "inputs": {"text": "{{state.research}}"}}
    doc = _flow(_RESEARCH, note)
    doc["state"].pop()
    assert [] == _warnings(doc, system)


def test_a_run_input_no_step_reads_is_w112() -> None:
    found = _warnings(_flow(_RESEARCH, _classify("{{state.research}}"), extra=({"name": "locale", "type": "str"},)))
    assert [("W112", None)] == [(c, s) for c, s, _ in found]
    assert "Run input `locale` is read by no step" in found[0][2]


def test_check_reports_the_warnings_with_file_line_and_column(tmp_path: Path) -> None:
    (tmp_path / "flow.yaml").write_text(
        """\
name: summarize
params: {text: str}
instructions: "Summarize {{text}}"
---
name: flow
state:
  - {name: text, type: str}
  - {name: locale, type: str}
  - {name: summary, type: str}
steps:
  - {id: first, task: summarize, inputs: {text: "{{state.text}}"}, output: summary}
  - {id: again, task: summarize, inputs: {text: "{{state.text}}"}}
""",
        encoding="utf-8",
    )
    report = check([tmp_path])
    found = sorted((f.code, f.severity, f.location.line if f.location else None) for f in report.findings)
    assert [
        ("W110", Severity.WARNING, 11),
        ("W111", Severity.WARNING, 12),
        ("W112", Severity.WARNING, 8),
    ] == found
    assert (0, 3) == (report.errors, report.warnings)
