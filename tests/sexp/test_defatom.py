"""`defatom` and `defschema` forms become the same Template and SchemaDef as YAML, checked the same way."""

from __future__ import annotations

from typing import Any

import pytest
from atomtask import (
    CachePolicy,
    DuplicateNameError,
    OutputFormat,
    OutputMode,
    ParamSpec,
    SchemaError,
    SourceLocation,
    TaskSystem,
    Template,
    TemplateError,
)
from atomtask.loading._yaml import load_yaml_text
from atomtask.sexp._forms import TEMPLATE_CLAUSES, StringOrigin, schema_from_form, template_from_form
from atomtask.sexp._reader import SList, read

from tests.helpers import Recorder

ISSUE_EXAMPLE = """\
(defatom extract_contact
  (params (text str "The text to read")
          (locale str (default "en")))
  (description "Pull contact details out of text")
  (system "You are a careful data-entry clerk.")
  (instructions "Extract the contact from ({{locale}}): {{text}}")
  (output_format ((type "json") (schema "Contact") (mode "tool")))
  (model "openai-chat:gpt-4o-mini")
  (retries 2))
"""

SAME_IN_YAML = """\
name: extract_contact
params:
  text: {type: str, description: The text to read}
  locale: {type: str, default: en}
description: Pull contact details out of text
system: You are a careful data-entry clerk.
instructions: "Extract the contact from ({{locale}}): {{text}}"
output_format: {type: json, schema: Contact, mode: tool}
model: openai-chat:gpt-4o-mini
retries: 2
"""


def form(source: str) -> SList:
    (node,) = read(source, "t.sexp")
    assert isinstance(node, SList)
    return node


def template(source: str) -> Template:
    return template_from_form(form(source))


def loc(line: int, column: int) -> SourceLocation:
    return SourceLocation(file="t.sexp", line=line, column=column)


def test_defatom_declares_the_same_template_as_yaml() -> None:
    """The issue's example and its YAML twin produce equal templates."""
    (from_yaml,) = load_yaml_text(SAME_IN_YAML).templates
    assert from_yaml.model_dump() == template(ISSUE_EXAMPLE).model_dump()


def test_the_template_remembers_its_form_and_clauses() -> None:
    """The template's location is its `(defatom` form; each clause and parameter has its own."""
    declared = template(ISSUE_EXAMPLE)
    assert loc(1, 1) == declared.location
    assert loc(3, 11) == declared.location_of("params.locale")
    assert loc(7, 3) == declared.location_of("output_format")
    assert loc(7, 33) == declared.location_of("output_format.schema")
    assert loc(8, 10) == declared.location_of("model")
    assert loc(6, 18) == declared.location_of("instructions")


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ("(params a b)", {"a": ParamSpec(type="any"), "b": ParamSpec(type="any")}),
        ("(params (n int))", {"n": ParamSpec(type="int")}),
        ('(params (n "list[int]" "Counts"))', {"n": ParamSpec(type="list[int]", description="Counts")}),
        ("(params (n int? (default nil)))", {"n": ParamSpec(type="int?", default=None)}),
        ("(params (n (default (1 2))))", {"n": ParamSpec(type="any", default=[1, 2])}),
    ],
)
def test_param_shapes(params: str, expected: dict[str, ParamSpec]) -> None:
    """Bare names (type any), `(name type)`, `(name type "description")` and `(default v)`."""
    declared = template(f'(defatom t {params} (instructions "x"))')
    assert expected == declared.params
    assert [name for name, spec in expected.items() if spec.required] == [
        name for name, spec in declared.params.items() if spec.required
    ]


def test_output_format_may_be_written_as_pairs_and_schema_implies_json() -> None:
    """`(output_format (schema X))` is `{type: json, schema: X}`; the mode defaults to tool."""
    declared = template('(defatom t (instructions "x") (output_format (schema Contact) (mode prompted)))')
    assert OutputFormat(type="json", schema="Contact", mode=OutputMode.PROMPTED) == declared.output_format


@pytest.mark.parametrize(
    "schema",
    [
        "(schema ((name str) (email str?)))",
        "(schema (name str) (email str?))",
    ],
)
def test_inline_schema_becomes_an_inline_definition(schema: str) -> None:
    """An inline schema is the `{fields: [...]}` definition YAML accepts."""
    declared = template(f'(defatom t (instructions "x") (output_format {schema}))')
    fields = [{"name": "name", "type": "str"}, {"name": "email", "type": "str?"}]
    assert {"fields": fields} == declared.output_format.schema_


def test_inline_schema_fields_take_options() -> None:
    """Field specs accept a description and the schema options (default, enum, constraints)."""
    declared = template(
        '(defatom t (instructions "x") (output_format (schema ((n int "How many" (ge 0) (default 1)) '
        "(tag str (enum a b))))))"
    )
    assert {
        "fields": [
            {"name": "n", "type": "int", "description": "How many", "ge": 0, "default": 1},
            {"name": "tag", "type": "str", "enum": ["a", "b"]},
        ]
    } == declared.output_format.schema_


def test_limits_clause() -> None:
    """`(limits (requests 3) (total_tokens 100))` sets the template's usage limits."""
    declared = template('(defatom t (instructions "x") (limits (requests 3) (total_tokens 100)))')
    assert declared.limits is not None
    assert (3, 100) == (declared.limits.requests, declared.limits.total_tokens)


@pytest.mark.parametrize(
    ("source", "where", "fragment"),
    [
        ('(defatom (instructions "x"))', (1, 10), "`defatom` needs a task name first"),
        ("(defatom t)", (1, 1), "has no `instructions` clause"),
        ('(defatom t (instructions "x") (instructoins "y"))', (1, 31), "Unknown clause 'instructoins'"),
        ('(defatom t (instructions "x") (instructions "y"))', (1, 31), "The clause 'instructions' is repeated"),
        ('(defatom t (instructions "x") "loose")', (1, 31), "Expected a clause like `(params ...)`"),
        ("(defatom t (instructions 42))", (1, 26), "takes a string"),
        ('(defatom t (instructions "x" "y"))', (1, 12), "takes exactly one value, got 2"),
        ('(defatom t (instructions "x") (retries 99))', (1, 31), "`retries`: Input should be less than or equal"),
        ('(defatom t (params (n int (dflt 1))) (instructions "x"))', (1, 27), "Unknown option"),
        ('(defatom t (params (n int "d" "e")) (instructions "x"))', (1, 31), "Too many values for 'n'"),
        ('(defatom t (params n n) (instructions "x"))', (1, 22), "Parameter 'n' is declared twice"),
        ('(defatom t (params ("n")) (instructions "x"))', (1, 20), "Expected a parameter of"),
        ('(defatom t (instructions "x") (output_format (kind json)))', (1, 46), "Unknown key 'kind'"),
        ('(defatom t (instructions "x") (output_format (schema)))', (1, 46), "`(schema)` in defatom 't' is empty"),
        ('(defatom t (instructions "x") (output_format (type "json")))', (1, 31), "no `schema`"),
        ('(defatom bad.name (instructions "x"))', (1, 10), "template name 'bad.name' must start"),
    ],
)
def test_malformed_defatom_forms_are_template_errors_at_the_clause(
    source: str, where: tuple[int, int], fragment: str
) -> None:
    """Each mistake is a TemplateError at the offending clause, saying what is valid."""
    with pytest.raises(TemplateError) as info:
        template(source)
    assert loc(*where) == info.value.location
    assert fragment in info.value.message


def test_model_settings_clause_as_pairs_or_one_list() -> None:
    """`(model_settings ((temperature 0) (max_tokens 50)))` and the unwrapped pairs declare the same settings."""
    wrapped = template('(defatom t (instructions "x") (model_settings ((temperature 0) (stop_sequences ("END")))))')
    pairs = template('(defatom t (instructions "x") (model_settings (temperature 0) (stop_sequences ("END"))))')
    assert {"temperature": 0, "stop_sequences": ["END"]} == wrapped.model_settings == pairs.model_settings


def test_model_setting_errors_point_at_the_entry() -> None:
    """An unknown setting is refused at registration with "did you mean", at the line and column of its pair."""
    system = TaskSystem()
    with pytest.raises(TemplateError) as info:
        system.defatom(
            '(defatom t (instructions "x")\n  (model_settings ((max_tokens 5) (temprature 0))))', file="t.sexp"
        )
    assert loc(2, 35) == info.value.location
    assert "Unknown model setting 'temprature' in template 't'. Did you mean 'temperature'?" in info.value.message


@pytest.mark.parametrize(
    ("source", "where", "fragment"),
    [
        ('(defatom t (instructions "x") (temperature 0))', (1, 31), "`(model_settings ((temperature ...)))`"),
        ('(defatom t (instructions "x") (model_settings (temperature)))', (1, 47), "list of `(key value)` pairs"),
        ('(defatom t (instructions "x") (model_settings (seed 1) (seed 2)))', (1, 56), "'seed' is repeated"),
    ],
)
def test_malformed_model_settings_are_template_errors(source: str, where: tuple[int, int], fragment: str) -> None:
    """A setting written as a clause, a pair without a value, a repeated key: each at its form, saying the fix."""
    with pytest.raises(TemplateError) as info:
        template(source)
    assert loc(*where) == info.value.location
    assert fragment in info.value.message


def test_unknown_clause_lists_the_valid_ones_and_suggests() -> None:
    """An unknown clause names every valid clause and the nearest one."""
    with pytest.raises(TemplateError) as info:
        template('(defatom t (instructions "x") (sytem "y"))')
    assert "Did you mean 'system'?" in info.value.message
    assert f"Valid clauses: {', '.join(TEMPLATE_CLAUSES)}." in info.value.message


def test_registration_errors_point_into_the_source() -> None:
    """Unknown schemas and undeclared placeholders come from the same checks as YAML, located in the sexp."""
    system = TaskSystem(templates="templates")
    with pytest.raises(SchemaError) as unknown:
        system.defatom('(defatom t (instructions "x")\n  (output_format (schema Contct)))', file="t.sexp")
    assert loc(2, 18) == unknown.value.location
    assert "Unknown schema 'Contct' in template 't'. Did you mean 'Contact'?" in unknown.value.message
    with pytest.raises(TemplateError) as undeclared:
        system.defatom('(defatom t (params text)\n  (instructions "Read:\n  {{txt}}"))', file="t.sexp")
    assert loc(3, 3) == undeclared.value.location
    assert "Placeholder '{{txt}}'" in undeclared.value.message
    assert "Did you mean 'text'?" in undeclared.value.message


def test_placeholder_columns_account_for_escapes() -> None:
    """An escape before a placeholder shifts its column by the escape's source length."""
    origin = StringOrigin(location=loc(1, 5), raw='a\\"b\\n{{x}}')
    text = 'a"b\n{{x}}'
    assert loc(1, 11) == origin.locate(text.index("{{"), text)


def test_redefining_with_other_content_is_a_duplicate() -> None:
    """Re-evaluating the same defatom is a no-op; different content under the name is refused."""
    system = TaskSystem()
    source = '(defatom t (instructions "x"))'
    assert "t" == system.defatom(source)
    assert "t" == system.defatom(source)
    with pytest.raises(DuplicateNameError):
        system.defatom('(defatom t (instructions "y"))')


def test_defschema_declares_a_named_schema() -> None:
    """`(defschema Name "description" (field type "description")...)` is a located SchemaDef."""
    schema = schema_from_form(form('(defschema Contact "A person"\n  (name str "Full name")\n  (email str?))'))
    assert ("Contact", "A person") == (schema.name, schema.description)
    assert [("name", "str", "Full name"), ("email", "str?", None)] == [
        (f.name, f.type, f.description) for f in schema.fields
    ]
    assert loc(1, 1) == schema.location
    assert loc(3, 3) == schema.fields[1].location


def test_defschema_registers_and_a_defatom_can_use_it() -> None:
    """A defschema'd class answers a defatom's task."""
    rec = Recorder({"name": "Ada", "email": None})
    system = TaskSystem(model=rec.model)
    value: Any = system.defatom(
        "(defschema Contact (name str) (email str?))\n"
        '(defatom find (params text) (instructions "{{text}}") (output_format (schema Contact)))\n'
        '(unwrap (find (text "Ada")))'
    )
    assert system.models.get("Contact") is type(value)
    assert "Ada" == value.name


@pytest.mark.parametrize(
    ("source", "where", "fragment"),
    [
        ("(defschema (a str))", (1, 12), "`defschema` needs a schema name first"),
        ("(defschema C a)", (1, 14), "Expected schema 'C' as"),
        ("(defschema C (a strr))", (1, 14), "Unknown schema 'strr'"),
        ("(defschema C (a str (ge 1)))", (1, 14), "`ge` does not apply"),
        ("(defschema C)", (1, 1), "has no fields"),
    ],
)
def test_malformed_defschema_forms_are_schema_errors(source: str, where: tuple[int, int], fragment: str) -> None:
    """defschema mistakes are SchemaErrors at the form or field, from the same checks as YAML."""
    with pytest.raises(SchemaError) as info:
        TaskSystem().defatom(source, file="t.sexp")
    assert loc(*where) == info.value.location
    assert fragment in info.value.message


@pytest.mark.parametrize(
    ("clause", "expected"),
    [
        ("(cache true)", CachePolicy()),
        ("(cache false)", CachePolicy(enabled=False)),
        ('(cache ((ttl "1h")))', CachePolicy(ttl="1h")),
        ("(cache (ttl 90))", CachePolicy(ttl=90)),
    ],
)
def test_the_cache_clause_reads_like_yaml(clause: str, expected: CachePolicy) -> None:
    """`(cache true)`, `(cache false)`, `(cache ((ttl "1h")))`: the same `CachePolicy` as `cache:` in YAML."""
    system = TaskSystem()
    system.defatom(f'(defatom t (instructions "x") {clause})')
    assert expected == system.templates.get("t").cache


@pytest.mark.parametrize(
    ("clause", "fragment"),
    [
        ("(cache (tll 90))", "Unknown key 'tll' in `cache` of defatom 't'. Did you mean 'ttl'?"),
        ('(cache "soon")', "'soon' is not a cache setting; write `true`, `false` or `{ttl: 1h}`"),
        ('(cache (ttl "x"))', "`cache.ttl`: 'x' is not a duration"),
    ],
)
def test_a_bad_cache_clause_is_a_template_error(clause: str, fragment: str) -> None:
    """A misspelt key, a string, a bad TTL: each a TemplateError saying what the clause takes."""
    with pytest.raises(TemplateError) as info:
        TaskSystem().defatom(f'(defatom t (instructions "x") {clause})')
    assert fragment in info.value.message
