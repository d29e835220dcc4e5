"""The workflow codes of `atomtask check`: one rule per workflow error class, each explained with an example."""

from __future__ import annotations

from atomtask.errors import WORKFLOW_ERROR_CODES
from atomtask.lint import RULES, Severity
from atomtask.lint._findings import WORKFLOW_RULE_TEXTS


def test_every_workflow_error_code_has_a_rule_named_like_its_class() -> None:
    """E110-E120 are exactly the error classes' codes, each an error rule carrying the class's `rule` name."""
    assert list(WORKFLOW_ERROR_CODES) == [code for code, *_ in WORKFLOW_RULE_TEXTS]
    assert {code: cls.rule for code, cls in WORKFLOW_ERROR_CODES.items()} == {
        code: RULES[code].name for code in WORKFLOW_ERROR_CODES
    }
    assert {Severity.ERROR} == {RULES[code].severity for code in WORKFLOW_ERROR_CODES}


def test_every_explanation_shows_its_code_in_an_example() -> None:
    """Each explanation has an indented example that names its own code."""
    for code, _, _, explanation in WORKFLOW_RULE_TEXTS:
        examples = [line for line in explanation.splitlines() if line.startswith("    ")]
        assert any(code in line for line in examples), code
