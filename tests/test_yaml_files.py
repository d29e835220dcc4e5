"""YAML template and schema files: parsed with their locations, errors pointing at the line."""

from __future__ import annotations

from pathlib import Path

import pytest
from atomtask import DuplicateNameError, SchemaError, TaskSystem, TemplateError
from atomtask.loading.yaml_files import load_yaml_text

TEMPLATE = """\
name: extract
params:
  text: {type: str}
instructions: |
  Read this:
  {{text}}
  and {{txet}}
output_format: {type: json, schema: Contact}
"""


def test_template_and_schema_in_one_file(tmp_path: Path) -> None:
    """A mapping with `templates:` and `schemas:` lists yields both, with file:line locations."""
    source = """\
schemas:
  - name: Contact
    fields:
      - {name: name, type: str}
templates:
  - name: extract
    params: {text: str}
    instructions: "{{text}}"
    output_format: {type: json, schema: Contact}
"""
    decl = load_yaml_text(source, "f.yaml")
    assert ["Contact"] == [s.name for s in decl.schemas]
    assert ["extract"] == [t.name for t in decl.templates]
    assert 6 == decl.templates[0].location.line  # type: ignore[union-attr]  # set by the loader


def test_undeclared_placeholder_points_at_its_line(tmp_path: Path) -> None:
    """A bad placeholder inside a block scalar is reported at its own line in the file."""
    (tmp_path / "schemas.yaml").write_text("name: Contact\nfields:\n  - {name: name, type: str}\n")
    (tmp_path / "extract.yaml").write_text(TEMPLATE)
    with pytest.raises(TemplateError) as raised:
        TaskSystem(templates=tmp_path)
    assert f"{tmp_path / 'extract.yaml'}:7:" in str(raised.value)
    assert "Did you mean 'text'?" in str(raised.value)


def test_unknown_schema_points_at_the_schema_key(tmp_path: Path) -> None:
    """An unknown schema name is reported at the line of `output_format`, with a suggestion."""
    (tmp_path / "schemas.yaml").write_text("name: Contact\nfields:\n  - {name: name, type: str}\n")
    (tmp_path / "extract.yaml").write_text(TEMPLATE.replace(" and {{txet}}", "").replace("Contact}", "Contct}"))
    with pytest.raises(SchemaError) as raised:
        TaskSystem(templates=tmp_path)
    assert f"{tmp_path / 'extract.yaml'}:8:" in str(raised.value)
    assert "Did you mean 'Contact'?" in str(raised.value)


def test_unknown_key_lists_valid_keys() -> None:
    """A misspelt top-level key is rejected at its line, listing the valid keys."""
    with pytest.raises(TemplateError) as raised:
        load_yaml_text("name: t\ninstructions: x\nretires: 2\n", "t.yaml")
    assert str(raised.value).startswith("t.yaml:3:")
    assert "`retires`: unknown key; valid keys: name, description, params" in str(raised.value)


def test_invalid_yaml_reports_line_and_column() -> None:
    """A YAML syntax error names the line and column."""
    with pytest.raises(TemplateError) as raised:
        load_yaml_text("name: t\ninstructions: [unclosed\n", "bad.yaml")
    assert str(raised.value).startswith("bad.yaml:3:")
    assert "Invalid YAML" in str(raised.value)


def test_mapping_that_is_neither_is_rejected() -> None:
    """A mapping without `instructions` or `fields` says what it expected."""
    with pytest.raises(TemplateError, match="neither a template"):
        load_yaml_text("name: t\nprompt: hi\n", "x.yaml")


def test_duplicate_schema_across_files_shows_both_locations(tmp_path: Path) -> None:
    """Two different schemas with one name in two files: both places are in the message."""
    (tmp_path / "a.yaml").write_text("name: S\nfields:\n  - {name: a, type: str}\n")
    (tmp_path / "b.yaml").write_text("name: S\nfields:\n  - {name: b, type: int}\n")
    with pytest.raises(DuplicateNameError) as raised:
        TaskSystem(templates=tmp_path)
    assert f"{tmp_path / 'a.yaml'}:1" in str(raised.value)
    assert str(raised.value).startswith(f"{tmp_path / 'b.yaml'}:1")


def test_duplicate_template_across_files_is_rejected(tmp_path: Path) -> None:
    """Two different templates with one name in two files: the second raises, naming the first."""
    (tmp_path / "a.yaml").write_text("name: t\ninstructions: one\n")
    (tmp_path / "b.yaml").write_text("name: t\ninstructions: two\n")
    with pytest.raises(DuplicateNameError, match=f"already registered at {tmp_path / 'a.yaml'}:1"):
        TaskSystem(templates=tmp_path)


def test_missing_path_is_a_clear_error(tmp_path: Path) -> None:
    """Loading a path that does not exist says so."""
    with pytest.raises(TemplateError, match="No such file or folder"):
        TaskSystem(templates=tmp_path / "nope")


def test_loading_twice_is_idempotent(templates_dir: Path) -> None:
    """Loading the same folder twice registers nothing new and raises nothing."""
    system = TaskSystem()
    first = system.load(templates_dir)
    assert first == system.load(templates_dir)
    assert system.models.get("Contact") is TaskSystem(templates=templates_dir).models.get("Contact")
