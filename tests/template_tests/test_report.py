"""The report of `atomtask test`: a case's lines, the summary, and JUnit XML that parses."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from atomtask import TaskSystem
from atomtask.template_tests._cases import read_case_text
from atomtask.template_tests._replay import CaseOutcome, case_lines, prepare, summary_line, write_junit


def _outcome(templates_dir: Path, **fields: object) -> CaseOutcome:
    text = "template: extract_contact\ncases:\n  - name: a & <b>\n    inputs: {text: Ada}\n"
    (prepared,) = prepare(read_case_text(text, Path("t.cases.yaml")), TaskSystem(templates=templates_dir))
    return CaseOutcome(prepared=prepared, **fields)  # type: ignore[arg-type]


def test_case_lines_show_problems_then_changes_then_notes(templates_dir: Path) -> None:
    """A failing case: the FAIL line, each problem, what changed since recording, the notes."""
    outcome = _outcome(templates_dir, passed=False, problems=("p",), changes=("c",), notes=("n",))
    assert [
        "FAIL t.cases.yaml::a & <b> [extract_contact] (line 3)",
        "    p",
        "    changed since recording:",
        "      c",
        "    note: n",
    ] == case_lines(outcome)


def test_summary_counts_cases_and_files(templates_dir: Path) -> None:
    """The summary line counts passed and failed cases and the files they came from."""
    outcomes = [_outcome(templates_dir, passed=True), _outcome(templates_dir, passed=False, problems=("p",))]
    assert "1 passed, 1 failed (2 cases in 1 file)" == summary_line(outcomes, 1)


def test_junit_escapes_names_and_carries_the_case_report(tmp_path: Path, templates_dir: Path) -> None:
    """Names with XML characters survive; the failure's text is the case's report."""
    path = tmp_path / "junit.xml"
    write_junit([_outcome(templates_dir, passed=False, problems=("why <not>",))], path)
    testcase = ET.parse(path).getroot().find("testsuite/testcase")
    assert testcase is not None
    failure = testcase.find("failure")
    assert failure is not None
    assert ("a & <b>", "why <not>", "    why <not>") == (
        testcase.get("name"),
        failure.get("message"),
        (failure.text or "").splitlines()[1],
    )
