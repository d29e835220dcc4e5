"""The JSON-Schema-Test-Suite (draft 2020-12) through the path a template's JSON Schema output takes.

Each schema is registered as a template's `output_format: {schema: {json_schema: ...}}` in a
`TaskSystem` whose `$ref` documents are the suite's remotes, and each instance is validated from
JSON by the resulting output class. The corpus lives beside the repository (in CI the repository
is cloned with `shared/` next to it); a missing corpus fails, it is not skipped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.json_schema_suite import ANNOTATION_ONLY, FileResult, run, run_file, suite_system

pytestmark = pytest.mark.corpus  # run by .ci/run (`pytest -m corpus`), not by the README's test command

CORPUS = Path(__file__).resolve().parents[4] / "shared" / "corpora" / "json-schema-test-suite"


@pytest.fixture(scope="module")
def results() -> dict[str, FileResult]:
    if not (CORPUS / "tests").is_dir():
        pytest.fail(f"JSON-Schema-Test-Suite corpus missing at {CORPUS}: clone the shared corpora beside the repo.")
    return {result.file: result for result in run(CORPUS)}


def test_every_required_file_is_measured(results: dict[str, FileResult]) -> None:
    """All non-optional draft 2020-12 files run, with their instances (none silently dropped)."""
    expected = sorted(p.name for p in (CORPUS / "tests").glob("*.json"))
    assert expected == sorted(results)
    assert 1200 < sum(len(r.outcomes) for r in results.values())


def test_no_required_schema_is_refused(results: dict[str, FileResult]) -> None:
    """Every non-optional schema is accepted at load (a refusal would count as disagreement)."""
    refused = {name: r.refused_schemas for name, r in results.items() if r.refused_schemas}
    assert {} == refused


def test_full_agreement_on_every_required_file(results: dict[str, FileResult]) -> None:
    """Our verdict equals the suite's `valid` for every instance, except formats asserted by design."""
    disagreements = [
        f"{o.file}: {o.group} | {o.test} (expected {o.expected}, got {o.actual})"
        for r in results.values()
        for o in r.outcomes
        if not o.agrees and not o.by_design
    ]
    assert [] == disagreements


def test_format_assertion_is_the_only_deliberate_difference(results: dict[str, FileResult]) -> None:
    """The suite's "format is only an annotation by default" cases are exactly the ones we reject."""
    by_design = [o for r in results.values() for o in r.outcomes if o.by_design]
    assert {"format.json"} == {o.file for o in by_design}
    assert all(ANNOTATION_ONLY in o.test and o.expected and o.actual is False for o in by_design)
    assert 19 == len(by_design)  # one per 2020-12 format: each is enforced


def test_unknown_formats_are_annotations() -> None:
    """`optional/format/unknown.json`: a format nothing checks loads, and every instance passes it."""
    label = "optional/format/unknown.json"
    result = run_file(suite_system(CORPUS), CORPUS / "tests" / label, label)
    assert (0, len(result.outcomes)) == (result.refused_schemas, result.agree)


def test_durations_follow_the_rfc_3339_grammar() -> None:
    """`optional/format/duration.json`: every verdict agrees (fractions, signs, `P1Y2D`, `P1WT1H` refused)."""
    label = "optional/format/duration.json"
    result = run_file(suite_system(CORPUS), CORPUS / "tests" / label, label)
    wrong = [f"{o.test} (expected {o.expected})" for o in result.outcomes if not o.agrees]
    assert ([], 0) == (wrong, result.refused_schemas)
    assert 40 < len(result.outcomes)
