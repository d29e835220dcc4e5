"""Constructed cases for `benchmarks/repair.py`: quotes with more than one reading, and schema-aligned answers.

Written for this benchmark (not taken from any outside set). Each case is an answer a model might
give, the schema it was asked for, and the value it meant. `must_reask` marks answers that have
more than one reading: accepting anything from them on the first answer is a guess, and counts as
a wrong value even when the guess happens to be right.

- `quotes`: a quote character inside a single-quoted string, triple-quoted strings, inner double
  quotes, comments that hold quotes or swallow structure; plus look-alikes that have one reading.
- `schema_aligned`: for each `repair: lenient` rule, answers it must read and ambiguous ones it
  must re-ask.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

import attrs
from pydantic import BaseModel


class Tags(BaseModel):
    tags: list[str]


class Note(BaseModel):
    text: str


class Sentiment(BaseModel):
    sentiment: Literal["positive", "negative", "neutral"]


class Colour(Enum):
    RED = "red"
    GREEN = "green"
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


@attrs.frozen
class Constructed:
    id: str
    input: str
    schema: type[BaseModel]
    expected: dict[str, Any]
    must_reask: bool = False


def _q(n: int, raw: str, schema: type[BaseModel], expected: dict[str, Any], must_reask: bool = False) -> Constructed:
    return Constructed(f"quotes-{n:02d}", raw, schema, expected, must_reask)


_TRIPLE = "'" * 3
QUOTES = [
    _q(1, "['it's fine' // note]", Tags, {"tags": ["it's fine"]}, True),
    _q(2, "['it's fine', 'ok'] // note", Tags, {"tags": ["it's fine", "ok"]}, True),
    _q(3, "{'tags': ['don't panic', 'b'] # c}", Tags, {"tags": ["don't panic", "b"]}, True),
    _q(4, "{'tags': ['don't panic', 'b']\n# c\n}", Tags, {"tags": ["don't panic", "b"]}, True),
    _q(5, "{'tags': ['a', 'b' 'c']}", Tags, {"tags": ["a", "bc"]}, True),
    _q(6, "{'tags': ['O'Brien', 'b'],}", Tags, {"tags": ["O'Brien", "b"]}, True),
    _q(7, "{'tags': ['it''s', 'b'],}", Tags, {"tags": ["it's", "b"]}, True),
    _q(8, "{'tags': ['rock 'n' roll', 'jazz'],}", Tags, {"tags": ["rock 'n' roll", "jazz"]}, True),
    _q(9, '{"tags": ["say "hi", now", "b"],}', Tags, {"tags": ['say "hi", now', "b"]}, True),
    _q(10, '{"text": """text "x" here"""}', Note, {"text": 'text "x" here'}, True),
    _q(11, '{"text": """plain text"""}', Note, {"text": "plain text"}, True),
    _q(12, "{'text': " + _TRIPLE + "it's here" + _TRIPLE + "}", Note, {"text": "it's here"}, True),
    _q(13, '{"text": """multi\nline "x" text""", }', Note, {"text": 'multi\nline "x" text'}, True),
    _q(14, '{"text": "He said "no way" to me"}', Note, {"text": 'He said "no way" to me'}, True),
    _q(15, "{'text': 'it's, like, fine'}", Note, {"text": "it's, like, fine"}, True),
    _q(16, "{'text': 'don't'} // it's", Note, {"text": "don't"}, True),
    _q(17, "{'text': 'a', // it's a \"note\" } ]", Note, {"text": "a"}, True),
    _q(18, '{"text": "x" // closes here }', Note, {"text": "x"}, True),
    _q(19, "{text: O'Brien}", Note, {"text": "O'Brien"}, True),
    _q(20, '{"text": """x""", "b": 2}', Note, {"text": "x"}, True),
    _q(21, "{'tags': ['can't', 'won't'] // two}", Tags, {"tags": ["can't", "won't"]}, True),
    _q(22, "['l'amour', 'b']", Tags, {"tags": ["l'amour", "b"]}, True),
    # Look-alikes with one reading: these should be repaired, not re-asked.
    _q(30, "{'tags': ['a, b', 'c'],}", Tags, {"tags": ["a, b", "c"]}),
    _q(31, '{"tags": ["it\'s", "b"],}', Tags, {"tags": ["it's", "b"]}),
    _q(32, "{'tags': ['it\\'s', 'b'],}", Tags, {"tags": ["it's", "b"]}),
    _q(33, "{'tags': [\"it's\", 'b'],}", Tags, {"tags": ["it's", "b"]}),
    _q(34, '{"tags": ["a" "b"]}', Tags, {"tags": ["a", "b"]}),
    _q(35, '{"tags": ["a", "b"], // the user\'s tags\n}', Tags, {"tags": ["a", "b"]}),
    _q(36, "{'text': 'say \"hi\" now',}", Note, {"text": 'say "hi" now'}),
    _q(37, '{"text": "a [b] {c}", /* note */}', Note, {"text": "a [b] {c}"}),
    _q(38, "```json\n{'text': 'it\\'s # not a comment'}\n```", Note, {"text": "it's # not a comment"}),
]


def _s(
    rule: str, n: int, raw: str, schema: type[BaseModel], expected: dict[str, Any], must_reask: bool = False
) -> Constructed:
    return Constructed(f"{rule}-{n:02d}", raw, schema, expected, must_reask)


SCHEMA_ALIGNED = [
    # enum / literal: case and whitespace
    _s("enum_case", 1, '{"sentiment": "Positive"}', Sentiment, {"sentiment": "positive"}),
    _s("enum_case", 2, '{"sentiment": " NEGATIVE "}', Sentiment, {"sentiment": "negative"}),
    _s("enum_case", 3, "{'sentiment': 'Neutral',}", Sentiment, {"sentiment": "neutral"}),
    _s("enum_case", 4, '{"colour": "RED"}', Paint, {"colour": "red"}),
    _s("enum_case", 5, '{"colour": "Light  Blue"}', Paint, {"colour": "light blue"}),
    _s("enum_case", 6, '{"sentiment": "Positive", "score": 4}', Review, {"sentiment": "positive", "score": 4}),
    _s("enum_case", 7, '{"sentiment": "mixed"}', Sentiment, {"sentiment": "neutral"}, True),
    _s("enum_case", 8, '{"colour": "blue"}', Paint, {"colour": "light blue"}, True),
    # enum / literal / boolean as the only candidate in prose
    _s("in_prose", 1, '{"sentiment": "The sentiment is positive."}', Sentiment, {"sentiment": "positive"}),
    _s("in_prose", 2, '{"sentiment": "**Negative**"}', Sentiment, {"sentiment": "negative"}),
    _s("in_prose", 3, "Sentiment: Positive", Sentiment, {"sentiment": "positive"}),
    _s("in_prose", 4, "I would say the review is negative overall.", Sentiment, {"sentiment": "negative"}),
    _s("in_prose", 5, "neutral", Sentiment, {"sentiment": "neutral"}),
    _s("in_prose", 6, "Answer: **True**", Verdict, {"relevant": True}),
    _s("in_prose", 7, "True", Verdict, {"relevant": True}),
    _s("in_prose", 8, "Yes, the document is relevant.", Verdict, {"relevant": True}),
    _s("in_prose", 9, '{"relevant": "Yes, it is relevant"}', Verdict, {"relevant": True}),
    _s("in_prose", 10, "false.", Verdict, {"relevant": False}),
    _s("in_prose", 11, "The colour is green.", Paint, {"colour": "green"}),
    _s("in_prose", 12, "The risk is very high.", Risk, {"level": "very high"}),
    _s("in_prose", 13, '{"level": "Very  High"}', Risk, {"level": "very high"}),
    _s("in_prose", 29, "High, but not very high.", Risk, {"level": "high"}, True),
    _s("in_prose", 20, '{"sentiment": "positive or negative"}', Sentiment, {"sentiment": "positive"}, True),
    _s("in_prose", 21, "It is not positive.", Sentiment, {"sentiment": "negative"}, True),
    _s("in_prose", 22, "Mostly positive, with some negative parts.", Sentiment, {"sentiment": "positive"}, True),
    _s("in_prose", 23, "Answer: positive (not negative)", Sentiment, {"sentiment": "positive"}, True),
    _s("in_prose", 24, "True or False, hard to say.", Verdict, {"relevant": False}, True),
    _s("in_prose", 25, "It is not true that this is relevant.", Verdict, {"relevant": False}, True),
    _s("in_prose", 26, '{"relevant": "maybe"}', Verdict, {"relevant": False}, True),
    _s("in_prose", 27, "Positive-ish, I suppose.", Sentiment, {"sentiment": "positive"}, True),
    _s("in_prose", 28, "No. Well, yes.", Verdict, {"relevant": True}, True),
    # numbers: thousands separators, a trailing unit, a fraction for a float
    _s("number", 1, '{"count": "12,111"}', Count, {"count": 12111}),
    _s("number", 2, '{"count": "1,234,567"}', Count, {"count": 1234567}),
    _s("number", 3, '{"count": "12 items"}', Count, {"count": 12}),
    _s("number", 4, '{"weight": "12.5 kg"}', Weight, {"weight": 12.5}),
    _s("number", 5, '{"weight": "3/4"}', Weight, {"weight": 0.75}),
    _s("number", 6, '{"weight": "1,234.5"}', Weight, {"weight": 1234.5}),
    _s("number", 7, "{'count': '7 apples',}", Count, {"count": 7}),
    _s("number", 8, '{"sentiment": "negative", "score": "1,024"}', Review, {"sentiment": "negative", "score": 1024}),
    _s("number", 9, '{"weight": "-2.5kg"}', Weight, {"weight": -2.5}),
    _s("number", 20, '{"weight": "1,500"}', Weight, {"weight": 1500.0}, True),
    _s("number", 21, '{"weight": "12%"}', Weight, {"weight": 12.0}, True),
    _s("number", 22, '{"count": "12.5"}', Count, {"count": 12}, True),
    _s("number", 23, '{"count": "12 to 15"}', Count, {"count": 12}, True),
    _s("number", 24, '{"count": "1.234"}', Count, {"count": 1234}, True),
    _s("number", 25, '{"count": "12,11"}', Count, {"count": 1211}, True),
    _s("number", 26, '{"count": "about 12"}', Count, {"count": 12}, True),
    _s("number", 27, '{"count": "12k"}', Count, {"count": 12000}, True),
    _s("number", 28, '{"count": "3 million"}', Count, {"count": 3000000}, True),
    # a bare scalar or list for a schema whose single required field has that type
    _s("bare_value", 1, "42", Count, {"count": 42}),
    _s("bare_value", 2, '"12,111"', Count, {"count": 12111}),
    _s("bare_value", 3, '["a", "b"]', Labels, {"labels": ["a", "b"], "note": None}),
    _s("bare_value", 4, "0.75", Weight, {"weight": 0.75}),
    _s("bare_value", 5, '"Positive"', Sentiment, {"sentiment": "positive"}),
    _s("bare_value", 6, "true", Verdict, {"relevant": True}),
    _s("bare_value", 20, "42", Review, {"sentiment": "positive", "score": 42}, True),
    _s("bare_value", 21, '"twelve"', Count, {"count": 12}, True),
    # several top-level objects for a list of objects
    _s("objects", 1, '{"name": "apple", "qty": 3}\n{"name": "pear", "qty": 1}', Basket,
       {"items": [{"name": "apple", "qty": 3}, {"name": "pear", "qty": 1}]}),
    _s("objects", 2, '{"name": "apple", "qty": 3} {"name": "pear", "qty": 1}', Basket,
       {"items": [{"name": "apple", "qty": 3}, {"name": "pear", "qty": 1}]}),
    _s("objects", 3, '{"name": "apple", "qty": 3},\n{"name": "pear", "qty": 1}', Basket,
       {"items": [{"name": "apple", "qty": 3}, {"name": "pear", "qty": 1}]}),
    _s("objects", 20, '{"name": "apple", "qty": 3}\n{"customer": "Ada"}', Basket,
       {"items": [{"name": "apple", "qty": 3}]}, True),
    _s("objects", 21, '{"name": "apple", "qty": 3}\n{"name": "pear", "qty": "1"} and more', Basket,
       {"items": [{"name": "apple", "qty": 3}, {"name": "pear", "qty": 1}]}, True),
    # a single string field takes the raw text
    _s("raw_text", 1, "The meeting moved to Tuesday.", Summary, {"summary": "The meeting moved to Tuesday."}),
    _s("raw_text", 2, "Sales rose 4% in May, led by Europe.", Summary,
       {"summary": "Sales rose 4% in May, led by Europe."}),
    _s("raw_text", 3, "  Two lines\nof summary.  ", Summary, {"summary": "Two lines\nof summary."}),
    _s("raw_text", 20, "Here is the summary:\nSales rose.", Summary, {"summary": "Sales rose."}, True),
    _s("raw_text", 22, "```\nSales rose.\n```", Summary, {"summary": "Sales rose."}, True),
    _s("raw_text", 21, '{"summary": "Sales rose', Summary, {"summary": "Sales rose."}, True),
]  # fmt: skip
