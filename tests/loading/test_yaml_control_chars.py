"""A template or workflow YAML file with a character YAML refuses: its typed error at the character's line."""

from __future__ import annotations

from pathlib import Path

import pytest
from atomtask import TaskSystem, TemplateError
from atomtask.loading._yaml import load_yaml_text

WORKFLOW = """\
name: say
params: {word: str}
instructions: "Repeat {{word}}"
---
name: guarded
state:
  - {name: word, type: str}
steps:
  - {id: first, task: say, inputs: {word: "{{state.word}}"}, output: word}
"""


@pytest.mark.parametrize("prefix", ["", "# é, ü and 日本\n"], ids=["ascii", "non-ascii-before"])
def test_a_nul_in_a_template_file_is_a_template_error_at_its_place(prefix: str) -> None:
    """libyaml counts bytes, PyYAML characters: either way the line and column are the character's."""
    text = prefix + 'name: t\ninstructions: "a\x00b"\n'
    with pytest.raises(TemplateError) as caught:
        load_yaml_text(text, "t.yaml")
    line = 2 + prefix.count("\n")
    assert ("t.yaml", line, 17) == (
        caught.value.location.file,
        caught.value.location.line,
        caught.value.location.column,
    )
    assert "NUL character (U+0000)" in caught.value.message


def test_a_nul_in_a_workflow_file_is_a_typed_error_when_loaded(tmp_path: Path) -> None:
    """`TaskSystem(templates=...)` over a workflow file with a NUL: a TemplateError at the file's line, not a crash."""
    path = tmp_path / "flow.yaml"
    path.write_text(WORKFLOW.replace("{name: word, type: str}", "{name: word, type: str\x00}"))
    with pytest.raises(TemplateError) as caught:
        TaskSystem(templates=[tmp_path])
    assert (str(path), 7) == (caught.value.location.file, caught.value.location.line)
