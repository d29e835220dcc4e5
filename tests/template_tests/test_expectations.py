"""Expectations checked against the output class at load: unknown fields located with a did-you-mean."""

from __future__ import annotations

from pathlib import Path

import pytest
from atomtask import CasesFileError, TaskSystem
from atomtask.template_tests._cases import read_case_text
from atomtask.template_tests._replay import prepare


def _prepare(templates: Path, template: str, inputs: str, expectation: str) -> None:
    text = f"templates: {templates}\ntemplate: {template}\ncases:\n  - name: a\n    inputs: {inputs}\n{expectation}"
    system = TaskSystem(templates=templates)
    prepare(read_case_text(text, templates / "tests" / "t.cases.yaml"), system)


def _refused(templates: Path, expectation: str, template: str = "extract_invoice") -> CasesFileError:
    inputs = "{text: Ada}" if template != "answer_billing" else "{subject: s, body: b}"
    with pytest.raises(CasesFileError) as caught:
        _prepare(templates, template, inputs, expectation)
    return caught.value


def test_nested_fields_of_expectations_that_exist_are_accepted(templates_dir: Path) -> None:
    """Nested keys, list items and nested predicate paths of the output class pass the check."""
    _prepare(
        templates_dir,
        "extract_invoice",
        "{text: Ada}",
        "    expect_subset: {seller: {name: Ada}, lines: [{quantity: 1}]}\n"
        "    expect:\n      - output.seller.vat_number is null and len(output.lines) > 0\n"
        "      - output.lines[0].quantity > 0\n",
    )


def test_a_nested_subset_key_is_located_at_itself(templates_dir: Path) -> None:
    """A typo inside a nested mapping points at that key, with the near field of that class."""
    error = _refused(templates_dir, "    expect_subset:\n      seller:\n        nam: Ada\n")
    assert (8, 9) == (error.location.line, error.location.column)
    assert "`expect_subset.seller` of case 'a': Party has no field 'nam'" in error.message
    assert error.message.endswith("Did you mean 'name'?")


def test_a_key_of_a_list_item_in_output_is_checked(templates_dir: Path) -> None:
    """The items of a `list[LineItem]` field are checked against `LineItem`."""
    error = _refused(templates_dir, "    output:\n      lines:\n        - {descripton: pen}\n")
    assert "`output.lines[0]` of case 'a': LineItem has no field 'descripton'" in error.message
    assert (8, 12) == (error.location.line, error.location.column)


def test_a_predicate_path_is_located_at_its_column_in_a_quoted_text(templates_dir: Path) -> None:
    """In `expect: ["... output.seller.nme ..."]` the location is the path's own column."""
    error = _refused(templates_dir, "    expect:\n      - 'output.total > 0 and output.seller.nme == \"x\"'\n")
    assert (7, 31) == (error.location.line, error.location.column)
    assert "Did you mean `output.seller.name`?" in error.message


def test_a_text_output_has_no_fields(templates_dir: Path) -> None:
    """A template without an output class gives a string: `output.x` is refused."""
    error = _refused(templates_dir, "    expect: output.text == 'x'\n", template="answer_billing")
    assert "unknown path `output.text` (str)" in error.message


def test_a_predicate_over_several_lines_is_located_at_expect(templates_dir: Path) -> None:
    """A predicate written over several lines has no one column: the error points at its `expect` key."""
    error = _refused(templates_dir, "    expect: output.total > 0 and\n      output.seller.nme == 'x'\n")
    assert (6, 5) == (error.location.line, error.location.column)
