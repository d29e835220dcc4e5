"""`repair: lenient`: reading an answer toward the declared schema where exactly one reading fits.

Small and local models answer with prose around values, `True` for `true`, an enum value in a
sentence, `12,111` for an integer, a bare scalar where the schema has one field. Safe repair
(`atomtask.handlers._repair`) fixes syntax only; this module adds the readings that need the schema:

- an enum or literal value written in another case or with extra whitespace (`" Positive "`);
- an enum or literal value found as the only candidate in prose (`"It is **negative**."`); a boolean
  only as the whole answer or a labelled one (`**True**`, `Answer: yes`), never in a phrase (`No idea`);
- a number with thousands separators (`12,111`), a listed unit (`12 kg`, `$12`), or a fraction for a float
  (`3/4`); `1,500` for a float, a percentage (`12%`, `12 pct`) or any other suffix (`12 bln`) is re-asked;
- a bare scalar or list for a schema whose single required field has that type (`12,111`, `12 kg` too);
- several top-level objects for a schema whose single required field is a list of them;
- the raw text for a schema whose only field is a string.

Every reading is a `Coercion` (kind, path, before, after) kept on its attempt. Where more than one
reading fits, `LenientReading.problem` says why, and the model is re-asked with it.
"""

from __future__ import annotations

import json
import re
import typing
from enum import Enum
from fractions import Fraction
from typing import Any

import attrs
from atomtask.handlers._json_scan import first_opener
from atomtask.schemas._type_strings import strip_optional
from atomtask.system._results import Coercion
from pydantic import BaseModel, ValidationError

__all__ = ["LenientReading", "from_text", "toward_schema"]

_BEFORE_LIMIT = 300
_NEGATION_RE = re.compile(r"\b(not|no longer|never|neither|nor|isn't|aren't|wasn't|doesn't|don't|cannot|can't)\b", re.I)
_THOUSANDS = r"\d{1,3}(?:,\d{3})+"
_NUMBER_RE = re.compile(
    rf"^\s*(?P<sign>[+-]?)(?P<cur>[$\u20ac\u00a3])?(?P<int>{_THOUSANDS}|\d+)(?P<frac>\.\d+)?"
    r"\s*(?P<unit>[A-Za-z%\u2030\u00b0\u00b5$\u20ac\u00a3][\w%\u00b0/.]*)?\s*$"
)
_FRACTION_RE = re.compile(r"^\s*(?P<num>[+-]?\d+)\s*/\s*(?P<den>\d+)\s*$")
_PREAMBLE_RE = re.compile(r":[ \t]*\n")  # `Here is the summary:` and a new line: the value, or the value and more?
# An ALLOW-list: a suffix that names a unit leaves the number as written (`12 kg` is 12). Anything else
# may scale it (`12k`, `12 bln`, `12 lakhs`, `12 grand`, `12 M`: metres or millions?) and is re-asked.
# Matched in any case, except `_UNITS_EXACT`, whose other cases mean something else (`MM`, `G`, `S`).
_UNITS = frozenset(
    {
        "kg", "mg", "µg", "lb", "lbs", "oz", "km", "cm", "mi", "ft", "ml", "sec", "secs", "min", "mins", "hr",
        "hrs", "mph", "kph", "km/h", "m/s", "usd", "eur", "gbp", "chf", "jpy", "°c", "°f", "kb", "mb", "gb", "tb",
        "gram", "grams", "kilogram", "kilograms", "pound", "pounds", "ounce", "ounces", "metre", "metres", "meter",
        "meters", "kilometre", "kilometres", "kilometer", "kilometers", "centimetre", "centimetres", "centimeter",
        "centimeters", "millimetre", "millimetres", "millimeter", "millimeters", "mile", "miles", "foot", "feet",
        "inch", "inches", "litre", "litres", "liter", "liters", "second", "seconds", "minute", "minutes", "hour",
        "hours", "day", "days", "week", "weeks", "month", "months", "year", "years", "yrs", "dollar", "dollars",
        "euro", "euros", "byte", "bytes", "item", "items", "piece", "pieces", "pcs", "unit", "units", "people",
        "persons",
    }
)  # fmt: skip
_UNITS_EXACT = frozenset({"g", "mm", "ms", "s", "h", "l", "L", "\u00b0", "$", "\u20ac", "\u00a3"})
_PERCENT_RE = re.compile(r"^(%|‰|per|pct|pc|percent|percents|percentage|percentages|bp|bps|basis)$", re.I)
_BOOL_WORDS = {"true": True, "false": False, "yes": True, "no": False}


@attrs.frozen(kw_only=True)
class LenientReading:
    """A value read toward the schema and the coercions that made it, or why no single reading fits."""

    value: Any = None
    coercions: tuple[Coercion, ...] = ()
    problem: str | None = None


class _Ambiguous(Exception):
    """More than one reading fits: the model is re-asked with this message."""


def toward_schema(value: Any, cls: type[BaseModel]) -> LenientReading:
    """`value` (already valid JSON) coerced toward `cls` where exactly one reading fits."""
    found: list[Coercion] = []
    try:
        shaped = _top(value, cls, found)
        shaped = _model(shaped, cls, "", found)
    except _Ambiguous as exc:
        return LenientReading(problem=str(exc))
    return LenientReading(value=shaped, coercions=tuple(found))


def from_text(raw: str, cls: type[BaseModel]) -> LenientReading | None:
    """A value for `cls` from an answer that holds no single JSON object or array; None when no rule applies."""
    single = _single_required(cls)
    values = _top_level_values(raw)
    if single is not None:
        key, annotation = single
        item = _list_item(annotation)
        if len(values) > 1 and _is_model(item) and all(isinstance(v, dict) for v in values):
            # Several objects, one after the other, for the schema's one list of such objects.
            coercion = Coercion(kind="objects_to_list", path=key, before=_clip(raw), after=_dumps(values))
            return _prepend(toward_schema({key: values}, cls), coercion)
    text = raw.strip()
    numeric = single is not None and strip_optional(single[1]) in (int, float)
    if single is not None and numeric and len(values) != 1 and (_NUMBER_RE.match(text) or _FRACTION_RE.match(text)):
        # A bare `12,111`, `12 kg` or `3/4` (not one JSON value) for the schema's one number field.
        coercion = Coercion(kind="scalar_to_field", path=single[0], before=_clip(text), after=_dumps(text))
        return _prepend(toward_schema({single[0]: text}, cls), coercion)
    if len(values) == 1 and not isinstance(values[0], dict | list) and single is not None:
        key, annotation = single
        reading = toward_schema({key: values[0]}, cls)
        before = raw.strip()
        coercion = Coercion(kind="scalar_to_field", path=key, before=_clip(before), after=_dumps(values[0]))
        return _prepend(reading, coercion)
    if values or first_opener(raw) is not None:
        return None  # JSON-like text that safe repair refused: not ours to read as prose
    if not text:
        return None
    if len(cls.model_fields) == 1 and single is not None and strip_optional(single[1]) is str:
        key = single[0]
        if _PREAMBLE_RE.search(text):
            return LenientReading(problem="the answer may open with an introduction (a line ending in `:`)")
        if "```" in text or text[0] in "\"'\u201c":
            return None  # a fence or an opening quote: the value is inside them, which is safe repair's to read
        return LenientReading(
            value={key: text},
            coercions=(Coercion(kind="text_to_field", path=key, before=_clip(text), after=_dumps(text)),),
        )
    if single is None:
        return None
    key, annotation = single
    try:
        choice = _from_prose(text, strip_optional(annotation), key)
    except _Ambiguous as exc:
        return LenientReading(problem=str(exc))
    if choice is None:
        return None
    return LenientReading(
        value={key: choice},
        coercions=(Coercion(kind="value_in_prose", path=key, before=_clip(text), after=_dumps(choice)),),
    )


def _prepend(reading: LenientReading, coercion: Coercion) -> LenientReading:
    if reading.problem is not None:
        return reading
    return attrs.evolve(reading, coercions=(coercion, *reading.coercions))


# --- the schema's shape ---------------------------------------------------------------------------


def _top(value: Any, cls: type[BaseModel], found: list[Coercion]) -> Any:
    """A bare list or scalar for a schema whose single required field has that type."""
    if isinstance(value, dict):
        return value
    single = _single_required(cls)
    if single is None:
        return value
    key, annotation = single
    is_list = _list_item(annotation) is not None
    if isinstance(value, list) != is_list:
        return value
    found.append(Coercion(kind="value_to_field", path=key, before=_dumps(value), after=_dumps({key: value})))
    return {key: value}


def _model(value: Any, cls: type[BaseModel], path: str, found: list[Coercion]) -> Any:
    if not isinstance(value, dict):
        return value
    shaped = dict(value)
    for name, field in cls.model_fields.items():
        key = _key(cls, name)
        if key in shaped:
            where = f"{path}.{key}" if path else key
            shaped[key] = _value(shaped[key], field.annotation, where, found)
    return shaped


def _value(value: Any, annotation: Any, path: str, found: list[Coercion]) -> Any:
    annotation = strip_optional(annotation)
    if value is None:
        return value
    if _is_model(annotation):
        return _model(value, annotation, path, found)
    item = _list_item(annotation)
    if item is not None:
        if isinstance(value, list):
            return [_value(v, item, f"{path}[{i}]", found) for i, v in enumerate(value)]
        return value
    if _valid(annotation, value):
        return value
    coerced = _scalar(value, annotation, path)
    if coerced is None:
        return value
    kind, after = coerced
    found.append(Coercion(kind=kind, path=path, before=_clip(_text_of(value)), after=_dumps(after)))
    return after


def _scalar(value: Any, annotation: Any, path: str) -> tuple[str, Any] | None:
    """(kind, value) for one leaf that failed validation, or None when no reading fits."""
    if not isinstance(value, str):
        return None
    members = _choices(annotation)
    if members is not None:
        normal = _normal(value)
        exact = [m for m in members if isinstance(m, str) and _normal(m) == normal]
        if len(exact) == 1:
            return "enum_case", exact[0]
        choice = _from_prose(value, annotation, path)
        return ("enum_in_prose", choice) if choice is not None else None
    if annotation is bool:
        word = _normal(value).strip("*_`\"'.!")
        if word in ("true", "false"):
            return "bool_text", word == "true"
        choice = _from_prose(value, annotation, path)
        return ("bool_in_prose", choice) if choice is not None else None
    if annotation is int or annotation is float:
        return _number(value, annotation, path)
    return None


def _from_prose(text: str, annotation: Any, path: str) -> Any:
    """The one enum, literal or boolean value that `text` names; None when it names none."""
    members = _choices(annotation)
    words: dict[str, Any]
    if members is not None:
        words = {m: m for m in members if isinstance(m, str) and m.strip()}
    elif annotation is bool:
        return _bool_word(text, path)
    else:
        return None
    spans: dict[str, list[tuple[int, int]]] = {}
    for word in words:
        pattern = r"\s+".join(re.escape(part) for part in word.split())
        spans[word] = [m.span() for m in re.finditer(rf"(?<![\w-]){pattern}(?![\w-])", text, re.I)]
    # `very high` names one value, not also `high`: a match inside a longer candidate's match does not count.
    found = {
        word: words[word]
        for word, places in spans.items()
        if places and not all(_inside(place, spans, word) for place in places)
    }
    meanings = {json.dumps(v) for v in found.values()}
    where = f"`{path}`" if path else "the answer"
    if len(meanings) > 1:
        named = ", ".join(repr(w) for w in found)
        raise _Ambiguous(f"{where} names more than one of the allowed values ({named}); give exactly one")
    if not found:
        return None
    if _NEGATION_RE.search(text):
        raise _Ambiguous(f"{where} names {next(iter(found))!r} next to a negation; give the value alone")
    return next(iter(found.values()))


def _bool_word(text: str, path: str) -> bool | None:
    """`True`, `**no**`, `Answer: yes`: a boolean word that is the whole answer, or the whole labelled one.

    With other words around it (`No idea`, `No doubt`, `Yes and no`, `No, it is not`) it is re-asked:
    in a phrase `no` and `yes` have other meanings. No boolean word at all: None (validation re-asks).
    """
    bare = _normal(re.sub(r"[*_`\"'\u201c\u201d]", "", text)).strip(" .!")
    leaf = re.sub(r"\[\d+\]", "", path).rsplit(".", 1)[-1].casefold()
    labels = "answer|final answer|verdict|result|value" + (f"|{re.escape(leaf)}" if leaf else "")
    bare = re.sub(rf"^(?:{labels})\s*[:=]\s*", "", bare)
    if bare in _BOOL_WORDS:
        return _BOOL_WORDS[bare]
    named = {_BOOL_WORDS[w.casefold()] for w in re.findall(r"(?<![\w-])(?:true|false|yes|no)(?![\w-])", text, re.I)}
    where = f"`{path}`" if path else "the answer"
    if len(named) > 1:
        raise _Ambiguous(f"{where} names more than one of true and false ({text.strip()!r}); give exactly one")
    if named and _NEGATION_RE.search(text):
        raise _Ambiguous(f"{where} is {text.strip()!r}: a yes/no word next to a negation; answer true or false alone")
    if named:
        raise _Ambiguous(f"{where} is {text.strip()!r}: a yes/no word among other words; answer true or false alone")
    return None


def _inside(place: tuple[int, int], spans: dict[str, list[tuple[int, int]]], word: str) -> bool:
    start, end = place
    return any(
        s <= start and end <= e and (e - s) > (end - start)
        for other, places in spans.items()
        if other != word
        for s, e in places
    )


def _number(text: str, annotation: Any, path: str) -> tuple[str, Any] | None:
    where = f"`{path}`" if path else "the answer"
    fraction = _FRACTION_RE.match(text)
    if fraction is not None and annotation is float and int(fraction["den"]) != 0:
        return "fraction", float(Fraction(int(fraction["num"]), int(fraction["den"])))
    match = _NUMBER_RE.match(text)
    if match is None:
        return None
    unit = (match["unit"] or "").rstrip(".")
    if unit.startswith("%") or _PERCENT_RE.match(unit):
        raise _Ambiguous(f"{where} is a percentage ({text.strip()!r}): write the number itself (12 or 0.12?)")
    if unit and unit not in _UNITS_EXACT and unit.casefold() not in _UNITS:
        raise _Ambiguous(
            f"{where} is {text.strip()!r}: is `{unit}` a unit or a multiplier (`k`, `bln`, `lakh`)? "
            "Write the number in full, alone"
        )
    digits = match["int"]
    grouped = "," in digits
    if grouped and annotation is float and match["frac"] is None and digits.count(",") == 1:
        raise _Ambiguous(f"{where} is {text.strip()!r}: a thousands separator or a decimal comma?")
    number_text = match["sign"] + digits.replace(",", "") + (match["frac"] or "")
    if annotation is int:
        if match["frac"] is not None and set(match["frac"][1:]) != {"0"}:
            return None
        value: Any = int(match["sign"] + digits.replace(",", ""))
    else:
        value = float(number_text)
    kinds = [k for k, present in (("thousands", grouped), ("unit", bool(unit or match["cur"]))) if present]
    return ("number_" + "_".join(kinds) if kinds else "number_text"), value


# --- helpers --------------------------------------------------------------------------------------


def _single_required(cls: type[BaseModel]) -> tuple[str, Any] | None:
    required = [(name, f) for name, f in cls.model_fields.items() if f.is_required()]
    if len(required) != 1:
        return None
    name, field = required[0]
    return _key(cls, name), field.annotation


def _top_level_values(raw: str) -> list[Any]:
    """The strict JSON values `raw` holds one after another (objects, arrays or scalars), or [] if it is not that."""
    decoder = json.JSONDecoder()
    text = raw.strip()
    if text.startswith("```"):
        text = re.sub(r"^```[\w-]*\s*|\s*```$", "", text)
    values: list[Any] = []
    index = 0
    while index < len(text):
        try:
            value, end = decoder.raw_decode(text, index)
        except ValueError:
            return []
        values.append(value)
        index = end
        while index < len(text) and text[index] in " \t\r\n,":
            index += 1
    return values


def _choices(annotation: Any) -> list[Any] | None:
    if typing.get_origin(annotation) is typing.Literal:
        return list(typing.get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return [m.value for m in annotation]
    return None


def _valid(annotation: Any, value: Any) -> bool:
    from pydantic import TypeAdapter

    try:
        TypeAdapter(annotation).validate_json(json.dumps(value))
    except (ValidationError, TypeError, ValueError):
        return False
    return True


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


def _key(cls: type[BaseModel], name: str) -> str:
    alias = cls.model_fields[name].validation_alias or cls.model_fields[name].alias
    return alias if isinstance(alias, str) else name


def _list_item(annotation: Any) -> Any:
    annotation = strip_optional(annotation)
    if typing.get_origin(annotation) is list:
        args = typing.get_args(annotation)
        return args[0] if args else Any
    return None


def _is_model(tp: Any) -> typing.TypeGuard[type[BaseModel]]:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _text_of(value: Any) -> str:
    return value if isinstance(value, str) else _dumps(value)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _clip(text: str) -> str:
    return text if len(text) <= _BEFORE_LIMIT else text[:_BEFORE_LIMIT] + "…"
