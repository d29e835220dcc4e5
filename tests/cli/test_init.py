"""`atomtask init [DIR] [--force]`: a project that passes `check` and `test`, never written over by accident."""

from __future__ import annotations

import argparse
import io
import json
import tomllib
from pathlib import Path, PurePosixPath

import pytest
from atomtask import ScaffoldConflictError
from atomtask.cli._init import scaffold_files
from atomtask.cli._main import main

REPO = Path(__file__).resolve().parents[2]
EXPECTED_FILES = [
    "README.md",
    "templates/answer_feedback.yaml",
    "templates/classify_feedback.yaml",
    "templates/schemas.yaml",
    "templates/tests/classify_feedback.cases.yaml",
]


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_init_writes_the_project_and_prints_the_next_commands(tmp_path: Path) -> None:
    """The scaffold's files land under DIR (created), and the printout lists them and the commands to run next."""
    target = tmp_path / "my project"
    code, out, err = run(["init", str(target)])
    assert (0, "") == (code, err)
    written = sorted(str(p.relative_to(target).as_posix()) for p in target.rglob("*") if p.is_file())
    assert EXPECTED_FILES == written
    assert [f"  {name}" for name in EXPECTED_FILES] == [line for line in out.splitlines() if line[2:] in written]
    assert f"  cd '{target}'" in out.splitlines()
    for command in ("atomtask check", "atomtask test", "atomtask run classify_feedback", "atomtask workflow run"):
        assert f"  {command}" in out


def test_the_project_passes_check_and_test_and_runs_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As written, in its folder: `check --strict` is clean, `test` passes every case, and the README's commands run."""
    monkeypatch.chdir(tmp_path)
    assert 0 == run(["init"])[0]
    code, out, err = run(["check", "--strict"])  # no warning either
    assert 0 == code, out + err
    assert out.startswith("All clear: checked 3 files, 2 templates, 1 schema, 1 workflow."), out
    code, out, err = run(["test"])
    assert 0 == code, out + err
    assert "3 passed, 0 failed" in out
    code, out, err = run(["run", "classify_feedback", "-i", "message=The export button does nothing."])
    assert 0 == code, err
    assert {"sentiment", "topic", "summary", "urgent"} == set(json.loads(out))
    code, out, err = run(["workflow", "run", "answer_feedback", "-i", "message=The export button does nothing."])
    assert 0 == code, err
    state = json.loads(out)
    assert ("The export button does nothing.", str) == (state["message"], type(state["reply"]))


def test_into_the_current_folder_there_is_no_cd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`atomtask init` with no DIR writes here and says so, without a `cd` step."""
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(["init"])
    assert 0 == code
    assert out.startswith("Wrote 5 files into the current folder:")
    assert "  cd " not in out


def test_existing_files_are_named_and_nothing_is_written(tmp_path: Path) -> None:
    """A scaffold file that exists stops `init` (exit 2) with each existing file named; none is written or changed."""
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "schemas.yaml").write_text("mine", encoding="utf-8")
    (tmp_path / "README.md").write_text("my readme", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("unrelated", encoding="utf-8")
    code, out, err = run(["init", str(tmp_path)])
    assert (2, "") == (code, out)
    assert err.startswith("atomtask: error: `atomtask init` would overwrite 2 existing files: ")
    assert f"{str(tmp_path / 'README.md')!r}, {str(tmp_path / 'templates' / 'schemas.yaml')!r}" in err
    assert "--force" in err
    assert ["README.md", "notes.txt", "templates/schemas.yaml"] == sorted(
        p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()
    )
    assert "mine" == (tmp_path / "templates" / "schemas.yaml").read_text(encoding="utf-8")


def test_the_conflict_is_a_typed_error_carrying_the_paths(tmp_path: Path) -> None:
    """`ScaffoldConflictError` (a `UsageError`) carries the existing files as `paths`."""
    from atomtask.cli._init import run as init

    (tmp_path / "README.md").write_text("my readme", encoding="utf-8")
    args = argparse.Namespace(directory=str(tmp_path), force=False)
    with pytest.raises(ScaffoldConflictError) as caught:
        init(args, io.StringIO(), io.StringIO())
    assert [str(tmp_path / "README.md")] == caught.value.paths


def test_force_overwrites_the_scaffold_files_only(tmp_path: Path) -> None:
    """`--force` writes over the scaffold's files (and says how many) and leaves other files alone."""
    (tmp_path / "README.md").write_text("my readme", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("unrelated", encoding="utf-8")
    code, out, err = run(["init", str(tmp_path), "--force"])
    assert (0, "") == (code, err)
    assert "1 of them overwritten" in out.splitlines()[0]
    assert scaffold_files()[PurePosixPath("README.md")] == (tmp_path / "README.md").read_text(encoding="utf-8")
    assert "unrelated" == (tmp_path / "notes.txt").read_text(encoding="utf-8")


def test_a_file_as_the_directory_is_a_usage_error(tmp_path: Path) -> None:
    """DIR naming a file is refused with exit 2, saying it must be a folder."""
    target = tmp_path / "project"
    target.write_text("", encoding="utf-8")
    code, _, err = run(["init", str(target)])
    assert 2 == code
    assert "is a file, not a folder" in err


def test_the_scaffold_is_package_data_of_the_wheel() -> None:
    """Every scaffold file is matched by pyproject's package-data globs, so a non-editable install can `init`."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    globs = config["tool"]["setuptools"]["package-data"]["atomtask.cli"]
    package = REPO / "src" / "cli"
    shipped = {path.relative_to(package / "_scaffold").as_posix() for g in globs for path in package.glob(g)}
    assert set(EXPECTED_FILES) <= shipped
    assert EXPECTED_FILES == [str(path) for path in scaffold_files()]
