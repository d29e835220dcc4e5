"""JSON Schema dialects as atomtask applies them, and what a schema may hold that is not enforced as written.

Validator classes, vocabularies, formats (the standard ones and OpenAPI's `int32`/`int64`/`float`/
`double`/`byte` enforced, any other an annotation) and ECMA-262 patterns; then the warnings for what
loads but is not enforced: suspected typos, another draft's keywords, unchecked formats (W102/W103).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import jsonschema
import jsonschema.validators
import referencing.jsonschema
import regex
from atomtask.errors import did_you_mean, near_names
from pydantic_core import PydanticCustomError
from rfc3986_validator import validate_rfc3986

__all__ = [
    "ANNOTATION_FORMATS",
    "ANNOTATION_KEYWORDS",
    "DRAFTS",
    "FORMAT_CHECKER",
    "NUMBER_FORMATS",
    "VENDOR_PREFIXES",
    "VOCABULARIES",
    "SchemaWarning",
    "asserted_formats",
    "checked_formats",
    "compiled_pattern",
    "dialect_alias",
    "dialect_keywords",
    "dialect_text",
    "draft_name",
    "format_validator",
    "format_warning",
    "iri_to_uri",
    "keyword_drafts",
    "keyword_warning",
    "known_dialect",
    "re_compiles",
    "strict_refusal",
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


# RFC 3339 Appendix A, as a pattern (DIGIT is ASCII): `P` then a date part (day, month[day] or
# year[month[day]]) with an optional time part, a time part alone, or weeks alone; each time part is
# hour[minute[second]], minute[second] or second. jsonschema checks `duration` with isoduration only
# when that is installed, which also imports arrow (~50 ms on every command that reads a JSON Schema)
# and accepts what the ABNF does not (fractions, signs, `P1Y2D`, `P1WT1H`: 10 of the suite's 52 cases).
_DUR_TIME = "T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)"
_DUR_DATE = "(?:[0-9]+D|[0-9]+M(?:[0-9]+D)?|[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?)"
_DURATION = re.compile(f"P(?:{_DUR_DATE}(?:{_DUR_TIME})?|{_DUR_TIME}|[0-9]+W)")


def _is_duration(instance: object) -> bool:
    return not isinstance(instance, str) or _DURATION.fullmatch(instance) is not None


# The formats of 2020-12, with `regex` checked by the engine that will match the patterns.
# (A copy of the draft's own checkers: `FormatChecker(formats=...)` would look the names up in the
# registry shared by all drafts, where e.g. draft 3's `time` has no offset.)
FORMAT_CHECKER = jsonschema.FormatChecker(formats=())
FORMAT_CHECKER.checkers = dict(jsonschema.Draft202012Validator.FORMAT_CHECKER.checkers)
FORMAT_CHECKER.checks("regex", raises=regex.error)(_is_regex)
FORMAT_CHECKER.checks("duration")(_is_duration)
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


#: Prefixes that mark a keyword as an extension on purpose (`x-order`, `_format`): never a typo.
VENDOR_PREFIXES = ("x-", "_")

_REGEX_MARKS = frozenset("^$[](){}*+?\\|")
#: Keywords a draft applies through another one (draft-04's `exclusiveMinimum` is read by `minimum`).
_IMPLIED = {
    "draft-03": frozenset({"exclusiveMinimum", "exclusiveMaximum", "required"}),
    "draft-04": frozenset({"exclusiveMinimum", "exclusiveMaximum"}),
}


@attrs.frozen(kw_only=True)
class SchemaWarning:
    """Something a schema holds that loads but is not enforced as written, at a JSON Pointer inside it."""

    code: str
    message: str
    pointer: str
    suggestions: tuple[str, ...] = ()


@functools.cache
def draft_name(validator_cls: type[Any]) -> str:
    """The draft a validator class implements (`draft-07`, `2020-12`), by its metaschema."""
    meta = validator_cls.META_SCHEMA
    for name, cls in DRAFTS:
        if meta is cls.META_SCHEMA or meta == cls.META_SCHEMA:
            return name
    return "a custom dialect"


def dialect_text(validator_cls: Any, *, declared: bool, inferred: bool) -> str:
    """The schema's dialect and why, for messages (`draft-04, from `$schema``)."""
    name = draft_name(validator_cls)
    if declared:
        return f"{name}, from `$schema`"
    if inferred:
        return f"{name}: without `$schema`, the newest draft whose metaschema accepts the schema"
    return f"{name}, the default without `$schema`"


def strict_refusal(warnings: list[SchemaWarning]) -> str:
    """The message that refuses a schema declared `strict_schema: true` for its first warning."""
    first = warnings[0]
    more = f" ({len(warnings) - 1} more: `atomtask check` lists them.)" if warnings[1:] else ""
    return (
        f"{first.message} `strict_schema: true` refuses what would otherwise load with a warning ({first.code}).{more}"
    )


def keyword_warning(word: Any, path: str, validator_cls: Any, dialect: str) -> SchemaWarning | None:
    """The warning for `word`, a key of the schema at `path`, under `validator_cls`; None if it is fine.

    `dialect` says which dialect applies and why (`2020-12, the default without `$schema``).
    """
    if not isinstance(word, str) or word.lower().startswith(VENDOR_PREFIXES):
        return None
    where = path or "/"
    if word not in validator_cls.VALIDATORS and word not in _IMPLIED.get(draft_name(validator_cls), ()):
        drafts = keyword_drafts(word)
        if drafts:
            return SchemaWarning(
                code="W102",
                message=(
                    f"keyword {word!r} at `{where}` validates only in {_listed(drafts)}, not in this schema's "
                    f"dialect ({dialect}), so JSON Schema ignores it and it is not enforced. Declare a `$schema` "
                    "that has it, or write the constraint with this dialect's keywords."
                ),
                pointer=f"{path}/{word}",
            )
    known = dialect_keywords(validator_cls)
    if word in known:
        return None
    # Only keywords that constrain: a misspelt annotation (`example` for `examples`) loses nothing.
    close = [c for c in near_names(word, known, cutoff=0.85) if c not in ANNOTATION_KEYWORDS]
    if not close and len(word) <= 5:  # one wrong letter in a short word (`enun`, `tyep`) scores lower
        close = [
            c for c in near_names(word, known, cutoff=0.75) if len(c) == len(word) and c not in ANNOTATION_KEYWORDS
        ]
    if not close:  # two letters swapped (`fromat`, `pattren`) score under the cutoff in longer words
        close = [c for c in sorted(known) if c not in ANNOTATION_KEYWORDS and _one_swap(word, c)]
    if not close:
        return None
    return SchemaWarning(
        code="W102",
        message=(
            f"unknown keyword {word!r} at `{where}`. Did you mean {close[0]!r}? JSON Schema ignores an unknown "
            "keyword, so a misspelt one is not enforced (name a vendor keyword `x-...` to say it is one)."
        ),
        pointer=f"{path}/{word}",
        suggestions=tuple(close),
    )


def format_warning(fmt: str, schema: dict[str, Any], path: str) -> SchemaWarning | None:
    """The warning for `format: fmt` in `schema` (at `path`) when nothing checks it; None if it is enforced."""
    asserted = asserted_formats()
    where = path or "/"
    if fmt in asserted:
        if fmt in NUMBER_FORMATS and schema.get("type") == "string":
            return SchemaWarning(
                code="W103",
                message=(
                    f"`format` {fmt!r} at `{where}` is checked on numbers, and this schema's `type` is 'string', "
                    "so nothing is checked. Constrain the text with `pattern` (e.g. `^-?[0-9]+$`) or make the "
                    "type `integer`."
                ),
                pointer=f"{path}/format",
            )
        return None
    if fmt in ANNOTATION_FORMATS:
        return None
    suggestions: tuple[str, ...]
    if _looks_like_regex(fmt):
        hint, suggestions = " It looks like a regular expression: did you mean `pattern`?", ("pattern",)
    else:
        hint, suggestions = did_you_mean(fmt, asserted), tuple(near_names(fmt, asserted))
    return SchemaWarning(
        code="W103",
        message=(
            f"`format` {fmt!r} at `{where}` is not one that is checked: JSON Schema makes it an annotation, so "
            f"values are not validated against it.{hint} (`atomtask check --explain W103` names the checked ones.)"
        ),
        pointer=f"{path}/format",
        suggestions=suggestions,
    )


def _one_swap(word: str, keyword: str) -> bool:
    """`word` is `keyword` (4+ letters) with two of its letters exchanged (`fromat`, `minimmu`), any case."""
    typed, meant = word.lower(), keyword.lower()
    if len(typed) != len(meant) or len(meant) < 4:
        return False
    diff = [i for i, (a, b) in enumerate(zip(typed, meant, strict=True)) if a != b]
    return len(diff) == 2 and typed[diff[0]] == meant[diff[1]] and typed[diff[1]] == meant[diff[0]]


def _looks_like_regex(text: str) -> bool:
    return bool(_REGEX_MARKS & set(text)) and re_compiles(text)


def _listed(drafts: tuple[str, ...]) -> str:
    return drafts[0] if len(drafts) == 1 else ", ".join(drafts[:-1]) + " and " + drafts[-1]
