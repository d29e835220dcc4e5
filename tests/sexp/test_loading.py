"""`TaskSystem.load` picks up `.sexp` files beside YAML, after the YAML, declarations only."""

from __future__ import annotations

from pathlib import Path

import pytest
from atomtask import SexpSyntaxError, SourceLocation, TaskSystem, TemplateError, UsageError
from atomtask.sexp._loading import read_declarations

SCHEMA_YAML = "name: Note\nfields:\n  - {name: text, type: str}\n"
USES_YAML_SCHEMA = """\
(defatom take_note (params text) (instructions "Note: {{text}}") (output_format (schema Note)))
(take_note (text "this call is the script; loading never runs it"))
"""


def test_reader_returns_only_declarations(tmp_path: Path) -> None:
    """The .sexp reader yields the defschema/defatom forms; the script's calls are not run."""
    path = tmp_path / "s.sexp"
    path.write_text(
        '(defschema Note (text str))\n(defatom greet (params who) (instructions "Hi {{who}}"))\n(greet (who 1))'
    )
    errors: list[UsageError] = []
    declarations = read_declarations(path, errors)
    assert ([], ["Note"], ["greet"]) == (
        errors,
        [s.name for s in declarations.schemas],
        [t.name for t in declarations.templates],
    )


def test_folder_loads_yaml_first_then_sexp_declarations(tmp_path: Path) -> None:
    """A .sexp file may use a schema from a YAML file in the same folder; its script is not run."""
    (tmp_path / "schemas.yaml").write_text(SCHEMA_YAML)
    (tmp_path / "notes.sexp").write_text(USES_YAML_SCHEMA)
    system = TaskSystem()
    assert ["take_note"] == system.load(tmp_path)
    assert "Note" == system.templates.compiled("take_note").output_cls.__name__


def test_a_single_sexp_file_can_be_loaded(tmp_path: Path) -> None:
    """`load("file.sexp")` evaluates that file's declarations."""
    path = tmp_path / "greet.sexp"
    path.write_text('(defatom greet (params who) (instructions "Hi {{who}}"))')
    assert ["greet"] == TaskSystem(templates=path).templates.names()


def test_errors_in_sexp_files_name_the_file_line_and_column(tmp_path: Path) -> None:
    """Syntax and registration mistakes in a loaded .sexp file point into it."""
    broken = tmp_path / "broken.sexp"
    broken.write_text('(defatom t\n  (instructions "x")')
    with pytest.raises(SexpSyntaxError) as syntax:
        TaskSystem(templates=broken)
    assert SourceLocation(file=str(broken), line=1, column=1) == syntax.value.location
    broken.write_text('\n(defatom t (instructions "{{nope}}"))')
    with pytest.raises(TemplateError) as undeclared:
        TaskSystem(templates=broken)
    assert SourceLocation(file=str(broken), line=2, column=27) == undeclared.value.location
    assert str(undeclared.value).startswith(f"{broken}:2:27: Placeholder '{{{{nope}}}}'")


def test_sexp_schemas_are_visible_to_yaml(tmp_path: Path) -> None:
    """All files' schemas are registered before any template, so YAML may use a defschema'd name."""
    (tmp_path / "a.sexp").write_text("(defschema Note (text str))")
    (tmp_path / "b.yaml").write_text("name: t\ninstructions: x\noutput_format: {type: json, schema: Note}\n")
    system = TaskSystem(templates=tmp_path)
    assert system.models.get("Note") is system.templates.compiled("t").output_cls


def test_a_sexp_file_that_is_not_utf8_is_a_syntax_error_naming_it(tmp_path: Path) -> None:
    """A Latin-1 `.sexp` file is refused with the file, line and column and the fix."""
    path = tmp_path / "s.sexp"
    path.write_bytes(b'(defatom t (instructions "caf\xe9"))\n')
    with pytest.raises(SexpSyntaxError, match="is not valid UTF-8") as raised:
        read_declarations(path, [])
    assert f"{path}:1:30" == str(raised.value.location)


def test_optional_written_as_a_word_suggests_a_question_mark(tmp_path: Path) -> None:
    """`(x optional str)` in params says to write `(x str?)`."""
    path = tmp_path / "s.sexp"
    path.write_text('(defatom t (params (x optional str)) (instructions "{{x}}"))\n')
    errors: list[UsageError] = []
    read_declarations(path, errors)
    assert ["`(x str?)`"] == [e.message.split("write ")[1].split(":")[0] for e in errors]
    assert SourceLocation(file=str(path), line=1, column=23) == errors[0].location


def test_an_invalid_defschema_is_remembered_by_name(tmp_path: Path) -> None:
    """A `defschema` that cannot be read is named in `invalid_schemas`, for templates that use it."""
    path = tmp_path / "s.sexp"
    path.write_text("(defschema Card (a optional))\n")
    errors: list[UsageError] = []
    declarations = read_declarations(path, errors)
    assert (1, ["Card"]) == (len(errors), list(declarations.invalid_schemas))


FLOW_SEXP = """\
(defatom greet (params (who str)) (instructions "Hi {{who}}"))
(defworkflow hello
  (state (who str) (greeting str))
  (steps (step say (task greet) (inputs (who "{{state.who}}")) (output greeting))))
(hello)
"""


def test_defworkflow_forms_load_as_workflows(tmp_path: Path) -> None:
    """A `.sexp` file's top-level `defworkflow` is a declaration: read, registered with the tasks, runnable."""
    path = tmp_path / "flow.sexp"
    path.write_text(FLOW_SEXP)
    errors: list[UsageError] = []
    declarations = read_declarations(path, errors)
    assert ([], ["hello"]) == (errors, [w.name for w in declarations.workflows])
    assert SourceLocation(file=str(path), line=2, column=1) == declarations.workflows[0].location
    system = TaskSystem(model="test", templates=tmp_path)
    assert ["hello"] == system.workflows.names()
    assert "COMPLETE" == system.run_workflow("hello", {"who": "Ada"}).status


def test_a_sexp_workflow_may_run_yaml_tasks(tmp_path: Path) -> None:
    """A `defworkflow` names a task declared in YAML beside it; workflows register after every template."""
    (tmp_path / "a_flow.sexp").write_text(
        "(defworkflow note_it (state (text str) (saved str))"
        ' (steps (step s (task take) (inputs (text "{{state.text}}")) (output saved))))'
    )
    (tmp_path / "b_task.yaml").write_text("name: take\nparams: {text: str}\ninstructions: 'Note: {{text}}'\n")
    assert ["note_it"] == TaskSystem(templates=tmp_path).workflows.names()


def test_a_bad_defworkflow_is_noted_and_reading_goes_on(tmp_path: Path) -> None:
    """A malformed `defworkflow` is one located error; the file's other declarations are still read."""
    path = tmp_path / "flow.sexp"
    path.write_text(FLOW_SEXP.replace("(steps (step say", "(stps (step say"))
    errors: list[UsageError] = []
    declarations = read_declarations(path, errors)
    assert (["greet"], []) == ([t.name for t in declarations.templates], declarations.workflows)
    assert ["E110"] == [getattr(e, "code", None) for e in errors]
    assert SourceLocation(file=str(path), line=4, column=3) == errors[0].location
