"""`atomtask check` in one run: every mistake of a template, true counts, W206, and each mistake once."""

from __future__ import annotations

import io
import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest
from atomtask import TaskSystem, TemplateError
from atomtask.cli._main import main
from atomtask.lint import Severity, check
from atomtask.lint._engine import check_cache
from structlog.testing import capture_logs

# The four mistakes of issue 27: a misplaced model setting hid the other three, one run each.
FOUR_MISTAKES = """\
name: summarize
params:
  text: str
  count:
    type: int
    default: many
temperature: 0.2
model: opanai:gpt-4o
model_settings:
  max_tokens: lots
instructions: "Summarise {{text}} in {{count}} points."
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def where_and_code(findings: Any) -> list[tuple[int | None, int | None, str]]:
    return [(f.location.line, f.location.column, f.code) for f in findings]


# -- every mistake of a template in one run ----------------------------------------------------------------


def test_a_misplaced_setting_no_longer_hides_the_templates_other_mistakes(tmp_path: Path) -> None:
    """`temperature:` at the top, a bad default, a misspelt provider and a non-int `max_tokens`: four findings."""
    path = write(tmp_path, "summarize.yaml", FOUR_MISTAKES)
    report = check([path])
    assert [(5, 5, "E102"), (7, 14, "E101"), (8, 8, "E104"), (10, 3, "E102")] == where_and_code(report.findings)
    messages = [f.message for f in report.findings]
    assert "Default 'many' of parameter 'count'" in messages[0]
    assert "write it under `model_settings`: `model_settings: {temperature: 0.2}`" in messages[1]
    assert "Did you mean 'openai'?" in messages[2]
    assert "Model setting 'max_tokens' of template 'summarize' must be int" in messages[3]
    assert (4, 1) == (report.errors, report.templates)


def test_the_four_mistakes_in_text_and_json(tmp_path: Path) -> None:
    """The command prints each with file:line:col and counts them all, in text and in `--format json`."""
    path = write(tmp_path, "summarize.yaml", FOUR_MISTAKES)
    code, out, _ = run(["check", "--no-cache", str(path)])
    lines = out.splitlines()
    assert 1 == code
    assert [f"{path}:5:5", f"{path}:7:14", f"{path}:8:8", f"{path}:10:3"] == [line.split(": ")[0] for line in lines[:4]]
    assert "Found 4 errors and 0 warnings in 1 file, 1 template, 0 schemas." == lines[-1]
    code, out, _ = run(["check", "--no-cache", "--format", "json", str(path)])
    document = json.loads(out)
    assert ["E102", "E101", "E104", "E102"] == [f["code"] for f in document["findings"]]
    assert (4, 0, 1) == tuple(document["summary"][k] for k in ("errors", "warnings", "templates"))


def test_shape_mistakes_behind_a_misplaced_setting_are_found_too(tmp_path: Path) -> None:
    """pydantic stops at a misplaced setting before the fields; the keys it hid are read in the same run."""
    path = write(
        tmp_path,
        "t.yaml",
        """\
        name: t
        instructions: hi
        seed: 3
        retries: -1
        repair: sometimes
        """,
    )
    findings = check([path]).findings
    assert [(3, 7, "E101"), (4, 10, "E101"), (5, 9, "E101")] == where_and_code(findings)
    assert ["`seed`", "`retries`", "`repair`"] == [f.message.split(": ")[1] for f in findings]


@pytest.mark.parametrize(
    "broken",
    [
        "params: [[a]]\ninstructions: 'Do {{a}}'",  # `params` itself: every placeholder would be "undeclared"
        "params: {a: str}\ninstructions: [1, 2]\nmodel: opanai:x",  # `instructions`: nothing to read
    ],
)
def test_a_template_without_usable_params_or_instructions_is_not_read_on(tmp_path: Path, broken: str) -> None:
    """When what the rest depends on is wrong, only that is reported: no mistakes made up from its absence."""
    path = write(tmp_path, "t.yaml", f"name: t\n{broken}\n")
    report = check([path])
    assert {"E101"} == {f.code for f in report.findings}
    assert 0 == report.templates


def test_a_wrong_parameter_is_kept_as_any_so_its_placeholders_resolve(tmp_path: Path) -> None:
    """A parameter with an unknown key is reported once; `{{p}}` is not called undeclared, the model still checked."""
    path = write(
        tmp_path,
        "t.yaml",
        """\
        name: t
        params:
          p: {type: str, descripton: typo}
        model: opanai:x
        instructions: "Use {{p}}"
        """,
    )
    findings = check([path]).findings
    assert [(3, 30, "E101"), (4, 8, "E104")] == where_and_code(findings)


def test_a_template_with_shape_mistakes_is_invalid_for_its_workflows(tmp_path: Path) -> None:
    """A step running it is told the template is declared but invalid, not that it is unknown."""
    write(tmp_path, "t.yaml", "name: shout\nparams: {text: str}\ntemperature: 0\ninstructions: '{{text}}'\n")
    write(
        tmp_path,
        "w.yaml",
        """\
        name: flow
        state: [{name: text, type: str}, {name: out, type: str?}]
        steps:
          - {id: a, task: shout, inputs: {text: "{{state.text}}"}, output: out}
        """,
    )
    messages = [f.message for f in check([tmp_path]).findings if f.code == "E111"]
    assert 1 == len(messages)
    assert "runs task 'shout', which is declared at" in messages[0]


def test_loading_raises_the_first_mistake_and_says_how_many_more(tmp_path: Path) -> None:
    """`TaskSystem.load` raises a typed error: the first mistake, `and N more`, and the command that lists them."""
    write(tmp_path, "a.yaml", FOUR_MISTAKES)
    write(tmp_path, "b.yaml", "name: b\ninstructions: hi\nretrys: 2\n")
    with pytest.raises(TemplateError) as raised:
        TaskSystem().load(tmp_path)
    error = raised.value
    assert (7, 14) == (error.location.line, error.location.column) if error.location else False
    assert error.message.startswith("Invalid template 'summarize': `temperature`: a model setting")
    assert error.message.endswith(f"(and at least 1 more mistake; `atomtask check {tmp_path}` lists every one)")


def test_loading_one_mistake_points_at_check_for_the_rest_of_the_template(tmp_path: Path) -> None:
    """A single shape mistake in a template that was read on: the message says check lists the others."""
    write(tmp_path, "a.yaml", FOUR_MISTAKES)
    with pytest.raises(TemplateError, match=r"`temperature`.*lists every mistake of the template, not only this one"):
        TaskSystem().load(tmp_path / "a.yaml")


def test_loading_a_single_plain_mistake_is_unchanged(tmp_path: Path) -> None:
    """A mistake that hides nothing keeps its message as it was."""
    write(tmp_path, "a.yaml", "name: a\nparams: {text: str}\ninstructions: '{{txt}}'\n")
    with pytest.raises(TemplateError) as raised:
        TaskSystem().load(tmp_path)
    assert "(and" not in raised.value.message
    assert "atomtask check" not in raised.value.message


# -- true counts ---------------------------------------------------------------------------------------------


def test_a_template_with_an_error_still_has_its_warnings_counted(tmp_path: Path) -> None:
    """A bad default does not hide an unused parameter: 1 error and 1 warning, in text and JSON."""
    path = write(tmp_path, "t.yaml", "name: t\nparams: {text: str, spare: str, n: {type: int, default: x}}\n"
                 "instructions: '{{text}} {{n}}'\n")  # fmt: skip
    report = check([path])
    assert [("E102", Severity.ERROR), ("W201", Severity.WARNING)] == sorted(
        (f.code, f.severity) for f in report.findings
    )
    _, out, _ = run(["check", "--no-cache", str(path)])
    assert "Found 1 error and 1 warning in 1 file, 1 template, 0 schemas." == out.splitlines()[-1]
    summary = json.loads(run(["check", "--no-cache", "--format", "json", str(path)])[1])["summary"]
    assert (1, 1) == (summary["errors"], summary["warnings"])


def test_a_broken_text_makes_up_no_unused_parameter(tmp_path: Path) -> None:
    """When the instructions have a mistake, which parameters they use is unknown: no W201 is guessed."""
    path = write(tmp_path, "t.yaml", "name: t\nparams: {text: str}\ninstructions: '{{text}} {{txet}}'\n")
    assert ["E102"] == [f.code for f in check([path]).findings]


def test_a_broken_templates_output_schema_is_still_linted(tmp_path: Path) -> None:
    """A template with a bad model still has its output schema's warnings (here a field without a description)."""
    path = write(
        tmp_path,
        "t.yaml",
        """\
        schemas:
          - name: Out
            fields: [{name: label, type: str}]
        templates:
          - name: t
            params: {text: str}
            model: opanai:x
            instructions: "{{text}}"
            output_format: {type: json, schema: Out}
        """,
    )
    assert ["E104", "W203"] == sorted(f.code for f in check([path]).findings)


def test_warm_cache_keeps_the_counts(tmp_path: Path) -> None:
    """A check answered from the cache counts the same errors, warnings and templates as the first."""
    src = tmp_path / "src"
    src.mkdir()
    write(src, "a.yaml", FOUR_MISTAKES)
    write(src, "b.yaml", "name: b\nparams: {text: str, spare: str}\ninstructions: 'Do {text}'\n")
    first = check([src], cache=check_cache(tmp_path / "cache"))
    second = check([src], cache=check_cache(tmp_path / "cache"))
    assert (4, 3, 2) == (first.errors, first.warnings, first.templates)
    assert (first.findings, first.templates) == (second.findings, second.templates)


# -- W206: single braces --------------------------------------------------------------------------------------


def test_a_single_brace_placeholder_is_a_finding_not_a_log_record(tmp_path: Path) -> None:
    """`{text}` is W206 at its column, counted and in JSON; the check logs nothing about it."""
    path = write(tmp_path, "t.yaml", "name: t\nparams: {text: str}\ninstructions: 'Read {{text}}, then {text}'\n")
    with capture_logs() as logs:
        report = check([path])
    [finding] = report.findings
    assert ("W206", 3, 36) == (finding.code, finding.location.line, finding.location.column) if finding.location else 0
    assert "single braces do not insert parameter 'text'. Write `{{text}}` to insert it." in finding.message
    assert [] == [event for event in logs if event["event"] == "single_brace_placeholder"]
    code, out, _ = run(["check", "--no-cache", "--format", "json", str(path)])
    document = json.loads(out)
    assert (0, ["W206"], 1) == (code, [f["code"] for f in document["findings"]], document["summary"]["warnings"])
    assert 1 == run(["check", "--no-cache", "--strict", str(path)])[0]


def test_single_braces_in_a_template_with_an_error_are_found_too(tmp_path: Path) -> None:
    """The W206 of a template that has a bad model is still reported, beside the error."""
    path = write(tmp_path, "t.yaml", "name: t\nparams: {text: str}\nmodel: opanai:x\nsystem: 'Be {text}'\n"
                 "instructions: '{{text}}'\n")  # fmt: skip
    assert ["E104", "W206"] == [f.code for f in check([path]).findings]


def test_registration_outside_check_still_logs_single_braces(tmp_path: Path) -> None:
    """`TaskSystem.load` keeps the `single_brace_placeholder` warning for Python users."""
    write(tmp_path, "t.yaml", "name: t\nparams: {text: str}\ninstructions: 'Read {text}'\n")
    with capture_logs() as logs:
        TaskSystem().load(tmp_path)
    assert ["single_brace_placeholder"] == [e["event"] for e in logs if e["event"] == "single_brace_placeholder"]


# -- each mistake once ---------------------------------------------------------------------------------------------


def test_a_broken_schema_is_reported_once(tmp_path: Path, templates_dir: Path) -> None:
    """The shipped `Contact` with a misspelt field type: its own error once, not once per list of known schemas."""
    folder = tmp_path / "templates"
    shutil.copytree(templates_dir, folder, ignore=shutil.ignore_patterns("tests"))
    schemas = folder / "schemas.yaml"
    text = schemas.read_text(encoding="utf-8")
    assert "      - name: name\n        type: str\n" in text
    schemas.write_text(
        text.replace("      - name: name\n        type: str\n", "      - name: name\n        type: strng\n", 1)
    )
    findings = [f for f in check([folder]).findings if f.location and f.location.file == str(schemas)]
    assert 1 == len(findings)
    assert "Unknown schema 'strng' in field 'name' of schema 'Contact' (type 'strng'). Did you mean 'str'?" in (
        findings[0].message
    )


def test_a_template_using_a_broken_schema_twice_is_told_once(tmp_path: Path) -> None:
    """A parameter and the output of a template use a broken schema: one finding for the template, at its first use."""
    path = write(
        tmp_path,
        "t.yaml",
        """\
        name: Thing
        fields: [{name: x, type: strr}]
        ---
        name: t
        params: {a: Thing, b: "list[Thing]"}
        instructions: "{{a}} {{b}}"
        output_format: {type: json, schema: Thing}
        """,
    )
    uses = [f for f in check([path]).findings if "uses schema 'Thing'" in f.message]
    assert [(5, 13)] == [(f.location.line, f.location.column) for f in uses if f.location]


# -- type strings in templates --------------------------------------------------------------------------------------


def test_a_misspelt_parameter_type_gets_did_you_mean(tmp_path: Path) -> None:
    """`integr` as a parameter type: did you mean 'int'?"""
    path = write(tmp_path, "t.yaml", "name: t\nparams: {n: integr}\ninstructions: '{{n}}'\n")
    [finding] = check([path]).findings
    assert "In parameter 'n' of template 't': Unknown type 'integr'. Did you mean 'int'?" in finding.message


def test_json_schema_type_names_are_parameter_types(tmp_path: Path) -> None:
    """`integer`, `number`, `boolean`, `string`, `array` and `object` are accepted, and validate as their types."""
    write(
        tmp_path,
        "t.yaml",
        """\
        name: t
        params: {i: integer, n: number, b: boolean, s: string, a: array, o: object}
        instructions: "{{i}} {{n}} {{b}} {{s}} {{a}} {{o}}"
        """,
    )
    assert [] == list(check([tmp_path]).findings)
    system = TaskSystem()
    system.load(tmp_path)
    inputs = system.templates.compiled("t").inputs
    values = {"i": 1, "n": 1.5, "b": True, "s": "x", "a": [1, "y"], "o": {"k": 1}}
    assert values == inputs.validate_python(values)
    with pytest.raises(ValueError, match="o"):
        inputs.validate_python({**values, "o": [1]})


FOUR_MISTAKES_SEXP = """\
(defatom summarize
  (params (text str) (count int (default "many")))
  (temperature 0.2)
  (model "opanai:gpt-4o")
  (model_settings ((max_tokens "lots")))
  (instructions "Summarise {{text}} in {{count}} points."))
"""


def test_a_defatom_reports_every_mistake_in_one_run_too(tmp_path: Path) -> None:
    """The same four mistakes written as `defatom` clauses: four findings, where each is written."""
    path = write(tmp_path, "summarize.sexp", FOUR_MISTAKES_SEXP)
    report = check([path])
    assert [(2, 22, "E102"), (3, 3, "E101"), (4, 10, "E104"), (5, 20, "E102")] == where_and_code(report.findings)
    with pytest.raises(TemplateError) as info:  # loading names the first, and says there are more
        TaskSystem(templates=[path])
    assert "Unknown clause 'temperature'" in info.value.message
    assert "lists every mistake of the template" in str(info.value)


def test_a_reserved_defatom_name_and_a_bad_clause_are_both_reported(tmp_path: Path) -> None:
    """A name the language reserves no longer hides the form's other mistakes."""
    path = write(tmp_path, "t.sexp", '(defatom if (instructions "Hi") (retries "many") (colour red))\n')
    messages = [f.message for f in check([path]).findings]
    assert 3 == len(messages), messages
    assert "is a special form of the language" in messages[0]
    assert any("`retries`" in m for m in messages) and any("Unknown clause 'colour'" in m for m in messages)
