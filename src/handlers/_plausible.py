"""Plausible-looking values for a JSON Schema: names, e-mails, dates, sentences, numbers in range.

A generator that is only *correct* answers `'0'`, `'0@A.COM'` and `2000-01-01T00:00:00Z`; these
values read like an answer instead, chosen from the schema (`format`, bounds, `enum`, `examples`)
and from the field's name (`email`, `name` under `seller`, `confidence`, `key_points`, ...). They
are only proposals: `atomtask.handlers._synthetic` keeps one where the whole instance still
validates. Every choice comes from the `Random` passed in, so a seed gives the same values.
"""

from __future__ import annotations

import copy
import math
import re
import uuid
from datetime import date, timedelta
from random import Random
from typing import Any, Final

from atomtask.schemas.json_schema._dialects import compiled_pattern

__all__ = ["FORMATS", "MISSING", "format_value", "plausible_text", "propose"]

MISSING: Final = object()
"""No proposal: keep what the correct-by-construction generator made."""

_FIRST = ("Ada", "Grace", "Alan", "Katherine", "Linus", "Margaret", "Tim", "Barbara", "Edsger", "Frances", "Radia")
_LAST = ("Lovelace", "Hopper", "Turing", "Johnson", "Torvalds", "Hamilton", "Lee", "Liskov", "Dijkstra", "Allen")
_COMPANIES = ("Acme Corp", "Globex Ltd", "Initech", "Umbrella Health", "Hooli", "Vandelay Industries", "Wonka GmbH")
_CITIES = ("Lisbon", "Oslo", "Toronto", "Nairobi", "Kyoto", "Melbourne", "Montevideo", "Edinburgh")
_COUNTRIES = ("Portugal", "Norway", "Canada", "Kenya", "Japan", "Australia", "Uruguay", "Scotland")
_STREETS = ("Harbour Street", "Maple Avenue", "Station Road", "Rua Augusta", "Elm Close")
_NOUNS = ("invoice", "meeting", "release", "report", "budget", "roadmap", "contract", "workshop", "migration", "review")
_ADJECTIVES = ("quarterly", "annual", "urgent", "updated", "final", "revised", "weekly", "shared", "new")
_SENTENCES = (
    "The {noun} was reviewed and the main points are agreed.",
    "The {adj} {noun} is planned for next week.",
    "{first} asked for a short update on the {noun}.",
    "Two open questions about the {noun} remain.",
    "The {noun} needs one more round of feedback.",
    "Everything in the {adj} {noun} matches the request.",
)

# Field-name words -> the kind of value a person would write there.
_KINDS: dict[str, str] = {
    **dict.fromkeys(("email", "mail", "emails"), "email"),
    **dict.fromkeys(("first", "given", "forename"), "first"),
    **dict.fromkeys(("last", "surname", "family"), "last"),
    **dict.fromkeys(("phone", "telephone", "mobile", "tel", "fax", "cell"), "phone"),
    **dict.fromkeys(
        ("company", "organisation", "organization", "employer", "vendor", "supplier", "seller", "buyer", "business"),
        "company",
    ),
    **dict.fromkeys(("city", "town"), "city"),
    "country": "country",
    **dict.fromkeys(("address", "street"), "address"),
    **dict.fromkeys(("url", "link", "website", "homepage", "href", "uri"), "uri"),
    **dict.fromkeys(("title", "subject", "heading", "headline", "topic", "label"), "title"),
    **dict.fromkeys(
        (
            "summary", "description", "body", "text", "content", "message", "reason", "reasoning", "explanation",
            "notes", "note", "comment", "details", "answer", "justification", "rationale", "point", "sentence",
        ),
        "sentence",
    ),
    **dict.fromkeys(("greeting", "salutation"), "greeting"),
    **dict.fromkeys(("id", "identifier", "number", "code", "reference", "ref", "sku"), "code"),
    "currency": "currency",
    **dict.fromkeys(("language", "lang", "locale"), "language"),
    **dict.fromkeys(("status", "state"), "status"),
    **dict.fromkeys(("tag", "keyword", "category", "kind", "type"), "word"),
    **dict.fromkeys(("date", "day", "deadline", "due", "birthday"), "date"),
    **dict.fromkeys(
        ("name", "author", "sender", "recipient", "person", "organiser", "organizer", "owner", "assignee",
         "attendee", "participant", "contact", "customer", "user", "reviewer", "speaker", "host"),
        "person",
    ),
}  # fmt: skip
_NUMBER_KINDS: dict[str, tuple[float, float, int]] = {  # word -> (low, high, decimals)
    **dict.fromkeys(("confidence", "probability", "relevance", "certainty", "likelihood", "ratio"), (0.55, 0.97, 2)),
    **dict.fromkeys(("score",), (0.55, 0.97, 2)),
    **dict.fromkeys(
        ("price", "amount", "total", "cost", "subtotal", "balance", "salary", "fee", "tax"), (12.0, 480.0, 2)
    ),
    **dict.fromkeys(("quantity", "qty", "count", "items"), (1, 12, 0)),
    "age": (19, 78, 0),
    "year": (2019, 2026, 0),
    **dict.fromkeys(("percent", "percentage"), (5, 95, 0)),
    **dict.fromkeys(("rating", "stars", "priority", "level", "rank"), (1, 5, 0)),
    **dict.fromkeys(("limit", "max", "min"), (3, 10, 0)),
    **dict.fromkeys(("minutes", "hours", "days", "weeks", "duration"), (1, 45, 0)),
}


def _words(name: str | None) -> list[str]:
    """`organiserEmail` / `key_points` -> ['organiser', 'email'] / ['key', 'point'] (plurals made singular)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name or "")
    words = [w.lower() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w]
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words]


def _kind(context: tuple[str | None, ...]) -> str | None:
    """The value kind named by the field's name, read from its last word back; the parent names a bare `name`."""
    *parents, own = context or (None,)
    words = _words(own)
    for word in reversed(words):
        if word in _KINDS:
            kind = _KINDS[word]
            if kind == "person" and word == "name" and len(words) == 1 and parents:
                parent = _kind((parents[-1],))
                return "company" if parent == "company" else kind
            return kind
    return None


Person = tuple[str, str]


def _person(rng: Random) -> Person:
    return rng.choice(_FIRST), rng.choice(_LAST)


def _sentence(rng: Random) -> str:
    return rng.choice(_SENTENCES).format(noun=rng.choice(_NOUNS), adj=rng.choice(_ADJECTIVES), first=rng.choice(_FIRST))


def plausible_text(rng: Random) -> str:
    """A short, harmless paragraph: the synthetic model's answer when the output is text."""
    return " ".join(_sentence(rng) for _ in range(2))


def _date(rng: Random) -> date:
    return date(2025, 1, 6) + timedelta(days=rng.randint(0, 540))


def format_value(fmt: str, rng: Random, person: Person | None = None) -> str | None:
    """A plausible string in the JSON Schema `format` `fmt` (one of `FORMATS`), or None for another format."""
    first, last = person or _person(rng)
    slug = f"{rng.choice(_ADJECTIVES)}-{rng.choice(_NOUNS)}"
    clock = f"{rng.choice((8, 9, 10, 11, 14, 15, 16)):02d}:{rng.choice((0, 15, 30, 45)):02d}:00"
    offset = rng.choice(("Z", "+01:00", "-05:00", "+00:00"))
    values = {
        "date-time": f"{_date(rng).isoformat()}T{clock}{offset}",
        "date": _date(rng).isoformat(),
        "time": f"{clock}{offset}",
        "email": f"{first}.{last}@example.com".lower(),
        "idn-email": f"{first}.{last}@example.com".lower(),
        "hostname": f"{rng.choice(_NOUNS)}.example.com",
        "idn-hostname": f"{rng.choice(_NOUNS)}.example.com",
        "ipv4": f"192.0.2.{rng.randint(1, 254)}",
        "ipv6": f"2001:db8::{rng.randint(1, 0xFFFF):x}",
        "uri": f"https://example.com/{slug}",
        "iri": f"https://example.com/{slug}",
        "uri-reference": f"https://example.com/{slug}",
        "iri-reference": f"https://example.com/{slug}",
        "uri-template": "https://example.com/items/{id}",
        "uuid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "duration": rng.choice(("PT30M", "PT1H", "PT1H30M", "P1D", "P3D")),
        "json-pointer": f"/{rng.choice(_NOUNS)}s/0",
        "relative-json-pointer": "0/name",
        "regex": "^[a-z]+$",
    }
    return values.get(fmt)


FORMATS: Final = (
    "date-time", "date", "time", "email", "idn-email", "hostname", "idn-hostname", "ipv4", "ipv6", "uri", "iri",
    "uri-reference", "iri-reference", "uri-template", "uuid", "duration", "json-pointer", "relative-json-pointer",
    "regex",
)  # fmt: skip


def _by_kind(kind: str | None, rng: Random, person: Person | None = None) -> str:
    first, last = person or _person(rng)
    match kind:
        case "email":
            return f"{first}.{last}@example.com".lower()
        case "first":
            return first
        case "last":
            return last
        case "person":
            return f"{first} {last}"
        case "phone":
            return f"+1 555 01{rng.randint(0, 99):02d}"
        case "company":
            return rng.choice(_COMPANIES)
        case "city":
            return rng.choice(_CITIES)
        case "country":
            return rng.choice(_COUNTRIES)
        case "address":
            return f"{rng.randint(2, 120)} {rng.choice(_STREETS)}, {rng.choice(_CITIES)}"
        case "uri":
            return f"https://example.com/{rng.choice(_NOUNS)}"
        case "title":
            return f"{rng.choice(_ADJECTIVES)} {rng.choice(_NOUNS)}".capitalize()
        case "sentence":
            return _sentence(rng)
        case "greeting":
            return f"Dear {first} {last},"
        case "code":
            return f"{rng.choice(('INV', 'REF', 'ID', 'ORD'))}-{rng.randint(1000, 9999)}"
        case "currency":
            return rng.choice(("EUR", "USD", "GBP"))
        case "language":
            return rng.choice(("en", "fr", "de", "pt"))
        case "status":
            return rng.choice(("open", "pending", "done"))
        case "date":
            return _date(rng).isoformat()
        case "word":
            return rng.choice(_NOUNS)
    return f"{rng.choice(_ADJECTIVES)} {rng.choice(_NOUNS)}"


def _string(node: dict[str, Any], context: tuple[str | None, ...], rng: Random, person: Person | None) -> Any:
    fmt = node.get("format")
    value = (format_value(fmt, rng, person) if isinstance(fmt, str) else None) or _by_kind(_kind(context), rng, person)
    low, high = node.get("minLength", 0), node.get("maxLength")
    while len(value) < low:
        value = f"{value} {rng.choice(_NOUNS)}"
    if isinstance(high, int) and len(value) > high:
        value = value[:high].rstrip() if high else ""
    pattern = node.get("pattern")
    if isinstance(pattern, str):
        try:
            if compiled_pattern(pattern).search(value) is None:
                return MISSING
        except Exception:  # a pattern `regex` cannot compile: the generator's value stands
            return MISSING
    return value


def _bound(node: dict[str, Any], keyword: str, default: float) -> float:
    value = node.get(keyword)  # draft 4's boolean `exclusiveMinimum` is no bound of its own
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else default


def _number(node: dict[str, Any], context: tuple[str | None, ...], rng: Random, integer: bool) -> Any:
    words = _words(context[-1] if context else None)
    low, high, decimals = next((_NUMBER_KINDS[w] for w in reversed(words) if w in _NUMBER_KINDS), (1, 100, 2))
    step = 1 if integer or decimals == 0 else 10**-decimals
    floor = max(_bound(node, "minimum", -math.inf), _bound(node, "exclusiveMinimum", -math.inf) + step)
    ceiling = min(_bound(node, "maximum", math.inf), _bound(node, "exclusiveMaximum", math.inf) - step)
    low, high = max(low, floor), min(high, ceiling)
    if low > high:  # the name's range misses the declared one: stay inside the declared one
        low, high = (floor, floor + 99) if math.isfinite(floor) else (ceiling - 99, ceiling)
        low, high = max(low, floor), min(high, ceiling)
    value: float = rng.uniform(low, high) if math.isfinite(low) and math.isfinite(high) else 0.0
    multiple = node.get("multipleOf")
    if isinstance(multiple, int | float) and multiple > 0:
        value = max(1, round(value / multiple)) * multiple
    if integer or decimals == 0:
        return round(value)
    return round(value, decimals)


def _merge(base: dict[str, Any], extra: Any) -> dict[str, Any]:
    if not isinstance(extra, dict):
        return base
    merged = {**base, **extra}
    if isinstance(base.get("properties"), dict) and isinstance(extra.get("properties"), dict):
        merged["properties"] = {**base["properties"], **extra["properties"]}
    if isinstance(base.get("required"), list) and isinstance(extra.get("required"), list):
        merged["required"] = [*base["required"], *extra["required"]]
    return merged


def _type(node: dict[str, Any]) -> str:
    declared = node.get("type")
    if isinstance(declared, list):
        declared = next((t for t in declared if t != "null"), "null")
    if isinstance(declared, str):
        return declared
    if "properties" in node or "additionalProperties" in node or "required" in node:
        return "object"
    if "items" in node or "minItems" in node:
        return "array"
    if "minimum" in node or "maximum" in node or "multipleOf" in node:
        return "number"
    return "string"


def propose(node: Any, context: tuple[str | None, ...], rng: Random, person: Person | None = None) -> Any:
    """A plausible value for the (already `$ref`-free) schema `node` of the field named by `context`, or `MISSING`.

    `context` is the path of property names down to the field (the array's name for its items);
    `person` is who the enclosing object is about, so its name and e-mail agree.
    """
    if node is False:
        return MISSING
    if not isinstance(node, dict):
        return _by_kind(_kind(context), rng, person)
    examples = node.get("examples")
    if isinstance(examples, list) and examples:
        return copy.deepcopy(rng.choice(examples))
    if "const" in node:
        return copy.deepcopy(node["const"])
    if isinstance(node.get("enum"), list) and node["enum"]:
        return copy.deepcopy(rng.choice(node["enum"]))
    for keyword in ("allOf", "anyOf", "oneOf"):
        branches = node.get(keyword)
        if isinstance(branches, list) and branches:
            rest = {k: v for k, v in node.items() if k != keyword}
            if keyword == "allOf":
                for branch in branches:
                    rest = _merge(rest, branch)
                return propose(rest, context, rng, person)
            real = [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")] or branches
            # `anyOf` lists the main type first (Pydantic's `Decimal` is number, then string); `oneOf`
            # branches are alternatives of equal rank (tagged unions).
            branch = rng.choice(real) if keyword == "oneOf" else real[0]
            return propose(_merge(rest, branch), context, rng, person)
    match _type(node):
        case "object":
            return _object(node, context, rng)
        case "array":
            return _array(node, context, rng)
        case "integer":
            return _number(node, context, rng, integer=True)
        case "number":
            return _number(node, context, rng, integer=False)
        case "boolean":
            return rng.random() < 0.6
        case "null":
            return None
    return _string(node, context, rng, person)


def _object(node: dict[str, Any], context: tuple[str | None, ...], rng: Random) -> Any:
    out: dict[str, Any] = {}
    person = _person(rng)
    properties = node.get("properties")
    for key, sub in (properties if isinstance(properties, dict) else {}).items():
        value = propose(sub, (*context, key), rng, person)
        if value is not MISSING:
            out[key] = value
    extra = node.get("additionalProperties", True)
    wanted = max(int(node.get("minProperties", 0)), 0 if properties else 1)  # a mapping gets a key or two
    keys = iter(("alpha", "beta", "gamma", "delta", "epsilon", "zeta"))
    while len(out) < wanted and extra is not False and (key := next(keys, None)) is not None:
        value = propose(extra if isinstance(extra, dict) else {"type": "string"}, (*context, key), rng, person)
        if value is MISSING:
            break
        out[key] = value
    return out


def _array(node: dict[str, Any], context: tuple[str | None, ...], rng: Random) -> Any:
    items = node.get("items", {})
    if items is False:  # e.g. recursion cut off here: only the empty list fits
        return [] if not node.get("minItems") else MISSING
    if isinstance(items, list):  # a tuple: one value per position
        values = [propose(sub, context, rng) for sub in items]
        return MISSING if any(v is MISSING for v in values) else values
    low, high = int(node.get("minItems", 0)), node.get("maxItems")
    count = max(low, rng.randint(1, 3))
    count = min(count, int(high)) if isinstance(high, int | float) else count
    out: list[Any] = []
    for _ in range(count * 4):  # distinct values where the schema asks for them, if they come
        if len(out) == count:
            break
        value = propose(items, context, rng)
        if value is MISSING:
            return MISSING
        if node.get("uniqueItems") and value in out:
            continue
        out.append(value)
    return out
