"""Output repair: safe local fixes in every output mode, refusals that re-ask, and the switch to turn it off."""

from __future__ import annotations

import pytest
from atomtask import OutputFormat, OutputMode, TaskSystem, Template
from atomtask.handlers import OutputRepair
from atomtask.handlers._repair import repair_output
from pydantic import BaseModel
from pydantic_ai import Agent, PromptedOutput

from tests.helpers import Recorder, user_text


class Item(BaseModel):
    name: str
    qty: int


class Basket(BaseModel):
    items: list[Item]


class Order(BaseModel):
    customer: str
    items: list[Item]


ITEM = {"name": "apple", "qty": 3}
MALFORMED = "Here you go:\n{'name': 'apple', qty: 3, // three of them\n}"


def system_for(model: object, schema: str = "Item", mode: OutputMode = OutputMode.TOOL, **extra: object) -> TaskSystem:
    system = TaskSystem(model=model)  # type: ignore[arg-type]  # FunctionModel is a Model
    for cls in (Item, Basket, Order):
        system.models.register(cls)
    system.register(
        Template(
            name="task",
            instructions="answer",
            output_format=OutputFormat(type="json", schema=schema, mode=mode),
            **extra,  # type: ignore[arg-type]  # template fields under test
        )
    )
    return system


def answer(raw: str, mode: OutputMode) -> object:
    return ("args", raw) if mode is OutputMode.TOOL else raw


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"name": "apple", "qty": 3,}', ITEM),
        ("{'name': 'apple', 'qty': 3}", ITEM),
        ('{name: "apple", qty: 3}', ITEM),
        ('{"name": "apple", /* note */ "qty": 3}', ITEM),
        ('Sure! {"name": "apple", "qty": 3} Anything else?', ITEM),
        ('```json\n{"name": "apple", "qty": 3}\n```', ITEM),
        ('{"name": "apple", "qty": 3\n', ITEM),
        ('[{"name": "apple", "qty": 3},', [ITEM]),
        ("""{"name" 'apple', "qty": 3}""", ITEM),
        ('[{"name": "apple", "qty": 3} {"name": "apple", "qty": 3}]', [ITEM, ITEM]),
        ("[\n{}\n{}\n]", [{}, {}]),
    ],
)
def test_syntactic_repairs_recover_the_intended_value(raw: str, expected: object) -> None:
    """Fences, prose, trailing commas, quotes, unquoted keys, comments and closable truncation are fixed."""
    outcome = repair_output(raw)
    assert outcome.usable, outcome.problem
    assert expected == outcome.value
    assert outcome.changes


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ('{"name": "app', "inside a string"),
        ('{"name": "apple", "qty": 12', "cut off inside the value '12'"),
        ('{"name": "apple", "qty": tr', "cut off inside the value 'tr'"),
        ('{"name": "apple", "qty":', "after a key"),
        ('{"name": "apple", "qty"', "after a key"),
        ('{"name": "apple"} or {"name": "pear"}', "separate JSON values"),
        ('{"name": "apple", "qty": 3, oops}', "drop text from inside the JSON ('oops')"),
        ('{"name": "apple", "qty": 0.0.1}', "neither a JSON number nor clearly a string"),
        ("[{{]", "drop or add objects or arrays"),
        ("{'name': 'apple' + 'pie', 'qty': 3}", "neither a JSON number nor clearly a string"),
        ('{"name": "lorem "ipsum" sic", "qty": 3}', "is a quote meant inside a string"),
        ("no json at all", "no JSON object or array"),
    ],
)
def test_ambiguous_answers_are_refused_with_a_reason(raw: str, problem: str) -> None:
    """Cut-off values, several JSON values, dropped text and prose-only answers are not guessed at."""
    outcome = repair_output(raw, Item)
    assert not outcome.usable
    assert outcome.problem is not None and problem in outcome.problem


def test_bare_list_is_wrapped_when_the_schema_wraps_one_list() -> None:
    """A bare list becomes the only list field of the schema."""
    outcome = repair_output('[{"name": "apple", "qty": 3}]', Basket)
    assert {"items": [ITEM]} == outcome.value
    assert any("bare list" in change for change in outcome.changes)


def test_single_object_is_wrapped_where_a_list_of_them_is_expected() -> None:
    """One object where a list of such objects is expected becomes a one-item list, at top level and in fields."""
    assert {"items": [ITEM]} == repair_output(ITEM, Basket).value
    nested = repair_output({"customer": "Ada", "items": ITEM}, Order)
    assert {"customer": "Ada", "items": [ITEM]} == nested.value


def test_object_that_fits_no_reading_is_left_alone() -> None:
    """Without an unambiguous schema step, a valid object passes through unchanged (validation decides)."""
    outcome = repair_output({"customer": "Ada", "items": {"name": "apple"}}, Order)
    assert {"customer": "Ada", "items": {"name": "apple"}} == outcome.value
    assert () == outcome.changes


@pytest.mark.parametrize("mode", list(OutputMode))
def test_malformed_answer_is_repaired_without_a_retry_in_every_mode(mode: OutputMode) -> None:
    """Tool args, native JSON and prompted text are repaired locally; the ledger says what changed."""
    rec = Recorder(answer(MALFORMED, mode))
    result = system_for(rec.model, mode=mode).execute("task")
    assert result.ok, result.error
    assert Item(name="apple", qty=3) == result.parsedContent
    assert 1 == len(rec.calls)
    attempt = result.notes.attempts[0]
    assert attempt.repairs
    assert any("comment" in change for change in attempt.repairs)
    assert attempt.parse_error is not None
    assert MALFORMED == attempt.raw_output


@pytest.mark.parametrize("mode", list(OutputMode))
def test_bare_list_for_a_wrapping_schema_costs_no_retry(mode: OutputMode) -> None:
    """A bare list answer for a schema with one list field is accepted after wrapping."""
    rec = Recorder(answer('[{"name": "apple", "qty": 3}]', mode))
    result = system_for(rec.model, schema="Basket", mode=mode).execute("task")
    assert Basket(items=[Item(name="apple", qty=3)]) == result.unwrap()
    assert 1 == len(rec.calls)


@pytest.mark.parametrize("mode", list(OutputMode))
def test_truncated_string_is_re_asked_with_what_was_wrong(mode: OutputMode) -> None:
    """An answer cut off inside a string is not completed: the model is told why and answers again."""
    rec = Recorder(answer('{"name": "app', mode), answer('{"name": "apple", "qty": 3}', mode))
    result = system_for(rec.model, mode=mode).execute("task")
    assert result.ok, result.error
    assert 2 == len(rec.calls)
    feedback = str(rec.calls[1][0][-1])
    assert "cut off inside a string" in feedback
    assert "not valid JSON" in feedback
    first = result.notes.attempts[0]
    assert [] == first.repairs
    assert first.errors and "cut off inside a string" in str(first.errors)


def test_repaired_value_that_fails_the_schema_is_re_asked() -> None:
    """A repair that still does not validate is not accepted; the model gets the schema errors."""
    rec = Recorder(("args", "{'name': 'apple', 'qty': 'many',}"), ITEM)
    result = system_for(rec.model).execute("task")
    assert 2 == len(rec.calls)
    assert result.ok
    assert "qty" in str(result.notes.attempts[0].errors)


def test_template_can_turn_repair_off() -> None:
    """`repair: false` on the template: a malformed answer costs a retry, as in bare pydantic-ai."""
    rec = Recorder(("args", MALFORMED), ITEM)
    result = system_for(rec.model, repair=False).execute("task")
    assert result.ok
    assert 2 == len(rec.calls)
    assert [] == result.notes.attempts[0].repairs


def test_call_can_turn_repair_off() -> None:
    """`execute(..., repair=False)` overrides the template for one call."""
    rec = Recorder(("args", MALFORMED), ITEM, ("args", MALFORMED))
    system = system_for(rec.model)
    assert 2 == len(system.execute("task", repair=False).notes.attempts)
    assert 1 == len(system.execute("task").notes.attempts)


def test_output_repair_works_on_a_bare_pydantic_ai_agent() -> None:
    """`OutputRepair` is a plain pydantic-ai capability, usable without a TaskSystem."""
    rec = Recorder("{'name': 'apple', 'qty': 3,}")
    repair = OutputRepair()
    agent = Agent(rec.model, output_type=PromptedOutput(Item), capabilities=[repair])
    assert Item(name="apple", qty=3) == agent.run_sync("give an item").output
    assert [1] == list(repair.repairs)
    assert "answer" not in user_text(rec.calls[0][0])


def test_coercions_of_a_repair_are_recorded() -> None:
    """Validation's own lax coercions of a repaired value are in the ledger too."""
    rec = Recorder(("args", "{'name': 'apple', 'qty': '3',}"))
    result = system_for(rec.model).execute("task")
    assert Item(name="apple", qty=3) == result.unwrap()
    assert "coerced 'qty' from '3' to 3" in result.notes.attempts[0].repairs


def test_a_repaired_value_with_a_key_the_schema_ignores_is_re_asked() -> None:
    """Text a repair moves into a key the schema does not have is a reason to re-ask, not to accept."""
    rec = Recorder(("args", "{'name': 'apple', 'qty': 3, 'colour': 'red',}"), ITEM)
    result = system_for(rec.model).execute("task")
    assert Item(name="apple", qty=3) == result.unwrap()
    assert 2 == len(rec.calls)
    assert "'colour'" in str(result.notes.attempts[0].errors)
    assert [] == result.notes.attempts[0].repairs


class Note(BaseModel):
    text: str


class Tags(BaseModel):
    tags: list[str]


# A quote character inside a single-quoted string, triple quotes, inner double quotes, comments that
# hold quotes or swallow structure: each has more than one reading, so each is re-asked.
QUOTE_CASES = [
    ("['it's fine' // note]", Tags),
    ("['it's fine', 'ok'] // note", Tags),
    ("{'tags': ['don't panic', 'b'] # c}", Tags),
    ("{'tags': ['don't panic', 'b']\n# c\n}", Tags),
    ("{'tags': ['a', 'b' 'c']}", Tags),
    ("{'tags': ['O'Brien', 'b'],}", Tags),
    ("{'tags': ['it''s', 'b'],}", Tags),
    ("{'tags': ['rock 'n' roll', 'jazz'],}", Tags),
    ('{"tags": ["say "hi", now", "b"],}', Tags),
    ('{"text": """text "x" here"""}', Note),
    ('{"text": """plain text"""}', Note),
    ("{'text': " + "'''it's here'''}", Note),
    ('{"text": """multi\nline "x" text""", }', Note),
    ('{"text": "He said "no way" to me"}', Note),
    ("{'text': 'it's, like, fine'}", Note),
    ("{'text': 'don't'} // it's", Note),
    ("{'text': 'a', // it's a \"note\" } ]", Note),
    ('{"text": "x" // closes here }', Note),
    ("{text: O'Brien}", Note),
]


@pytest.mark.parametrize(("raw", "cls"), QUOTE_CASES)
def test_a_string_whose_quotes_have_two_readings_is_re_asked(raw: str, cls: type[BaseModel]) -> None:
    """No repair splits one string into two items, empties a field, or moves text into another key."""
    outcome = repair_output(raw, cls)
    assert not outcome.usable, outcome.value


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("{'tags': ['a, b', 'c'],}", {"tags": ["a, b", "c"]}),
        ('{"tags": ["it\'s", "b"],}', {"tags": ["it's", "b"]}),
        ("{'tags': ['it\\'s', 'b'],}", {"tags": ["it's", "b"]}),
        ("{'tags': [\"it's\", 'b'],}", {"tags": ["it's", "b"]}),
        ('{"tags": ["a" "b"]}', {"tags": ["a", "b"]}),
        ('{"tags": ["a", "b"], // the user\'s tags\n}', {"tags": ["a", "b"]}),
        ('{"text": "a""b": 1}', {"text": "a", "b": 1}),
    ],
)
def test_strings_with_one_reading_are_still_repaired(raw: str, expected: object) -> None:
    """Commas inside strings, escaped or other-style quotes and an apostrophe in a comment have one reading."""
    outcome = repair_output(raw)
    assert outcome.usable, outcome.problem
    assert expected == outcome.value


@pytest.mark.parametrize("raw", ["{'text': " + "'''it's here'''}", '{"text": """x""", "b": 2}'])
def test_triple_quoted_value_costs_a_re_ask_not_a_wrong_value(raw: str) -> None:
    """Through the whole path: the model is re-asked and the second answer is taken."""
    rec = Recorder(("args", raw), {"text": "it's here"})
    system = TaskSystem(model=rec.model)
    system.models.register(Note)
    system.register(Template(name="t", instructions="x", output_format=OutputFormat(type="json", schema="Note")))
    result = system.execute("t")
    assert Note(text="it's here") == result.unwrap()
    assert 2 == len(rec.calls)
