"""`expected_output_tokens`: a template's typical answer size, declared in YAML, Python or a `.sexp` file."""

from __future__ import annotations

from pathlib import Path

import pytest
from atomtask import TaskSystem, Template
from atomtask.errors import TemplateError


def test_declared_in_yaml_it_is_the_expected_answer(tmp_path: Path) -> None:
    """A YAML template's `expected_output_tokens` is the expected output of each call; the worst is 4x it."""
    (tmp_path / "t.yaml").write_text(
        "name: tell\nparams: {topic: str}\ninstructions: Tell me about {{topic}}.\nexpected_output_tokens: 500\n"
    )
    estimate = TaskSystem(templates=tmp_path).estimate("tell", {"topic": "tides"}, model="openai:gpt-4o-mini")
    row = estimate.rows[0]
    assert (500, 2 * 2000) == (row.output_tokens.expected, row.output_tokens.worst)
    assert not any("text answer" in note for note in row.notes)


def test_declared_in_python_and_in_sexp(tmp_path: Path) -> None:
    """`Template(expected_output_tokens=...)` and `(expected_output_tokens N)` in a `defatom` mean the same."""
    (tmp_path / "t.sexp").write_text(
        '(defatom tell_sexp (params (topic str "A topic")) (instructions "Tell me about {{topic}}.")'
        " (expected_output_tokens 120))\n"
    )
    system = TaskSystem(templates=tmp_path)
    system.register(
        Template(name="tell_py", params={"topic": "str"}, instructions="About {{topic}}.", expected_output_tokens=120)
    )
    for name in ("tell_sexp", "tell_py"):
        assert 120 == system.templates.get(name).expected_output_tokens
        estimate = system.estimate(name, {"topic": "tides"}, model="openai:gpt-4o-mini")
        assert 120 == estimate.rows[0].output_tokens.expected


@pytest.mark.parametrize("value", ["0", "-3", "many"])
def test_a_value_that_is_not_a_positive_int_is_refused_at_load(tmp_path: Path, value: str) -> None:
    """`expected_output_tokens: 0` (or negative, or not a number) is a `TemplateError` naming the file."""
    (tmp_path / "t.yaml").write_text(f"name: tell\ninstructions: Hi.\nexpected_output_tokens: {value}\n")
    with pytest.raises(TemplateError, match="expected_output_tokens"):
        TaskSystem(templates=tmp_path)


def test_an_unset_value_leaves_a_templates_dump_and_batch_fingerprint_as_before() -> None:
    """Without `expected_output_tokens` a template dumps as before the field existed (batch records stay valid)."""
    plain = Template(name="tell", instructions="Hi.")
    assert "expected_output_tokens" not in plain.model_dump(mode="json")
    assert (
        7 == Template(name="tell", instructions="Hi.", expected_output_tokens=7).model_dump()["expected_output_tokens"]
    )
