"""YAML template and schema files: parsed with their locations, errors pointing at the line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from atomtask import (
    DuplicateNameError,
    SchemaError,
    SourceLocation,
    TaskSystem,
    TemplateError,
    UsageError,
    WorkflowError,
)
from atomtask.loading._yaml import load_yaml_text

TEMPLATE = """\
name: extract
params:
  text: {type: str}
instructions: |
  Read this:
  {{text}}
  and {{txet}}
output_format: {type: json, schema: Contact}
"""


def test_template_and_schema_in_one_file(tmp_path: Path) -> None:
    """A mapping with `templates:` and `schemas:` lists yields both, with file:line locations."""
    source = """\
schemas:
  - name: Contact
    fields:
      - {name: name, type: str}
templates:
  - name: extract
    params: {text: str}
    instructions: "{{text}}"
    output_format: {type: json, schema: Contact}
"""
    decl = load_yaml_text(source, "f.yaml")
    assert ["Contact"] == [s.name for s in decl.schemas]
    assert ["extract"] == [t.name for t in decl.templates]
    assert 6 == decl.templates[0].location.line  # type: ignore[union-attr]  # set by the loader


def test_undeclared_placeholder_points_at_its_line(tmp_path: Path) -> None:
    """A bad placeholder inside a block scalar is reported at its own line in the file."""
    (tmp_path / "schemas.yaml").write_text("name: Contact\nfields:\n  - {name: name, type: str}\n")
    (tmp_path / "extract.yaml").write_text(TEMPLATE)
    with pytest.raises(TemplateError) as raised:
        TaskSystem(templates=tmp_path)
    assert f"{tmp_path / 'extract.yaml'}:7:" in str(raised.value)
    assert "Did you mean 'text'?" in str(raised.value)


def test_unknown_schema_points_at_the_schema_key(tmp_path: Path) -> None:
    """An unknown schema name is reported at the line of `output_format`, with a suggestion."""
    (tmp_path / "schemas.yaml").write_text("name: Contact\nfields:\n  - {name: name, type: str}\n")
    (tmp_path / "extract.yaml").write_text(TEMPLATE.replace(" and {{txet}}", "").replace("Contact}", "Contct}"))
    with pytest.raises(SchemaError) as raised:
        TaskSystem(templates=tmp_path)
    assert f"{tmp_path / 'extract.yaml'}:8:" in str(raised.value)
    assert "Did you mean 'Contact'?" in str(raised.value)


def test_unknown_key_lists_valid_keys() -> None:
    """A misspelt top-level key is rejected at its line, listing the valid keys."""
    with pytest.raises(TemplateError) as raised:
        load_yaml_text("name: t\ninstructions: x\nretires: 2\n", "t.yaml")
    assert str(raised.value).startswith("t.yaml:3:")
    assert "`retires`: unknown key; valid keys: name, description, params" in str(raised.value)


def test_invalid_yaml_reports_line_and_column() -> None:
    """A YAML syntax error names the line and column."""
    with pytest.raises(TemplateError) as raised:
        load_yaml_text("name: t\ninstructions: [unclosed\n", "bad.yaml")
    assert str(raised.value).startswith("bad.yaml:3:")
    assert "Invalid YAML" in str(raised.value)


def test_mapping_that_is_neither_is_rejected() -> None:
    """A mapping without `instructions` or `fields` says what it expected."""
    with pytest.raises(TemplateError, match="neither a template"):
        load_yaml_text("name: t\nprompt: hi\n", "x.yaml")


def test_duplicate_schema_across_files_shows_both_locations(tmp_path: Path) -> None:
    """Two different schemas with one name in two files: both places are in the message."""
    (tmp_path / "a.yaml").write_text("name: S\nfields:\n  - {name: a, type: str}\n")
    (tmp_path / "b.yaml").write_text("name: S\nfields:\n  - {name: b, type: int}\n")
    with pytest.raises(DuplicateNameError) as raised:
        TaskSystem(templates=tmp_path)
    assert f"{tmp_path / 'a.yaml'}:1" in str(raised.value)
    assert str(raised.value).startswith(f"{tmp_path / 'b.yaml'}:1")


def test_duplicate_template_across_files_is_rejected(tmp_path: Path) -> None:
    """Two different templates with one name in two files: the second raises, naming the first."""
    (tmp_path / "a.yaml").write_text("name: t\ninstructions: one\n")
    (tmp_path / "b.yaml").write_text("name: t\ninstructions: two\n")
    with pytest.raises(DuplicateNameError, match=f"already registered at {tmp_path / 'a.yaml'}:1"):
        TaskSystem(templates=tmp_path)


def test_missing_path_is_a_clear_error(tmp_path: Path) -> None:
    """Loading a path that does not exist says so."""
    with pytest.raises(TemplateError, match="No such file or folder"):
        TaskSystem(templates=tmp_path / "nope")


def test_loading_twice_is_idempotent(templates_dir: Path) -> None:
    """Loading the same folder twice registers nothing new and raises nothing."""
    system = TaskSystem()
    first = system.load(templates_dir)
    assert first == system.load(templates_dir)
    assert system.models.get("Contact") is TaskSystem(templates=templates_dir).models.get("Contact")


@pytest.mark.parametrize(
    "text",
    [
        "[" * 500 + "]" * 500,
        "".join("  " * i + f"k{i}:\n" for i in range(500)) + "  " * 500 + "x\n",
        "- " * 500 + "x\n",
        "a0: &a0 [x]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 500)),
    ],
    ids=["flow", "block", "dashes", "aliases"],
)
def test_deep_nesting_is_a_usage_error(text: str) -> None:
    """YAML nested 500 levels deep (by brackets, indentation, dashes or aliases) is refused with a location."""
    with pytest.raises(TemplateError, match="nested more than 100 levels deep") as raised:
        load_yaml_text(text, "deep.yaml")
    assert "deep.yaml" == (raised.value.location.file if raised.value.location else None)


def test_a_hundred_thousand_levels_do_not_crash_the_process(tmp_path: Path) -> None:
    """100,000 levels (which crashed libyaml's composer) end in the usage error, in a clean process exit."""
    script = tmp_path / "deep.py"
    script.write_text(
        "from atomtask.loading._yaml import load_yaml_text\n"
        "from atomtask.errors import TemplateError\n"
        "for text in ('[' * 100_000, '- ' * 100_000 + 'x', ''.join(' ' * i + 'k:\\n' for i in range(20_000))):\n"
        "    try:\n"
        "        load_yaml_text(text, 'deep.yaml')\n"
        "    except TemplateError as exc:\n"
        "        print(exc.message[:37])\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False)
    assert (0, ["YAML nested more than 100 levels deep"] * 3) == (done.returncode, done.stdout.splitlines())


def test_nesting_up_to_the_limit_is_read() -> None:
    """Data nested 100 levels (the root mapping included) is still read."""
    text = "name: S\nfields:\n  - {name: a, type: str, default: " + "[" * 97 + "]" * 97 + "}\n"
    assert ["S"] == [s.name for s in load_yaml_text(text, "ok.yaml").schemas]


def test_every_mistake_of_a_declaration_is_collected() -> None:
    """With an errors list, each wrong key of one template is its own error, at its own line."""
    errors: list[UsageError] = []
    load_yaml_text(
        "name: t\ninstructions: hi\nretrys: 2\nlimts: {}\noutput_format: {type: json, schema: 3}\n",
        "t.yaml",
        errors=errors,
    )
    assert [3, 4, 5] == [e.location.line if e.location else None for e in errors]
    assert ["retrys", "limts", "output_format.schema"] == [e.message.split("`")[1].removesuffix(".str") for e in errors]


def test_without_an_errors_list_the_first_mistake_raises() -> None:
    """Registration still raises the first mistake."""
    with pytest.raises(TemplateError, match="`retrys`: unknown key"):
        load_yaml_text("name: t\ninstructions: hi\nretrys: 2\nlimts: {}\n", "t.yaml")


def test_a_template_with_shape_mistakes_is_read_on_without_them() -> None:
    """With an errors list, the keys in error are left out and the rest is a partial template, located as written."""
    errors: list[UsageError] = []
    text = "name: t\nparams: {a: {type: int, defualt: 1}, b: str}\ntemperature: 0\nretries: -1\ninstructions: '{{b}}'\n"
    decl = load_yaml_text(text, "t.yaml", errors=errors)
    assert [2, 3, 4] == [e.location.line if e.location else None for e in errors]
    [partial] = decl.partial_templates
    assert ([], frozenset({"params.a", "temperature", "retries"})) == (decl.templates, partial.dropped)
    assert ("any", "str", None) == (
        partial.template.params["a"].type,
        partial.template.params["b"].type,
        partial.template.retries,
    )
    assert SourceLocation(file="t.yaml", line=5, column=16) == partial.template.location_of("instructions")


def test_without_an_errors_list_a_template_with_mistakes_is_not_read_on() -> None:
    """`TaskSystem.load`'s path raises the first mistake: no partial template reaches a registry."""
    with pytest.raises(TemplateError, match="`temperature`"):
        load_yaml_text("name: t\ntemperature: 0\ninstructions: hi\n", "t.yaml")


def test_an_invalid_schema_is_remembered_by_name() -> None:
    """A schema that cannot be read is named in `invalid_schemas`, with where it is declared."""
    errors: list[UsageError] = []
    decl = load_yaml_text("name: Card\nfields: [{name: a, typo: 1}]\n", "s.yaml", errors=errors)
    assert (1, ["Card"]) == (len(errors), list(decl.invalid_schemas))
    assert SourceLocation(file="s.yaml", line=1, column=1) == decl.invalid_schemas["Card"]


def test_a_json_schema_in_yaml_knows_where_its_parts_are() -> None:
    """`location_at` points at the line of a part of a `json_schema` written in YAML."""
    text = "name: Age\njson_schema:\n  type: object\n  properties:\n    years: {type: integer, minimun: 0}\n"
    definition = load_yaml_text(text, "s.yaml").json_schemas[0]
    assert SourceLocation(file="s.yaml", line=5, column=12) == definition.location_at("/properties/years")
    assert 5 == definition.location_at("/properties/years/minimun").line  # type: ignore[union-attr]  # located


def test_nested_fields_point_at_their_types() -> None:
    """Fields under a nested `fields:` carry their own locations."""
    text = "name: C\nfields:\n  - name: address\n    type: object\n    fields:\n      - {name: city, type: str}\n"
    field = load_yaml_text(text, "s.yaml").schemas[0].fields[0]
    assert [4, 6] == [field.location.line, field.fields[0].location.line]  # type: ignore[union-attr,index]  # located


WORKFLOW = """\
name: rate_twice
state:
  fields:
    - {name: text, type: str}
    - {name: score, type: int, default: 0}
steps:
  - id: first
    task: rate
    inputs: {text: "{{state.text}}"}
    outputs: {score: score}
    route:
      - {when: "state.score < 5", to: again}
      - {to: end}
  - id: again
    task: rate
    inputs:
      text: '{{state.text}}'
    outputs: {score: score}
"""


def test_a_mapping_with_steps_is_a_workflow_that_knows_where_its_parts_are() -> None:
    """A workflow is read with its location and the location of each part (inside the quotes of quoted values)."""
    workflow = load_yaml_text(WORKFLOW, "w.yaml").workflows[0]
    assert ("rate_twice", SourceLocation(file="w.yaml", line=1, column=1)) == (workflow.name, workflow.location)
    assert SourceLocation(file="w.yaml", line=12, column=17) == workflow.location_of("steps.0.route.0.when")
    assert SourceLocation(file="w.yaml", line=17, column=14) == workflow.location_of("steps.1.inputs.text")
    assert SourceLocation(file="w.yaml", line=5, column=7) == workflow.location_of("state.fields.1")


def test_workflows_list_beside_templates_and_schemas() -> None:
    """A `workflows:` list works beside `templates:` and `schemas:`; several YAML documents too."""
    workflow = "\n".join("    " + line if line else line for line in WORKFLOW.splitlines())
    text = "templates:\n  - {name: rate, instructions: hi}\nworkflows:\n  - " + workflow.strip() + "\n"
    decl = load_yaml_text(text + "---\n" + WORKFLOW.replace("rate_twice", "other"), "w.yaml")
    assert (["rate"], ["rate_twice", "other"]) == ([t.name for t in decl.templates], [w.name for w in decl.workflows])
    assert 4 == decl.workflows[0].location.line  # type: ignore[union-attr]  # set by the loader


def test_a_workflow_shape_mistake_is_e110_at_its_key_listing_the_step_keys() -> None:
    """An unknown key of a step is a WorkflowDeclarationError (E110) at its line, naming the valid step keys."""
    with pytest.raises(WorkflowError) as raised:
        load_yaml_text(
            WORKFLOW.replace("    outputs: {score: score}\n    route", "    retrys: 2\n    route", 1), "w.yaml"
        )
    error = raised.value
    assert ("E110", "rate_twice", SourceLocation(file="w.yaml", line=10, column=13)) == (
        error.code,
        error.workflow,
        error.location,
    )
    assert "Invalid workflow 'rate_twice': `steps.0.retrys`: unknown key; valid keys: id, task, workflow" in str(error)
    assert ", set, for_each, as, concurrency," in str(error)


def test_every_mistake_of_a_workflow_is_collected() -> None:
    """With an errors list, each shape mistake is noted at its own place and reading goes on."""
    errors: list[UsageError] = []
    text = WORKFLOW.replace("  - id: again\n    task: rate", "  - id: again\n    task: rate\n    workflow: x")
    text = text.replace("name: rate_twice", "name: rate_twice\nlimts: {}")
    decl = load_yaml_text(text + "---\nname: ok\ninstructions: hi\n", "w.yaml", errors=errors)
    assert ([], ["ok"]) == (decl.workflows, [t.name for t in decl.templates])
    assert [(2, "`limts`: unknown key"), (15, "exactly one of `task`, `workflow`, `call` or `parallel`")] == [
        (e.location.line if e.location else None, m)
        for e in errors
        for m in ("`limts`: unknown key", "exactly one of `task`, `workflow`, `call` or `parallel`")
        if m in e.message
    ]


def test_a_state_path_typo_is_reported_at_its_line_and_column_by_load(tmp_path: Path) -> None:
    """`state.scroe` in a route stops `TaskSystem.load` with file:line:col of the path, and "did you mean"."""
    path = tmp_path / "w.yaml"
    text = "name: rate\nparams: {text: str}\ninstructions: hi\n---\n" + WORKFLOW.replace(
        "state.score <", "state.scroe <"
    )
    path.write_text(text, encoding="utf-8")
    with pytest.raises(WorkflowError) as raised:
        TaskSystem(templates=tmp_path)
    lines = text.splitlines()
    line = next(i for i, t in enumerate(lines, start=1) if "state.scroe" in t)
    assert SourceLocation(file=str(path), line=line, column=lines[line - 1].index("state.scroe") + 1) == (
        raised.value.location
    )
    assert ("E113", "first") == (raised.value.code, raised.value.step)
    assert "Did you mean `state.score`?" in str(raised.value)


def test_the_cache_key_of_a_template() -> None:
    """`cache: true | false | {ttl: ...}` is read into the template's `CachePolicy`; a bad TTL points at its line."""
    hour_and_a_half = load_yaml_text("name: t\ninstructions: x\ncache: {ttl: 1h30m}\n").templates[0].cache
    off = load_yaml_text("name: t\ninstructions: x\ncache: false\n").templates[0].cache
    assert (5400.0, False) == (
        hour_and_a_half.ttl_seconds if hour_and_a_half else None,
        off.enabled if off else None,
    )
    with pytest.raises(TemplateError) as info:
        load_yaml_text("name: t\ninstructions: x\ncache: {ttl: soon}\n", "t.yaml")
    assert "'soon' is not a duration" in info.value.message
    assert 3 == (info.value.location.line if info.value.location else None)
