"""`atomtask test --record` never writes a `redact: true` value: the marker goes in its place, and the case replays."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from atomtask import TaskSystem
from atomtask.cli._main import main
from atomtask.template_tests._recording import redaction_of
from atomtask.testing import FakeProviderServer, Reply

DECLARATIONS = """\
schemas:
  - name: Credential
    fields:
      - {name: token, type: str}
      - {name: note, type: str}
  - name: Pin
    fields:
      - {name: pin, type: int}
templates:
  - name: mint
    params: {user: str}
    instructions: "Mint a token for {{user}}"
    output_format: {type: json, schema: Credential}
  - name: pin
    params: {user: str}
    instructions: "A PIN for {{user}}"
    output_format: {type: json, schema: Pin}
  - name: greet
    params: {secret: str}
    instructions: "Greet, knowing {{secret}}"
workflows:
  - name: onboard
    state:
      - {name: user, type: str}
      - {name: password, type: str, redact: true}
      - {name: token, type: str, redact: true}
      - {name: note, type: str}
      - {name: pin, type: int, redact: true}
      - {name: hello, type: str}
    steps:
      - {id: mint, task: mint, inputs: {user: "{{state.user}}"}, outputs: {token: token, note: note}}
      - {id: pin, task: pin, inputs: {user: "{{state.user}}"}, outputs: {pin: pin}}
      - {id: greet, task: greet, inputs: {secret: "{{state.password}}"}, output: hello}
"""

CASES = """\
templates: ..
cases:
  - name: minted
    template: mint
    inputs: {user: ada}
  - name: greeted
    template: greet
    inputs: {secret: hunter2-password}
"""

TOKEN = '{"token": "tok-S3CR3T-9f8e", "note": "valid for ada"}'


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "decl.yaml").write_text(DECLARATIONS, encoding="utf-8")
    (tmp_path / "tests").mkdir()
    return tmp_path


def test_what_workflows_keep_secret_of_each_template(project: Path) -> None:
    """A step's output path into a redacted field, and a parameter filled from one, are found per template."""
    system = TaskSystem(templates=[project])
    mint, greet = redaction_of(system, "mint"), redaction_of(system, "greet")
    assert ((("token",),), frozenset()) == (mint.outputs, mint.params)
    assert ((), frozenset({"secret"})) == (greet.outputs, greet.params)
    assert ("onboard.token",) == mint.fields
    assert not redaction_of(system, "missing")


@pytest.mark.usefixtures("allow_model_requests")
def test_recorded_answers_and_output_hold_the_marker_and_replay(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The token (an answer path into a redacted field) and a redacted input the answer quotes are never written."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    cases = project / "tests" / "onboard.cases.yaml"
    cases.write_text(CASES, encoding="utf-8")
    with FakeProviderServer() as server:
        server.script(Reply.tool_call(args=TOKEN), Reply.text("Hello! I will keep hunter2-password safe."))
        argv = [
            "test",
            str(cases),
            "--record",
            "--model",
            "openai-chat:gpt-4o-mini",
            "--base-url",
            server.openai_base_url,
        ]
        code, out, err = run(argv)
    assert (0, "2 passed, 0 failed (2 cases in 1 file)") == (code, out.splitlines()[-1]), err
    text = cases.read_text()
    assert "tok-S3CR3T-9f8e" not in text
    assert text.count("hunter2-password") == 1  # the hand-written input only; the recorded answer holds the marker
    assert '\'{"token": "[redacted]", "note": "valid for ada"}\'' in text
    assert "token: '[redacted]'" in text  # the `output:` written
    assert "Hello! I will keep [redacted] safe." in text
    code, out, _ = run(["test", str(cases)])  # offline, from the file alone: the marker replays
    assert (0, "2 passed, 0 failed (2 cases in 1 file)") == (code, out.splitlines()[-1])


@pytest.mark.usefixtures("allow_model_requests")
def test_a_redacted_value_the_marker_cannot_stand_for_is_refused(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A redacted int (`pin`): `[redacted]` does not validate, so the case is not written and the command says why."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    cases = project / "tests" / "pin.cases.yaml"
    cases.write_text("templates: ..\ncases:\n  - name: pinned\n    template: pin\n    inputs: {user: ada}\n")
    before = cases.read_text()
    with FakeProviderServer() as server:
        server.script(Reply.tool_call(args='{"pin": 73914}'))
        argv = [
            "test",
            str(cases),
            "--record",
            "--model",
            "openai-chat:gpt-4o-mini",
            "--base-url",
            server.openai_base_url,
        ]
        code, _, err = run(argv)
    assert 1 == code
    assert before == cases.read_text()
    assert "73914" not in err
    assert "redacted field(s) onboard.pin" in err and "write this case's answers by hand" in err
