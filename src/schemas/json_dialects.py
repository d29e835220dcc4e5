"""JSON Schema dialects as atomtask applies them: validator classes, vocabularies, formats, patterns.

Every draft's validator is `jsonschema`'s own, extended through its supported `extend` hook so that
`pattern` and `patternProperties` match with the `regex` module (ECMA-262 patterns use Unicode
property escapes such as `\\p{Letter}`, which `re` lacks), restricted to the vocabularies a custom
metaschema enables, and given a format checker that asserts every 2020-12 format and the OpenAPI
formats with an obvious check (`int32`, `int64`, `float`, `double` on numbers, `byte` as base64 text).
Any other `format` is an annotation, as JSON Schema says (`atomtask check` reports it: W103).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterator
from typing import Any

import jsonschema
import jsonschema.validators
import referencing.jsonschema
import regex
from pydantic_core import PydanticCustomError
from rfc3986_validator import validate_rfc3986

__all__ = [
    "ANNOTATION_FORMATS",
    "ANNOTATION_KEYWORDS",
    "DRAFTS",
    "FORMAT_CHECKER",
    "NUMBER_FORMATS",
    "VOCABULARIES",
    "asserted_formats",
    "checked_formats",
    "compiled_pattern",
    "dialect_alias",
    "dialect_keywords",
    "format_validator",
    "iri_to_uri",
    "keyword_drafts",
    "known_dialect",
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


#: The drafts `jsonschema` implements, oldest first, by the name a message gives them.
DRAFTS: tuple[tuple[str, type[Any]], ...] = (
    ("draft-03", jsonschema.Draft3Validator),
    ("draft-04", jsonschema.Draft4Validator),
    ("draft-06", jsonschema.Draft6Validator),
    ("draft-07", jsonschema.Draft7Validator),
    ("2019-09", jsonschema.Draft201909Validator),
    ("2020-12", jsonschema.Draft202012Validator),
)


_CANONICAL = {
    "draft-03": "http://json-schema.org/draft-03/schema#",
    "draft-04": "http://json-schema.org/draft-04/schema#",
    "draft-06": "http://json-schema.org/draft-06/schema#",
    "draft-07": "http://json-schema.org/draft-07/schema#",
    "draft/2019-09": "https://json-schema.org/draft/2019-09/schema",
    "draft/2020-12": "https://json-schema.org/draft/2020-12/schema",
}
_ALIAS = re.compile(r"https?://json-schema\.org/(?:(draft-0[3467]|draft/2019-09|draft/2020-12)/)?(?:hyper-)?schema#?")


def known_dialect(uri: str) -> bool:
    """Whether `uri` names a draft as written (the `$schema` of a draft `referencing` knows)."""
    try:
        referencing.jsonschema.specification_with(uri)
    except referencing.jsonschema.UnknownDialect:
        return False
    return True


def dialect_alias(uri: str) -> str | None:
    """The draft a `$schema` written another way names, for the json-schema.org URIs found in the wild.

    `https://` for `http://` (or back), a missing or extra `#`, the draft's hyper-schema: the draft's own
    URI. The unversioned `http://json-schema.org/schema#` ("the latest"): "", read as no `$schema`. None
    for anything else (a URI the drafts know as written, or a custom metaschema).
    """
    match = _ALIAS.fullmatch(uri)
    if match is None or known_dialect(uri):
        return None
    return _CANONICAL[match.group(1)] if match.group(1) else ""


@functools.cache
def dialect_keywords(validator_cls: type[Any]) -> frozenset[str]:
    """Every keyword the validator knows, plus the annotations: what a typo is compared against."""
    return frozenset(validator_cls.VALIDATORS) | ANNOTATION_KEYWORDS


@functools.cache
def keyword_drafts(word: str) -> tuple[str, ...]:
    """The drafts in which `word` is a keyword that validates (`const`: draft-06 and later); () for none."""
    return tuple(name for name, cls in DRAFTS if word in cls.VALIDATORS)


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


# OpenAPI's format registry: numbers a type can hold, and base64 text. A format applies to its own
# kind of value (JSON Schema's rule): `int32` passes a string, `byte` a number.
_INTEGER_BOUNDS = {"int32": 2**31, "int64": 2**63}
_FLOAT_LIMITS = {"float": 3.4028234663852886e38, "double": 1.7976931348623157e308}
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def _integer_within(bound: int) -> Callable[[object], bool]:
    def check(instance: object) -> bool:
        if isinstance(instance, bool) or not isinstance(instance, int | float):
            return True
        if isinstance(instance, float) and not instance.is_integer():
            return False  # not an integer (inf and nan included)
        return -bound <= instance < bound

    return check


def _float_within(limit: float) -> Callable[[object], bool]:
    def check(instance: object) -> bool:
        if isinstance(instance, bool) or not isinstance(instance, int | float):
            return True
        return not (isinstance(instance, float) and math.isnan(instance)) and abs(instance) <= limit

    return check


def _is_base64(instance: object) -> bool:
    return not isinstance(instance, str) or _BASE64.fullmatch(instance) is not None


#: Formats asserted on numbers only (a string passes them), so a YAML `str` field cannot use them.
NUMBER_FORMATS = frozenset({*_INTEGER_BOUNDS, *_FLOAT_LIMITS})
#: Formats that are annotations by definition (OpenAPI: "a hint to UIs", "any sequence of octets"):
#: nothing could check them, so `check` does not report them.
ANNOTATION_FORMATS = frozenset({"binary", "password"})

for _name, _bound in _INTEGER_BOUNDS.items():
    FORMAT_CHECKER.checks(_name)(_integer_within(_bound))
for _name, _limit in _FLOAT_LIMITS.items():
    FORMAT_CHECKER.checks(_name)(_float_within(_limit))
FORMAT_CHECKER.checks("byte")(_is_base64)


def asserted_formats() -> frozenset[str]:
    """Every `format` value that is enforced: the 2020-12 formats and the OpenAPI ones with an obvious check."""
    return frozenset(FORMAT_CHECKER.checkers)


def checked_formats() -> frozenset[str]:
    """The `format` values enforced on strings (what a YAML `str` field may declare)."""
    return asserted_formats() - NUMBER_FORMATS


def format_validator(fmt: str) -> Callable[[Any], Any]:
    """A Pydantic after-validator asserting the JSON Schema `format` `fmt` on strings (None passes)."""

    def check(value: Any) -> Any:
        if isinstance(value, str) and not FORMAT_CHECKER.conforms(value, fmt):
            raise PydanticCustomError("format", "{detail}", {"detail": f"{value!r} is not a valid {fmt!r}"})
        return value

    return check
