"""The registry of declaration readers, chosen by file suffix."""

from __future__ import annotations

from pathlib import Path

import pytest
from atomtask import Template, TemplateError, UsageError
from atomtask.loading import readers
from atomtask.loading.declarations import Declarations


def test_a_registered_reader_reads_its_suffix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One `register_reader` call makes folders include the suffix and `read_file` dispatch to the reader."""
    monkeypatch.setattr(readers, "_READERS", dict(readers._READERS))

    def read_txt(path: Path, errors: list[UsageError]) -> Declarations:
        return Declarations(templates=[Template(name=path.stem, instructions=path.read_text())])

    readers.register_reader([".TXT"], read_txt)
    (tmp_path / "greet.txt").write_text("Say hi")
    (tmp_path / "notes.md").write_text("ignored")
    files = readers.declaration_files([tmp_path])
    assert [tmp_path / "greet.txt"] == files
    assert ["greet"] == [t.name for t in readers.read_file(files[0], []).templates]


def test_unknown_suffix_names_the_readable_ones(tmp_path: Path) -> None:
    """A file with no reader raises a TemplateError listing the suffixes that have one."""
    path = tmp_path / "x.toml"
    path.write_text("")
    with pytest.raises(TemplateError, match=r"No reader for '\.toml' files .*\.yaml, \.yml"):
        readers.read_file(path, [])


def test_missing_path_is_a_template_error(tmp_path: Path) -> None:
    """A path that does not exist raises, naming it."""
    with pytest.raises(TemplateError, match="No such file or folder"):
        readers.declaration_files([tmp_path / "nope"])


def test_yaml_reader_collects_errors_and_reads_on(tmp_path: Path) -> None:
    """The YAML reader appends an invalid declaration to `errors` and still returns the valid ones."""
    path = tmp_path / "t.yaml"
    path.write_text("- {name: a, instructions: hi, retrys: 1}\n- {name: b, instructions: hi}\n- 3\n")
    errors: list[UsageError] = []
    declarations = readers.read_file(path, errors)
    assert ["b"] == [t.name for t in declarations.templates]
    assert [(str(path), 1), (str(path), None)] == [(e.location.file, e.location.line) for e in errors if e.location]
