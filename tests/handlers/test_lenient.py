"""`repair: lenient`: values read toward the schema where one reading fits, re-asks where more than one does."""

from __future__ import annotations

import io
import json
from enum import Enum
from pathlib import Path
from typing import Literal

import pytest
from atomtask import Coercion, OutputFormat, OutputMode, RepairMode, TaskSystem, Template
from atomtask.cli._args import build_parser
from atomtask.cli._main import main
from atomtask.handlers._lenient import from_text, toward_schema
from atomtask.system._templates import repair_mode
from pydantic import BaseModel

from tests.helpers import Recorder


class Sentiment(BaseModel):
    sentiment: Literal["positive", "negative", "neutral"]


class Colour(Enum):
    RED = "red"
    LIGHT_BLUE = "light blue"


class Paint(BaseModel):
    colour: Colour


class Verdict(BaseModel):
    relevant: bool


class Count(BaseModel):
    count: int


class Weight(BaseModel):
    weight: float


class Labels(BaseModel):
    labels: list[str]
    note: str | None = None


class Item(BaseModel):
    name: str
    qty: int


class Basket(BaseModel):
    items: list[Item]


class Summary(BaseModel):
    summary: str


class Risk(BaseModel):
    level: Literal["low", "high", "very high"]


class Review(BaseModel):
    sentiment: Literal["positive", "negative", "neutral"]
    score: int


@pytest.mark.parametrize(
    ("value", "cls", "expected", "kind"),
    [
        ({"sentiment": " Positive "}, Sentiment, {"sentiment": "positive"}, "enum_case"),
        ({"colour": "Light  BLUE"}, Paint, {"colour": "light blue"}, "enum_case"),
        ({"level": "It is very high."}, Risk, {"level": "very high"}, "enum_in_prose"),
        ({"sentiment": "The review is **negative**."}, Sentiment, {"sentiment": "negative"}, "enum_in_prose"),
        ({"relevant": "Answer: yes"}, Verdict, {"relevant": True}, "bool_in_prose"),
        ({"relevant": "relevant: **No**."}, Verdict, {"relevant": False}, "bool_in_prose"),
        ({"count": "$12"}, Count, {"count": 12}, "number_unit"),
        ({"count": "1,234,567 USD"}, Count, {"count": 1234567}, "number_thousands_unit"),
        ({"weight": "12 mm"}, Weight, {"weight": 12.0}, "number_unit"),
        ({"weight": "1.5 hours"}, Weight, {"weight": 1.5}, "number_unit"),
        ({"relevant": "**TRUE**"}, Verdict, {"relevant": True}, "bool_text"),
        ({"count": "12,111"}, Count, {"count": 12111}, "number_thousands"),
        ({"count": "12 kg"}, Count, {"count": 12}, "number_unit"),
        ({"weight": "1,234.5 g"}, Weight, {"weight": 1234.5}, "number_thousands_unit"),
        ({"weight": "3/4"}, Weight, {"weight": 0.75}, "fraction"),
        (["a", "b"], Labels, {"labels": ["a", "b"]}, "value_to_field"),
        (42, Count, {"count": 42}, "value_to_field"),
    ],
)
def test_values_with_one_reading_are_coerced_and_recorded(
    value: object, cls: type[BaseModel], expected: object, kind: str
) -> None:
    """Each lenient rule gives the one value that fits, and records its kind, path and before/after text."""
    reading = toward_schema(value, cls)
    assert reading.problem is None
    assert expected == reading.value
    assert [kind] == [c.kind for c in reading.coercions]


@pytest.mark.parametrize(
    ("value", "cls", "problem"),
    [
        ({"sentiment": "positive or negative"}, Sentiment, "more than one of the allowed values"),
        ({"sentiment": "not positive"}, Sentiment, "negation"),
        ({"relevant": "True or False"}, Verdict, "more than one"),
        ({"relevant": "It is not true"}, Verdict, "negation"),
        ({"weight": "1,500"}, Weight, "decimal comma"),
        ({"weight": "12%"}, Weight, "percentage"),
        ({"count": "12k"}, Count, "multiplier"),
        ({"count": "3 million"}, Count, "multiplier"),
        ({"level": "high, not very high"}, Risk, "more than one"),
        ({"relevant": "Yes, it is relevant"}, Verdict, "among other words"),
        ({"relevant": "No idea"}, Verdict, "among other words"),
        ({"relevant": "No doubt it is"}, Verdict, "among other words"),
        ({"relevant": "No, it is not"}, Verdict, "negation"),
        ({"relevant": "Yes and no"}, Verdict, "more than one"),
    ],
)
def test_values_with_several_readings_are_re_asked(value: object, cls: type[BaseModel], problem: str) -> None:
    """Two candidates, a negation, `1,500` for a float or a percentage: the model is asked again, with why."""
    reading = toward_schema(value, cls)
    assert reading.problem is not None and problem in reading.problem


@pytest.mark.parametrize(
    ("value", "cls"),
    [
        ({"sentiment": "mixed"}, Sentiment),
        ({"sentiment": "Positive-ish"}, Sentiment),
        ({"count": "12.5"}, Count),
        ({"count": "12 to 15"}, Count),
        ({"count": "about 12"}, Count),
        ({"count": "1.234"}, Count),
        ({"count": "12,11"}, Count),
        ({"relevant": "not sure"}, Verdict),
        ({"relevant": "none"}, Verdict),
    ],
)
def test_values_with_no_reading_are_left_for_validation(value: object, cls: type[BaseModel]) -> None:
    """Nothing fits: nothing is coerced, and validation re-asks as it would anyway."""
    reading = toward_schema(value, cls)
    assert (None, ()) == (reading.problem, reading.coercions)
    assert value == reading.value


@pytest.mark.parametrize(
    ("raw", "cls", "expected", "kind"),
    [
        ("Answer: **True**", Verdict, {"relevant": True}, "value_in_prose"),
        ("I would say it is negative overall.", Sentiment, {"sentiment": "negative"}, "value_in_prose"),
        (" The meeting moved.\nTo Tuesday. ", Summary, {"summary": "The meeting moved.\nTo Tuesday."}, "text_to_field"),
        ('"12,111"', Count, {"count": 12111}, "scalar_to_field"),
        ("12,111", Count, {"count": 12111}, "scalar_to_field"),
        ("12 kg", Count, {"count": 12}, "scalar_to_field"),
        ("3/4", Weight, {"weight": 0.75}, "scalar_to_field"),
        ("YES!", Verdict, {"relevant": True}, "value_in_prose"),
        (
            '{"name": "a", "qty": 1}\n{"name": "b", "qty": 2}',
            Basket,
            {"items": [{"name": "a", "qty": 1}, {"name": "b", "qty": 2}]},
            "objects_to_list",
        ),
    ],
)
def test_answers_that_are_not_one_json_object_are_read_for_the_schema(
    raw: str, cls: type[BaseModel], expected: object, kind: str
) -> None:
    """Prose around one value, raw text for a string schema, a bare scalar, several objects for a list."""
    reading = from_text(raw, cls)
    assert reading is not None and reading.problem is None
    assert expected == reading.value
    assert kind == reading.coercions[0].kind


@pytest.mark.parametrize(
    ("raw", "cls"),
    [
        ("Positive, with some negative parts.", Sentiment),
        ("No. Well, yes.", Verdict),
        ("No idea", Verdict),
        ("No, it is not relevant.", Verdict),
        ("12 bln", Count),
        ("12 pct", Count),
        ("Here is the summary:\nSales rose.", Summary),
    ],
)
def test_text_with_several_readings_is_re_asked(raw: str, cls: type[BaseModel]) -> None:
    """Two candidates in prose, or an introduction before a raw string, are not guessed at."""
    reading = from_text(raw, cls)
    assert reading is not None and reading.problem is not None


@pytest.mark.parametrize(
    "value",
    ["12 percent", "12 pct", "12 per", "12 percentage", "12 bps", "0.5 percent", "12 \u2030"],
)
def test_percent_words_are_re_asked_like_a_percent_sign(value: str) -> None:
    """`12 percent` is as ambiguous as `12%` (12 or 0.12?): re-asked, for an int and a float field."""
    for cls, key in ((Count, "count"), (Weight, "weight")):
        reading = toward_schema({key: value}, cls)
        assert reading.problem is not None and "percentage" in reading.problem


@pytest.mark.parametrize(
    "unit",
    ["bln", "mln", "tn", "crores", "lakhs", "lacs", "Mrd", "grand", "gross", "score", "millones", "kilo", "K", "M",
     "m", "MM", "B", "G", "in", "apples", "d", "t"],
)  # fmt: skip
def test_a_suffix_that_is_not_a_known_unit_is_re_asked(unit: str) -> None:
    """Only listed units are read: a multiplier word (`bln`, `lakhs`, `grand`) or an unknown word is re-asked."""
    reading = toward_schema({"count": f"12 {unit}"}, Count)
    assert reading.problem is not None and f"`{unit}` a unit or a multiplier" in reading.problem


def test_a_bare_number_with_separators_records_both_coercions() -> None:
    """A bare `12,111` for a one-int schema is 12111: `scalar_to_field` then `number_thousands`, in that order."""
    reading = from_text("12,111", Count)
    assert reading is not None
    assert {"count": 12111} == reading.value
    assert [("scalar_to_field", "12,111", '"12,111"'), ("number_thousands", "12,111", "12111")] == [
        (c.kind, c.before, c.after) for c in reading.coercions
    ]


@pytest.mark.parametrize(
    ("raw", "cls"),
    [
        ('{"summary": "Sales rose', Summary),
        ('"Sales rose', Summary),
        ("```\nSales rose.\n```", Summary),
        ("42", Review),
        ("Sales rose 4%.", Count),
        ('{"a": 1} and {"b"', Basket),
    ],
)
def test_text_no_rule_fits_is_not_read(raw: str, cls: type[BaseModel]) -> None:
    """JSON-like, quoted or fenced text, two required fields, a number in prose: no lenient reading."""
    assert from_text(raw, cls) is None


def lenient_system(model: object, schema: type[BaseModel], **extra: object) -> TaskSystem:
    system = TaskSystem(model=model)  # type: ignore[arg-type]  # FunctionModel is a Model
    system.models.register(schema)
    output = OutputFormat(type="json", schema=schema.__name__, mode=OutputMode.PROMPTED)
    system.register(Template(name="task", instructions="answer", output_format=output, **extra))  # type: ignore[arg-type]
    return system


def test_a_lenient_template_reads_the_first_answer_and_audits_each_coercion() -> None:
    """One call; `notes.attempts[0].coercions` holds every assumption, and `repairs` says it in words."""
    rec = Recorder("{'sentiment': 'Positive', 'score': '1,024',}")
    result = lenient_system(rec.model, Review, repair="lenient").execute("task")
    assert Review(sentiment="positive", score=1024) == result.unwrap()
    assert 1 == len(rec.calls)
    attempt = result.notes.attempts[0]
    assert [
        Coercion(kind="enum_case", path="sentiment", before="Positive", after='"positive"'),
        Coercion(kind="number_thousands", path="score", before="1,024", after="1024"),
    ] == attempt.coercions
    assert "lenient enum_case at 'sentiment': 'Positive' -> '\"positive\"'" in attempt.repairs


def test_an_ambiguous_answer_is_re_asked_with_what_was_ambiguous() -> None:
    """More than one candidate: a re-ask whose message names them; nothing is coerced."""
    rec = Recorder("It is positive or negative.", '{"sentiment": "negative"}')
    result = lenient_system(rec.model, Sentiment, repair="lenient").execute("task")
    assert Sentiment(sentiment="negative") == result.unwrap()
    assert 2 == len(rec.calls)
    assert "more than one of the allowed values" in str(rec.calls[1][0][-1])
    assert [] == result.notes.attempts[0].coercions


@pytest.mark.parametrize(
    ("raw", "expected", "kinds"),
    [
        ("12,111", 12111, ["scalar_to_field", "number_thousands"]),
        ("12 kg", 12, ["scalar_to_field", "number_unit"]),
    ],
)
def test_a_bare_number_answer_is_read_for_a_one_int_schema(raw: str, expected: int, kinds: list[str]) -> None:
    """A bare `12,111` or `12 kg` fills the one int field on the first answer, both readings audited."""
    rec = Recorder(raw)
    result = lenient_system(rec.model, Count, repair="lenient").execute("task")
    assert (Count(count=expected), 1) == (result.unwrap(), len(rec.calls))
    assert kinds == [c.kind for c in result.notes.attempts[0].coercions]


@pytest.mark.parametrize("raw", ["No idea", '{"relevant": "No idea"}', '{"relevant": "No doubt about it"}'])
def test_no_idea_is_re_asked_not_read_as_false(raw: str) -> None:
    """`No idea` has no boolean reading: the model is asked again and its second answer is used."""
    rec = Recorder(raw, '{"relevant": true}')
    result = lenient_system(rec.model, Verdict, repair="lenient").execute("task")
    assert (Verdict(relevant=True), 2) == (result.unwrap(), len(rec.calls))
    assert "yes/no word among other words" in str(rec.calls[1][0][-1])


def test_safe_is_the_default_and_a_call_can_choose_lenient() -> None:
    """A template without `repair` is safe (no schema readings); `execute(repair="lenient")` turns them on."""
    rec = Recorder('{"sentiment": "Positive"}', '{"sentiment": "positive"}', '{"sentiment": "Positive"}')
    system = lenient_system(rec.model, Sentiment)
    assert RepairMode.SAFE == system.templates.get("task").repair
    assert 2 == len(system.execute("task").notes.attempts)
    assert 1 == len(system.execute("task", repair="lenient").notes.attempts)


def test_a_bad_repair_mode_for_a_call_is_a_configuration_error() -> None:
    """`repair="loose"` fails the call with configuration_error naming the modes."""
    result = lenient_system(Recorder().model, Sentiment).execute("task", repair="loose")
    assert result.error is not None and "`safe`, `lenient`" in result.error.message


@pytest.mark.parametrize(
    ("value", "mode"),
    [(True, "safe"), (False, "off"), ("lenient", "lenient"), ("Off", "off"), ("false", "off"), ("safe", "safe")],
)
def test_repair_modes_keep_true_and_false(value: bool | str, mode: str) -> None:
    """`True` is `safe`, `False` is `off`; mode names are case-insensitive."""
    assert RepairMode(mode) == repair_mode(value)
    assert RepairMode(mode) == Template(name="t", instructions="x", repair=value).repair  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [([], None), (["--repair", "lenient"], "lenient"), (["--no-repair"], "off"), (["--repair", "off"], "off")],
)
def test_cli_repair_flag(argv: list[str], expected: str | None) -> None:
    """`--repair {safe,lenient,off}`; `--no-repair` stays, as `--repair off`."""
    args = build_parser().parse_args(["run", "task", *argv])
    assert expected == args.repair


def test_defatom_takes_a_repair_clause() -> None:
    """`(repair lenient)` in a defatom form sets the template's mode."""
    system = TaskSystem(model="test")
    system.defatom('(defatom judge (instructions "Judge.") (repair lenient))')
    assert RepairMode.LENIENT == system.templates.get("judge").repair


def test_check_names_the_templates_that_run_lenient(tmp_path: Path) -> None:
    """`atomtask check` lists lenient templates under the findings, and in the JSON summary; it still passes."""
    (tmp_path / "a.yaml").write_text("name: judge\ninstructions: Judge.\nrepair: lenient\n", encoding="utf-8")
    (tmp_path / "b.yaml").write_text("name: other\ninstructions: Other.\nrepair: false\n", encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert 0 == main(["check", str(tmp_path)], stdout=out, stderr=err)
    assert "Lenient repair (`repair: lenient`, values read toward the schema): judge." in out.getvalue()
    out = io.StringIO()
    assert 0 == main(["check", str(tmp_path), "--format", "json"], stdout=out, stderr=err)
    assert ["judge"] == json.loads(out.getvalue())["summary"]["lenient"]
