"""What a JSON Schema may hold that loads (it is valid JSON Schema) but is not enforced as written.

A valid JSON Schema always loads. What the author may have meant differently becomes a warning,
found at load, carried on the built class and reported by `atomtask check`:

- W102, a keyword that looks misspelt (`minimun`, `fromat`, `additonalProperties`, `type:`) or that validates
  only in another draft than the schema's (`const` under draft-04, `dependencies` under 2020-12):
  JSON Schema ignores it, so it constrains nothing. Vendor keywords (`x-...`, `_...`) are never
  suspected, and neither are names far from every keyword (`javaType`, `tsType`).
- W103, a `format` nothing checks (`utc-millisec`, a capitalised `URI`, a regular expression in the
  `format` slot), or a number format (`int64`) on a string schema: an annotation, as JSON Schema
  says, so values are not validated against it.

A declaration with `strict_schema: true` refuses them at load instead (a `SchemaError`);
`atomtask check --strict` fails on them.
"""

from __future__ import annotations

import functools
from typing import Any

import attrs
from atomtask.schemas.json_dialects import (
    ANNOTATION_FORMATS,
    ANNOTATION_KEYWORDS,
    DRAFTS,
    NUMBER_FORMATS,
    asserted_formats,
    dialect_keywords,
    keyword_drafts,
    re_compiles,
)
from atomtask.system.errors import did_you_mean, near_names

__all__ = [
    "VENDOR_PREFIXES",
    "SchemaWarning",
    "dialect_text",
    "draft_name",
    "format_warning",
    "keyword_warning",
    "strict_refusal",
]

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
