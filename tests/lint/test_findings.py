"""Finding codes are stable, documented in docs/check.md, and selected by prefix."""

from __future__ import annotations

import re

from atomtask import SourceLocation
from atomtask.lint import RULES, Finding, Severity
from atomtask.lint._findings import matches

from tests.conftest import REPO


def test_every_code_is_in_the_docs_table_with_its_severity() -> None:
    """The table of docs/check.md lists exactly the codes that exist, each with its severity."""
    text = (REPO / "docs" / "check.md").read_text(encoding="utf-8")
    table = dict(re.findall(r"^\| ([EWP]\d{3}) \| (error|warning) \|", text, re.MULTILINE))
    assert {code: rule.severity.value for code, rule in RULES.items()} == table


def test_code_families_and_severities() -> None:
    """E1xx are errors, W2xx warnings; P3xx errors only for what pydantic-ai (or the local server's profile,
    P308) would refuse before any request."""
    assert all(r.severity is Severity.ERROR for c, r in RULES.items() if c.startswith("E"))
    assert all(r.severity is Severity.WARNING for c, r in RULES.items() if c.startswith("W"))
    assert ["P301", "P302", "P307", "P308"] == [
        c for c, r in RULES.items() if c.startswith("P") and r.severity is Severity.ERROR
    ]


def test_prefix_matching() -> None:
    """A code matches itself, any prefix of itself, case-insensitively."""
    assert matches("W204", ["w2"])
    assert matches("W204", ["E", "W204"])
    assert not matches("W204", ["W20 ", "P"])


def test_finding_renders_like_a_linter() -> None:
    """`str(finding)` is `file:line:col: CODE message`."""
    finding = Finding(
        code="E102",
        severity=Severity.ERROR,
        message="Bad.",
        location=SourceLocation(file="t.yaml", line=3, column=7),
    )
    assert "t.yaml:3:7: E102 Bad." == str(finding)
    assert {"code": "E102", "severity": "error", "message": "Bad.", "file": "t.yaml", "line": 3, "column": 7} == (
        finding.to_json()
    )
