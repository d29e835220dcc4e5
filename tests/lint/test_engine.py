"""`atomtask.lint.check`: every finding across files, from the same code registration runs."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from atomtask import TaskSystem, UsageError
from atomtask.lint import check

BAD = """\
templates:
  - name: classify
    params: {text: str}
    instructions: Classify {{txt}}
    output_format: {type: json, schema: Verdict}
  - name: typo
    instructions: hi
    retrys: 3
  - name: badmodel
    instructions: hi
    model: opanai:gpt-4o
  - name: uses_broken
    instructions: hi
    output_format: {type: json, schema: Broken}
schemas:
  - name: Verdict
    description: A verdict.
    fields:
      - {name: label, type: str, description: The label.}
  - name: Broken
    fields:
      - {name: x, type: "lst[str]"}
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def codes(folder: Path, **kwargs: object) -> list[tuple[str, int | None]]:
    report = check([folder], **kwargs)  # type: ignore[arg-type]  # keyword options of `check`
    return [(f.code, f.location.line if f.location else None) for f in report.findings]


def test_shipped_templates_are_clean(templates_dir: Path) -> None:
    """The shipped templates have no errors and no prompt-quality warnings, even against a real provider.

    (Provider-compatibility warnings remain where a shipped schema uses formats or constraints a
    provider does not enforce; validation still enforces them.)
    """
    report = check([templates_dir], models=["google:gemini-2.5-flash"])
    assert [] == [str(f) for f in report.findings if not f.code.startswith("P3")]
    loaded = TaskSystem(templates=templates_dir)  # check sees what loading registers
    assert (len(loaded.templates.names()), len(loaded.workflows.names())) == (report.templates, report.workflows)


def test_every_error_in_a_file_is_reported(tmp_path: Path) -> None:
    """One run reports each broken template and schema, each at its line, not just the first."""
    write(tmp_path, "bad.yaml", BAD)
    assert [("E102", 4), ("E101", 8), ("E104", 11), ("E103", 14), ("E103", 22)] == codes(tmp_path)


def test_a_broken_schema_is_reported_as_invalid_where_it_is_used(tmp_path: Path) -> None:
    """A template naming a schema that failed to build is told the schema is invalid (and where), not unknown."""
    path = write(tmp_path, "bad.yaml", BAD)
    findings = {f.location.line if f.location else None: f.message for f in check([tmp_path]).findings}
    assert "lst[str]" in findings[22]
    assert f"uses schema 'Broken', which is declared at {path}:20:5 but invalid" in findings[14]
    assert "Unknown schema" not in findings[14]


def test_a_schema_the_reader_rejected_is_invalid_not_unknown(tmp_path: Path) -> None:
    """A schema refused while reading (a bad key) is named as invalid where a template uses it."""
    write(tmp_path, "s.yaml", "name: Card\nfields: [{name: a, typo: 1}]\n")
    write(tmp_path, "t.yaml", "name: t\ninstructions: hi\noutput_format: {type: json, schema: Card}\n")
    messages = [(f.code, f.message) for f in check([tmp_path]).findings]
    assert "E101" == messages[0][0]
    assert "E103" == messages[1][0]
    assert "uses schema 'Card', which is declared at" in messages[1][1]


def test_duplicates_across_files_show_both_locations(tmp_path: Path) -> None:
    """A template name taken in another file is E105 at the second, naming the first's file:line."""
    write(tmp_path, "a.yaml", "name: greet\ninstructions: hi\n")
    write(tmp_path, "b.yaml", "name: greet\ninstructions: hello\n")
    write(tmp_path, "c.yaml", "name: S\nfields: [{name: a, description: d}]\n")
    write(tmp_path, "d.yaml", "name: S\nfields: [{name: b, description: d}]\n")
    findings = check([tmp_path]).findings
    assert ["E105", "E105"] == [f.code for f in findings]
    assert f"{tmp_path / 'a.yaml'}:1:1" in findings[0].message
    assert str(tmp_path / "b.yaml") == (findings[0].location.file if findings[0].location else None)
    assert f"{tmp_path / 'c.yaml'}:1:1" in findings[1].message


def test_check_and_runtime_agree(tmp_path: Path) -> None:
    """For a single mistake, check reports exactly the message `TaskSystem.load` raises."""
    path = write(tmp_path, "t.yaml", "name: t\nparams: {text: str}\ninstructions: 'Read {{txet}}'\n")
    with pytest.raises(UsageError) as raised:
        TaskSystem(templates=path)
    findings = check([path]).findings
    assert [(raised.value.message, raised.value.location)] == [(f.message, f.location) for f in findings]


def test_select_and_ignore_filter_by_code_prefix(tmp_path: Path) -> None:
    """`select` keeps codes starting with a prefix; `ignore` drops them."""
    write(tmp_path, "bad.yaml", BAD)
    assert [("E104", 11)] == codes(tmp_path, select=["E104"])
    assert [("E102", 4), ("E103", 14), ("E103", 22)] == codes(tmp_path, select=["E10"], ignore=["E101", "E104"])


def test_warnings_point_at_the_field(tmp_path: Path) -> None:
    """Schema warnings are located at the field's line, template warnings at the parameter's."""
    write(
        tmp_path,
        "t.yaml",
        """\
        name: judge
        params: {text: str, extra: {type: int, default: 1}}
        instructions: Judge {{text}}
        output_format:
          type: json
          schema:
            fields:
              - {name: verdict, type: str, description: The verdict.}
              - {name: reasoning, type: str}
        """,
    )
    assert [("W201", 2), ("W203", 7), ("W204", 7)] == codes(tmp_path)


def test_provider_findings_use_the_default_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Templates without a model are checked against `models`, else `$ATOMTASK_MODEL`."""
    write(
        tmp_path,
        "t.yaml",
        """\
        schemas:
          - name: Out
            fields: [{name: note, type: "str?", description: A note.}]
        templates:
          - {name: t, instructions: hi, output_format: {type: json, schema: Out}}
        """,
    )
    assert [] == codes(tmp_path)
    assert [("P303", 3)] == codes(tmp_path, models=["openai-chat:gpt-4o"])
    monkeypatch.setenv("ATOMTASK_MODEL", "openai:gpt-4o")
    assert [("P303", 3)] == codes(tmp_path)


PY_MODULE = """\
from pydantic import BaseModel
from atomtask import OutputFormat, TaskSystem, Template


class Answer(BaseModel):
    value: str


system = TaskSystem()
system.models.register(Answer)
system.register(
    Template(
        name="py_task",
        params={"q": "str", "unused": "str"},
        instructions="Answer {{q}}",
        output_format=OutputFormat(type="json", schema="Answer"),
    )
)
"""


def test_python_module_templates_and_schemas(tmp_path: Path) -> None:
    """A module's TaskSystem is checked (located in its file) and its schemas serve the YAML templates."""
    module = write(tmp_path, "tasks.py", PY_MODULE)
    folder = tmp_path / "templates"
    folder.mkdir()
    write(
        folder,
        "t.yaml",
        "name: y\nparams: {q: str}\ninstructions: '{{q}}'\noutput_format: {type: json, schema: Answer}\n",
    )
    report = check([folder], python=[str(module)])
    found = [
        (f.code, f.location.file if f.location else None, f.location.line if f.location else None)
        for f in report.findings
    ]
    assert [("W203", str(module), 6), ("W201", str(module), 13)] == found
    assert (2, 1) == (report.templates, report.schemas)


def test_python_module_that_raises_is_located(tmp_path: Path) -> None:
    """A registration error raised while importing the module points at the module's line."""
    module = write(
        tmp_path,
        "broken.py",
        """\
        from atomtask import TaskSystem, Template

        system = TaskSystem()
        system.register(Template(name="t", instructions="{{nope}}"))
        """,
    )
    findings = check(python=[str(module)]).findings
    assert [("E102", str(module.resolve()), 4)] == [
        (f.code, f.location.file if f.location else None, f.location.line if f.location else None) for f in findings
    ]


def test_python_module_without_a_system(tmp_path: Path) -> None:
    """A module exposing no TaskSystem or Template is E106, as is one that cannot be imported."""
    module = write(tmp_path, "empty.py", "X = 1\n")
    assert ["E106"] == [f.code for f in check(python=[str(module)]).findings]
    assert ["E106"] == [f.code for f in check(python=["no_such_module_atomtask"]).findings]


def test_a_missing_path_does_not_stop_the_others(tmp_path: Path, templates_dir: Path) -> None:
    """A path that does not exist is one E101; the paths after it are still checked."""
    report = check([tmp_path / "nope", templates_dir])
    assert ["E101"] == [f.code for f in report.findings]
    assert check([templates_dir]).templates == report.templates


def test_every_problem_of_one_template_and_one_schema_is_reported(tmp_path: Path) -> None:
    """A template with several mistakes and a schema with several bad fields get one finding per mistake."""
    write(
        tmp_path,
        "t.yaml",
        """\
        name: many
        params: {a: "lst[str]", b: {type: int, default: x}}
        model: opanai:gpt-4o
        system: Be {{nope}}.
        instructions: Do {{a}} {{b}} {{zzz}}
        output_format: {type: json, schema: Missing}
        ---
        name: S
        fields:
          - {name: a, type: "lst[str]"}
          - {name: b, type: int, ge: 5, le: 1}
        """,
    )
    assert [
        ("E103", 2),
        ("E102", 2),
        ("E104", 3),
        ("E102", 4),
        ("E102", 5),
        ("E103", 6),
        ("E103", 10),
        ("E103", 11),
    ] == codes(tmp_path)


def test_a_json_file_that_is_not_a_schema_is_a_w101_warning(tmp_path: Path) -> None:
    """A `.json` data file in the folder is skipped with W101 at its first line, not made a schema."""
    write(tmp_path, "settings.json", '{"theme": "dark"}')
    report = check([tmp_path])
    assert [("W101", "warning", 1, 1)] == [
        (f.code, f.severity.value, f.location.line, f.location.column) for f in report.findings if f.location
    ]
    assert (0, 1) == (report.schemas, report.files)


def test_findings_in_json_files_carry_line_and_column(tmp_path: Path) -> None:
    """Errors and warnings about a `.json` schema point at the line and column of the key concerned."""
    write(
        tmp_path,
        "Review.json",
        """\
        {
          "type": "object",
          "properties": {
            "score": {"type": "number"},
            "label": {"type": "string", "description": "The label."}
          },
          "required": ["score", "label"]
        }
        """,
    )
    write(tmp_path, "Bad.json", '{\n  "type": "object",\n  "properties": {"n": {"type": "integer", "maximun": 3}}\n}\n')
    write(tmp_path, "t.yaml", "name: t\ninstructions: Review\noutput_format: {type: json, schema: Review}\n")
    found = {
        (f.code, Path(f.location.file or "").name, f.location.line, f.location.column)
        for f in check([tmp_path]).findings
        if f.location
    }
    assert {("W102", "Bad.json", 3, 43), ("W203", "Review.json", 4, 5)} == found


def test_the_response_of_a_described_scalar_output_needs_no_description(tmp_path: Path) -> None:
    """A JSON Schema whose root is a scalar is described by its own description: no W203 for `response`."""
    write(
        tmp_path,
        "t.yaml",
        """\
        name: count
        instructions: Count
        output_format:
          type: json
          schema: {json_schema: {type: integer, minimum: 0}, description: How many there are.}
        """,
    )
    assert [] == codes(tmp_path)


def test_a_module_raising_a_base_exception_on_import_is_an_error_finding(tmp_path: Path) -> None:
    """A module that raises a BaseException (not KeyboardInterrupt) while imported is E106, not the end of check."""
    script = write(tmp_path, "bad.py", "class Stop(BaseException):\n    pass\n\n\nraise Stop('halt')\n")
    findings = check(python=[str(script)]).findings
    assert [("E106", 5)] == [(f.code, f.location.line if f.location else None) for f in findings]
    assert "raised Stop: halt while being imported" in findings[0].message


def test_the_cycle_collector_runs_again_after_a_check(templates_dir: Path) -> None:
    """`check` pauses the cycle collector while it runs, and leaves it as it found it, on or off."""
    import gc

    states = []
    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        check([templates_dir])
        states.append(gc.isenabled())
    gc.enable()
    assert [True, False] == states
