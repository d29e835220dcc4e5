"""A sample of JSON Schemas written the way they are found in the wild, each with valid and invalid instances.

Built here, not collected: each *style* below is a function of the draft that writes one schema the
way real projects do (OpenAPI components with `int32`/`int64`/`byte`/`double`, vendor keywords `x-...`
and `_...`, `javaType`/`tsType` of code generators, `$comment`, `examples`, `deprecated`,
`readOnly`, capitalised formats, a regular expression in the `format` slot, `definitions`/`$defs`,
real typos), and the sample is every style under every draft it makes sense in (draft-04, draft-07,
2019-09, 2020-12 `$schema`s, and none). Labels follow JSON Schema itself: an unknown keyword or an
unknown format constrains nothing, so an instance that only breaks what a typo meant is *valid*;
OpenAPI's `int32`, `int64`, `float`, `double` and `byte` are asserted (as OpenAPI validators do).
Each label is also checked against the reference validator by the benchmark, so a wrong label shows.

`CASES` is the sample; `benchmarks/json_schema_real_world.py` measures it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

__all__ = ["CASES", "DRAFT_URIS", "Case"]

DRAFT_URIS: dict[str, str | None] = {
    "draft-04": "http://json-schema.org/draft-04/schema#",
    "draft-07": "http://json-schema.org/draft-07/schema#",
    "2019-09": "https://json-schema.org/draft/2019-09/schema",
    "2020-12": "https://json-schema.org/draft/2020-12/schema",
    "none": None,
    # `$schema`s as published, other than the drafts' own URIs
    "latest": "http://json-schema.org/schema#",
    "https_draft_07": "https://json-schema.org/draft-07/schema#",
    "draft_04_no_hash": "http://json-schema.org/draft-04/schema",
    "draft_04_hyper": "http://json-schema.org/draft-04/hyper-schema#",
    "http_2019_09": "http://json-schema.org/draft/2019-09/schema#",
}
#: The draft the reference applies for a `$schema` written another way.
_ALIAS_DRAFTS = {
    "latest": "2020-12",
    "https_draft_07": "draft-07",
    "draft_04_no_hash": "draft-04",
    "draft_04_hyper": "draft-04",
    "http_2019_09": "2019-09",
}
_MODERN = ("draft-07", "2019-09", "2020-12", "none")
_ALL = ("draft-04", *_MODERN)


@attrs.frozen(kw_only=True)
class Case:
    """One schema: why it is in the sample, the draft its author meant, and labelled instances."""

    name: str
    cause: str
    draft: str  # the draft the reference validator applies (for no `$schema`: what the author wrote in)
    schema: Any
    valid: tuple[Any, ...]
    invalid: tuple[Any, ...]


Style = Callable[[str], tuple[dict[str, Any], list[Any], list[Any]]]


def _defs(draft: str) -> str:
    return "definitions" if draft in ("draft-04", "draft-07") else "$defs"


def _with_schema(draft: str, schema: dict[str, Any]) -> dict[str, Any]:
    uri = DRAFT_URIS[draft]
    return schema if uri is None else {"$schema": uri, **schema}


# -- OpenAPI components ---------------------------------------------------------------------------------


def pet(draft: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    defs = _defs(draft)
    schema = {
        "title": "Pet",
        "type": "object",
        "required": ["name", "photoUrls"],
        "properties": {
            "id": {"type": "integer", "format": "int64", "readOnly": True, "example": 10},
            "name": {"type": "string", "example": "doggie"},
            "category": {"$ref": f"#/{defs}/Category"},
            "photoUrls": {"type": "array", "xml": {"wrapped": True}, "items": {"type": "string"}},
            "status": {
                "type": "string",
                "description": "pet status in the store",
                "enum": ["available", "pending", "sold"],
            },
        },
        "xml": {"name": "pet"},
        defs: {
            "Category": {
                "type": "object",
                "properties": {"id": {"type": "integer", "format": "int64"}, "name": {"type": "string"}},
                "xml": {"name": "category"},
            }
        },
    }
    valid = [
        {"name": "doggie", "photoUrls": []},
        {"id": 9223372036854775807, "name": "rex", "photoUrls": ["a"], "status": "sold", "category": {"id": 1}},
        {"id": -9223372036854775808, "name": "x", "photoUrls": [], "extra": True},
    ]
    invalid = [
        {"id": 9223372036854775808, "name": "big", "photoUrls": []},
        {"id": 1.5, "name": "half", "photoUrls": []},
        {"name": "no urls"},
        {"name": "x", "photoUrls": [], "status": "lost"},
        {"name": "x", "photoUrls": [], "category": {"id": 2**64}},
    ]
    return schema, valid, invalid


def measurements(draft: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    schema = {
        "type": "object",
        "properties": {
            "count": {"type": "integer", "format": "int32", "minimum": 0},
            "price": {"type": "number", "format": "float"},
            "ratio": {"type": "number", "format": "double"},
            "offset": {"type": "integer", "format": "int32"},
        },
        "required": ["count"],
        "x-tags": ["metrics"],
    }
    valid = [
        {"count": 0},
        {"count": 2147483647, "price": 3.4e38, "ratio": 1e300, "offset": -2147483648},
        {"count": 5, "price": 0.5, "offset": 7 if draft == "draft-04" else 7.0},
    ]
    invalid = [
        {"count": 2147483648},
        {"count": 1, "offset": -2147483649},
        {"count": 1, "price": 3.5e38},
        {"count": -1},
        {"count": 1, "offset": 2.5},
        {"price": 1.0},
    ]
    return schema, valid, invalid


def attachment(draft: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    schema = {
        "type": "object",
        "properties": {
            "fileName": {"type": "string"},
            "content": {"type": "string", "format": "byte", "description": "base64-encoded file contents"},
            "raw": {"type": "string", "format": "binary"},
            "secret": {"type": "string", "format": "password", "writeOnly": True},
        },
        "required": ["content"],
    }
    valid = [
        {"content": "aGVsbG8gd29ybGQ="},
        {"content": "", "fileName": "empty.txt"},
        {"content": "QUJD", "raw": "\u0000\u0001 anything", "secret": "hunter2"},
    ]
    invalid = [
        {"content": "hello world"},
        {"content": "aGVsbG8"},
        {"content": "a==="},
        {"content": 42},
        {"fileName": "missing.txt"},
    ]
    return schema, valid, invalid


def openapi_nullable(draft: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    schema = {
        "type": "object",
        "discriminator": {"propertyName": "kind"},
        "externalDocs": {"url": "https://example.org/docs"},
        "properties": {
            "kind": {"type": "string", "enum": ["order"]},
            "note": {"type": ["string", "null"], "nullable": True, "maxLength": 20},
            "quantity": {"type": "integer", "format": "int32", "minimum": 1, "x-order": 2},
        },
        "required": ["kind", "quantity"],
        "example": {"kind": "order", "quantity": 1},
    }
    valid = [{"kind": "order", "quantity": 1}, {"kind": "order", "quantity": 3, "note": None}]
    invalid = [
        {"kind": "order", "quantity": 0},
        {"kind": "refund", "quantity": 1},
        {"kind": "order", "quantity": 1, "note": "x" * 21},
        {"kind": "order", "quantity": 3000000000},
    ]
    return schema, valid, invalid


# -- vendor keywords and annotations -------------------------------------------------------------------


def underscored(draft: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    schema = {
        "type": "object",
        "_comment": "generated by the form builder",
        "_id": "contact-form",
        "properties": {
            "email": {"type": "string", "_format": "email", "maxLength": 50},
            "tags": {"type": "array", "items": {"type": "string"}, "_uniqueItems": True, "_minItems": 1},
            "age": {"type": "integer", "_minimum": 0, "_type": "int"},
        },
        "_required": ["email"],
    }
    valid = [{}, {"email": "not an email", "tags": ["a", "a"]}, {"tags": [], "age": -3}]
    invalid = [{"email": 5}, {"tags": [1]}, {"age": 1.5}, {"email": "x" * 51}]
    return schema, valid, invalid


def code_generators(draft: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    schema = {
        "type": "object",
        "javaType": "com.example.model.Customer",
        "javaInterfaces": ["java.io.Serializable"],
        "tsType": "Customer",
        "properties": {
            "id": {"type": "string", "javaType": "java.util.UUID", "format": "uuid"},
            "level": {
                "type": "string",
                "enum": ["GOLD", "SILVER"],
                "javaEnumNames": ["Gold", "Silver"],
                "tsEnumNames": ["Gold", "Silver"],
            },
            "since": {"type": "string", "format": "date", "customDateTimePattern": "yyyy-MM-dd"},
            "score": {"type": "number", "existingJavaType": "java.math.BigDecimal"},
        },
        "additionalProperties": False,
    }
    valid = [
        {"id": "123e4567-e89b-12d3-a456-426614174000", "level": "GOLD"},
        {"since": "2024-02-29", "score": 1.25},
        {},
    ]
    invalid = [
        {"id": "not-a-uuid"},
        {"level": "Gold"},
        {"since": "2023-02-29"},
        {"unknown": 1},
    ]
    return schema, valid, invalid


def annotated(draft: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    schema = {
        "$comment": "Kept in sync with the billing service.",
        "title": "Invoice",
        "description": "An invoice as the billing service sends it.",
        "type": "object",
        "examples": [{"number": "INV-1", "total": 10}],
        "properties": {
            "number": {"type": "string", "pattern": "^INV-[0-9]+$", "examples": ["INV-42"]},
            "total": {"type": "number", "minimum": 0, "default": 0},
            "legacyCode": {"type": "string", "deprecated": True, "$comment": "remove in v3"},
            "createdAt": {"type": "string", "format": "date-time", "readOnly": True},
            "password": {"type": "string", "writeOnly": True, "minLength": 8},
        },
        "required": ["number", "total"],
    }
    valid = [
        {"number": "INV-1", "total": 0},
        {"number": "INV-22", "total": 9.5, "createdAt": "2024-01-01T10:00:00Z", "legacyCode": "x"},
    ]
    invalid = [
        {"number": "INV-A", "total": 1},
        {"number": "INV-1", "total": -1},
        {"number": "INV-1", "total": 1, "createdAt": "yesterday"},
        {"number": "INV-1", "total": 1, "password": "short"},
        {"total": 1},
    ]
    return schema, valid, invalid


def form_ui(draft: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    schema = {
        "type": "object",
        "properties": {
            "color": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"], "ui:widget": "radio"},
            "bio": {"type": "string", "maxLength": 200, "options": {"inputAttributes": {"rows": 4}}},
            "agree": {"type": "boolean", "propertyOrder": 3, "x-display": "checkbox"},
        },
        "required": ["agree"],
        "defaultProperties": ["agree"],
    }
    valid = [{"agree": True}, {"agree": False, "color": "g", "bio": ""}]
    invalid = [{"agree": "yes"}, {"agree": True, "color": "Red"}, {"agree": True, "bio": "x" * 201}, {}]
    return schema, valid, invalid


# -- formats nothing checks: annotations --------------------------------------------------------------


def capitalised_formats(draft: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    schema = {
        "type": "object",
        "properties": {
            "homepage": {"type": "string", "format": "URI"},
            "contact": {"type": "string", "format": "Email"},
            "at": {"type": "string", "format": "Date-Time", "minLength": 1},
        },
        "required": ["homepage"],
    }
    valid = [{"homepage": "not a uri at all"}, {"homepage": "https://example.org", "contact": "nobody", "at": "x"}]
    invalid = [{"homepage": 3}, {"contact": "a@b.c"}, {"homepage": "u", "at": ""}]
    return schema, valid, invalid


def regex_in_format(draft: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    schema = {
        "type": "object",
        "properties": {
            "zip": {"type": "string", "format": "^[0-9]{5}$", "maxLength": 10},
            "code": {"type": "string", "format": "[A-Z]{2}-\\d+"},
        },
    }
    valid = [{"zip": "12345"}, {"zip": "abc", "code": "lower"}, {}]
    invalid = [{"zip": 12345}, {"zip": "12345678901"}, {"code": ["AB-1"]}]
    return schema, valid, invalid


def legacy_formats(draft: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    schema = {
        "type": "object",
        "properties": {
            "timestamp": {"type": "integer", "format": "utc-millisec", "minimum": 0},
            "phone": {"type": "string", "format": "phone"},
            "colour": {"type": "string", "format": "color"},
            "about": {"type": "string", "format": "textarea"},
            "amount": {"type": "string", "format": "decimal"},
        },
        "required": ["timestamp"],
    }
    valid = [{"timestamp": 0}, {"timestamp": 1700000000000, "phone": "call me", "colour": "blue", "amount": "abc"}]
    invalid = [{"timestamp": -1}, {"timestamp": "now"}, {"timestamp": 1, "phone": 5}, {}]
    return schema, valid, invalid


def int64_as_string(draft: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    # Google-style APIs send 64-bit integers as strings: `int64` applies to numbers, so it checks nothing here.
    schema = {
        "type": "object",
        "properties": {"id": {"type": "string", "format": "int64"}, "etag": {"type": "string", "format": "byte"}},
        "required": ["id"],
    }
    valid = [{"id": "12345678901234567890"}, {"id": "not a number", "etag": "QUJDRA=="}]
    invalid = [{"id": 5}, {"id": "1", "etag": "###"}, {}]
    return schema, valid, invalid


# -- real typos: JSON Schema ignores the misspelt keyword ------------------------------------------------


def typos(draft: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    schema = {
        "type": "object",
        "additonalProperties": False,
        "properties": {
            "name": {"type": "string", "maxLenght": 3},
            "age": {"type:": "integer", "minimun": 0},
            "kind": {"type": "string", "enun": ["a", "b"]},
        },
        "requried": ["name"],
    }
    # What the typos meant is not enforced (JSON Schema ignores them); the rest is.
    valid = [{}, {"name": "much longer", "age": -5, "kind": "z", "other": 1}, {"age": "text"}]
    invalid = [{"name": 5}, {"kind": 3}]
    return schema, valid, invalid


# -- plain schemas of every shape ----------------------------------------------------------------------


def address(draft: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    schema = {
        "description": "An address similar to http://microformats.org/wiki/h-card",
        "type": "object",
        "properties": {
            "post-office-box": {"type": "string"},
            "street-address": {"type": "string"},
            "locality": {"type": "string"},
            "postal-code": {"type": "string", "pattern": "^[0-9]{4,5}$"},
            "country-name": {"type": "string"},
        },
        "required": ["locality", "country-name"],
        "dependencies" if draft in ("draft-04", "draft-07") else "dependentRequired": {
            "post-office-box": ["street-address"]
        },
    }
    valid = [{"locality": "Oslo", "country-name": "NO"}, {"locality": "x", "country-name": "y", "postal-code": "0150"}]
    invalid = [
        {"locality": "Oslo"},
        {"locality": "x", "country-name": "y", "postal-code": "ABC"},
        {"locality": "x", "country-name": "y", "post-office-box": "12"},
    ]
    return schema, valid, invalid


def tree(draft: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    defs = _defs(draft)
    schema = {
        "$ref": f"#/{defs}/node",
        defs: {
            "node": {
                "type": "object",
                "properties": {
                    "value": {"type": "integer"},
                    "children": {"type": "array", "items": {"$ref": f"#/{defs}/node"}, "maxItems": 3},
                },
                "required": ["value"],
                "additionalProperties": False,
            }
        },
    }
    valid = [{"value": 1}, {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]}]
    invalid = [{"value": 1, "children": [{"value": "x"}]}, {"value": 1, "children": [{"value": 1}] * 4}, {}]
    return schema, valid, invalid


def shapes(draft: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    defs = _defs(draft)
    schema = {
        "oneOf": [{"$ref": f"#/{defs}/circle"}, {"$ref": f"#/{defs}/square"}],
        defs: {
            "circle": {
                "type": "object",
                "properties": {"kind": {"enum": ["circle"]}, "r": {"type": "number", "minimum": 0}},
                "required": ["kind", "r"],
            },
            "square": {
                "type": "object",
                "properties": {"kind": {"enum": ["square"]}, "side": {"type": "number", "minimum": 0}},
                "required": ["kind", "side"],
            },
        },
    }
    valid = [{"kind": "circle", "r": 1}, {"kind": "square", "side": 0}]
    invalid = [{"kind": "circle"}, {"kind": "triangle", "side": 1}, {"kind": "square", "side": -1}, []]
    return schema, valid, invalid


def user_account(draft: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    schema = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "format": "uuid"},
            "email": {"type": "string", "format": "email"},
            "website": {"type": "string", "format": "uri"},
            "ip": {"type": "string", "format": "ipv4"},
            "born": {"type": "string", "format": "date"},
            "roles": {"type": "array", "items": {"enum": ["admin", "user"]}, "uniqueItems": True, "minItems": 1},
            "settings": {"type": "object", "additionalProperties": {"type": "boolean"}, "maxProperties": 3},
        },
        "required": ["id", "email", "roles"],
    }
    ok = {"id": "123e4567-e89b-12d3-a456-426614174000", "email": "a@example.org", "roles": ["user"]}
    valid = [ok, {**ok, "website": "https://x.org/a", "ip": "10.0.0.1", "born": "1990-12-31", "settings": {"a": True}}]
    invalid = [
        {**ok, "email": "no-at-sign"},
        {**ok, "website": "not a uri"},
        {**ok, "ip": "300.1.1.1"},
        {**ok, "roles": ["user", "user"]},
        {**ok, "roles": []},
        {**ok, "settings": {"a": 1}},
        {**ok, "born": "1990-13-01"},
    ]
    return schema, valid, invalid


def conditional(draft: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    schema = {
        "type": "object",
        "properties": {"country": {"enum": ["US", "CA"]}, "postal_code": {"type": "string"}},
        "if": {"properties": {"country": {"const": "US"}}},
        "then": {"properties": {"postal_code": {"pattern": "^[0-9]{5}$"}}},
        "else": {"properties": {"postal_code": {"pattern": "^[A-Z][0-9][A-Z] [0-9][A-Z][0-9]$"}}},
    }
    valid = [{"country": "US", "postal_code": "20500"}, {"country": "CA", "postal_code": "K1M 1M4"}]
    invalid = [{"country": "US", "postal_code": "K1M 1M4"}, {"country": "CA", "postal_code": "20500"}]
    return schema, valid, invalid


def tuples(draft: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    if draft == "2020-12":
        schema: dict[str, Any] = {
            "type": "array",
            "prefixItems": [{"type": "number"}, {"type": "string"}],
            "items": False,
        }
    else:
        schema = {"type": "array", "items": [{"type": "number"}, {"type": "string"}], "additionalItems": False}
    valid = [[1, "a"], [1], []]
    invalid = [["a", 1], [1, "a", "extra"], {"0": 1}]
    return schema, valid, invalid


def old_style(draft: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    # Draft-04 idioms (boolean `exclusiveMinimum`, `id`), often published without `$schema`.
    schema = {
        "id": "http://example.org/schemas/price.json",
        "type": "object",
        "properties": {
            "price": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
            "discount": {"type": "number", "maximum": 100, "exclusiveMaximum": True},
        },
        "required": ["price"],
    }
    valid = [{"price": 0.01}, {"price": 5, "discount": 99.9}]
    invalid = [{"price": 0}, {"price": 1, "discount": 100}, {"price": -1}]
    return schema, valid, invalid


def const_in_draft4(draft: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    # `const` arrived in draft-06: under draft-04 it is an unknown keyword, so it constrains nothing.
    schema = {
        "type": "object",
        "properties": {"version": {"type": "integer", "const": 2}, "kind": {"type": "string", "enum": ["a"]}},
        "required": ["version"],
    }
    valid = [{"version": 2}, {"version": 3}] if draft == "draft-04" else [{"version": 2}, {"version": 2, "kind": "a"}]
    invalid = [{"version": "2"}, {"version": 2, "kind": "b"}] + ([] if draft == "draft-04" else [{"version": 3}])
    return schema, valid, invalid


def error_model(draft: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    schema = {
        "type": "object",
        "required": ["code", "message"],
        "properties": {
            "code": {"type": "integer", "format": "int32", "x-go-type": "int32"},
            "message": {"type": "string", "x-nullable": False},
            "retryAfter": {"type": "integer", "format": "int64", "minimum": 0},
        },
        "x-go-package": "api/errors",
    }
    valid = [{"code": 404, "message": "not found"}, {"code": -1, "message": "", "retryAfter": 2**40}]
    invalid = [{"code": 2**31, "message": "x"}, {"code": 1}, {"code": 1, "message": "x", "retryAfter": -2}]
    return schema, valid, invalid


def catalog(draft: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    schema = {
        "type": "object",
        "patternProperties": {
            "^sku-[0-9]+$": {"type": "object", "properties": {"price": {"type": "number", "multipleOf": 0.5}}}
        },
        "additionalProperties": False,
        "minProperties": 1,
    }
    valid = [{"sku-1": {"price": 2.5}}, {"sku-22": {}, "sku-3": {"price": 0}}]
    invalid = [{}, {"sku-1": {"price": 2.25}}, {"item-1": {}}, {"sku-1": []}]
    return schema, valid, invalid


def event(draft: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    schema = {
        "type": "object",
        "propertyNames": {"pattern": "^[a-z_]+$"},
        "properties": {
            "type": {"const": "event"},
            "starts": {"type": "string", "format": "date-time"},
            "tags": {"type": "array", "contains": {"const": "public"}},
        },
        "required": ["type"],
    }
    valid = [{"type": "event"}, {"type": "event", "starts": "2024-05-01T09:00:00+02:00", "tags": ["x", "public"]}]
    invalid = [
        {"type": "meeting"},
        {"type": "event", "Bad": 1},
        {"type": "event", "tags": ["x"]},
        {"type": "event", "starts": "May 1"},
    ]
    return schema, valid, invalid


def product(draft: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    schema = {
        "title": "Product",
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "price": {"type": "number", "minimum": 0},
            "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "support": {"type": "string", "format": "email"},
        },
        "required": ["name", "price"],
        "additionalProperties": False,
        "links": [{"rel": "self", "href": "/products/{sku}"}],
    }
    valid = [{"name": "a", "price": 0}, {"name": "b", "price": 9.99, "sku": "ABC-1234", "tags": ["x", "y"]}]
    invalid = [
        {"name": "", "price": 1},
        {"name": "a", "price": -1},
        {"name": "a", "price": 1, "sku": "abc-1234"},
        {"name": "a", "price": 1, "tags": ["x", "x"]},
        {"name": "a", "price": 1, "support": "nobody"},
        {"name": "a", "price": 1, "colour": "red"},
    ]
    return schema, valid, invalid


STYLES: dict[str, tuple[str, tuple[str, ...], Style]] = {
    # name: (cause, drafts, style)
    "pet": ("openapi-format", _ALL, pet),
    "measurements": ("openapi-format", _ALL, measurements),
    "attachment": ("openapi-format", _ALL, attachment),
    "openapi_nullable": ("openapi-format", ("draft-07", "2020-12", "none"), openapi_nullable),
    "error_model": ("openapi-format", _ALL, error_model),
    "underscored": ("vendor-keyword", _ALL, underscored),
    "code_generators": ("vendor-keyword", _ALL, code_generators),
    "annotated": ("vendor-keyword", _MODERN, annotated),
    "form_ui": ("vendor-keyword", _ALL, form_ui),
    "capitalised_formats": ("unchecked-format", _ALL, capitalised_formats),
    "regex_in_format": ("unchecked-format", _ALL, regex_in_format),
    "legacy_formats": ("unchecked-format", _ALL, legacy_formats),
    "int64_as_string": ("unchecked-format", _ALL, int64_as_string),
    "typos": ("typo", _ALL, typos),
    "address": ("plain", _ALL, address),
    "tree": ("plain", _ALL, tree),
    "shapes": ("plain", _ALL, shapes),
    "user_account": ("plain", _ALL, user_account),
    "conditional": ("plain", _MODERN, conditional),
    "catalog": ("plain", _ALL, catalog),
    "event": ("plain", _MODERN, event),
    "tuples": ("plain", _ALL, tuples),
    "old_style": ("draft-mismatch", ("draft-04", "none"), old_style),
    "const_in_draft4": ("draft-mismatch", ("draft-04", "draft-07"), const_in_draft4),
    "product": ("schema-uri", tuple(_ALIAS_DRAFTS), product),
}


#: For a style published without `$schema`: the draft its idioms are written in (2020-12 for the others).
_MEANT = {"old_style": "draft-04", "tuples": "draft-07"}


def _cases() -> tuple[Case, ...]:
    out: list[Case] = []
    for name, (cause, drafts, style) in STYLES.items():
        for draft in drafts:
            schema, valid, invalid = style(draft)
            # An author who writes no `$schema` writes in some draft: the reference applies that one.
            meant = _MEANT.get(name, draft) if draft == "none" else _ALIAS_DRAFTS.get(draft, draft)
            out.append(
                Case(
                    name=f"{name}_{draft.replace('-', '_')}",
                    cause=cause,
                    draft="2020-12" if meant == "none" else meant,
                    schema=_with_schema(draft, schema),
                    valid=tuple(valid),
                    invalid=tuple(invalid),
                )
            )
    return tuple(out)


CASES: tuple[Case, ...] = _cases()
