"""A cases file YAML cannot read (a NUL, another control character): `CasesFileError` naming file and line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from atomtask import CasesFileError
from atomtask.cli import main
from atomtask.template_tests._cases import read_case_file

SHIPPED = Path(__file__).resolve().parents[2] / "templates"


@pytest.mark.parametrize(("char", "named"), [("\x00", "NUL character (U+0000)"), ("\x1b", "character U+001B")])
def test_a_control_character_is_a_cases_file_error_at_its_line(tmp_path: Path, char: str, named: str) -> None:
    """A NUL (PyYAML's ReaderError, raised before parsing) is located at its line and column, with the fix."""
    path = tmp_path / "x.cases.yaml"
    path.write_text("template: extract_contact\ncases:\n  - name: é one\n    inputs: {text: a" + char + "b}\n")
    with pytest.raises(CasesFileError) as caught:
        read_case_file(path)
    error = caught.value
    assert (str(path), 4, 21) == (error.location.file, error.location.line, error.location.column)
    assert named in error.message
    assert "delete it" in error.message


def test_atomtask_test_exits_2_on_a_cases_file_with_a_nul(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`atomtask test` names the file and line (exit 2), never "unexpected ReaderError"."""
    templates = tmp_path / "templates"
    shutil.copytree(SHIPPED, templates, ignore=shutil.ignore_patterns("__pycache__"))
    cases = templates / "tests" / "extract_contact.cases.yaml"
    cases.write_text(cases.read_text().replace("cases:", "cases:\x00", 1))
    assert 2 == main(["test", str(cases)])
    said = capsys.readouterr().err
    assert "unexpected" not in said
    assert f"{cases}:" in said and "NUL" in said
