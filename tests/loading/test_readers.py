"""The registry of declaration readers, chosen by file suffix."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from atomtask import ConfigurationError, TaskSystem, Template, TemplateError, UsageError
from atomtask.loading import _readers as readers
from atomtask.loading._declarations import Declarations
from structlog.testing import capture_logs


def test_a_registered_reader_reads_its_suffix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One `register_reader` call makes folders include the suffix and `read_file` dispatch to the reader."""
    readers.suffixes()  # plugins registered in the real registry first, so the copy below is complete
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


def _plugin_package(root: Path, value: str) -> None:
    """An installed distribution (real metadata on `sys.path`) naming `value` in `atomtask.readers`."""
    info = root / "atomtask_plugin_probe-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: atomtask-plugin-probe\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[atomtask.readers]\nprobe = {value}\n")


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A registry that has not looked for plugins yet, restored after the test."""
    readers.suffixes()  # the real registry is complete when it is restored
    monkeypatch.setattr(readers, "_READERS", {k: v for k, v in readers._READERS.items() if k != ".sexp"})
    monkeypatch.setattr(readers, "_plugins_loaded", False)


def test_sexp_reader_comes_from_its_entry_point_without_the_loading_layer_importing_sexp() -> None:
    """`.sexp` files are readable through the `atomtask.readers` entry point; the loading layer names no front end."""
    from importlib.metadata import entry_points

    assert ["atomtask.sexp._loading:register"] == [e.value for e in entry_points(group="atomtask.readers")]
    probe = (
        "import sys; from atomtask.loading import _readers as readers; "
        "print('.sexp' in readers.suffixes(), 'atomtask.sexp._reader' in sys.modules)"
    )
    # Registered, yet nothing of the front end's parser is imported until a `.sexp` file is read.
    assert (
        "True False"
        == subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    )


@pytest.mark.usefixtures("fresh_registry")
def test_a_plugin_reader_is_registered_on_first_lookup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A package declaring an `atomtask.readers` entry point gets its suffix read, with no import by the user."""
    (tmp_path / "probe_reader.py").write_text(
        "from atomtask import Template\n"
        "from atomtask.loading import Declarations, register_reader\n"
        "def register():\n"
        "    register_reader(['.probe'], lambda path, errors: Declarations(\n"
        "        templates=[Template(name=path.stem, instructions=path.read_text())]))\n"
    )
    _plugin_package(tmp_path, "probe_reader:register")
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "hello.probe").write_text("Say hello")
    files = readers.declaration_files([tmp_path])
    assert [tmp_path / "hello.probe"] == files
    assert ["hello"] == [t.name for t in readers.read_file(files[0], []).templates]
    assert {".probe", ".sexp"} <= set(readers.suffixes())


@pytest.mark.usefixtures("fresh_registry")
def test_a_reader_registered_in_code_wins_over_a_plugin(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`register_reader` before the first lookup is not overridden by the entry point for the same suffix."""

    def mine(path: Path, errors: list[UsageError]) -> Declarations:
        return Declarations()

    readers.register_reader([".sexp"], mine)
    assert mine is readers.reader_for(Path("x.sexp"))


@pytest.mark.usefixtures("fresh_registry")
def test_a_broken_plugin_is_a_configuration_error_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry point whose module cannot be imported raises ConfigurationError naming the entry point and the fix."""
    _plugin_package(tmp_path, "no_such_module_here:register")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigurationError) as caught:
        readers.suffixes()
    assert "'probe' (no_such_module_here:register" in str(caught.value)
    assert "ModuleNotFoundError" in str(caught.value) and "Reinstall the package" in str(caught.value)


def test_a_yaml_file_that_is_not_utf8_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    """A Latin-1 YAML file raises a TemplateError with the file, line and column, not UnicodeDecodeError."""
    path = tmp_path / "t.yaml"
    path.write_bytes(b"name: t\ninstructions: caf\xe9\n")
    with pytest.raises(TemplateError, match=r"is not valid UTF-8.*Save the file as UTF-8") as raised:
        readers.read_file(path, [])
    assert f"{path}:2:18" == str(raised.value.location)


def test_a_json_file_that_is_not_a_schema_is_skipped_with_a_warning(tmp_path: Path) -> None:
    """A `.json` data file is skipped: no schema, a `json_file_skipped` event, and a note for `check`."""
    path = tmp_path / "settings.json"
    path.write_text('{"theme": "dark"}')
    with capture_logs() as logs:
        declarations = readers.read_file(path, [])
    assert [] == declarations.json_schemas
    assert [("json_file_skipped", "warning", str(path))] == [(e["event"], e["log_level"], e["file"]) for e in logs]
    assert [(str(path), 1)] == [(s.location.file, s.location.line) for s in declarations.skipped]
    assert "'settings.json' is skipped" in declarations.skipped[0].message
    assert "settings" not in TaskSystem(templates=tmp_path).models  # loading the folder does not fail
