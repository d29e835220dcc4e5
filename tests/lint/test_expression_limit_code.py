"""E125: an expression too long or too deep has its own check code, rule, documentation row and explanation."""

from __future__ import annotations

import io
import re

from atomtask.cli._main import main
from atomtask.errors import WORKFLOW_ERROR_CODES, WorkflowExpressionError, WorkflowExpressionLimitError
from atomtask.lint import RULES, Severity

from tests.conftest import REPO


def test_e125_is_the_expression_limit_rule() -> None:
    """E125 is `WorkflowExpressionLimitError` (a `WorkflowExpressionError`), an error rule named like the class."""
    assert WorkflowExpressionLimitError is WORKFLOW_ERROR_CODES["E125"]
    assert issubclass(WorkflowExpressionLimitError, WorkflowExpressionError)
    assert ("workflow-expression-too-large", Severity.ERROR) == (RULES["E125"].name, RULES["E125"].severity)


def test_e125_has_its_row_in_the_docs_table() -> None:
    """docs/check.md lists E125 as an error, with both limits."""
    text = (REPO / "docs" / "check.md").read_text(encoding="utf-8")
    row = re.search(r"^\| E125 \| error \| (.*) \|$", text, re.MULTILINE)
    assert row is not None
    assert "10,000 characters" in row.group(1)
    assert "100 levels" in row.group(1)


def test_explain_e125() -> None:
    """`atomtask check --explain E125` names the rule and shows an example with the code."""
    out = io.StringIO()
    assert 0 == main(["check", "--explain", "E125"], stdout=out, stderr=io.StringIO())
    assert out.getvalue().startswith(
        "E125 workflow-expression-too-large (error): an expression is too long or nests too deep"
    )
    assert "# E125" in out.getvalue()
