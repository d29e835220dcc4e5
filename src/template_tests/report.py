"""What `atomtask test` prints per case (PASS/FAIL, why, what changed since recording) and its JUnit XML.

The JUnit XML (stdlib `xml.etree`) has one `<testsuite>` per cases file and one `<testcase>` per case
(`classname` the template, `file` and `line` where the case is); a failing case holds a `<failure>`
whose message is the first problem and whose text is the whole report of the case.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from atomtask.template_tests.replay import CaseOutcome

__all__ = ["case_lines", "summary_line", "write_junit", "write_text"]


def case_lines(outcome: CaseOutcome) -> list[str]:
    """The report of one case: its status line, then its problems, changes since recording and notes."""
    case = outcome.case
    status = "PASS" if outcome.passed else "FAIL"
    lines = [f"{status} {outcome.label} [{case.template}] (line {case.location.line})"]
    lines.extend(f"    {problem}" for problem in outcome.problems)
    if outcome.changes:
        lines.append("    changed since recording:")
        lines.extend(f"      {change}" for change in outcome.changes)
    lines.extend(f"    note: {note}" for note in outcome.notes)
    return lines


def summary_line(outcomes: Sequence[CaseOutcome], files: int) -> str:
    passed = sum(1 for o in outcomes if o.passed)
    cases = f"{len(outcomes)} case{'s' if len(outcomes) != 1 else ''}"
    return f"{passed} passed, {len(outcomes) - passed} failed ({cases} in {files} file{'s' if files != 1 else ''})"


def write_text(outcomes: Sequence[CaseOutcome], files: int, out: TextIO, *, quiet: bool = False) -> None:
    """Every case's report (with `quiet`, the failing ones only), then the summary line."""
    for outcome in outcomes:
        if outcome.passed and quiet:
            continue
        print("\n".join(case_lines(outcome)), file=out)
    print(summary_line(outcomes, files), file=out)


def write_junit(outcomes: Sequence[CaseOutcome], path: Path) -> None:
    """Write the JUnit XML report of `outcomes` to `path`."""
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites", name="atomtask test")
    by_file: dict[str, list[CaseOutcome]] = {}
    for outcome in outcomes:
        by_file.setdefault(str(outcome.prepared.file.path), []).append(outcome)
    total = failures = 0
    for file, items in by_file.items():
        failed = sum(1 for o in items if not o.passed)
        total += len(items)
        failures += failed
        suite = ET.SubElement(
            root, "testsuite", name=file, tests=str(len(items)), failures=str(failed), errors="0", skipped="0"
        )
        for outcome in items:
            case = outcome.case
            duration = outcome.result.notes.duration_ms / 1000 if outcome.result is not None else 0.0
            testcase = ET.SubElement(
                suite,
                "testcase",
                classname=case.template,
                name=case.name,
                file=file,
                line=str(case.location.line or 0),
                time=f"{duration:.3f}",
            )
            if not outcome.passed:
                failure = ET.SubElement(
                    testcase,
                    "failure",
                    message=outcome.problems[0] if outcome.problems else "failed",
                    type="CaseFailed",
                )
                failure.text = "\n".join(case_lines(outcome))
    root.set("tests", str(total))
    root.set("failures", str(failures))
    root.set("errors", "0")
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
