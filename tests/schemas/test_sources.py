"""Tests for schemas given as JSON Schema or as Python classes named by import path."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from atomtask import OutputFormat, SchemaError, TaskSystem, Template
from atomtask.schemas import ModelRegistry
from atomtask.schemas._sources import (
    import_schema_class,
    json_schema_file_definition,
    json_schema_warnings,
    output_schema_warnings,
)
from structlog.testing import capture_logs

from tests.helpers import Recorder

MODELS = """
from pydantic import BaseModel


class Contact(BaseModel):
    name: str


class Contract(BaseModel):
    id: int


NOT_A_MODEL = 3
"""


@pytest.fixture
def app_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A throwaway package `atomtask_app_<id>` with a `schemas` module, importable from sys.path."""
    name = f"atomtask_app_{abs(hash(tmp_path)) % 10**8}"
    package = tmp_path / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "schemas.py").write_text(MODELS)
    (tmp_path / "sneaky.py").write_text("raise SystemExit('sneaky was imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


# ---------------------------------------------------------------------------------------------
# Python classes by import path


def test_allowed_class_is_imported(app_package: str) -> None:
    """A class in an importable package is imported and returned."""
    cls = import_schema_class(f"{app_package}.schemas:Contact", importable=(app_package,))
    assert "Contact" == cls.__name__
    assert f"{app_package}.schemas" == cls.__module__


def test_refused_module_is_never_imported(app_package: str) -> None:
    """A module outside the importable packages is refused before any import happens."""
    with pytest.raises(SchemaError) as raised:
        import_schema_class("sneaky:Anything", importable=(app_package,), where="template 't'")
    assert "sneaky" not in sys.modules
    message = str(raised.value)
    assert "Template 't' names the Python class 'sneaky:Anything'" in message
    assert f"module 'sneaky' is not in the importable packages ('{app_package}')" in message
    assert "`TaskSystem(importable=['sneaky'])`" in message
    assert "on the command line: `--allow-import sneaky` or `ATOMTASK_IMPORTABLE=sneaky`" in message


def test_prefix_must_match_whole_package_names(app_package: str) -> None:
    """Allowing `app` does not allow `app_evil`: prefixes match at dots only."""
    with pytest.raises(SchemaError, match="is not in the importable packages"):
        import_schema_class(f"{app_package}_evil.schemas:Contact", importable=(app_package,))
    assert f"{app_package}_evil" not in sys.modules


def test_nothing_is_importable_by_default() -> None:
    """With no importable packages configured, every reference is refused (even the standard library)."""
    with pytest.raises(SchemaError, match=r"importable packages \(none\)"):
        import_schema_class("json:JSONDecoder", importable=())


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("{pkg}.schemas.Contact", "is malformed; write it as `package.module:ClassName`"),
        (".relative:Contact", "is malformed"),
        (
            "{pkg}.schemas:Contcat",
            "has no class 'Contcat' (named in a schema). Did you mean 'Contact' or 'Contract'? "
            "Pydantic models there: Contact, Contract.",
        ),
        ("{pkg}.schemas:NOT_A_MODEL", "is not a Pydantic model class"),
        ("{pkg}.missing:Contact", "Cannot import module '{pkg}.missing'"),
    ],
)
def test_reference_errors(app_package: str, path: str, fragment: str) -> None:
    """Malformed paths, missing modules or classes, and non-models each get their own message."""
    with pytest.raises(SchemaError) as raised:
        import_schema_class(path.format(pkg=app_package), importable=(app_package,))
    assert fragment.format(pkg=app_package) in str(raised.value)


def test_output_format_names_a_python_class(app_package: str) -> None:
    """`schema: {python: ...}` in an output format resolves through the TaskSystem's importable packages."""
    rec = Recorder({"name": "Ann"})
    system = TaskSystem(model=rec.model, importable=[app_package])
    schema = {"python": f"{app_package}.schemas:Contact"}
    system.register(Template(name="t", instructions="x", output_format=OutputFormat(type="json", schema=schema)))
    assert "Ann" == system.execute("t", {}).unwrap().name


def test_yaml_named_python_schema_and_refusal(app_package: str, tmp_path: Path) -> None:
    """A named schema `{name, python}` registers the class; without permission the file fails at its line."""
    source = tmp_path / "s.yaml"
    source.write_text(f"schemas:\n  - name: Person\n    python: {app_package}.schemas:Contact\n")
    system = TaskSystem(importable=[app_package])
    system.load(source)
    assert "Contact" == system.models.get("Person").__name__
    with pytest.raises(SchemaError) as raised:
        TaskSystem().load(source)
    assert str(raised.value).startswith(f"{source}:3:13: Schema 'Person' names the Python class")


# ---------------------------------------------------------------------------------------------
# JSON Schema declarations


def test_inline_json_schema_output(tmp_path: Path) -> None:
    """`schema: {json_schema: ...}` in a template file gives a typed output class."""
    source = tmp_path / "t.yaml"
    source.write_text(
        textwrap.dedent(
            """\
            name: rate
            instructions: Rate it.
            output_format:
              type: json
              schema:
                description: A rating.
                json_schema: {type: object, properties: {stars: {type: integer, minimum: 1, maximum: 5}}}
            """
        )
    )
    rec = Recorder({"stars": 9}, {"stars": 4})
    system = TaskSystem(model=rec.model, templates=source)
    result = system.execute("rate", {})
    assert 4 == result.unwrap().stars
    assert "RateOutput" == type(result.parsedContent).__name__
    assert "A rating." == rec.calls[0][1].output_tools[0].description


def test_named_json_schema_in_yaml_is_usable_from_fields(tmp_path: Path) -> None:
    """A `{name, json_schema}` declaration registers a class that field types may reference."""
    source = tmp_path / "s.yaml"
    source.write_text(
        textwrap.dedent(
            """\
            schemas:
              - name: Box
                fields:
                  - {name: money, type: Money}
              - name: Money
                json_schema: {type: object, properties: {amount: {type: number}}, required: [amount]}
            """
        )
    )
    system = TaskSystem(templates=source)
    box = system.models.get("Box").model_validate({"money": {"amount": 2.5}})
    assert 2.5 == box.money.amount  # type: ignore[attr-defined]  # built at runtime


def test_json_file_is_a_named_schema_and_a_ref_target(tmp_path: Path) -> None:
    """`Money.json` registers 'Money'; another file's relative `$ref` to it resolves."""
    (tmp_path / "Money.json").write_text(json.dumps({"type": "number", "minimum": 0}))
    (tmp_path / "Price.schema.json").write_text(
        json.dumps({"type": "object", "properties": {"net": {"$ref": "Money.json"}}, "required": ["net"]})
    )
    system = TaskSystem(templates=tmp_path)
    price = system.models.get("Price")
    assert {"Money", "Price"} <= set(system.models.names())
    assert 3 == price.model_validate({"net": 3}).net  # type: ignore[attr-defined]  # built at runtime
    with pytest.raises(ValueError, match="-1 is less than the minimum of 0"):
        price.model_validate({"net": -1})


def test_invalid_json_file_points_at_line_and_column(tmp_path: Path) -> None:
    """A `.json` schema that is not JSON fails with its line and column."""
    path = tmp_path / "Bad.json"
    path.write_text('{\n  "type": "object",\n}\n')
    with pytest.raises(SchemaError) as raised:
        json_schema_file_definition(path)
    assert str(raised.value).startswith(f"{path}:3:1: Invalid JSON in schema file")


def test_json_file_must_hold_a_schema(tmp_path: Path) -> None:
    """A `.json` file holding a list is not a schema."""
    path = tmp_path / "List.json"
    path.write_text("[1, 2]")
    with pytest.raises(SchemaError, match="holds a list, not a JSON Schema"):
        json_schema_file_definition(path)


def test_mixed_inline_keys_are_refused() -> None:
    """An inline schema may not combine `json_schema` with `python` or `fields`."""
    system = TaskSystem()
    schema = {"json_schema": {}, "python": "x:Y"}
    with pytest.raises(SchemaError, match="mixes keys"):
        system.register(Template(name="t", instructions="x", output_format=OutputFormat(type="json", schema=schema)))


def test_registry_documents_feed_refs() -> None:
    """`models.add_json_document` makes a document reachable by `$ref` from later schemas."""
    registry = ModelRegistry()
    registry.add_json_document("https://example.org/n.json", {"type": "integer"})
    assert "https://example.org/n.json" in registry.json_resources.documents


def test_invalid_inline_json_schema_names_the_template() -> None:
    """An inline `json_schema` that is neither an object nor a boolean is refused, naming the template."""
    system = TaskSystem()
    schema = {"json_schema": "an integer"}
    with pytest.raises(SchemaError, match="Inline JSON Schema of template 't' is invalid: `json_schema"):
        system.register(Template(name="t", instructions="x", output_format=OutputFormat(type="json", schema=schema)))


def test_base_uri_is_not_a_yaml_key(tmp_path: Path) -> None:
    """`base_uri` is set from the file, never declared: declaring it is refused."""
    source = tmp_path / "s.yaml"
    source.write_text("name: X\njson_schema: {}\nbase_uri: https://evil.example/\n")
    with pytest.raises(SchemaError, match="`base_uri` is not a schema key"):
        TaskSystem().load(source)


def test_json_file_without_schema_keywords_is_not_a_schema(tmp_path: Path) -> None:
    """A JSON object with no JSON Schema keyword (a data file) is not taken as a schema."""
    path = tmp_path / "settings.json"
    path.write_text('{"name": "app", "description": "settings", "version": 3}')
    assert None is json_schema_file_definition(path)
    (tmp_path / "Empty.json").write_text('{"type": "object"}')
    assert "Empty" == getattr(json_schema_file_definition(tmp_path / "Empty.json"), "name", None)


@pytest.mark.parametrize("depth", [500, 100_000])
def test_deeply_nested_json_file_is_a_usage_error(tmp_path: Path, depth: int) -> None:
    """JSON nested past the limit is refused with its line and column, before `json` recurses."""
    path = tmp_path / "Deep.json"
    path.write_text('{"items": ' + "[" * depth + "]" * depth + "}")
    with pytest.raises(SchemaError, match="JSON nested more than 100 levels deep") as raised:
        json_schema_file_definition(path)
    assert (1, 110) == (raised.value.location.line, raised.value.location.column)  # type: ignore[union-attr]  # located


def test_json_file_that_is_not_utf8_names_the_file(tmp_path: Path) -> None:
    """A Latin-1 `.json` file is a usage error naming the file and the fix."""
    path = tmp_path / "Bad.json"
    path.write_bytes(b'{"description": "caf\xe9"}')
    with pytest.raises(SchemaError, match=r"is not valid UTF-8: byte 0xe9 .* Save the file as UTF-8"):
        json_schema_file_definition(path)


def test_json_schema_errors_point_at_line_and_column(tmp_path: Path) -> None:
    """A mistake inside a `.json` schema is located at the offending key, not just the file."""
    path = tmp_path / "Age.json"
    path.write_text(
        '{\n  "type": "object",\n  "properties": {\n    "years": {"type": "integer", "minimum": "0"}\n  }\n}\n'
    )
    with pytest.raises(SchemaError, match="at `/properties/years/minimum`: '0' is not of type 'number'") as raised:
        TaskSystem().load(path)
    assert (str(path), 4, 34) == (
        raised.value.location.file,  # type: ignore[union-attr]  # located
        raised.value.location.line,  # type: ignore[union-attr]
        raised.value.location.column,  # type: ignore[union-attr]
    )


def test_json_schema_written_directly_under_schema_is_json_schema(tmp_path: Path) -> None:
    """`output_format.schema` holding `$schema`/`type`/`properties` is read as JSON Schema, not as `fields`."""
    path = tmp_path / "t.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            name: judge
            instructions: Judge it
            output_format:
              type: json
              schema:
                $schema: https://json-schema.org/draft/2020-12/schema
                type: object
                properties:
                  verdict: {type: string, enum: ["yes", "no"]}
                required: [verdict]
            """
        )
    )
    system = TaskSystem(templates=path)
    output = system.templates.compiled("judge").output_cls
    assert output is not None
    assert "yes" == output.model_validate({"verdict": "yes"}).verdict  # type: ignore[attr-defined]  # built at runtime
    with pytest.raises(ValueError, match="'maybe' is not one of"):
        output.model_validate({"verdict": "maybe"})


@pytest.mark.parametrize("schema", [{"$ref": "#/$defs/N", "$defs": {"N": {"type": "integer"}}}, {"items": {}}])
def test_any_json_schema_keyword_makes_an_inline_json_schema(schema: dict[str, object]) -> None:
    """A mapping under `schema:` with a JSON Schema keyword and no `fields` becomes `{json_schema: ...}`."""
    assert {"json_schema": schema} == OutputFormat(type="json", schema=schema).schema_


def test_a_json_schema_with_warnings_loads_and_logs_them_at_info(tmp_path: Path) -> None:
    """A `.json` file with a suspected typo loads; the warning is logged (`json_schema_warning`) and listed, located."""
    path = tmp_path / "Age.json"
    path.write_text('{\n  "type": "integer",\n  "minimun": 0\n}\n')
    system = TaskSystem()
    with capture_logs() as logs:
        system.load(path)
    assert [("json_schema_warning", "info", "W102")] == [
        (e["event"], e["log_level"], e["code"]) for e in logs if e["event"] == "json_schema_warning"
    ]
    definition = json_schema_file_definition(path)
    assert definition is not None
    [(code, message, where)] = json_schema_warnings([definition], system.models)
    assert ("W102", 3) == (code, where.line if where else None)
    assert message.startswith("JSON Schema 'Age': unknown keyword 'minimun' at `/`. Did you mean 'minimum'?")


def test_output_schema_warnings_are_only_those_of_an_inline_json_schema() -> None:
    """An inline `json_schema` output reports its warnings; a named schema's are reported where it is declared."""
    system = TaskSystem()
    inline = OutputFormat(type="json", schema={"json_schema": {"type": "string", "format": "Email"}})
    system.register(Template(name="who", instructions="Who?", output_format=inline))
    compiled = system.templates.compiled("who")
    assert ["W103"] == [code for code, _, _ in output_schema_warnings(compiled.template, compiled.output_cls)]
    system.models.register(compiled.output_cls, "Named")
    system.register(
        Template(name="named", instructions="Who?", output_format=OutputFormat(type="json", schema="Named"))
    )
    named = system.templates.compiled("named")
    assert [] == output_schema_warnings(named.template, named.output_cls)
