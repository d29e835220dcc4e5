"""Valid JSON Schemas always load: suspected typos and unchecked formats are warnings, `strict_schema` refuses them."""

from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from atomtask import OutputFormat, SchemaError, TaskSystem, Template
from atomtask.cli._main import main
from atomtask.lint import check
from atomtask.schemas._declarations import JsonSchemaDef
from atomtask.schemas.json_schema._models import build_json_schema_model
from pydantic import BaseModel, ValidationError


def build(schema: Any, *, strict: bool = False, name: str = "Thing") -> type[BaseModel]:
    return build_json_schema_model(JsonSchemaDef(name=name, json_schema=schema, strict_schema=strict))


def warnings(schema: Any) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(w.code, w.pointer, w.suggestions) for w in build(schema).json_schema_warnings]  # type: ignore[attr-defined]


def valid(cls: type[BaseModel], data: Any) -> bool:
    envelope = getattr(cls, "json_schema_envelope", False)
    try:
        cls.model_validate_json(json.dumps({"response": data} if envelope else data))
    except ValidationError:
        return False
    return True


# -- vendor keywords load with no warning ---------------------------------------------------------------


@pytest.mark.parametrize(
    "extra",
    [
        {"_format": "email"},
        {"_uniqueItems": True},
        {"x-format": "date"},
        {"X-Order": 1},
        {"javaType": "com.example.Name"},
        {"tsType": "Name"},
        {"$comment": "kept in sync"},
        {"examples": ["a"], "deprecated": True, "readOnly": True, "writeOnly": False},
        {"example": "a"},
        {"enumNames": ["A"]},
        {"nullable": True, "discriminator": {"propertyName": "k"}},
    ],
)
def test_vendor_keywords_load_without_warnings(extra: dict[str, Any]) -> None:
    """`x-...`/`_...` keywords, code-generator and OpenAPI keywords and annotations are not suspected."""
    assert [] == warnings({"type": "string", **extra})


# -- suspected typos: W102 with did-you-mean ----------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "object", "additonalProperties": False}, ("W102", "/additonalProperties", "additionalProperties")),
        ({"properties": {"n": {"type:": "integer"}}}, ("W102", "/properties/n/type:", "type")),
        ({"type": "integer", "minimun": 3}, ("W102", "/minimun", "minimum")),
        ({"items": {"maxLenght": 3}}, ("W102", "/items/maxLenght", "maxLength")),
        ({"enun": ["a"]}, ("W102", "/enun", "enum")),
        ({"type": "object", "requried": ["a"]}, ("W102", "/requried", "required")),
        ({"type": "string", "fromat": "email"}, ("W102", "/fromat", "format")),
        ({"type": "string", "pattren": "^a"}, ("W102", "/pattren", "pattern")),
        ({"type": "integer", "mnimum": 3}, ("W102", "/mnimum", "minimum")),
        ({"type": "object", "propreties": {}}, ("W102", "/propreties", "properties")),
        ({"type": "string", "formta": "date"}, ("W102", "/formta", "format")),
    ],
)
def test_a_suspected_typo_loads_with_a_warning_saying_did_you_mean(schema: Any, expected: tuple[str, ...]) -> None:
    """The schema loads (JSON Schema ignores the word); the warning names the place and the near keyword."""
    [(code, pointer, suggestions)] = warnings(schema)
    assert expected == (code, pointer, suggestions[0])


@pytest.mark.parametrize(
    "extra",
    [{"x-fromat": "email"}, {"_fromat": "email"}, {"javaType": "a.B"}, {"tsType": "B"}, {"ofrmatX": 1}],
)
def test_a_swapped_letter_check_spares_vendor_and_distant_words(extra: dict[str, Any]) -> None:
    """Transpositions are looked for in suspect words only: vendor prefixes and far words stay silent."""
    assert [] == warnings({"type": "string", **extra})


def test_a_typo_is_ignored_as_json_schema_says() -> None:
    """What a misspelt keyword meant is not enforced: the instance JSON Schema accepts is accepted."""
    cls = build({"type": "integer", "minimun": 3})
    assert (True, False) == (valid(cls, -5), valid(cls, "x"))
    message = cls.json_schema_warnings[0].message  # type: ignore[attr-defined]
    assert "unknown keyword 'minimun' at `/`. Did you mean 'minimum'?" in message


@pytest.mark.parametrize(
    ("schema", "pointer"),
    [
        ({"$schema": "http://json-schema.org/draft-04/schema#", "const": 2}, "/const"),
        ({"type": "object", "dependencies": {"a": ["b"]}}, "/dependencies"),
    ],
)
def test_a_keyword_of_another_draft_is_a_warning(schema: Any, pointer: str) -> None:
    """`const` under draft-04 and `dependencies` under 2020-12 validate nothing there: W102 names their drafts."""
    [warning] = build(schema).json_schema_warnings  # type: ignore[attr-defined]
    assert ("W102", pointer) == (warning.code, warning.pointer)
    assert "validates only in" in warning.message


def test_draft4_exclusive_bounds_are_not_suspected() -> None:
    """Draft-04's boolean `exclusiveMinimum` is applied through `minimum`, not ignored."""
    cls = build({"$schema": "http://json-schema.org/draft-04/schema#", "minimum": 0, "exclusiveMinimum": True})
    assert ((), False, True) == (cls.json_schema_warnings, valid(cls, 0), valid(cls, 1))  # type: ignore[attr-defined]


def test_a_schema_without_dollar_schema_in_an_older_draft_loads() -> None:
    """No `$schema`, and 2020-12's metaschema refuses it: the newest draft that accepts it applies."""
    cls = build({"type": "number", "minimum": 0, "exclusiveMinimum": True})  # draft-04 idiom
    assert (False, True) == (valid(cls, 0), valid(cls, 0.5))
    pairs = build({"type": "array", "items": [{"type": "string"}], "additionalItems": False}, name="Pair")
    assert (True, False) == (valid(pairs, ["a"]), valid(pairs, ["a", 1]))


def test_an_invalid_schema_is_still_refused() -> None:
    """A schema no draft accepts is refused with the 2020-12 error."""
    with pytest.raises(SchemaError, match="is not valid JSON Schema: at `/type`"):
        build({"type": "strin"})


# -- formats ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "hint", "suggestion"),
    [
        ("URI", "Did you mean 'uri'", "uri"),
        ("utc-millisec", "not one that is checked", None),
        ("^[0-9]{5}$", "It looks like a regular expression: did you mean `pattern`?", "pattern"),
        ("emial", "Did you mean 'email'?", "email"),
    ],
)
def test_an_unknown_format_is_an_annotation_and_a_warning(fmt: str, hint: str, suggestion: str | None) -> None:
    """The schema loads, any string passes (as JSON Schema says), and W103 says what was meant."""
    cls = build({"type": "string", "format": fmt})
    assert (True, False) == (valid(cls, "anything at all"), valid(cls, 3))
    [warning] = cls.json_schema_warnings  # type: ignore[attr-defined]
    assert ("W103", "/format") == (warning.code, warning.pointer)
    assert hint in warning.message
    assert suggestion == (warning.suggestions[0] if warning.suggestions else None)


def test_a_number_format_on_a_string_is_a_warning() -> None:
    """`int64` on a string schema (64-bit ids sent as text) checks nothing: W103 says to use `pattern`."""
    [warning] = build({"type": "string", "format": "int64"}).json_schema_warnings  # type: ignore[attr-defined]
    assert ("W103", True) == (warning.code, "`pattern`" in warning.message)


def test_annotation_formats_by_definition_are_not_reported() -> None:
    """OpenAPI's `binary` and `password` are hints, never checks: no warning."""
    assert [] == warnings({"type": "object", "properties": {"a": {"format": "binary"}, "b": {"format": "password"}}})


# -- strict_schema refuses at load ----------------------------------------------------------------------


def test_strict_schema_turns_a_warning_into_a_refusal() -> None:
    """With `strict_schema: true` the first warning is a `SchemaError` at its place, with the suggestion."""
    with pytest.raises(SchemaError) as raised:
        build({"type": "object", "properties": {"link": {"format": "URI"}}, "minimun": 1}, strict=True)
    message = str(raised.value)
    assert message.startswith("JSON Schema 'Thing': unknown keyword 'minimun' at `/`. Did you mean 'minimum'?")
    assert "`strict_schema: true` refuses what would otherwise load with a warning (W102). (1 more:" in message
    assert ["minimum"] == raised.value.suggestions


def test_strict_schema_loads_a_clean_schema() -> None:
    """A schema with nothing to warn about loads under `strict_schema` too."""
    cls = build({"type": "integer", "format": "int32", "x-unit": "s"}, strict=True)
    assert valid(cls, 5)


def test_strict_schema_in_yaml_and_inline(tmp_path: Path) -> None:
    """`strict_schema: true` is a key of a YAML JSON Schema declaration and of an inline output schema."""
    path = tmp_path / "s.yaml"
    path.write_text("name: Age\nstrict_schema: true\njson_schema:\n  type: integer\n  minimun: 0\n")
    with pytest.raises(SchemaError, match="unknown keyword 'minimun'") as raised:
        TaskSystem().load(path)
    assert 5 == raised.value.location.line  # type: ignore[union-attr]  # located at the keyword
    inline = OutputFormat(
        type="json", schema={"json_schema": {"type": "string", "format": "Date"}, "strict_schema": True}
    )
    with pytest.raises(SchemaError, match="`format` 'Date'"):
        TaskSystem().register(Template(name="when", instructions="When?", output_format=inline))
    lenient = OutputFormat(type="json", schema={"json_schema": {"type": "string", "format": "Date"}})
    system = TaskSystem()
    system.register(Template(name="when", instructions="When?", output_format=lenient))
    assert "when" in system.templates.names()


# -- `atomtask check` reports them ----------------------------------------------------------------------


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def test_check_reports_w102_and_w103_where_they_are_written(tmp_path: Path) -> None:
    """Named `.json` and YAML schemas and inline output schemas: each warning at its line, once."""
    write(
        tmp_path,
        "Order.json",
        '{\n  "type": "object",\n  "additonalProperties": false,\n  "properties": {"at": {"type": "string", '
        '"format": "URI"}, "x": {"_format": "email"}}\n}\n',
    )
    write(
        tmp_path,
        "t.yaml",
        """\
        name: rate
        instructions: Rate it.
        output_format:
          type: json
          schema:
            json_schema: {type: integer, format: utc-millisec, description: Stars.}
        """,
    )
    found = sorted(
        (f.code, Path(f.location.file or "").name, f.location.line) for f in check([tmp_path]).findings if f.location
    )
    assert [("W102", "Order.json", 3), ("W103", "Order.json", 4), ("W103", "t.yaml", 6)] == found


def test_check_strict_fails_on_schema_warnings(tmp_path: Path) -> None:
    """Warnings alone exit 0; `--strict` makes them fail the check (exit 1)."""
    write(tmp_path, "Link.json", '{"type": "string", "format": "URI"}\n')

    def run(*argv: str) -> tuple[int, str]:
        out, err = io.StringIO(), io.StringIO()
        return main(["check", *argv, str(tmp_path)], stdout=out, stderr=err), out.getvalue()

    code, out = run()
    assert 0 == code
    assert "W103 JSON Schema 'Link': `format` 'URI' at `/` is not one that is checked" in out
    assert "Did you mean 'uri' or 'iri'?" in out
    assert 1 == run("--strict")[0]


def test_check_reports_a_strict_schema_as_an_error(tmp_path: Path) -> None:
    """A `strict_schema: true` declaration with a suspected typo is an E103 error, not a warning."""
    write(tmp_path, "s.yaml", "name: Age\nstrict_schema: true\njson_schema: {type: integer, minimun: 0}\n")
    assert ["E103"] == [f.code for f in check([tmp_path]).findings]
