"""Replaying cases: recorded answers through the real validation, repair and retry path, then the expectations."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from atomtask import CasesFileError, TaskSystem
from atomtask.template_tests._cases import read_case_text
from atomtask.template_tests._replay import CaseOutcome, prepare, replay, replay_retries

ADA = '{"name": "Ada", "email": "ada@example.com", "phone": null, "company": null}'
ADA_OUTPUT = "{name: Ada, email: ada@example.com, phone: null, company: null}"


def _outcomes(text: str, templates: Path) -> list[CaseOutcome]:
    system = TaskSystem(templates=templates)
    file = read_case_text(f"templates: {templates}\n" + text, templates / "tests" / "t.cases.yaml")
    return [replay(case, system) for case in prepare(file, system)]


def _one(case: str, templates: Path) -> CaseOutcome:
    (outcome,) = _outcomes("template: extract_contact\ncases:\n" + case, templates)
    return outcome


@pytest.fixture
def copied(tmp_path: Path, templates_dir: Path) -> Path:
    """A copy of the shipped templates whose schemas a test may change."""
    folder = tmp_path / "templates"
    shutil.copytree(templates_dir, folder, ignore=shutil.ignore_patterns("tests", "__pycache__"))
    return folder


def _change_schema(folder: Path, old: str, new: str) -> None:
    path = folder / "schemas.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_exact_output_passes(templates_dir: Path) -> None:
    """The recorded answer validates to the recorded output: the case passes with nothing to say."""
    outcome = _one(f"  - inputs: {{text: Ada}}\n    answers: ['{ADA}']\n    output: {ADA_OUTPUT}\n", templates_dir)
    assert (True, (), ()) == (outcome.passed, outcome.problems, outcome.changes)


def test_a_different_output_fails_with_the_fields_that_differ(templates_dir: Path) -> None:
    """Each differing field is named with its recorded and its current value."""
    output = ADA_OUTPUT.replace("email: ada@example.com", "email: ada@example.org")
    outcome = _one(f"  - inputs: {{text: Ada}}\n    answers: ['{ADA}']\n    output: {output}\n", templates_dir)
    assert (False, ("the output differs from the recorded `output`",)) == (outcome.passed, outcome.problems)
    assert ('now read differently: field `email` was "ada@example.org", now "ada@example.com"',) == outcome.changes


def test_expected_failure_reason(templates_dir: Path) -> None:
    """A case expecting `output_validation_failure` passes when every recorded answer is rejected."""
    case = "  - inputs: {text: Ada}\n    answers: ['{}', '{}', '{}']\n    expect_failure: output_validation_failure\n"
    assert (True, 3) == ((o := _one(case, templates_dir)).passed, len(o.result.notes.attempts if o.result else []))


def test_an_expected_failure_that_completes_fails(templates_dir: Path) -> None:
    """A case expecting a failure fails when the run completes, and shows the output."""
    outcome = _one(
        f"  - inputs: {{text: Ada}}\n    answers: ['{ADA}']\n    expect_failure: provider_error\n", templates_dir
    )
    assert not outcome.passed
    assert outcome.problems[0].startswith("completed, but the case expects failure `provider_error`; output: {")


def test_predicates_pass_and_fail_with_the_values_read(templates_dir: Path) -> None:
    """`expect` predicates read `output`; a false one shows what its paths held."""
    expect = '[output.name == "Ada", output.phone is not null]'
    case = f"  - inputs: {{text: Ada}}\n    answers: ['{ADA}']\n    expect: {expect}\n"
    outcome = _one(case, templates_dir)
    assert ("`expect: output.phone is not null` is false (output.phone is null)",) == outcome.problems


def test_subset_match(templates_dir: Path) -> None:
    """`expect_subset` checks only the keys it gives."""
    case = f"  - inputs: {{text: Ada}}\n    answers: ['{ADA}']\n    expect_subset: {{name: Ada, company: ACME}}\n"
    assert ('`expect_subset`: `company` is null, expected "ACME"',) == _one(case, templates_dir).problems


def test_re_asking_uses_the_next_recorded_answer(templates_dir: Path) -> None:
    """An invalid first answer is sent back with its errors and the second recorded answer is used."""
    outcome = _one(
        f"  - inputs: {{text: Ada}}\n    answers: ['{{\"email\": 3}}', '{ADA}']\n    output: {ADA_OUTPUT}\n",
        templates_dir,
    )
    assert outcome.passed
    assert outcome.result is not None and 2 == len(outcome.result.notes.attempts)


def test_a_case_without_answers_fails_with_how_to_record(templates_dir: Path) -> None:
    """No recorded answers: the case fails and says how to record them."""
    outcome = _one("  - inputs: {text: Ada}\n", templates_dir)
    assert outcome.problems[0].startswith("no recorded answers: record them with `atomtask test --record")


def test_retries_are_capped_at_the_recorded_answers(templates_dir: Path) -> None:
    """A replay never asks for an answer nobody recorded, and never re-asks more than the template does."""
    system = TaskSystem(templates=templates_dir)
    text = (
        "template: extract_contact\ncases:\n"
        f"  - {{name: a, inputs: {{text: A}}, answers: ['{ADA}']}}\n"
        "  - {name: b, inputs: {text: B}, answers: [x, y, z, w, v]}\n"
    )
    one, five = prepare(read_case_text(text, templates_dir / "tests" / "t.cases.yaml"), system)
    assert (0, 2) == (replay_retries(one), replay_retries(five))  # extract_contact has `retries: 2`


def test_schema_change_rejecting_the_final_answer_is_reported(copied: Path) -> None:
    """A field made required-non-null: the answer the run ended on is now rejected, with why."""
    _change_schema(
        copied,
        "      - name: company\n        type: str?\n        required: true\n",
        "      - name: company\n        type: str\n",
    )
    case = f"  - inputs: {{text: Ada}}\n    answers: ['{{\"email\": 3}}', '{ADA}']\n    output: {ADA_OUTPUT}\n"
    outcome = _one(case, copied)
    assert not outcome.passed
    assert ("answer 2 now rejected: `company`: Input should be a valid string",) == outcome.changes


def test_schema_change_reading_an_answer_differently_is_reported(copied: Path) -> None:
    """A new field with a default: the same answer is read with a field the recorded output lacks."""
    _change_schema(
        copied,
        "      - name: company\n",
        "      - name: country\n        type: str\n        default: unknown\n      - name: company\n",
    )
    outcome = _one(f"  - inputs: {{text: Ada}}\n    answers: ['{ADA}']\n    output: {ADA_OUTPUT}\n", copied)
    assert ('now read differently: field `country` is new: "unknown"',) == outcome.changes


def test_schema_change_accepting_a_re_asked_answer_is_noted(copied: Path) -> None:
    """A field made optional: the first answer, re-asked when recorded, is now accepted (a note, not a failure)."""
    _change_schema(
        copied,
        "      - name: name\n        type: str\n",
        "      - name: name\n        type: str\n        default: someone\n",
    )
    first = '{"email": "ada@example.com", "phone": null, "company": null}'
    outcome = _one(
        f"  - inputs: {{text: Ada}}\n    answers: ['{first}', '{ADA}']\n"
        "    expect_subset: {email: ada@example.com}\n",
        copied,
    )
    assert (True, ("answer 1 now accepted (when recorded it was re-asked); answer 2 went unused",)) == (
        outcome.passed,
        outcome.notes,
    )


def test_fewer_retries_leave_recorded_answers_unreached(copied: Path) -> None:
    """A template that now re-asks fewer times than were recorded says which answers are never reached."""
    path = copied / "extract_contact.yaml"
    path.write_text(path.read_text().replace("retries: 2", "retries: 0"))
    outcome = _one(f"  - inputs: {{text: Ada}}\n    answers: ['{{\"email\": 3}}', '{ADA}']\n", copied)
    assert outcome.changes[0].endswith("the template re-asks at most 0 time(s), so answer 2 is never reached")


def test_unknown_template_is_located_with_did_you_mean(templates_dir: Path) -> None:
    """A case naming no known template fails before anything runs, at the `template` key."""
    with pytest.raises(CasesFileError) as caught:
        _outcomes("template: extract_contcat\ncases:\n  - inputs: {text: Ada}\n", templates_dir)
    assert 2 == caught.value.location.line
    assert "names template 'extract_contcat', which is not in" in caught.value.message
    assert "Did you mean 'extract_contact'" in caught.value.message


def test_inputs_that_do_not_fit_the_params_are_located(templates_dir: Path) -> None:
    """Missing and unknown inputs are named, with the template's parameters, at the `inputs` key."""
    with pytest.raises(CasesFileError) as caught:
        _outcomes("template: extract_contact\ncases:\n  - name: a\n    inputs: {txt: Ada}\n", templates_dir)
    assert 5 == caught.value.location.line
    assert (
        "The inputs of case 'a' do not fit template 'extract_contact': 'text' is missing; 'txt' is not a "
        "parameter. Its parameters: text (str), locale (str)." == caught.value.message
    )


def test_a_predicate_outside_the_language_is_located(templates_dir: Path) -> None:
    """`expect` is parsed when the file is read: a call outside the language is refused at its key."""
    with pytest.raises(CasesFileError) as caught:
        _outcomes("template: extract_contact\ncases:\n  - inputs: {text: Ada}\n    expect: open('x')\n", templates_dir)
    assert (5, True) == (caught.value.location.line, "A predicate reads `output`" in caught.value.message)
