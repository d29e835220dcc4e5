"""`--record`: a real model's answers written into the cases file, the rest of the file kept as it was."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from atomtask import CasesFileError, TaskSystem
from atomtask.template_tests._cases import read_case_text
from atomtask.template_tests._recording import Recording, rewrite_cases
from atomtask.template_tests._replay import prepare
from atomtask.testing import FakeProviderServer, Reply

CASES = """\
# The contact cases.
template: extract_contact
cases:
  - name: first  # a comment that stays
    inputs: {text: Ada}
    answers:
      - 'old answer'
      - 'another old one'
    output: {name: Old}
  # between the cases
  - name: second
    inputs:
      text: Grace
    expect: output.name == "Grace"
"""


def _recording(index: int, answers: tuple[object, ...], output: object = attrs.NOTHING) -> Recording:
    """A recording of `answers` (its result is beside the point: a task that never ran)."""
    system = TaskSystem(model="test")
    return Recording(index=index, answers=answers, output=output, result=system.execute("missing"))


def test_answers_are_replaced_and_added_and_expectations_kept(tmp_path: Path) -> None:
    """`answers` is replaced where it is, or added after `inputs`; a written `output` stays; comments stay."""
    path = tmp_path / "tests" / "t.cases.yaml"
    recordings = [
        _recording(0, ('{"name": "Ada"}',), {"name": "Ada", "email": None}),
        _recording(1, ('{"email": 3}', {"text": "Grace, plainly"})),
    ]
    expected = """\
# The contact cases.
template: extract_contact
cases:
  - name: first  # a comment that stays
    inputs: {text: Ada}
    answers:
      - '{"name": "Ada"}'
    output: {name: Old}
  # between the cases
  - name: second
    inputs:
      text: Grace
    answers:
      - '{"email": 3}'
      - text: Grace, plainly
    expect: output.name == "Grace"
"""
    assert expected == rewrite_cases(CASES, path, recordings)


def test_output_is_added_only_to_a_case_without_expectation(tmp_path: Path) -> None:
    """A case with no expectation gets the output it came to, at its end, before the comments that follow."""
    text = (
        "template: extract_contact\ncases:\n  - name: new\n    inputs:\n      text: Ada\n\n"
        "  # the next case\n  - name: kept\n    inputs: {text: Bo}\n    answers: ['x']\n"
        "    expect_subset: {name: Bo}\n"
    )
    recordings = [_recording(0, ("y",), {"name": "Ada"})]
    expected = (
        "template: extract_contact\ncases:\n  - name: new\n    inputs:\n      text: Ada\n"
        "    answers:\n      - y\n    output:\n      name: Ada\n\n"
        "  # the next case\n  - name: kept\n    inputs: {text: Bo}\n    answers: ['x']\n"
        "    expect_subset: {name: Bo}\n"
    )
    assert expected == rewrite_cases(text, tmp_path / "t.cases.yaml", recordings)


def test_comments_after_replaced_answers_stay(tmp_path: Path) -> None:
    """The blank lines and comments between `answers` and the next key are not part of the answers replaced."""
    text = (
        "template: extract_contact\ncases:\n  - name: a\n    inputs: {text: Ada}\n    answers:\n"
        "      - old\n\n    # why this output\n    output: {name: Ada}\n"
    )
    expected = text.replace("      - old\n", "      - new\n")
    assert expected == rewrite_cases(text, tmp_path / "t.cases.yaml", [_recording(0, ("new",), {"name": "X"})])


def test_a_flow_style_case_is_refused_not_mangled(tmp_path: Path) -> None:
    """A case written as `{...}` on one line cannot take new lines: the error says how to write it."""
    text = "template: extract_contact\ncases:\n  - {name: a, inputs: {text: Ada}}\n"
    with pytest.raises(CasesFileError, match="flow style") as caught:
        rewrite_cases(text, tmp_path / "t.cases.yaml", [_recording(0, ("x",))])
    assert 3 == caught.value.location.line


@pytest.mark.usefixtures("allow_model_requests")
def test_record_case_notes_every_answer_over_http(
    tmp_path: Path, templates_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over the fake server: the rejected and the accepted answer are both recorded, raw as sent."""
    from atomtask.template_tests._recording import record_case

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    with FakeProviderServer() as server:
        server.script(
            Reply.tool_call(args='{"email": 3}'),
            Reply.tool_call(args='{"name": "Grace", "email": null, "phone": null, "company": null}'),
        )
        system = TaskSystem(templates=templates_dir, base_url=server.openai_base_url)
        file = read_case_text(CASES, templates_dir / "tests" / "t.cases.yaml")
        recording = record_case(prepare(file, system)[1], system, "openai-chat:gpt-4o-mini", None)
    assert ('{"email": 3}', '{"name": "Grace", "email": null, "phone": null, "company": null}') == recording.answers
    assert attrs.NOTHING is recording.output  # the case checks a predicate, not the exact output


@pytest.mark.usefixtures("allow_model_requests")
def test_a_failure_its_answers_do_not_reproduce_is_refused(
    tmp_path: Path, templates_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One rejected answer, then a provider error: replayed, the answer fails otherwise, so the run is refused."""
    from atomtask.template_tests._recording import record_case

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    with FakeProviderServer() as server:
        server.script(Reply.tool_call(args='{"email": 3}'), *[Reply.error(400, "Bad request")] * 4)
        system = TaskSystem(templates=templates_dir, base_url=server.openai_base_url)
        file = read_case_text(CASES, templates_dir / "tests" / "t.cases.yaml")
        recording = record_case(prepare(file, system)[1], system, "openai-chat:gpt-4o-mini", None)
    assert ('{"email": 3}',) == recording.answers
    error = recording.result.error
    assert (None, "provider_error") == (recording.expect_failure, error.reason if error is not None else None)
    assert recording.refused is not None
    assert recording.refused.endswith(
        "and its 1 answer(s), replayed, fail with `output_validation_failure`: the failure did not come from the "
        "model's answers"
    )
