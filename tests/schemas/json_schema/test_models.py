"""Tests for JSON Schema declarations: exact validation, formats, typed classes, load-time refusals."""

from __future__ import annotations

import json
from typing import Any

import pytest
from atomtask import OutputFormat, SchemaError, SourceLocation, TaskSystem, Template
from atomtask.schemas._declarations import JsonSchemaDef
from atomtask.schemas.json_schema._dialects import checked_formats, iri_to_uri
from atomtask.schemas.json_schema._models import (
    JsonSchemaObject,
    JsonSchemaResources,
    JsonSchemaValue,
    build_json_schema_model,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from tests.helpers import Recorder

CONTACT = {
    "type": "object",
    "description": "How to reach someone.",
    "properties": {
        "name": {"type": "string", "minLength": 1, "description": "Full name."},
        "email": {"type": "string", "format": "email"},
        "age": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}},
        "level": {"type": "string", "enum": ["low", "high"]},
        "address": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
    "required": ["name", "email"],
}


def build(schema: Any, name: str = "Thing", **kwargs: Any) -> type[BaseModel]:
    return build_json_schema_model(JsonSchemaDef(name=name, json_schema=schema), **kwargs)


def refusal(schema: Any, **kwargs: Any) -> SchemaError:
    with pytest.raises(SchemaError) as raised:
        build(schema, **kwargs)
    return raised.value


def valid(cls: type[BaseModel], data: Any) -> bool:
    envelope = getattr(cls, "json_schema_envelope", False)
    try:
        cls.model_validate_json(json.dumps({"response": data} if envelope else data))
    except ValidationError:
        return False
    return True


# ---------------------------------------------------------------------------------------------
# Classes


def test_object_schema_gives_typed_fields() -> None:
    """An object schema with identifier property names becomes a class with one typed attribute each."""
    cls = build(CONTACT, name="Contact")
    contact = cls.model_validate({"name": "Ann", "email": "ann@example.org", "age": 3.0, "address": {"city": "Oslo"}})
    assert issubclass(cls, JsonSchemaObject)
    assert ("Ann", 3, None) == (contact.name, contact.age, contact.tags)  # type: ignore[attr-defined]  # built at runtime
    assert isinstance(contact.age, int)  # type: ignore[attr-defined]  # built at runtime: 3.0 is a JSON integer
    assert "Oslo" == contact.address.city  # type: ignore[attr-defined]  # built at runtime
    assert "Full name." == cls.model_fields["name"].description


def test_typed_fields_accept_every_json_schema_integer() -> None:
    """Integral floats of any size are JSON Schema integers; the typed field holds the exact int."""
    cls = build({"type": "object", "properties": {"n": {"type": "integer"}, "x": {"type": "number"}}})
    instance = cls.model_validate_json('{"n": 1e308, "x": 2}')
    assert (int(1e308), 2) == (instance.n, instance.x)  # type: ignore[attr-defined]  # built at runtime
    assert isinstance(instance.x, int)  # type: ignore[attr-defined]  # built at runtime: numbers keep their JSON type


def test_prefix_items_do_not_make_a_uniform_list() -> None:
    """With `prefixItems`, `items` only covers later positions, so the field is not typed by it."""
    cls = build(
        {"type": "object", "properties": {"row": {"type": "array", "prefixItems": [{}], "items": {"type": "integer"}}}}
    )
    assert ["a", 1] == cls.model_validate({"row": ["a", 1]}).row  # type: ignore[attr-defined]  # built at runtime


def test_extra_properties_are_kept_when_the_schema_allows_them() -> None:
    """Without `additionalProperties: false` extra keys are valid JSON Schema and kept on the instance."""
    cls = build({"type": "object", "properties": {"a": {"type": "integer"}}})
    instance = cls.model_validate({"a": 1, "b": "x"})
    assert {"a": 1, "b": "x"} == instance.model_dump()


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "integer"},
        True,
        {"properties": {"a": {}}},
        {"type": "object", "properties": {"first-name": {"type": "string"}}},
        {"type": "object", "properties": {"model_config": {"type": "string"}}},
    ],
)
def test_other_schemas_give_a_root_model(schema: Any) -> None:
    """Non-object roots, and objects whose property names are not attributes, hold the value in `.root`."""
    cls = build(schema)
    assert issubclass(cls, JsonSchemaValue)


def test_non_object_roots_travel_in_a_response_envelope() -> None:
    """A non-object schema is sent as `{"response": ...}` and the caller gets the bare value."""
    cls = build({"type": "integer", "minimum": 1}, name="Count")
    assert {
        "type": "object",
        "properties": {"response": {"type": "integer", "minimum": 1}},
        "required": ["response"],
        "additionalProperties": False,
        "title": "Count",
    } == cls.model_json_schema()
    assert 5 == cls.model_validate({"response": 5}).root  # type: ignore[attr-defined]  # a RootModel
    with pytest.raises(ValidationError, match='single key "response"'):
        cls.model_validate(5)


def test_validation_errors_carry_every_json_schema_message() -> None:
    """A breaking answer raises one Pydantic error per violation, at the violation's own path."""
    cls = build(CONTACT)
    with pytest.raises(ValidationError) as raised:
        cls.model_validate({"name": "", "email": "nope", "age": -1, "tags": ["a", 2]})
    errors = {(e["loc"], e["msg"], e["input"]) for e in raised.value.errors() if e["type"] == "json_schema"}
    assert {
        (("name",), "'' should be non-empty", ""),
        (("email",), "'nope' is not a 'email'", "nope"),
        (("age",), "-1 is less than the minimum of 0", -1),
        (("tags", 1), "2 is not of type 'string'", 2),
    } == errors


def test_many_violations_are_capped() -> None:
    """At most eight violations are listed; one more error says how many were left out."""
    cls = build({"type": "array", "items": {"type": "string"}})
    with pytest.raises(ValidationError) as raised:
        cls.model_validate({"response": list(range(10))})
    messages = [e["msg"] for e in raised.value.errors()]
    assert 9 == len(messages)
    assert "2 more JSON Schema violation(s) not listed" == messages[-1]
    assert {("response", i) for i in range(10)} >= {e["loc"] for e in raised.value.errors()[:-1]}


def test_composition_errors_name_the_closest_branch() -> None:
    """An `anyOf` failure also reports the best matching branch's own error."""
    cls = build({"anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer"}]})
    with pytest.raises(ValidationError) as raised:
        cls.model_validate({"response": "abc"})
    assert (
        "not valid under any of the given schemas (closest: at `$`: 'abc' is not of type 'integer')"
        in (raised.value.errors()[0]["msg"])
    )


def test_the_model_sees_the_schema_with_refs_inlined() -> None:
    """Local `$ref`s are replaced by their targets and `$defs`/`$schema` are dropped."""
    cls = build(
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"city": {"type": "string", "minLength": 1}},
            "properties": {"home": {"$ref": "#/$defs/city"}, "work": {"$ref": "#/$defs/city", "maxLength": 9}},
        },
        name="Places",
    )
    assert {
        "type": "object",
        "properties": {
            "home": {"type": "string", "minLength": 1},
            "work": {"maxLength": 9, "allOf": [{"type": "string", "minLength": 1}]},
        },
        "title": "Places",
    } == cls.model_json_schema()


def test_recursive_refs_are_described_and_still_validated() -> None:
    """A recursive `$ref` is shown as a note to the model; validation follows it to any depth."""
    tree = {
        "type": "object",
        "properties": {"value": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#"}}},
    }
    cls = build(tree, name="Tree")
    items = cls.model_json_schema()["properties"]["kids"]["items"]
    assert {"description": "Recursive: the same structure as '#'."} == items
    assert valid(cls, {"value": 1, "kids": [{"value": 2, "kids": [{"value": 3}]}]})
    assert not valid(cls, {"value": 1, "kids": [{"value": 2, "kids": [{"value": "x"}]}]})


def test_description_of_the_declaration_reaches_the_model() -> None:
    """The declaration's `description` becomes the schema's description (the output tool's description)."""
    cls = build_json_schema_model(JsonSchemaDef(name="N", description="A count.", json_schema={"type": "integer"}))
    assert "A count." == cls.model_json_schema()["description"]
    assert "A count." == cls.__doc__


def test_equal_definitions_give_the_same_class() -> None:
    """Two loads of the same schema give the identical class; a changed schema gives another."""
    assert build(CONTACT) is build(json.loads(json.dumps(CONTACT)))
    assert build(CONTACT) is not build({**CONTACT, "required": ["name"]})


# ---------------------------------------------------------------------------------------------
# Formats and patterns


@pytest.mark.parametrize(
    ("fmt", "good", "bad"),
    [
        ("date", "2024-02-29", "2023-02-29"),
        ("date-time", "2024-05-01T10:30:00Z", "2024-05-01 10:30"),
        ("time", "10:30:00+02:00", "25:00:00Z"),
        ("duration", "P3DT4H", "3 days"),
        ("email", "ann@example.org", "ann.example.org"),
        ("idn-email", "用户@例子.广告", "no-at-sign"),
        ("hostname", "api.example.org", "-bad-.example"),
        ("idn-hostname", "例子.广告", "a" * 64 + ".com"),
        ("ipv4", "192.168.0.1", "256.1.1.1"),
        ("ipv6", "::1", "12345::"),
        ("uri", "https://example.org/a?b=c", "not a uri"),
        ("uri-reference", "../a/b", "\\\\bad"),
        ("iri", "https://例子.广告/路径", "relative/only"),
        ("iri-reference", "/路径", "\\\\bad"),
        ("uri-template", "https://example.org/{id}", "https://example.org/{id"),
        ("uuid", "2eb8aa08-aa98-11ea-b4aa-73b441d16380", "2eb8aa08-aa98-11ea-b4aa"),
        ("json-pointer", "/a/b", "a/b"),
        ("relative-json-pointer", "1/a", "/a"),
        ("regex", "^\\p{L}+$", "(unclosed"),
    ],
)
def test_formats_are_enforced(fmt: str, good: str, bad: str) -> None:
    """Every 2020-12 format is asserted: a malformed value is invalid, not an annotation."""
    cls = build({"type": "string", "format": fmt})
    assert (True, False) == (valid(cls, good), valid(cls, bad))


def test_every_2020_12_format_has_a_checker() -> None:
    """The checked formats cover the whole 2020-12 format vocabulary."""
    formats = {
        "date", "date-time", "time", "duration", "email", "idn-email", "hostname", "idn-hostname", "ipv4", "ipv6",
        "uri", "uri-reference", "iri", "iri-reference", "uri-template", "uuid", "json-pointer",
        "relative-json-pointer", "regex",
    }  # fmt: skip
    assert formats <= checked_formats()


def test_iri_maps_to_a_uri() -> None:
    """Non-ASCII IRI characters are percent-encoded as UTF-8; characters outside ucschar make it invalid."""
    assert "https://x/%C3%A9" == iri_to_uri("https://x/é")
    assert iri_to_uri("https://x/\u0080") is None


def test_malformed_format_answer_goes_back_to_the_model() -> None:
    """A malformed date-time is retry feedback; the corrected answer completes the task."""
    rec = Recorder(
        {"title": "Launch", "starts_at": "tomorrow", "organiser_email": "ann@example.org"},
        {"title": "Launch", "starts_at": "2025-03-01T09:00:00Z", "organiser_email": "ann@example.org"},
    )
    system = TaskSystem(model=rec.model)
    schema = {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "starts_at": {"type": "string", "format": "date-time"},
            "organiser_email": {"type": "string", "format": "email"},
        },
        "required": ["title", "starts_at", "organiser_email"],
    }
    system.register(
        Template(
            name="event",
            instructions="Extract.",
            output_format=OutputFormat(type="json", schema={"json_schema": schema}),
            retries=1,
        )
    )
    result = system.execute("event", {})
    assert "2025-03-01T09:00:00Z" == result.unwrap().starts_at
    feedback = json.dumps(rec.calls[1][0][-1].parts[0].content)
    assert "'tomorrow' is not a 'date-time'" in feedback
    assert ["json_schema"] == [e["type"] for e in result.notes.attempts[0].errors or [] if isinstance(e, dict)]


def test_unicode_property_escapes_in_patterns() -> None:
    """`\\p{Letter}` (ECMA-262) matches Unicode letters, in `pattern` and `patternProperties`."""
    cls = build({"type": "string", "pattern": "^\\p{Letter}+$"})
    assert (True, True, False) == (valid(cls, "Hello"), valid(cls, "π"), valid(cls, "123"))
    props = build({"patternProperties": {"^\\p{Letter}+$": {"type": "number"}}})
    assert (True, False) == (valid(props, {"π": 1}), valid(props, {"π": "x"}))


# ---------------------------------------------------------------------------------------------
# References and vocabularies


def test_refs_resolve_through_loaded_documents() -> None:
    """A `$ref` to another document resolves when that document was loaded, never fetched."""
    resources = JsonSchemaResources().with_document("https://example.org/money.json", {"type": "number", "minimum": 0})
    cls = build({"$ref": "https://example.org/money.json"}, resources=resources)
    assert (True, False) == (valid(cls, 3), valid(cls, -1))


def test_custom_metaschema_vocabularies_are_honoured() -> None:
    """Keywords of a vocabulary the metaschema leaves out are not applied (here: `minimum`)."""
    meta = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://example.org/meta",
        "$vocabulary": {
            "https://json-schema.org/draft/2020-12/vocab/core": True,
            "https://json-schema.org/draft/2020-12/vocab/applicator": True,
        },
    }
    resources = JsonSchemaResources().with_document("https://example.org/meta", meta)
    schema = {"$schema": "https://example.org/meta", "properties": {"n": {"minimum": 10}, "no": False}}
    cls = build(schema, resources=resources)
    assert (True, False) == (valid(cls, {"n": 1}), valid(cls, {"no": 1}))


@pytest.mark.parametrize(
    ("fmt", "accepted", "refused"),
    [
        ("int32", [0, 2**31 - 1, -(2**31), 7.0, "text"], [2**31, -(2**31) - 1, 1.5]),
        ("int64", [2**63 - 1, -(2**63)], [2**63, -(2**63) - 1, 0.5]),
        ("float", [3.4e38, -1, 0.1], [3.5e38, -(10**39)]),
        ("double", [1.7e308, 10**300], [10**309]),
        ("byte", ["", "QQ==", "QUI=", "QUJD", 12], ["QQ", "Q===", "a b=", "hello!!!"]),
    ],
)
def test_openapi_formats_with_an_obvious_check_are_enforced(fmt: str, accepted: list[Any], refused: list[Any]) -> None:
    """`int32`/`int64` ranges, `float`/`double` limits on numbers; `byte` is base64 text; other kinds pass."""
    cls = build({"format": fmt})
    assert () == cls.json_schema_warnings  # type: ignore[attr-defined]
    assert ([True] * len(accepted), [False] * len(refused)) == (
        [valid(cls, v) for v in accepted],
        [valid(cls, v) for v in refused],
    )


def test_int32_out_of_range_is_reported_at_its_path() -> None:
    """The violation is a validation error at the field, like any other."""
    cls = build({"type": "object", "properties": {"count": {"type": "integer", "format": "int32"}}})
    with pytest.raises(ValidationError) as raised:
        cls.model_validate({"count": 2**31})
    assert ("count",) == raised.value.errors()[0]["loc"]
    assert "is not a 'int32'" in raised.value.errors()[0]["msg"]


@pytest.mark.parametrize(
    ("uri", "zero_is_valid"),
    [
        ("https://json-schema.org/draft-04/schema#", False),  # draft-04: boolean `exclusiveMinimum` applies
        ("http://json-schema.org/draft-04/hyper-schema#", False),
        ("http://json-schema.org/draft-04/schema", False),
        ("https://json-schema.org/draft-07/schema#", None),  # draft-07: a boolean `exclusiveMinimum` is invalid
        ("http://json-schema.org/schema#", False),  # "the latest": read as no `$schema` (draft-04 accepts it)
    ],
)
def test_a_json_schema_org_dollar_schema_written_another_way_names_its_draft(
    uri: str, zero_is_valid: bool | None
) -> None:
    """`https://`, no `#`, hyper-schema, the unversioned "latest": the draft is the one named, as published."""
    schema = {"$schema": uri, "type": "number", "minimum": 0, "exclusiveMinimum": True}
    if zero_is_valid is None:
        assert "is not valid JSON Schema" in str(refusal(schema))
        return
    cls = build(schema)
    assert (zero_is_valid, True, uri) == (valid(cls, 0), valid(cls, 1), cls.json_schema_declared["$schema"])  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------------------
# Refusals at load


@pytest.mark.parametrize(
    ("schema", "fragments"),
    [
        ({"type": "strin"}, ["is not valid JSON Schema: at `/type`", "Fix the schema."]),
        ({"$ref": "#/$defs/missing"}, ["`$ref` '#/$defs/missing' at `/` does not resolve", "nothing is fetched"]),
        (
            {"properties": {"a": {"$ref": "https://example.org/x.json"}}},
            ["'https://example.org/x.json' at `/properties/a` does not resolve"],
        ),
        ({"pattern": "(unclosed"}, ["is not valid JSON Schema: at `/pattern`"]),
        (
            {"patternProperties": {"^\\p{L}$": {}}, "additionalProperties": False},
            ["key '^\\\\p{L}$' uses regular-expression syntax", "Rewrite the pattern"],
        ),
        ({"$schema": "https://example.org/unknown-meta"}, ["is neither a JSON Schema draft nor a metaschema"]),
    ],
)
def test_schemas_that_cannot_be_honoured_are_refused(schema: Any, fragments: list[str]) -> None:
    """Each refusal names the schema, the place inside it and the fix."""
    message = str(refusal(schema))
    assert message.startswith("JSON Schema 'Thing': ")
    for fragment in fragments:
        assert fragment in message


def test_unknown_required_vocabulary_is_refused() -> None:
    """A metaschema requiring a vocabulary we do not implement cannot be honoured."""
    meta = {"$id": "https://example.org/m", "$vocabulary": {"https://example.org/vocab/money": True}}
    resources = JsonSchemaResources().with_document("https://example.org/m", meta)
    message = str(refusal({"$schema": "https://example.org/m"}, resources=resources))
    assert "requires vocabularies this library does not implement: https://example.org/vocab/money" in message


def test_near_misses_of_annotations_are_accepted() -> None:
    """OpenAPI's `example` (close to the annotation `examples`) constrains nothing, so it is accepted."""
    cls = build({"type": "string", "example": "x"})
    assert valid(cls, "y")


def test_bad_names_are_refused() -> None:
    """The schema name must be a Python identifier (it names the class)."""
    with pytest.raises(SchemaError, match="'my schema' is not a valid Python identifier"):
        build({}, name="my schema")


def test_refusals_carry_the_declaration_location() -> None:
    """A refused schema from a file points at it."""
    definition = JsonSchemaDef(name="X", json_schema={"format": "emial"}, strict_schema=True)
    definition.location = SourceLocation(file="schemas.yaml", line=4, column=3)
    with pytest.raises(SchemaError) as raised:
        build_json_schema_model(definition)
    assert str(raised.value).startswith("schemas.yaml:4:3: JSON Schema 'X'")
    assert ["email"] == raised.value.suggestions


def test_stdlib_only_pattern_with_unevaluated_properties_is_refused() -> None:
    """A `\\p{...}` pattern property alongside `unevaluatedProperties` anywhere cannot be applied exactly."""
    schema = {"allOf": [{"patternProperties": {"^\\p{L}+$": {}}}], "unevaluatedProperties": False}
    assert "cannot apply when it works out `additionalProperties` or `unevaluatedProperties`" in str(refusal(schema))


def test_array_schema_gives_the_list_in_root() -> None:
    """An array schema's answer is the validated list itself."""
    cls = build({"type": "array", "items": {"type": "integer"}, "uniqueItems": True})
    assert [1, 2] == cls.model_validate({"response": [1, 2]}).root  # type: ignore[attr-defined]  # a RootModel
    assert not valid(cls, [1, 1])


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["n", "s", "xs", "o", "e"]), inner),
    max_leaves=8,
)
_TYPED = {
    "type": "object",
    "properties": {
        "n": {"type": ["integer", "null"]},
        "s": {"type": "string", "enum": ["a", "b"]},
        "xs": {"type": "array", "items": {"type": "number"}},
        "o": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        "e": {"type": "boolean"},
    },
    "required": ["n"],
}


@settings(max_examples=150, deadline=None)
@given(_JSON)
def test_typed_classes_accept_exactly_what_json_schema_accepts(data: Any) -> None:
    """For any JSON value, the typed class's verdict is the JSON Schema validator's verdict."""
    import jsonschema

    cls = build(_TYPED, name="Typed")
    assert issubclass(cls, JsonSchemaObject)
    assert jsonschema.Draft202012Validator(_TYPED).is_valid(data) == valid(cls, data)
