"""Deep and long expressions through `atomtask check`, `atomtask workflow run` and `TaskSystem`: E125, located."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from atomtask import TaskSystem, Workflow
from atomtask.cli._main import main
from atomtask.errors import WorkflowExpressionLimitError
from atomtask.lint import check

from tests.workflow_fixtures import make_system
from tests.workflows.test_expression_limits import shapes

FLOW = """\
name: deep
state:
  - {{name: text, type: str}}
  - {{name: score, type: int, default: 0}}
steps:
  - id: count
    set: {{score: "len(state.text)"}}
    route:
      - {{when: {expression}, to: end}}
      - {{to: end}}
"""

CASES = [
    pytest.param(text, id=f"{name}-{n}")
    for n in (500, 100_000)
    for name, text in shapes(n).items()
    if name != "methods" or n == 500  # one 100,000 chained method case is enough: `indexes` reads the same way
]


def _folder(tmp_path: Path, expression: str) -> tuple[Path, int, int]:
    """A folder holding the workflow with `expression` as its route's `when`; the 1-based line and column of it."""
    text = FLOW.format(expression=json.dumps(expression))
    (tmp_path / "flow.yaml").write_text(text, encoding="utf-8")
    lines = text.splitlines()
    line = next(i for i, t in enumerate(lines, start=1) if "when:" in t)
    return tmp_path / "flow.yaml", line, lines[line - 1].index("when: ") + len("when: ") + 2


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("expression", CASES)
def test_check_reports_e125_at_the_expression(tmp_path: Path, expression: str) -> None:
    """`atomtask check`: exit 1, one E125 finding on the `when` line, at or after the expression's start."""
    path, line, column = _folder(tmp_path, expression)
    code, out, _ = _run(["check", "--no-cache", str(tmp_path), "--format", "json"])
    findings = json.loads(out)["findings"]
    assert (1, ["E125"]) == (code, [f["code"] for f in findings])
    assert (str(path), line) == (findings[0]["file"], findings[0]["line"])
    assert column <= findings[0]["column"] <= column + 10_000


@pytest.mark.parametrize("expression", CASES)
def test_workflow_run_refuses_before_running_with_exit_2(tmp_path: Path, expression: str) -> None:
    """`atomtask workflow run`: exit 2, the located message on stderr, nothing run and no traceback."""
    path, line, _ = _folder(tmp_path, expression)
    code, out, err = _run(["workflow", "run", "--templates", str(tmp_path), "deep", "-i", "text=x"])
    assert (2, "") == (code, out)
    assert err.startswith(f"atomtask: error: {path}:{line}:")
    assert "nests more than 100 levels deep" in err or "over the limit of 10,000" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("expression", CASES)
def test_loading_from_python_raises_the_located_typed_error(tmp_path: Path, expression: str) -> None:
    """`TaskSystem(templates=...)` raises `WorkflowExpressionLimitError` with the location; `check` reports it."""
    path, line, _ = _folder(tmp_path, expression)
    with pytest.raises(WorkflowExpressionLimitError) as caught:
        TaskSystem(templates=tmp_path)
    assert caught.value.location is not None
    assert (str(path), line) == (caught.value.location.file, caught.value.location.line)
    assert ["E125"] == [f.code for f in check([tmp_path]).findings]


def test_the_parentheses_case_points_at_the_opener_too_deep(tmp_path: Path) -> None:
    """101 nested parentheses: the column is that of the 101st `(`."""
    _, line, column = _folder(tmp_path, "(" * 101 + "1" + ")" * 101)
    finding = check([tmp_path]).findings[0]
    assert finding.location is not None
    assert ("E125", line, column + 100) == (finding.code, finding.location.line, finding.location.column)


@pytest.mark.parametrize("expression", [shapes(500)["not"], shapes(100_000)["sum"]])
def test_a_workflow_built_in_python_is_checked_the_same(expression: str) -> None:
    """`system.workflows.check(Workflow(...))` notes E125 for the route's `when` of the step; nothing crashes."""
    system = make_system()
    doc = {
        "name": "deep",
        "state": [{"name": "text", "type": "str", "input": True}, {"name": "reply", "type": "str", "default": ""}],
        "steps": [{"id": "shout", "task": "shout", "inputs": {"word": "{{state.text}}"}, "output": "reply",
                   "route": [{"when": expression, "to": "end"}, {"to": "end"}]}],
    }  # fmt: skip
    errors = system.workflows.check(Workflow.model_validate(doc)).errors
    assert [("E125", "shout")] == [(e.code, e.step) for e in errors]
    assert errors[0].message.startswith("Step 'shout', route 1: The expression ")
