"""JSON Schema dialects as atomtask applies them: validator classes, vocabularies, formats, patterns.

Every draft's validator is `jsonschema`'s own, extended through its supported `extend` hook so that
`pattern` and `patternProperties` match with the `regex` module (ECMA-262 patterns use Unicode
property escapes such as `\\p{Letter}`, which `re` lacks), restricted to the vocabularies a custom
metaschema enables, and given a format checker that asserts every 2020-12 format.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from typing import Any

import jsonschema
import jsonschema.validators
import regex
from pydantic_core import PydanticCustomError
from rfc3986_validator import validate_rfc3986

__all__ = [
    "ANNOTATION_KEYWORDS",
    "FORMAT_CHECKER",
    "VOCABULARIES",
    "checked_formats",
    "compiled_pattern",
    "dialect_keywords",
    "format_validator",
    "iri_to_uri",
    "re_compiles",
    "validator_class",
]

_V = "https://json-schema.org/draft/2020-12/vocab/"
VOCABULARIES: dict[str, frozenset[str]] = {
    _V + "core": frozenset({"$ref", "$dynamicRef"}),
    _V + "applicator": frozenset(
        {
            "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "prefixItems",
            "items", "contains", "properties", "patternProperties", "additionalProperties", "propertyNames",
        }
    ),
    _V + "unevaluated": frozenset({"unevaluatedItems", "unevaluatedProperties"}),
    _V + "validation": frozenset(
        {
            "type", "const", "enum", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
            "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains",
            "minContains", "maxProperties", "minProperties", "required", "dependentRequired",
        }
    ),
    # `format` is asserted whichever of the two format vocabularies a metaschema names.
    _V + "format-annotation": frozenset({"format"}),
    _V + "format-assertion": frozenset({"format"}),
    _V + "content": frozenset(),
    _V + "meta-data": frozenset(),
}  # fmt: skip

ANNOTATION_KEYWORDS = frozenset(
    {
        "$schema", "$id", "$anchor", "$dynamicAnchor", "$defs", "definitions", "$comment", "$vocabulary",
        "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
        "contentEncoding", "contentMediaType", "contentSchema", "$recursiveRef", "$recursiveAnchor",
        "dependencies", "additionalItems", "id",
    }
)  # fmt: skip


def dialect_keywords(validator_cls: type[Any]) -> frozenset[str]:
    """Every keyword the validator knows, plus the annotations: what a typo is compared against."""
    return frozenset(validator_cls.VALIDATORS) | ANNOTATION_KEYWORDS


@functools.lru_cache(maxsize=4096)
def compiled_pattern(pattern: str) -> regex.Pattern[str]:
    return regex.compile(pattern)


def re_compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[jsonschema.ValidationError]:
    if validator.is_type(instance, "string") and not compiled_pattern(pattern).search(instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
) -> Iterator[jsonschema.ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if compiled_pattern(pattern).search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _ignored(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[jsonschema.ValidationError]:
    """A keyword of a vocabulary the schema's metaschema does not enable."""
    return iter(())


@functools.cache
def validator_class(base: type[Any], vocabularies: frozenset[str] | None) -> type[Any]:
    """`base` with ECMA-262-like patterns (`regex` knows `\\p{...}`), restricted to `vocabularies` if given."""
    changes: dict[str, Any] = {}
    if "pattern" in base.VALIDATORS:
        changes["pattern"] = _pattern
    if "patternProperties" in base.VALIDATORS:
        changes["patternProperties"] = _pattern_properties
    if vocabularies is not None:
        allowed = frozenset().union(*(VOCABULARIES[v] for v in vocabularies))
        changes |= {word: _ignored for word in base.VALIDATORS if word not in allowed}
    # `extend` is jsonschema's supported way to swap keyword implementations (its stubs leave it untyped).
    extended: type[Any] = jsonschema.validators.extend(  # type: ignore[no-untyped-call]  # untyped in the stubs
        base, validators=changes, format_checker=FORMAT_CHECKER
    )
    return extended


def _is_regex(instance: object) -> bool:
    if isinstance(instance, str):
        compiled_pattern(instance)
    return True


_UCSCHAR = (
    (0xA0, 0xD7FF), (0xE000, 0xF8FF), (0xF900, 0xFDCF), (0xFDF0, 0xFFEF), (0x10000, 0x1FFFD), (0x20000, 0x2FFFD),
    (0x30000, 0x3FFFD), (0x40000, 0x4FFFD), (0x50000, 0x5FFFD), (0x60000, 0x6FFFD), (0x70000, 0x7FFFD),
    (0x80000, 0x8FFFD), (0x90000, 0x9FFFD), (0xA0000, 0xAFFFD), (0xB0000, 0xBFFFD), (0xC0000, 0xCFFFD),
    (0xD0000, 0xDFFFD), (0xE1000, 0xEFFFD), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD),
)  # fmt: skip


def iri_to_uri(iri: str) -> str | None:
    """RFC 3987 §3.1: the URI an IRI maps to (non-ASCII `ucschar`/`iprivate` percent-encoded); None if it has others."""
    out: list[str] = []
    for char in iri:
        code = ord(char)
        if code < 0x80:
            out.append(char)
        elif any(low <= code <= high for low, high in _UCSCHAR):
            out.append("".join(f"%{byte:02X}" for byte in char.encode("utf-8")))
        else:
            return None
    return "".join(out)


def _iri_checker(rule: str) -> Any:
    # `rfc3987-syntax`, jsonschema's own IRI checker, builds Earley parsers for seconds at import time;
    # an IRI is valid exactly when the URI it maps to is, which `rfc3986-validator` checks.
    def check(instance: object) -> bool:
        if not isinstance(instance, str):
            return True
        uri = iri_to_uri(instance)
        return uri is not None and bool(validate_rfc3986(uri, rule=rule))

    return check


# The formats of 2020-12, with `regex` checked by the engine that will match the patterns.
# (A copy of the draft's own checkers: `FormatChecker(formats=...)` would look the names up in the
# registry shared by all drafts, where e.g. draft 3's `time` has no offset.)
FORMAT_CHECKER = jsonschema.FormatChecker(formats=())
FORMAT_CHECKER.checkers = dict(jsonschema.Draft202012Validator.FORMAT_CHECKER.checkers)
FORMAT_CHECKER.checks("regex", raises=regex.error)(_is_regex)
for _name, _rule in (("iri", "URI"), ("iri-reference", "URI_reference")):
    if _name not in FORMAT_CHECKER.checkers:
        FORMAT_CHECKER.checks(_name)(_iri_checker(_rule))


def checked_formats() -> frozenset[str]:
    """The `format` values that are enforced (the installed checkers of `jsonschema`)."""
    return frozenset(FORMAT_CHECKER.checkers)


def format_validator(fmt: str) -> Callable[[Any], Any]:
    """A Pydantic after-validator asserting the JSON Schema `format` `fmt` on strings (None passes)."""

    def check(value: Any) -> Any:
        if isinstance(value, str) and not FORMAT_CHECKER.conforms(value, fmt):
            raise PydanticCustomError("format", "{detail}", {"detail": f"{value!r} is not a valid {fmt!r}"})
        return value

    return check
