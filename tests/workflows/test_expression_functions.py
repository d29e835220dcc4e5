"""The richer expression language: str functions and methods, objects, comprehensions, narrowing, limits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from atomtask import TaskStatus, TaskSystem, Workflow, WorkflowExpressionError
from atomtask.errors import ExpressionRuntimeError, ExpressionTypeError
from atomtask.testing import scripted_model
from atomtask.workflows import WorkflowRegistry
from atomtask.workflows._expressions import (
    MAX_ITEMS,
    MAX_TEXT,
    MAX_WORK,
    PathRef,
    expression_type,
    narrowed,
    parse_expression,
)
from atomtask.workflows._types import compatible, describe, mismatch, object_type, walk
from pydantic import BaseModel
from pydantic_ai.messages import UserPromptPart

from tests.workflow_fixtures import TaskAnswers, make_system, register


class Change(BaseModel):
    path: str
    changed: bool = False
    note: str | None = None


class Inner(BaseModel):
    p: str | None = None


class Report(BaseModel):
    verdict: str
    files: int
    note: str = ""


class State(BaseModel):
    verdict: str = "  Approve "
    csv: str = "a,b,c"
    tags: list[str] = ["x", "y"]
    scores: list[int] = [1, 2]
    score: int = 3
    ratio: float = 2.567
    count: str = "42"
    maybe: str | None = None
    inner: Inner = Inner()
    fallback: str = "m"
    changes: list[Change] = [Change(path="a.py", changed=True, note="new"), Change(path="b.py")]
    anything: Any = None


def _value(text: str, state: BaseModel | None = None) -> Any:
    return parse_expression(text).evaluate({"state": state or State()})


def _path_type(ref: PathRef) -> Any:
    current: Any = State
    for part in ref.parts:
        current = walk(current, part)
    return current


def _type(text: str) -> Any:
    return expression_type(parse_expression(text), _path_type)


def _nulls(text: str) -> list[str]:
    """What `on_null` is told while typing `text` (the data-flow pass of the workflow checks)."""
    told: list[str] = []
    expression_type(parse_expression(text), _path_type, on_null=lambda message, _: told.append(message))
    return told


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("state.verdict.lower()", "  approve "),
        ("state.verdict.upper()", "  APPROVE "),
        ("state.verdict.strip()", "Approve"),
        ("state.verdict.strip(' eA')", "pprov"),
        ("state.verdict.lstrip()", "Approve "),
        ("state.verdict.rstrip()", "  Approve"),
        ("state.verdict.strip().lower() == 'approve'", True),
        ("state.csv.startswith('a,')", True),
        ("state.csv.endswith('b')", False),
        ("state.csv.replace(',', ' | ')", "a | b | c"),
        ("state.csv.split(',')", ["a", "b", "c"]),
        ("state.verdict.split()", ["Approve"]),
        ("state.csv.split(',')[-1]", "c"),
        ("'-'.join(state.tags)", "x-y"),
        ("len(state.csv.split(','))", 3),
        ("str(state.score) + '/10'", "3/10"),
        ("str(state.changes[1])", '{"path":"b.py","changed":false,"note":null}'),
        ("str(state.tags)", '["x","y"]'),
        ("str(null)", "None"),
        ("int(state.count) + 1", 43),
        ("int(state.ratio)", 2),
        ("float(state.count) / 4", 10.5),
        ("round(state.ratio)", 3),
        ("round(state.ratio, 1)", 2.6),
        ("'pro' in state.verdict", True),
        ("'PRO' in state.verdict", False),
        ("state.tags + ['z']", ["x", "y", "z"]),
        ("state.csv + '!'", "a,b,c!"),
        ("{'verdict': state.verdict.strip(), 'files': len(state.changes)}", {"verdict": "Approve", "files": 2}),
        ("[c.path for c in state.changes if c.changed]", ["a.py"]),
        ("[c.path.upper() for c in state.changes]", ["A.PY", "B.PY"]),
        ("[{'p': c.path} for c in state.changes if not c.changed]", [{"p": "b.py"}]),
        ("[t for t in state.tags if t != 'x'] + ['w']", ["y", "w"]),
        ("state.inner.p if state.inner.p is not null else state.fallback", "m"),
    ],
)
def test_functions_methods_objects_and_comprehensions_evaluate_like_python(text: str, expected: Any) -> None:
    """Each new function, method and form gives what Python gives on the same values."""
    assert expected == _value(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("state.verdict.lower()", "str"),
        ("state.verdict.startswith('a')", "bool"),
        ("state.csv.split(',')", "list[str]"),
        ("state.csv.split(',')[0]", "str"),
        ("', '.join(state.tags)", "str"),
        ("str(state.score)", "str"),
        ("int(state.count)", "int"),
        ("float(state.score)", "float"),
        ("round(state.ratio)", "int"),
        ("round(state.ratio, 2)", "float"),
        ("round(state.score, 2)", "int"),
        ("[1, 'a']", "list[int | str]"),
        ("state.tags + state.scores", "list[str | int]"),
        ("[c.path for c in state.changes if c.changed]", "list[str]"),
        ("[c for c in state.changes]", "list[Change]"),
        ("{'verdict': state.verdict, 'files': 2}", 'object {"verdict": str, "files": int}'),
        ("state.inner.p", "str | None"),
        ("state.inner.p if state.inner.p is not null else state.fallback", "str"),
        ("state.inner.p if state.inner.p != None else 'none'", "str"),
        ("state.inner.p if state.inner.p else state.fallback", "str"),
        ("state.fallback if state.inner.p is null else state.inner.p", "str"),
        ("state.inner.p if state.score > 1 else state.fallback", "str | None"),
        ("[c.note for c in state.changes if c.note is not null]", "list[str]"),
    ],
)
def test_the_new_forms_are_typed(text: str, expected: str) -> None:
    """Results follow their operands; a null test in a ternary or a comprehension's `if` narrows what it guards."""
    assert expected == describe(_type(text))


@pytest.mark.parametrize(
    ("text", "message", "offset"),
    [
        (
            "lenght(state.tags)",
            "Unknown function 'lenght' in expression 'lenght(state.tags)'. Did you mean 'len'? Functions: len, str, "
            "int, float, round; str methods: lower, upper, strip, lstrip, rstrip, startswith, endswith, replace, "
            "split, join.",
            0,
        ),
        ("state.verdict.lowercase()", "Unknown method 'lowercase' in expression", 14),
        ("lower(state.verdict)", "`lower` is a method of str: write `x.lower()`.", 0),
        ("state.tags.len()", "`len` is a function: write `len(x)`.", 11),
        ("state.verdict.lower(1)", "`lower` takes no arguments: `s.lower()`.", 0),
        ("state.csv.replace(',')", "`replace` takes two arguments: `s.replace(old, new)`.", 0),
        ("state.csv.split(',', 1)", "`split` takes at most one argument: `s.split([sep])`.", 0),
        ("round()", "`round` takes one or two arguments: `round(x[, digits])`.", 0),
        ("round(state.ratio, ndigits=2)", "Pass the arguments by position: `round(x[, digits])`.", 0),
        ("state._secret", "reads '_secret': names starting with `_` cannot be read.", 0),
        ("state.verdict.__class__()", "Unknown method '__class__'", 14),
        ("[c._x for c in state.changes]", "names starting with `_` cannot be read", 1),
        ("[[t for t in c] for c in state.changes]", "Comprehensions cannot be nested", 1),
        ("[c for c in [d for d in state.tags]]", "Comprehensions cannot be nested", 12),
        ("[t for c in state.changes for t in c]", "has 2 `for`s; one is allowed", 0),
        ("[t for t in state.tags if t if t]", "has 2 `if`s; join the conditions with `and`", 0),
        ("[a for a, b in state.tags]", "The loop variable `(a, b)`", 7),
        ("[state for state in state.tags]", "The loop variable 'state' in expression", 11),
        (
            "[_t for _t in state.tags]",
            "The loop variable '_t' in expression '[_t for _t in state.tags]' starts with",
            8,
        ),
        ("{t for t in state.tags}", "Only list comprehensions are", 0),
        ("{t: 1 for t in state.tags}", "Only list comprehensions are", 0),
        ("{**state.changes}", "Write each key of an object", 3),
        ("{state.verdict: 1}", "An object's keys are quoted", 1),
        ("{'a': 1, 'a': 2}", "The key 'a' appears twice", 9),
        ("state.tags[state.score]", "The index `state.tags[state.score]`", 0),
        ("t.path", "Unknown name 't'", 0),
    ],
)
def test_mistakes_in_the_new_forms_are_refused_when_parsed(text: str, message: str, offset: int | None) -> None:
    """E112 with the expression named, where the mistake starts, and the fix (did you mean, the allowed names)."""
    with pytest.raises(WorkflowExpressionError) as caught:
        parse_expression(text)
    assert message in caught.value.message
    assert "E112" == caught.value.code
    if offset is not None:
        assert offset == caught.value.offset


def test_a_comprehension_variable_is_not_a_path_of_the_state() -> None:
    """Only the list a comprehension reads is a path of the run (for the data-flow checks); its variable is not."""
    expr = parse_expression("[c.path for c in state.changes if c.changed]")
    assert ["state.changes"] == [p.text for p in expr.paths]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "state.score.lower()",
            "`lower()` is a method of str, and `state.score` (int) is not a str. Convert it first: "
            "`str(state.score).lower()`.",
        ),
        (
            "state.tags.join(', ')",
            "`join()` is a method of str, and `state.tags` (list[str]) is not a str. The separator comes first: "
            "`', '.join(state.tags)`.",
        ),
        ("state.changes.upper()", "`upper()` is a method of str, and `state.changes` (list[Change]) is not a str."),
        ("state.csv.startswith(1)", "`.startswith()` needs a str, not `1` (int)."),
        ("state.csv.replace(',', state.score)", "`.replace()` needs a str, not `state.score` (int)."),
        ("', '.join(state.csv)", "`.join()` needs a list of str, not `state.csv` (str)."),
        ("', '.join(state.scores)", "convert each: `[str(x) for x in state.scores]`"),
        ("len(state.score)", "`len` needs a str, list or dict, not `state.score` (int)."),
        ("int(state.changes)", "`int` needs a str or a number, not `state.changes` (list[Change])."),
        ("int('abc')", "`int('abc')` can only fail: 'abc' is not a whole number."),
        ("float('1,5')", "`float('1,5')` can only fail: '1,5' is not a number."),
        ("round(state.verdict)", "`round` needs a number, not `state.verdict` (str)."),
        ("round(state.ratio, 1.5)", "`round` needs a whole number of digits, not `1.5` (float)."),
        ("[c for c in state.csv]", "`for c in` needs a list, not `state.csv` (str)."),
        ("[c.pth for c in state.changes]", "`c.pth` cannot be read: Change has no field 'pth'. Did you mean 'path'?"),
        ("[c.path + 1 for c in state.changes]", "`+` joins two str or two lists, or adds numbers"),
        ("state.csv.split(',')[0][1]", "a str cannot be indexed with [1]"),
        ("{'a': 1}['b']", "has no key 'b'"),
        ("state.inner == {'p': 'x'}", "is always false"),
        ("state.verdict.lower() == 3", "comparing `state.verdict.lower()` (str) with `3` (int) is always false"),
        ("state.verdict * 2", "`*` needs numbers"),
    ],
)
def test_type_errors_in_the_new_forms_are_refused_at_load(text: str, message: str) -> None:
    """A method on a non-str, wrong argument types, a loop over a non-list: E114 naming the expression."""
    with pytest.raises(ExpressionTypeError) as caught:
        _type(text)
    assert message in caught.value.message
    assert caught.value.message.startswith(f"In expression {text!r}: ")


def test_a_method_on_a_value_that_may_be_null_is_told_in_the_data_flow_pass() -> None:
    """`state.maybe.lower()` types as str, but `on_null` hears that `state.maybe` may be null there, and the fix."""
    assert "str" == describe(_type("state.maybe.lower()"))
    assert [
        "In expression 'state.maybe.lower()': `state.maybe` (str | None) may be null there, and `lower()` cannot be "
        "called on null. Give it a default, write it on every path before, or test it first "
        "(`state.maybe is not null and ...`)."
    ] == _nulls("state.maybe.lower()")


@pytest.mark.parametrize(
    "text",
    [
        "state.maybe is not null and state.maybe.lower() == 'x'",
        "state.maybe and state.maybe.startswith('x')",
        "state.maybe.lower() if state.maybe is not null else ''",
        "state.maybe is null or len(state.maybe) > 2",
        "[c.note.upper() for c in state.changes if c.note is not null]",
        "str(state.maybe)",
    ],
)
def test_a_guarded_read_of_a_value_that_may_be_null_is_accepted(text: str) -> None:
    """A null test that runs before the call (`and`, `or`, a ternary, a comprehension's `if`) narrows it."""
    assert [] == _nulls(text)


@pytest.mark.parametrize(
    ("text", "told"),
    [
        ("[c.note.upper() for c in state.changes]", "`c.note` (str | None) may be null there"),
        ("int(state.maybe)", "`state.maybe` (str | None) may be null there, and `int` cannot take null"),
        ("[x for x in state.maybe.split()]", "`split()` cannot be called on null"),
    ],
)
def test_unguarded_nulls_are_told_wherever_they_fail(text: str, told: str) -> None:
    """A loop variable's field, a function's argument: each null that would fail the run is told."""
    assert told in " ".join(_nulls(text))


def test_narrowed_follows_method_receivers_and_comprehension_conditions() -> None:
    """The paths a comprehension's `if` tests are known inside its element; a receiver keeps its guard."""
    expr = parse_expression("state.maybe is not null and [state.maybe.lower() for c in state.changes if c.note]")
    offsets = {p.text: p.offset for p in expr.paths}
    found = narrowed(expr)
    assert {"state.maybe", "c.note"} == found[expr.text.index("state.maybe.lower")]
    assert {"state.maybe"} == found[offsets["state.changes"]]
    element = parse_expression("[c.note.lower() for c in state.changes if c.note is not null]")
    assert {"c.note"} == narrowed(element)[1]


@pytest.mark.parametrize(
    ("text", "state", "message"),
    [
        ("int(state.count)", State(count="4x"), "`int(state.count)` failed: invalid literal for int() with base 10"),
        ("float(state.count)", State(count="x"), "`float(state.count)` failed: could not convert string to float"),
        (
            "state.maybe.lower() == 'x'",
            State(),
            "`state.maybe.lower()` (in `state.maybe.lower() == 'x'`): `state.maybe` is null, not a str, so "
            "`lower()` cannot be called on it",
        ),
        ("len(state.maybe)", State(), "`len(state.maybe)`: `state.maybe` is null"),
        ("state.anything.upper()", State(anything=3), "`state.anything` is an int, not a str"),
        ("state.anything * 3", State(anything="ab"), "`*` needs numbers; got a str and an int"),
        ("state.anything % 3", State(anything="%s"), "`%` needs numbers; got a str and an int"),
        ("[x for x in state.anything]", State(anything="abc"), "`state.anything` is a str, not a list"),
        ("', '.join(state.anything)", State(anything=[1]), "failed: sequence item 0: expected str instance"),
        ("round(1.5, state.anything)", State(anything=1000), "the digits must be a whole number from -100 to 100"),
        ("state.csv.split(',')[5]", State(), "`state.csv.split(',')[5]` is out of range: it has 3 element(s)"),
        ("[c.pth for c in state.changes]", State(), "`c` has no field 'pth'. Did you mean 'path'?"),
    ],
)
def test_run_time_failures_name_the_expression(text: str, state: State, message: str) -> None:
    """A value that does not fit at run time raises ExpressionRuntimeError naming the part that failed."""
    with pytest.raises(ExpressionRuntimeError) as caught:
        _value(text, state)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("text", "state", "message"),
    [
        (
            "state.anything + state.anything",
            State(anything="x" * (MAX_TEXT // 2 + 1)),
            f"`state.anything + state.anything` would make a str of {MAX_TEXT + 2:,} characters, over the limit of "
            f"{MAX_TEXT:,}",
        ),
        ("state.anything.replace('a', 'aaaa')", State(anything="a" * 300_000), "would make a str of 1,200,000"),
        ("state.anything.replace('', '-')", State(anything="a" * 600_000), "over the limit of 1,000,000"),
        ("'--'.join(state.anything)", State(anything=["ab"] * 300_000), "would make a str of 1,199,998 characters"),
        ("str(state.anything)", State(anything=list(range(200_000))), "would make a str of 1,288,891 characters"),
        ("state.anything + state.anything", State(anything=[0] * 60_000), "would make a list of 120,000 elements"),
        ("state.anything.split(',')", State(anything="," * 100_000), "would make a list of 100,001 elements"),
        ("[x for x in state.anything]", State(anything=[0] * (MAX_ITEMS + 1)), f"over the limit of {MAX_ITEMS:,}"),
        (
            "[x for x in state.anything if x in state.anything]",
            State(anything=list(range(5_000))),
            f"`[x for x in state.anything if x in state.anything]` needs more than {MAX_WORK:,} units of work",
        ),
    ],
)
def test_limits_stop_an_evaluation_naming_the_expression(text: str, state: State, message: str) -> None:
    """A str over MAX_TEXT, a list over MAX_ITEMS or work over MAX_WORK stops with an error naming the expression."""
    with pytest.raises(ExpressionRuntimeError) as caught:
        _value(text, state)
    assert message in str(caught.value)


def test_an_evaluation_within_the_limits_runs_to_the_end() -> None:
    """A comprehension over a long list runs when its work stays under the bound."""
    assert 50_000 == len(_value("[x for x in state.anything if x % 2 == 0]", State(anything=list(range(100_000)))))


@pytest.mark.parametrize(
    ("source", "target", "why"),
    [
        (object_type((("verdict", str), ("files", int))), Report, ""),
        (object_type((("verdict", str), ("files", int), ("note", str))), Report | None, ""),
        (object_type((("a", int), ("b", int))), dict[str, float], ""),
        (object_type((("a", int),)), dict, ""),
        (object_type((("a", int),)), Any, ""),
        (
            object_type((("verdict", str), ("fils", int))),
            Report,
            ": Report has no field 'fils' (did you mean 'files'?)",
        ),
        (object_type((("verdict", str),)), Report, ": it lacks the key(s) 'files' of Report"),
        (object_type((("verdict", int), ("files", int))), Report, ": the value of 'verdict' is an int, not a str"),
        (object_type((("a", str),)), dict[str, int], ": the value of 'a' is a str, not an int"),
        (object_type((("a", str),)), dict[int, str], ": its keys are str, not int"),
        (object_type((("a", str),)), list[str], ": an object is not a list[str]"),
        (list[object_type((("path", str),))], list[Change], ""),
    ],
)
def test_object_literals_fit_dicts_and_classes_by_their_keys(source: Any, target: Any, why: str) -> None:
    """An object goes into a dict whose values it fits, or a class with exactly its keys; `mismatch` says why not."""
    assert (why == "") is compatible(source, target)
    assert why == mismatch(source, target)


def _problems(state: list[dict[str, Any]], steps: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return _problems_of({"name": "exprs", "state": state, "steps": steps})


_STATE = [
    {"name": "text", "type": "str"},
    {"name": "verdict", "type": "str?"},
    {"name": "other", "type": "str?"},
    {"name": "label", "type": "str", "default": ""},
    {"name": "article", "type": "Article?"},
    {"name": "words", "type": "list[str]", "default": []},
    {"name": "counts", "type": "dict[str, int]", "default": {}},
]


def _classify(**extra: Any) -> dict[str, Any]:
    step = {"id": "classify", "task": "classify", "inputs": {"text": "{{state.text}}"}, "outputs": {"verdict": "label"}}
    return step | extra


def _billing(**extra: Any) -> dict[str, Any]:
    return {"id": "billing", "task": "billing", "inputs": {"text": "{{state.text}}"}, "output": "label"} | extra


def test_a_workflow_using_the_new_expressions_passes_every_check() -> None:
    """Methods on a written field, a narrowed ternary, objects, comprehensions and joins: no problem."""
    steps = [
        _classify(
            set={
                "label": "state.other if state.other is not None else state.text.strip()",
                "article": "{'title': state.text.split('.')[0], 'body': state.text}",
                "counts": "{'words': len(state.text.split()), 'tags': 2}",
                "words": "[w.lower() for w in state.text.split() if len(w) > 3]",
            },
            route=[{"when": "state.verdict.lower() == 'billing'", "to": "billing"}, {"to": "end"}],
        ),
        _billing(when="', '.join(state.words).startswith('a') or 'refund' in state.text.lower()"),
    ]
    assert [] == _problems(_STATE, steps)


@pytest.mark.parametrize(
    ("steps", "code", "message"),
    [
        (
            [_classify(route=[{"when": "state.other.lower() == 'billing'", "to": "billing"}]), _billing()],
            "E116",
            "Step 'classify', route 1: In expression \"state.other.lower() == 'billing'\": `state.other` (str | None) "
            "may be null there, and `lower()` cannot be called on null. Give it a default, write it on every path "
            "before, or test it first (`state.other is not null and ...`).",
        ),
        (
            [_classify(set={"label": "state.other if state.text else state.text"})],
            "E114",
            "Step 'classify' sets `state.label` (str) to 'state.other if state.text else state.text', which is a "
            "str | None.",
        ),
        (
            [_classify(set={"article": "{'titel': state.text, 'body': state.text}"})],
            "E114",
            "which is an object {\"titel\": str, \"body\": str}: Article has no field 'titel' (did you mean 'title'?).",
        ),
        (
            [_classify(set={"counts": "{'a': state.text}"})],
            "E114",
            "which is an object {\"a\": str}: the value of 'a' is a str, not an int.",
        ),
        (
            [_classify(route=[{"when": "len(state.words.lowr()) > 0", "to": "billing"}]), _billing()],
            "E112",
            "Step 'classify', route 1: Unknown method 'lowr' in expression 'len(state.words.lowr()) > 0'. Did you "
            "mean 'lower'?",
        ),
        (
            [_classify(when="state.words.lower() == 'x'")],
            "E114",
            "`lower()` is a method of str, and `state.words` (list[str]) is not a str.",
        ),
    ],
)
def test_workflow_checks_report_the_new_forms_with_their_codes(
    steps: list[dict[str, Any]], code: str, message: str
) -> None:
    """A null receiver never written (E116), a ternary that may give null, an object that does not fit (E114)."""
    found = _problems(_STATE, steps)
    assert code == found[0][0], found
    assert message in found[0][1]


_REVIEW_FLOW = """\
schemas:
  - name: FileChange
    fields:
      - {name: path, type: str}
      - {name: changed, type: bool}
  - name: CodeReview
    fields:
      - {name: verdict, type: str}
      - {name: files, type: "list[FileChange]"}
  - name: ReviewReport
    fields:
      - {name: verdict, type: str}
      - {name: files, type: int}
      - {name: summary, type: str}

templates:
  - name: review_change
    params: {diff: {type: str}}
    instructions: "Review this change: {{diff}}"
    output_format: {type: json, schema: CodeReview, mode: tool}
  - name: summarize_change
    params: {paths: {type: str}, verdict: {type: str}}
    instructions: "Summarize the {{verdict}} change to {{paths}}."

workflows:
  - name: review_flow
    state:
      fields:
        - {name: diff, type: str}
        - {name: review, type: CodeReview?}
        - {name: verdict, type: str, default: ""}
        - {name: changed, type: "list[str]", default: []}
        - {name: listing, type: str, default: ""}
        - {name: summary, type: str, default: ""}
        - {name: report, type: ReviewReport?}
    steps:
      - id: review
        task: review_change
        inputs: {diff: "{{state.diff}}"}
        output: review
        set:
          verdict: "state.review.verdict.strip().lower()"
          changed: "[f.path for f in state.review.files if f.changed]"
          listing: "', '.join(state.changed)"
        route:
          - {when: "state.verdict.startswith('approve') and len(state.changed) > 0", to: summarize}
          - {to: end}
      - id: summarize
        task: summarize_change
        when: "'wip' not in state.diff.lower()"
        inputs: {paths: "{{state.listing}}", verdict: "{{state.verdict}}"}
        output: summary
        set:
          report: >-
            {'verdict': state.verdict.upper(), 'files': len(state.changed),
             'summary': state.summary.strip() if state.summary else 'none'}
"""


def test_a_workflow_with_the_new_expressions_runs_end_to_end(tmp_path: Path) -> None:
    """`set`, `when` and `route` use methods, a comprehension and an object literal, on a scripted model."""
    (tmp_path / "review.yaml").write_text(_REVIEW_FLOW, encoding="utf-8")
    files = [{"path": "a.py", "changed": True}, {"path": "b.py", "changed": False}, {"path": "c.py", "changed": True}]
    model = scripted_model({"verdict": "  Approved ", "files": files}, "  Two files changed.  ")
    system = TaskSystem(templates=[tmp_path], model=model)

    result = system.run_workflow("review_flow", {"diff": "+ fix the parser"})

    assert TaskStatus.COMPLETE == result.status, result.error
    assert ("approved", ["a.py", "c.py"]) == (result.state.verdict, result.state.changed)
    assert {"verdict": "APPROVED", "files": 2, "summary": "Two files changed."} == result.state.report.model_dump()
    prompts = [p.content for m in model.calls[1].messages for p in m.parts if isinstance(p, UserPromptPart)]
    assert ["Summarize the approved change to a.py, c.py."] == prompts


def test_a_run_time_expression_failure_fails_the_run_naming_it(tmp_path: Path) -> None:
    """A route that cannot be evaluated on the answer ends the run FAILED with `expression_error`, naming it."""
    flow = _REVIEW_FLOW.replace("state.verdict.startswith('approve')", "int(state.verdict) > 1")
    (tmp_path / "review.yaml").write_text(flow, encoding="utf-8")
    system = TaskSystem(templates=[tmp_path], model=scripted_model({"verdict": "yes", "files": []}))

    result = system.run_workflow("review_flow", {"diff": "+ x"})

    assert TaskStatus.FAILED == result.status
    assert ("expression_error", "review") == (result.error.reason, result.error.step)
    assert (
        "`int(state.verdict)` (in `int(state.verdict) > 1 and len(state.changed) > 0`) failed" in result.error.message
    )


def test_for_each_goes_through_a_comprehension_of_objects_typed_by_their_keys() -> None:
    """`for_each` over `[{...} for w in ...]`: each item's keys are known to the checks and read in the inputs."""
    answers = TaskAnswers(shout=[lambda prompt: prompt.split("word=")[1].upper()])
    system = make_system(answers.model)
    step = {
        "id": "shout",
        "task": "shout",
        "for_each": "[{'w': w.strip(), 'n': len(w)} for w in state.words if w.strip()]",
        "inputs": {"word": "{{item.w}}"},
        "collect": "out",
    }
    doc = {"name": "shouts", "state": [{"name": "words", "type": "list[str]"}, {"name": "out", "type": "list[str]"}]}
    register(system, doc | {"steps": [step]})

    result = system.run_workflow("shouts", {"words": [" a", " ", "bb "]})

    assert (TaskStatus.COMPLETE, ["A", "BB"]) == (result.status, result.state.out)
    wrong = doc | {"name": "wrong", "steps": [step | {"inputs": {"word": "{{item.x}}"}}]}
    assert [
        (
            "E113",
            "Unknown path `item.x` in input 'word' of step 'shout': the object {\"w\": str, \"n\": int} has no key "
            "'x'. Fields there: w, n.",
        )
    ] == _problems_of(wrong)


def _problems_of(doc: dict[str, Any]) -> list[tuple[str, str]]:
    system = make_system("test")
    registry = WorkflowRegistry(system.templates, system.models)
    return [(e.code, e.message) for e in registry.check(Workflow.model_validate(doc)).errors]
