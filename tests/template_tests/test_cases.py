"""Reading cases files: the shape of cases and answers, and located errors that say the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from atomtask import CasesFileError
from atomtask.template_tests._cases import Answer, case_files, read_case_file, read_case_text

CASES = """\
template: extract_contact
cases:
  - name: one
    inputs: {text: Ada}
    answers:
      - '{"name": "Ada"}'
      - {tool_call: {name: Ada}, tool: final_result}
      - {text: plain words}
    output: {name: Ada}
  - name: two
    template: classify_ticket
    expect: output.category == "bug"
"""


def _error(text: str, tmp_path: Path) -> CasesFileError:
    with pytest.raises(CasesFileError) as caught:
        read_case_text(text, tmp_path / "tests" / "t.cases.yaml")
    return caught.value


def test_cases_and_answers_are_read(tmp_path: Path) -> None:
    """Each case has its template, inputs, answers in order (string, tool call, text) and expectations."""
    file = read_case_text(CASES, tmp_path / "tests" / "t.cases.yaml")
    one, two = file.cases
    expected = (
        Answer(kind=None, value='{"name": "Ada"}'),
        Answer(kind="tool_call", value={"name": "Ada"}, tool="final_result"),
        Answer(kind="text", value="plain words"),
    )
    assert ("extract_contact", {"text": "Ada"}, expected, {"name": "Ada"}) == (
        one.template,
        one.inputs,
        one.answers,
        one.output,
    )
    assert ("classify_ticket", ('output.category == "bug"',), False, ()) == (
        two.template,
        two.expect,
        two.has_output,
        two.answers,
    )


def test_the_templates_folder_defaults_to_the_folder_above_tests(tmp_path: Path) -> None:
    """A cases file in `templates/tests/` runs against `templates/`; `templates:` names another folder."""
    assert tmp_path == read_case_text(CASES, tmp_path / "tests" / "t.cases.yaml").templates
    other = read_case_text("templates: ../../lib\n" + CASES, tmp_path / "a" / "tests" / "t.cases.yaml")
    assert tmp_path / "lib" == other.templates


def test_case_locations_point_at_lines(tmp_path: Path) -> None:
    """A case knows where it starts and where each of its keys is."""
    two = read_case_text(CASES, tmp_path / "t.cases.yaml").cases[1]
    assert (10, 12) == (two.location.line, two.where("expect").line)


def test_unknown_case_key_is_located_with_did_you_mean(tmp_path: Path) -> None:
    """A misspelt key names its line and column and the near key."""
    error = _error("template: t\ncases:\n  - name: a\n    inptus: {}\n", tmp_path)
    assert (4, 5) == (error.location.line, error.location.column)
    assert "Unknown key 'inptus' in case 'a'. Did you mean 'inputs'?" == error.message


def test_unknown_top_level_key_lists_the_valid_keys(tmp_path: Path) -> None:
    """An unknown key of the file lists `template`, `templates`, `cases`."""
    error = _error("tests: []\n", tmp_path)
    assert "Unknown key 'tests' in a cases file. Valid keys: template, templates, cases." == error.message


def test_malformed_yaml_is_located(tmp_path: Path) -> None:
    """Broken YAML is a `CasesFileError` at the line where the parser stopped."""
    error = _error("template: t\ncases:\n  - name: [a\n", tmp_path)
    assert str(error).startswith(f"{tmp_path / 'tests' / 't.cases.yaml'}:4:")
    assert "Malformed YAML" in error.message


def test_unknown_failure_reason_suggests_the_near_one(tmp_path: Path) -> None:
    """`expect_failure` takes a `FailureReason` value; a near miss gets "did you mean"."""
    error = _error("template: t\ncases:\n  - expect_failure: output_validation_failed\n", tmp_path)
    assert (
        "Did you mean 'output_validation_failure' or 'input_validation_failure' or 'state_validation_failure'?"
        in error.message
    )
    assert 3 == error.location.line


def test_expected_failure_and_output_exclude_each_other(tmp_path: Path) -> None:
    """A case expecting a failure has no output to compare."""
    error = _error("template: t\ncases:\n  - expect_failure: provider_error\n    output: {}\n", tmp_path)
    assert "remove `output` or `expect_failure`" in error.message
    assert 4 == error.location.line


def test_an_answer_that_is_neither_text_nor_tool_call_is_refused(tmp_path: Path) -> None:
    """A bare mapping as an answer is ambiguous: the error shows both spellings."""
    error = _error("template: t\ncases:\n  - name: a\n    answers:\n      - {name: Ada}\n", tmp_path)
    assert "Unknown key 'name' in answer 1 of case 'a'." in error.message


def test_duplicate_case_names_are_refused(tmp_path: Path) -> None:
    """Two cases of one name would be indistinguishable in reports and `-k`."""
    error = _error("template: t\ncases:\n  - name: a\n  - name: a\n", tmp_path)
    assert ("Two cases are named 'a' (the first at line 3); give each case its own `name`.", 4) == (
        error.message,
        error.location.line,
    )


def test_a_case_without_a_template_says_where_to_name_one(tmp_path: Path) -> None:
    """No file-level and no case-level `template` is an error at the case."""
    error = _error("cases:\n  - name: a\n", tmp_path)
    assert "Give case 'a' a `template:` (or the file a top-level `template:`)." == error.message


def test_empty_cases_are_refused(tmp_path: Path) -> None:
    """A file with no cases is a mistake, not a passing run."""
    assert "`cases` must be a non-empty list" in _error("template: t\ncases: []\n", tmp_path).message


def test_case_files_are_found_recursively_and_a_missing_path_is_an_error(tmp_path: Path) -> None:
    """Folders are searched for `*.cases.yaml` at any depth; other YAML files are not cases."""
    (tmp_path / "tests" / "deep").mkdir(parents=True)
    for name in ("tests/a.cases.yaml", "tests/deep/b.cases.yml", "tests/c.yaml"):
        (tmp_path / name).write_text("cases: []\n")
    assert [tmp_path / "tests/a.cases.yaml", tmp_path / "tests/deep/b.cases.yml"] == case_files([tmp_path])
    with pytest.raises(CasesFileError, match="No such file or folder"):
        case_files([tmp_path / "missing"])


def test_a_file_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    """Cases files are UTF-8 text, like every declaration file."""
    path = tmp_path / "t.cases.yaml"
    path.write_bytes(b"template: caf\xe9\n")
    with pytest.raises(CasesFileError, match="UTF-8"):
        read_case_file(path)
