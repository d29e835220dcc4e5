"""Tests for named schemas declared in configuration and the classes `build_models` makes of them."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from atomtask import DuplicateNameError, SchemaError, SourceLocation
from atomtask.schemas._declarations import FieldDef, SchemaDef
from atomtask.schemas._fields import build_models, schema_problems
from pydantic import BaseModel, ValidationError


class Address(BaseModel):
    """A postal address (a user's Python model)."""

    city: str


def schema(name: str, *fields: FieldDef, description: str | None = None) -> SchemaDef:
    return SchemaDef(name=name, description=description, fields=list(fields))


def one(*fields: FieldDef, name: str = "Thing", **kwargs: Any) -> type[BaseModel]:
    return build_models([schema(name, *fields)], **kwargs)[name]


def located(definition: SchemaDef, line: int, field_lines: dict[str, int] | None = None) -> SchemaDef:
    definition.location = SourceLocation(file="schemas.yaml", line=line)
    for field_def in definition.fields:
        if field_lines and field_def.name in field_lines:
            field_def.location = SourceLocation(file="schemas.yaml", line=field_lines[field_def.name])
    return definition


def error_of(defs: list[SchemaDef], **kwargs: Any) -> SchemaError:
    with pytest.raises(SchemaError) as raised:
        build_models(defs, **kwargs)
    return raised.value


# ---------------------------------------------------------------------------------------------
# Declarations


def test_field_defaults() -> None:
    """A field is `str` without description, default, enum or constraints unless told."""
    field_def = FieldDef(name="title")
    assert ("str", None, None, False) == (
        field_def.type,
        field_def.description,
        field_def.enum,
        field_def.has_default,
    )


def test_explicit_null_default_differs_from_no_default() -> None:
    """`default: null` is a default; leaving `default` out is not, and the two are not equal."""
    explicit = FieldDef.model_validate({"name": "x", "type": "int?", "default": None})
    absent = FieldDef.model_validate({"name": "x", "type": "int?"})
    assert (True, False) == (explicit.has_default, absent.has_default)
    assert explicit != absent


def test_unknown_keys_are_rejected() -> None:
    """A misspelt option in a field or schema is a validation error, not ignored."""
    with pytest.raises(ValidationError, match="max_lenght"):
        FieldDef.model_validate({"name": "x", "max_lenght": 3})
    with pytest.raises(ValidationError, match="field"):
        SchemaDef.model_validate({"name": "X", "field": []})


def test_location_is_settable_and_not_part_of_equality() -> None:
    """The loader sets `location`; two equal declarations at different places are still equal."""
    first = schema("Thing", FieldDef(name="x"))
    second = schema("Thing", FieldDef(name="x"))
    first.location = SourceLocation(file="a.yaml", line=1)
    second.fields[0].location = SourceLocation(file="b.yaml", line=9)
    assert SourceLocation(file="a.yaml", line=1) == first.location
    assert SourceLocation(file="b.yaml", line=9) == second.fields[0].location
    assert first == second


# ---------------------------------------------------------------------------------------------
# Types through the built model


@pytest.mark.parametrize(
    ("type_text", "value", "expected"),
    [
        ("str", "hi", "hi"),
        ("int", 3, 3),
        ("float", 2, 2.0),
        ("bool", True, True),
        ("any", {"x": [1]}, {"x": [1]}),
        ("date", "2024-05-01", datetime.date(2024, 5, 1)),
        ("datetime", "2024-05-01T10:30:00Z", datetime.datetime(2024, 5, 1, 10, 30, tzinfo=datetime.UTC)),
        ("list[int]", [1, 2], [1, 2]),
        ("dict[str, list[int]]", {"a": [1]}, {"a": [1]}),
        ("dict[int, str]", {"1": "a"}, {1: "a"}),
        ("int | str", "x", "x"),
        ("literal['low', 'high', 3]", 3, 3),
        ("list[date?]", ["2024-01-02", None], [datetime.date(2024, 1, 2), None]),
    ],
)
def test_every_type_form_validates(type_text: str, value: Any, expected: Any) -> None:
    """Each type form accepts (and converts) a matching value in the built model."""
    model = one(FieldDef(name="v", type=type_text))
    assert expected == model.model_validate({"v": value}).v  # type: ignore[attr-defined]  # built at runtime


@pytest.mark.parametrize(
    ("type_text", "value"),
    [("int", "abc"), ("list[int]", ["x"]), ("literal['a']", "b"), ("date", "not a date"), ("bool?", [1])],
)
def test_wrong_values_are_rejected(type_text: str, value: Any) -> None:
    """A value that does not fit the declared type fails validation."""
    with pytest.raises(ValidationError):
        one(FieldDef(name="v", type=type_text)).model_validate({"v": value})


def test_required_optional_and_defaults() -> None:
    """Plain fields are required; `T?` defaults to None; an explicit default is used (and validated)."""
    model = one(
        FieldDef(name="title"),
        FieldDef(name="note", type="str?"),
        FieldDef(name="either", type="int | str?"),
        FieldDef(name="count", type="int", default=3),
        FieldDef(name="maybe", type="int?", default=None),
        FieldDef(name="day", type="date", default="2024-01-01"),
        FieldDef(name="tags", type="list[str]", default=[]),
    )
    assert ["title"] == model.model_json_schema()["required"]
    instance = model.model_validate({"title": "t"})
    expected = {
        "title": "t",
        "note": None,
        "either": None,
        "count": 3,
        "maybe": None,
        "day": datetime.date(2024, 1, 1),
        "tags": [],
    }
    assert expected == instance.model_dump()
    with pytest.raises(ValidationError, match="title"):
        model.model_validate({})


def test_mutable_defaults_are_not_shared() -> None:
    """Each instance gets its own copy of a list default."""
    model = one(FieldDef(name="tags", type="list[str]", default=["a"]))
    first, second = model.model_validate({}), model.model_validate({})
    first.tags.append("b")  # type: ignore[attr-defined]  # built at runtime
    assert ["a"] == second.tags  # type: ignore[attr-defined]  # built at runtime


def test_enum_is_a_literal() -> None:
    """`enum` restricts the values like `literal[...]`, typed by `type` when it is given."""
    model = one(
        FieldDef(name="level", enum=["low", "high"]),
        FieldDef(name="stars", type="int", enum=[1, 2, 3]),
        FieldDef(name="mood", type="str?", enum=["ok"]),
        FieldDef(name="mixed", enum=["a", 1], default=1),
    )
    properties = model.model_json_schema()["properties"]
    assert ["low", "high"] == properties["level"]["enum"]
    assert [1, 2, 3] == properties["stars"]["enum"]
    instance = model.model_validate({"level": "low", "stars": 2})
    assert (None, 1) == (instance.mood, instance.mixed)  # type: ignore[attr-defined]  # built at runtime
    with pytest.raises(ValidationError):
        model.model_validate({"level": "medium", "stars": 2})


def test_constraints_are_enforced_and_in_the_json_schema() -> None:
    """Number, string and list constraints become JSON Schema keywords and are validated."""
    model = one(
        FieldDef(name="age", type="int", ge=0, le=150),
        FieldDef(name="score", type="float?", gt=0, lt=1),
        FieldDef(name="code", min_length=2, max_length=4, pattern=r"^[A-Z]+$"),
        FieldDef(name="tags", type="list[str]", min_items=1, max_items=2),
    )
    properties = model.model_json_schema()["properties"]
    assert {"minimum": 0, "maximum": 150} == {k: properties["age"][k] for k in ("minimum", "maximum")}
    assert {"exclusiveMinimum": 0, "exclusiveMaximum": 1} == {
        k: properties["score"]["anyOf"][0][k] for k in ("exclusiveMinimum", "exclusiveMaximum")
    }
    assert (2, 4, "^[A-Z]+$") == (
        properties["code"]["minLength"],
        properties["code"]["maxLength"],
        properties["code"]["pattern"],
    )
    assert (1, 2) == (properties["tags"]["minItems"], properties["tags"]["maxItems"])
    good = {"age": 30, "score": 0.5, "code": "AB", "tags": ["x"]}
    model.model_validate(good)
    for bad in (
        {"age": -1},
        {"score": 1},
        {"code": "A"},
        {"code": "ab"},
        {"tags": []},
        {"tags": ["a", "b", "c"]},
    ):
        with pytest.raises(ValidationError):
            model.model_validate({**good, **bad})


def test_descriptions_reach_the_json_schema() -> None:
    """The schema description and every field description are in `model_json_schema()`."""
    definition = schema(
        "Contact",
        FieldDef(name="email", description="Primary e-mail address."),
        FieldDef(name="phone", type="str?", description="With country code."),
        description="How to reach a person.",
    )
    model = build_models([definition])["Contact"]
    json_schema = model.model_json_schema()
    assert "How to reach a person." == json_schema["description"]
    assert "Contact" == json_schema["title"]
    assert "Primary e-mail address." == json_schema["properties"]["email"]["description"]
    assert "With country code." == json_schema["properties"]["phone"]["description"]
    assert "How to reach a person." == model.__doc__


def test_unknown_keys_in_answers_are_rejected() -> None:
    """Generated models forbid extra keys, so strict providers get `additionalProperties: false`."""
    model = one(FieldDef(name="x"))
    assert model.model_json_schema()["additionalProperties"] is False
    with pytest.raises(ValidationError, match="extra"):
        model.model_validate({"x": "a", "y": "b"})


# ---------------------------------------------------------------------------------------------
# References


def test_recursive_schema() -> None:
    """A `Node` with `children: list[Node]` validates trees of any depth."""
    node = build_models(
        [
            schema(
                "Node",
                FieldDef(name="value", type="int"),
                FieldDef(name="children", type="list[Node]", default=[]),
            )
        ]
    )["Node"]
    tree = node.model_validate({"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]})
    assert 3 == tree.children[0].children[0].value  # type: ignore[attr-defined]  # built at runtime
    json_schema = node.model_json_schema()
    assert {"$ref": "#/$defs/Node"} == json_schema["$defs"]["Node"]["properties"]["children"]["items"]


def test_mutual_recursion_declared_in_reverse_order() -> None:
    """Two schemas that reference each other build whichever is declared first."""
    models = build_models(
        [
            schema("Employee", FieldDef(name="name"), FieldDef(name="team", type="Team?")),
            schema(
                "Team",
                FieldDef(name="lead", type="Employee"),
                FieldDef(name="members", type="list[Employee]"),
            ),
        ]
    )
    team = models["Team"].model_validate(
        {
            "lead": {"name": "Ann", "team": {"lead": {"name": "Bo"}, "members": []}},
            "members": [{"name": "Cy"}],
        }
    )
    assert isinstance(team.lead, models["Employee"])  # type: ignore[attr-defined]  # built at runtime
    assert "Bo" == team.lead.team.lead.name  # type: ignore[attr-defined]  # built at runtime


def test_nested_references_in_containers() -> None:
    """References work inside dicts, lists, optionals and unions."""
    models = build_models(
        [
            schema(
                "Book",
                FieldDef(name="by", type="dict[str, list[Contact?]]"),
                FieldDef(name="alt", type="Contact | str"),
            ),
            schema("Contact", FieldDef(name="name")),
        ]
    )
    book = models["Book"].model_validate({"by": {"x": [None, {"name": "Ann"}]}, "alt": {"name": "Bo"}})
    assert models["Contact"](name="Ann") == book.by["x"][1]  # type: ignore[attr-defined]  # built at runtime
    assert models["Contact"](name="Bo") == book.alt  # type: ignore[attr-defined]  # built at runtime


def test_reference_to_a_known_python_class() -> None:
    """A type may name a class registered from Python, passed in `known`."""
    person = one(
        FieldDef(name="home", type="Address"),
        FieldDef(name="others", type="list[Address]?"),
        known={"Address": Address},
    )
    instance = person.model_validate({"home": {"city": "Oslo"}})
    assert Address(city="Oslo") == instance.home  # type: ignore[attr-defined]  # built at runtime
    assert "A postal address (a user's Python model)." == person.model_json_schema()["$defs"]["Address"]["description"]


def test_batch_names_take_precedence_over_known() -> None:
    """A schema defined in the batch wins over a known class of the same name (e.g. on reload)."""
    models = build_models(
        [schema("Address", FieldDef(name="street")), schema("Home", FieldDef(name="at", type="Address"))],
        known={"Address": Address},
    )
    assert models["Address"] is models["Home"].model_fields["at"].annotation


def test_schema_names_that_shadow_python_names_work() -> None:
    """Schemas called like module globals or builtins (`Field`, `property`) still resolve to each other."""
    models = build_models(
        [
            schema("Field", FieldDef(name="x", type="property?")),
            schema("property", FieldDef(name="y", type="Field?")),
        ]
    )
    value = models["Field"].model_validate({"x": {"y": {"x": None}}})
    assert isinstance(value.x, models["property"])  # type: ignore[attr-defined]  # built at runtime


@pytest.mark.parametrize("name", ["object", "array", "integer"])
def test_a_json_schema_type_name_is_no_schema_name(name: str) -> None:
    """`object`, `array`, `integer`, ... are type names (aliases), so a schema may not take one."""
    error = error_of([schema(name, FieldDef(name="x", type="str"))])
    assert f"Schema name {name!r} is a builtin type name" in error.message


# ---------------------------------------------------------------------------------------------
# Caching


def test_same_definitions_give_the_same_classes() -> None:
    """Building equal definitions twice (as two loads of one file do) returns the identical classes."""

    def load() -> dict[str, type[BaseModel]]:
        return build_models(
            [
                located(
                    schema("Tree", FieldDef(name="kids", type="list[Tree]"), FieldDef(name="at", type="Address")),
                    3,
                ),
                schema("Forest", FieldDef(name="trees", type="list[ Tree ]")),
            ],
            known={"Address": Address},
        )

    first, second = load(), load()
    assert first["Tree"] is second["Tree"]
    assert first["Forest"] is second["Forest"]


def test_changed_definitions_give_new_classes() -> None:
    """A changed schema, a changed schema it references, or a different known class gives a new class."""
    base = [schema("A", FieldDef(name="b", type="B")), schema("B", FieldDef(name="x"))]
    before = build_models(base)
    changed_b = build_models([base[0], schema("B", FieldDef(name="x", description="new"))])
    assert before["A"] is not changed_b["A"]
    assert before["B"] is not changed_b["B"]
    changed_doc = build_models([schema("A", FieldDef(name="b", type="B"), description="doc"), base[1]])
    assert before["A"] is not changed_doc["A"]
    assert before["B"] is changed_doc["B"]

    class Other(BaseModel):
        city: str

    with_address = one(FieldDef(name="at", type="Address"), known={"Address": Address})
    with_other = one(FieldDef(name="at", type="Address"), known={"Address": Other})
    assert with_address is not with_other


def test_a_failed_build_is_not_cached() -> None:
    """After an error nothing half-built is reused; fixing the definition builds normally."""
    error_of([schema("Bad", FieldDef(name="n", type="int", default="x"))])
    model = build_models([schema("Bad", FieldDef(name="n", type="int", default=1))])["Bad"]
    assert 1 == model.model_validate({}).n  # type: ignore[attr-defined]  # built at runtime


def test_result_follows_declaration_order_and_tolerates_equal_duplicates() -> None:
    """The mapping lists schemas in the given order; a schema repeated identically is built once."""
    defs = [
        schema("Z", FieldDef(name="a")),
        schema("A", FieldDef(name="z", type="Z")),
        schema("Z", FieldDef(name="a")),
    ]
    assert ["Z", "A"] == list(build_models(defs))


# ---------------------------------------------------------------------------------------------
# Errors


def test_unknown_reference_names_field_schema_location_and_near_names() -> None:
    """An unknown schema name says where it is used and which known names are close."""
    defs = [
        located(schema("Team", FieldDef(name="lead", type="list[Contct]")), 3, {"lead": 5}),
        schema("Contact", FieldDef(name="name")),
    ]
    error = error_of(defs, known={"Contract": Address})
    message = str(error)
    assert message.startswith("schemas.yaml:5: Unknown schema 'Contct' in field 'lead' of schema 'Team'")
    assert "Did you mean 'Contact' or 'Contract'?" in message
    assert ["Contact", "Contract"] == error.suggestions


def test_unknown_reference_near_a_builtin_suggests_it() -> None:
    """A misspelt builtin is suggested by its canonical name; without a field location the schema's is used."""
    error = error_of([located(schema("Box", FieldDef(name="x", type="strng")), 8)])
    assert str(error).startswith("schemas.yaml:8: Unknown schema 'strng' in field 'x' of schema 'Box'")
    assert "Did you mean 'str'?" in str(error)
    assert ["str"] == error.suggestions


@pytest.mark.parametrize(
    ("typo", "meant"),
    [("integr", "int"), ("Integer", "int"), ("boolen", "bool"), ("nubmer", "number"), ("arary", "array")],
)
def test_a_misspelt_type_in_a_field_gets_the_type_it_is_near(typo: str, meant: str) -> None:
    """A misspelt builtin type or JSON Schema alias is suggested (the canonical name when it is near too)."""
    error = error_of([schema("Box", FieldDef(name="x", type=f"list[{typo}]"))])
    assert f"Did you mean {meant!r}?" in error.message


def test_bad_type_string_names_field_and_suggests_the_fix() -> None:
    """A type syntax error is prefixed with the field and schema and keeps the column and the fix."""
    error = error_of([located(schema("Thing", FieldDef(name="tags", type="lisst[str]")), 2, {"tags": 4})])
    expected = (
        "schemas.yaml:4: In field 'tags' of schema 'Thing': Invalid type 'lisst[str]' at column 1: "
        "unknown type 'lisst'; only `list`, `dict` and `literal` take `[...]`. Did you mean 'list[str]'?"
    )
    assert expected == str(error)
    assert ["list[str]"] == error.suggestions


@pytest.mark.parametrize(
    ("field_def", "fragments"),
    [
        (FieldDef(name="n", type="int", pattern="x"), ["`pattern` does not apply", "'int'", "`str` fields"]),
        (
            FieldDef(name="n", type="str", min_items=1),
            ["`min_items` does not apply", "'str'", "`list[...]` fields"],
        ),
        (FieldDef(name="n", type="list[int]", min_length=1), ["`min_length` does not apply", "'list[int]'"]),
        (FieldDef(name="n", type="str", ge=1), ["`ge` does not apply", "`int` and `float` fields"]),
        (FieldDef(name="n", type="int | float", le=1), ["`le` does not apply", "'int | float'"]),
        (FieldDef(name="n", enum=["a"], max_length=3), ["`max_length` does not apply", 'literal["a"]']),
        (FieldDef(name="n", type="list[str]", enum=["a"]), ["`enum` does not apply", "'list[str]'"]),
        (FieldDef(name="n", type="int", enum=[1, "2"]), ["`enum` value '2'", "not a 'int'"]),
        (FieldDef(name="n", type="bool", enum=[1]), ["`enum` value 1", "not a 'bool'"]),
        (FieldDef(name="n", enum=[]), ["`enum` of field 'n' of schema 'Thing' is empty"]),
        (FieldDef(name="n", enum=["a", "a"]), ["lists 'a' twice"]),
        (FieldDef(name="n", min_length=5, max_length=2), ["`min_length` (5) is above `max_length` (2)"]),
        (FieldDef(name="n", type="list[int]", min_items=3, max_items=1), ["`min_items` (3) is above"]),
        (FieldDef(name="n", type="int", ge=5, le=1), ["No number satisfies `ge: 5` and `le: 1`"]),
        (FieldDef(name="n", type="float", gt=1, lt=1), ["No number satisfies `gt: 1` and `lt: 1`"]),
        (FieldDef(name="n", pattern="(unclosed"), ["`pattern` '(unclosed' of field 'n'", "does not compile"]),
        (FieldDef(name="n", pattern="(?=a)b"), ["does not compile", "look-around"]),
        (
            FieldDef(name="n", type="int", default="abc"),
            ["Default 'abc' of field 'n'", "'int'", "valid integer"],
        ),
        (FieldDef(name="n", type="int", le=10, default=11), ["Default 11", "less than or equal to 10"]),
        (FieldDef(name="n", type="int", default=None), ["Default None", "Make the type optional ('int?')"]),
        (FieldDef(name="n", enum=["a", "b"], default="c"), ["Default 'c'", "'a' or 'b'"]),
        (FieldDef(name="n", type="Address", default={"town": "x"}), ["Default {'town': 'x'}", "at `city`"]),
        (FieldDef(name="first name"), ["Field name 'first name'", "is not an identifier"]),
        (FieldDef(name="_secret"), ["Field name '_secret'", "private"]),
        (FieldDef(name="model_dump"), ["clashes with the Pydantic `BaseModel` attribute 'model_dump'"]),
    ],
)
def test_field_errors(field_def: FieldDef, fragments: list[str]) -> None:
    """Each bad field option is a `SchemaError` naming the field, the schema and the field's location."""
    field_def.location = SourceLocation(file="schemas.yaml", line=12)
    error = error_of([schema("Thing", field_def)], known={"Address": Address})
    message = str(error)
    assert message.startswith("schemas.yaml:12: ")
    assert "'Thing'" in message
    for fragment in fragments:
        assert fragment in message


@pytest.mark.parametrize(
    ("definition", "fragment"),
    [
        (schema("my-schema", FieldDef(name="x")), "Schema name 'my-schema' is not a valid Python identifier"),
        (schema("class", FieldDef(name="x")), "Schema name 'class' is not a valid Python identifier"),
        (schema("list", FieldDef(name="x")), "Schema name 'list' is a builtin type name"),
        (schema("string", FieldDef(name="x")), "Schema name 'string' is a builtin type name"),
        (schema("Empty"), "Schema 'Empty' has no fields; declare at least one under `fields:`."),
    ],
)
def test_schema_errors(definition: SchemaDef, fragment: str) -> None:
    """A bad schema name or an empty field list is reported at the schema's location."""
    error = error_of([located(definition, 20)])
    assert str(error).startswith("schemas.yaml:20: ")
    assert fragment in str(error)


def test_duplicate_fields_name_both_locations() -> None:
    """A field declared twice is reported at the second, naming the first."""
    definition = located(schema("Thing", FieldDef(name="x"), FieldDef(name="x", type="int")), 1)
    definition.fields[0].location = SourceLocation(file="schemas.yaml", line=3)
    definition.fields[1].location = SourceLocation(file="schemas.yaml", line=5)
    expected = (
        "schemas.yaml:5: Field 'x' is declared twice in schema 'Thing' "
        "(at schemas.yaml:3 and schemas.yaml:5); rename or remove one."
    )
    assert expected == str(error_of([definition]))


def test_conflicting_schemas_in_one_batch() -> None:
    """Two different definitions under one name are a `DuplicateNameError` naming both places."""
    first = located(schema("Thing", FieldDef(name="x")), 1)
    second = located(schema("Thing", FieldDef(name="y")), 9)
    with pytest.raises(DuplicateNameError) as raised:
        build_models([first, second])
    assert str(raised.value).startswith("schemas.yaml:9: Schema 'Thing' is defined twice")
    assert "first at schemas.yaml:1" in str(raised.value)


# ---------------------------------------------------------------------------------------------
# `format`


def test_format_option_is_enforced_and_in_the_json_schema() -> None:
    """`format` on a str field puts the keyword in the JSON Schema and rejects malformed values."""
    model = one(FieldDef(name="email", type="str?", format="email"), FieldDef(name="site", format="uri"))
    properties = model.model_json_schema()["properties"]
    assert ("email", "uri") == (properties["email"]["format"], properties["site"]["format"])
    assert "https://x.org" == model.model_validate({"site": "https://x.org"}).site  # type: ignore[attr-defined]  # built at runtime
    with pytest.raises(ValidationError) as raised:
        model.model_validate({"site": "nope", "email": "x"})
    assert ["'x' is not a valid 'email'", "'nope' is not a valid 'uri'"] == [e["msg"] for e in raised.value.errors()]


def test_unknown_format_is_refused_with_a_suggestion() -> None:
    """A misspelt format fails at load with the near name and the checked formats."""
    error = error_of([schema("Thing", FieldDef(name="email", format="emial"))])
    assert "`format` 'emial' of field 'email' of schema 'Thing' is not a format that can be checked" in error.message
    assert ["email"] == error.suggestions


def test_format_applies_to_str_fields_only() -> None:
    """`format` on a non-string field is refused."""
    error = error_of([schema("Thing", FieldDef(name="n", type="int", format="email"))])
    assert "`format` does not apply to field 'n' of schema 'Thing', whose type is 'int'" in error.message


# ---------------------------------------------------------------------------------------------
# Nested objects, bare list and dict


def test_object_with_nested_fields_builds_a_nested_class() -> None:
    """`type: object` with `fields:` is a nested class; `list[object]` a list of them; `object?` optional."""
    street = FieldDef(name="street", type="str", description="Street")
    contact = one(
        FieldDef(name="address", type="object", fields=[street]),
        FieldDef(name="phones", type="list[object]", fields=[FieldDef(name="number", type="str")]),
        FieldDef(name="office", type="object?", fields=[street]),
        name="Contact",
    )
    value = contact.model_validate({"address": {"street": "Main"}, "phones": [{"number": "1"}]})
    assert "Main" == value.address.street  # type: ignore[attr-defined]  # built at runtime
    assert ("ContactAddress", "ContactPhones", None) == (
        type(value.address).__name__,  # type: ignore[attr-defined]
        type(value.phones[0]).__name__,  # type: ignore[attr-defined]
        value.office,  # type: ignore[attr-defined]
    )
    with pytest.raises(ValidationError):
        contact.model_validate({"address": {"street": "Main", "zip": 1}, "phones": []})  # nested: no extra keys


def test_fields_alone_declare_a_nested_object() -> None:
    """A field with `fields:` and no `type` is a nested object."""
    thing = one(FieldDef(name="size", fields=[FieldDef(name="w", type="int")]))
    assert 3 == thing.model_validate({"size": {"w": 3}}).size.w  # type: ignore[attr-defined]  # built at runtime


def test_nested_names_avoid_declared_and_known_ones() -> None:
    """A nested class never takes a name already declared or registered."""
    taken = schema("ThingSize", FieldDef(name="x", type="int"))
    thing = schema("Thing", FieldDef(name="size", type="object", fields=[FieldDef(name="w", type="int")]))
    built = build_models([thing, taken], known={"ThingSize2": Address})
    assert "ThingSize3" == built["Thing"].model_fields["size"].annotation.__name__  # type: ignore[union-attr]


def test_fields_under_a_non_object_type_are_refused() -> None:
    """`fields:` under `type: str` is an error naming the field and the fix."""
    error = error_of([schema("Thing", FieldDef(name="a", type="str", fields=[FieldDef(name="b")]))])
    assert "`fields` under field 'a' of schema 'Thing' declares a nested object" in error.message
    assert "`type: object`" in error.message


def test_object_without_fields_is_any_json_object() -> None:
    """A bare `type: object` is JSON Schema's any object (`dict`); with `fields:` under it, a nested object."""
    thing = one(
        FieldDef(name="extra", type="object"),
        FieldDef(name="items", type="array"),
        FieldDef(name="address", type="object", fields=[FieldDef(name="street", type="string")]),
    )
    value = thing.model_validate({"extra": {"k": [1]}, "items": [1, "a"], "address": {"street": "Main"}})
    assert ({"k": [1]}, [1, "a"], "Main") == (value.extra, value.items, value.address.street)  # type: ignore[attr-defined]
    with pytest.raises(ValidationError):
        thing.model_validate({"extra": [1], "items": [], "address": {"street": "Main"}})


def test_bare_list_and_dict_fields_hold_anything() -> None:
    """`type: list` takes any list and `type: dict` any mapping with string keys."""
    thing = one(FieldDef(name="tags", type="list"), FieldDef(name="extra", type="dict"))
    value = thing.model_validate({"tags": [1, "a"], "extra": {"k": [None]}})
    assert ([1, "a"], {"k": [None]}) == (value.tags, value.extra)  # type: ignore[attr-defined]  # built at runtime


def test_schema_problems_lists_every_bad_field() -> None:
    """`schema_problems` reports each bad field and unknown reference, where building stops at the first."""
    bad = schema(
        "Thing",
        FieldDef(name="a", type="lst[str]"),
        FieldDef(name="b", type="int", ge=5, le=1),
        FieldDef(name="c", type="Nope"),
        FieldDef(name="d", type="str", fields=[FieldDef(name="x", type="Nope2")]),
    )
    starts = ["In field 'a'", "No number satisfies", "`fields` under field 'd'", "Unknown schema 'Nope'"]
    messages = [p.message for p in schema_problems(bad, known={"Address"})]
    assert starts == [m[: len(start)] for m, start in zip(messages, starts, strict=False)]
    assert len(starts) == len(messages)
    assert [] == schema_problems(schema("Ok", FieldDef(name="a", type="Address")), known={"Address"})


def test_required_optional_field_must_be_given_but_may_be_null() -> None:
    """`required: true` on `str?`: no default, so the key is required, and null is accepted."""
    thing = one(FieldDef(name="email", type="str?", required=True))
    assert ["email"] == thing.model_json_schema()["required"]
    assert None is thing.model_validate({"email": None}).email  # type: ignore[attr-defined]  # built at runtime
    with pytest.raises(ValidationError):
        thing.model_validate({})


def test_required_field_with_a_default_is_refused() -> None:
    """`required: true` and a `default` contradict each other: the error says to remove one."""
    error = error_of([schema("Thing", FieldDef(name="a", type="str?", required=True, default=None))])
    assert "is `required: true` and has a default" in error.message


def test_not_required_field_needs_an_optional_type_or_a_default() -> None:
    """`required: false` on a plain `str` with no default suggests `str?`."""
    error = error_of([schema("Thing", FieldDef(name="a", type="str", required=False))])
    assert "write the type as 'str?'" in error.message
