"""`atomtask check` on workflows: every problem of every workflow, each with its E11x code and file:line:col."""

from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path

import pytest
from atomtask import TaskSystem, WorkflowError
from atomtask.cli._main import main
from atomtask.lint import check

TASKS = """\
name: Rating
description: A rating.
fields:
  - {name: score, type: int, description: The score.}
---
name: rate
params: {text: str}
instructions: "Rate {{text}}"
output_format: {type: json, schema: Rating}
"""

FLOW = """\
name: rate_it
state:
  - {name: text, type: str}
  - {name: score, type: int, default: 0}
steps:
  - id: rate
    task: rate
    inputs: {text: "{{state.text}}"}
    outputs: {score: score}
    route:
      - {when: "state.score < 5", to: rate}
      - {to: end}
    max_visits: 3
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def position(text: str, needle: str) -> tuple[int, int]:
    """The 1-based line and column of the first `needle` in `text`."""
    lines = text.splitlines()
    line = next(i for i, t in enumerate(lines, start=1) if needle in t)
    return line, lines[line - 1].index(needle) + 1


def test_a_clean_workflow_has_no_findings_and_is_counted(tmp_path: Path) -> None:
    """A correct workflow gives no finding; the report counts it."""
    write(tmp_path, "tasks.yaml", TASKS)
    write(tmp_path, "flow.yaml", FLOW)
    report = check([tmp_path])
    assert ([], 1) == ([str(f) for f in report.findings], report.workflows)


def test_a_state_path_typo_is_e113_at_the_path_as_load_raises_it(tmp_path: Path) -> None:
    """`state.scroe` is E113 at its file:line:col with "did you mean", exactly what `TaskSystem.load` raises."""
    write(tmp_path, "tasks.yaml", TASKS)
    text = FLOW.replace("state.score <", "state.scroe <")
    path = write(tmp_path, "flow.yaml", text)
    findings = check([tmp_path]).findings
    line, column = position(text, "state.scroe")
    assert [("E113", str(path), line, column)] == [
        (f.code, f.location.file, f.location.line, f.location.column) for f in findings if f.location
    ]
    assert "Did you mean `state.score`?" in findings[0].message
    with pytest.raises(WorkflowError) as raised:
        TaskSystem(templates=tmp_path)
    assert (findings[0].message, findings[0].location) == (raised.value.message, raised.value.location)


def test_every_problem_of_a_workflow_is_reported_with_its_code(tmp_path: Path) -> None:
    """Several mistakes in one workflow are each a finding, under E111, E113, E115 and E118."""
    write(tmp_path, "tasks.yaml", TASKS)
    text = (
        FLOW.replace("{{state.text}}", "{{state.txt}}")
        .replace("outputs: {score: score}", "outputs: {score: scor}")
        .replace("    max_visits: 3\n", "")
        + "  - id: later\n    task: rte\n"
    )
    write(tmp_path, "flow.yaml", text)
    found = {f.code for f in check([tmp_path]).findings}
    assert {"E111", "E113", "E115", "E118"} <= found


def test_a_yaml_shape_mistake_is_e110(tmp_path: Path) -> None:
    """An unknown step key is E110 at its line (not the generic E101), listing the step's keys."""
    write(tmp_path, "tasks.yaml", TASKS)
    text = FLOW.replace("    max_visits: 3", "    max_visit: 3")
    path = write(tmp_path, "flow.yaml", text)
    findings = check([tmp_path]).findings
    assert [("E110", str(path), position(text, "max_visit")[0])] == [
        (f.code, f.location.file, f.location.line) for f in findings if f.location
    ]
    assert "`steps.0.max_visit`: unknown key; valid keys: id, task" in findings[0].message


def test_a_step_running_a_broken_template_says_it_is_invalid_not_unknown(tmp_path: Path) -> None:
    """The task is declared but does not register: its own error is reported, and the step says why."""
    path = write(tmp_path, "tasks.yaml", TASKS.replace("Rate {{text}}", "Rate {{txt}}"))
    write(tmp_path, "flow.yaml", FLOW)
    messages = {f.code: f.message for f in check([tmp_path]).findings}
    assert "E102" in messages
    assert f"runs task 'rate', which is declared at {path}:6:1 but invalid" in messages["E111"]


def test_a_workflow_declared_twice_differently_is_e105(tmp_path: Path) -> None:
    """Two different workflows with one name: E105 at the second, naming the first."""
    write(tmp_path, "tasks.yaml", TASKS)
    write(tmp_path, "a.yaml", FLOW)
    second = write(tmp_path, "b.yaml", FLOW.replace("max_visits: 3", "max_visits: 4"))
    findings = check([tmp_path]).findings
    assert [("E105", str(second))] == [(f.code, f.location.file if f.location else None) for f in findings]
    assert f"already declared at {tmp_path / 'a.yaml'}:1:1" in findings[0].message


def test_workflows_of_a_python_modules_system_are_checked_too(tmp_path: Path) -> None:
    """The workflows a `--python` module's TaskSystem registered are counted with the files' workflows."""
    folder = tmp_path / "templates"
    folder.mkdir()
    write(folder, "tasks.yaml", TASKS)
    write(folder, "flow.yaml", FLOW)
    module = write(
        tmp_path,
        "app.py",
        f"""\
        from atomtask import TaskSystem

        system = TaskSystem(templates={str(folder)!r})
        """,
    )
    report = check(python=[str(module)])
    assert ([], 1, 1) == ([str(f) for f in report.findings], report.templates, report.workflows)


def test_the_cli_prints_workflow_findings_and_counts_workflows(tmp_path: Path) -> None:
    """`atomtask check` prints each finding `file:line:col: CODE message` and counts workflows in the summary."""
    write(tmp_path, "tasks.yaml", TASKS)
    text = FLOW.replace("state.score <", "state.scroe <")
    path = write(tmp_path, "flow.yaml", text)
    out, err = io.StringIO(), io.StringIO()
    code = main(["check", str(tmp_path)], stdout=out, stderr=err)
    line, column = position(text, "state.scroe")
    lines = out.getvalue().splitlines()
    assert 1 == code
    assert lines[0].startswith(f"{path}:{line}:{column}: E113 Unknown path `state.scroe` in route 1 of step 'rate'")
    assert "Found 1 error and 0 warnings in 2 files, 1 template, 1 schema, 1 workflow." == lines[-1]
    out = io.StringIO()
    main(["check", str(tmp_path), "--format", "json"], stdout=out, stderr=err)
    assert 1 == json.loads(out.getvalue())["summary"]["workflows"]


def test_every_workflow_code_is_explained(tmp_path: Path) -> None:
    """`--explain E113` prints the rule's name (the error class's), summary and example."""
    out = io.StringIO()
    assert 0 == main(["check", "--explain", "e113"], stdout=out, stderr=io.StringIO())
    assert out.getvalue().startswith("E113 workflow-state-path (error): a `state.x.y` path names no field of the state")
    assert "state.scroe" in out.getvalue()


def test_a_circle_of_sub_workflows_hides_no_other_finding(tmp_path: Path) -> None:
    """E118 for a circle in one file; the other file's E111 and E113 are reported too, and loading still raises."""
    write(tmp_path, "tasks.yaml", TASKS)
    circle = """\
        name: rec1
        state: [{name: text, type: str}]
        steps: [{id: a, workflow: rec2, inputs: {text: "{{state.text}}"}}]
        ---
        name: rec2
        state: [{name: text, type: str}]
        steps: [{id: b, workflow: rec1, inputs: {text: "{{state.text}}"}}]
        """
    rec = write(tmp_path, "rec.yaml", circle)
    other = write(tmp_path, "x.yaml", FLOW.replace("task: rate", "task: t_strr").replace("state.text", "state.scroe"))
    found = [(f.code, f.location.file if f.location else None) for f in check([tmp_path]).findings]
    assert [("E118", str(rec)), ("E118", str(rec)), ("E111", str(other)), ("E113", str(other))] == sorted(
        found, key=lambda f: (f[1] != str(rec), f[0])
    )
    with pytest.raises(WorkflowError):
        TaskSystem(templates=tmp_path)


DURABLE_FLOW = (
    FLOW.replace("name: rate_it\n", 'name: rate_it\nversion: "1.2"\n')
    .replace("  - {name: score, type: int, default: 0}\n", "  - {name: score, type: int, default: 0}\n"
             "  - {name: ok, type: bool, default: false}\n  - {name: secret, type: str, default: '', redact: true}\n")
    .replace("      - {to: end}\n", "      - {to: gate}\n")
    + "  - id: gate\n    type: approval\n    message: 'Score {{state.score}}, keep it?'\n    output: ok\n"
    "    timeout: 24h\n"
    "migrations:\n"
    '  - {from: "1.0", to: "1.1", rename: {txt: text}}\n'
    '  - {from: "1.1", to: "1.2", set: {score: 2}, resume_at: gate}\n'
)  # fmt: skip


def test_migrations_approval_and_redact_pass_the_check(tmp_path: Path) -> None:
    """A workflow with a chain of migrations, an approval step and a redacted field has no error.

    The redacted field is a run input no step reads: a warning (W112), nothing else.
    """
    write(tmp_path, "tasks.yaml", TASKS)
    write(tmp_path, "flow.yaml", DURABLE_FLOW)
    assert [("W112", "secret")] == [(f.code, f.message.split("`")[1]) for f in check([tmp_path]).findings]


def test_a_migration_mistake_is_e120_at_its_line_and_column(tmp_path: Path) -> None:
    """A migration writing a field the state lacks is E120 at the field, with "did you mean"."""
    write(tmp_path, "tasks.yaml", TASKS)
    text = DURABLE_FLOW.replace("set: {score: 2}", "set: {scroe: 2}")
    path = write(tmp_path, "flow.yaml", text)
    findings = check([tmp_path]).findings
    line, column = position(text, "scroe: 2")
    assert [("E120", str(path), line, column + len("scroe: "))] == [
        (f.code, f.location.file, f.location.line, f.location.column) for f in findings if f.location
    ]
    assert "Did you mean 'score' or 'secret'?" in findings[0].message


def test_an_approval_step_with_a_wrong_output_type_is_e114(tmp_path: Path) -> None:
    """The decision goes to a bool (or `ApprovalDecision`) field; an int field is E114 at `output`."""
    write(tmp_path, "tasks.yaml", TASKS)
    text = DURABLE_FLOW.replace("    output: ok\n", "    output: score\n")
    write(tmp_path, "flow.yaml", text)
    findings = check([tmp_path]).findings
    found = [(f.code, f.location.line) for f in findings if f.location]
    assert [("E114", position(text, "output: score")[0])] == found


def test_an_unknown_migration_key_is_e110_listing_the_migration_keys(tmp_path: Path) -> None:
    """A typo inside `migrations:` is a shape mistake at its line, naming the keys a migration has."""
    write(tmp_path, "tasks.yaml", TASKS)
    text = DURABLE_FLOW.replace("rename: {txt: text}", "renam: {txt: text}")
    write(tmp_path, "flow.yaml", text)
    findings = check([tmp_path]).findings
    assert [("E110", position(text, "renam:")[0])] == [(f.code, f.location.line) for f in findings if f.location]
    assert "`migrations.0.renam`: unknown key; valid keys: from, to, rename, drop, set, convert, call" in (
        findings[0].message
    )


CODED = """\
name: coded
state:
  - {name: text, type: str}
  - {name: score, type: int, default: 0}
  - {name: loud, type: str, default: ""}
steps:
  - id: both
    call: "tests.workflows.code_steps_funcs:shout"
    task: rate
    inputs: {text: "{{state.text}}"}
    outputs: {score: score}
  - id: elsewhere
    call: "myshop.orders:fetch_order"
    inputs: {word: "{{state.text}}"}
    output: loud
    retries: 2
    timeout: 30s
"""


def test_code_step_mistakes_are_findings_with_their_codes_and_no_traceback(tmp_path: Path) -> None:
    """`call` beside `task` is E121 at `call`; a module outside the importable packages is E122, naming the fix."""
    write(tmp_path, "tasks.yaml", TASKS)
    path = write(tmp_path, "flow.yaml", CODED)
    out, err = io.StringIO(), io.StringIO()
    assert 1 == main(["check", str(tmp_path)], stdout=out, stderr=err)
    assert "Traceback" not in out.getvalue() + err.getvalue()
    found = [(f.code, f.location.line if f.location else None, f.message) for f in check([tmp_path]).findings]
    assert [("E121", 8), ("E122", 13)] == [(code, line) for code, line, _ in found], found
    assert "Step 'both' has `call` and `task`" in found[0][2]
    assert "module 'myshop.orders' is not in the importable packages" in found[1][2]
    assert "`--allow-import myshop`" in found[1][2]  # a code step's refusal names the command-line fix too
    lines = out.getvalue().splitlines()
    line, column = position(CODED, "tests.workflows")
    assert lines[0].startswith(f"{path}:{line}:{column}: E121 Step 'both' has `call` and `task`")
    out = io.StringIO()
    assert 0 == main(["check", "--explain", "E124"], stdout=out, stderr=err)
    assert out.getvalue().startswith("E124 workflow-call-signature (error): a code step's function has a parameter")


def test_with_the_package_allowed_a_missing_function_and_an_untyped_one_are_e123_and_e124(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`$ATOMTASK_IMPORTABLE=tests`: check imports the module and reads each function's annotations."""
    monkeypatch.setenv("ATOMTASK_IMPORTABLE", "tests")
    write(tmp_path, "tasks.yaml", TASKS)
    text = (
        CODED.replace("    task: rate\n", "")
        .replace("code_steps_funcs:shout", "code_steps_funcs:shuot")
        .replace("myshop.orders:fetch_order", "tests.workflows.code_steps_funcs:untyped")
    )
    write(tmp_path, "flow.yaml", text)
    found = [(f.code, f.location.line if f.location else None, f.message) for f in check([tmp_path]).findings]
    assert [("E123", 8), ("E124", 12)] == [(code, line) for code, line, _ in found], found
    assert "has no function 'shuot'" in found[0][2] and "Did you mean 'shout'?" in found[0][2]
    assert "no type annotation on parameter 'text', the return value" in found[1][2]


def test_after_an_invalid_schema_later_findings_say_declared_but_invalid(tmp_path: Path) -> None:
    """A schema with a bad type is E103 once; the template and the workflow state using it say it is invalid."""
    bad = TASKS.replace("type: int, description: The score.", "type: integr, description: The score.")
    write(tmp_path, "tasks.yaml", bad)
    flow = FLOW.replace("  - {name: score, type: int, default: 0}\n", "  - {name: score, type: int, default: 0}\n"
                        "  - {name: last, type: Rating?, default: null}\n")  # fmt: skip
    write(tmp_path, "flow.yaml", flow)
    findings = check([tmp_path]).findings
    messages = [f.message for f in findings]
    assert 1 == sum("integr" in m for m in messages), messages
    later = [m for m in messages if "integr" not in m]
    assert later, messages
    for message in later:
        assert "uses schema 'Rating', which is declared at" in message, message
        assert "but invalid" in message
        assert "No schema named" not in message and "Unknown schema" not in message
