"""The texts of the workflow codes E110-E120 (`atomtask check --explain E113`), one per workflow error class.

The code and the rule's name come from the error classes themselves (`atomtask.system.workflow_errors`),
so a finding and its explanation cannot drift apart; here are the one-line summaries and the examples.
"""

from __future__ import annotations

from atomtask.system.workflow_errors import WORKFLOW_ERROR_CODES

__all__ = ["WORKFLOW_RULE_TEXTS"]

_TEXTS: dict[str, tuple[str, str]] = {
    "E110": (
        "a workflow's shape is wrong",
        """
An unknown or mistyped key, a step with none (or two) of `task`, `workflow` and `parallel`, a step id
used twice, a state field with a bad type, a model string or model setting that is wrong.

    steps:
      - id: research
        task: research_topic
        retrys: 2        # E110 Invalid workflow 'article_writer': `steps.0.retrys`: unknown key; valid keys: id, ...
""",
    ),
    "E111": (
        "a step runs a task or sub-workflow that is not registered",
        """
The task (a template from YAML, `.sexp` or Python) or the sub-workflow must be registered before the
workflow (load them from the same folders). A state `schema: Name` must name a registered schema.

    - id: research
      task: reseach_topic   # E111 ... task 'reseach_topic', which is not registered. Did you mean 'research_topic'?
""",
    ),
    "E112": (
        "an expression or placeholder is outside the expression language",
        """
Expressions (`when`, `route`, `set`, `for_each`) are a small, safe language: `state.x.y` paths, literals,
comparisons, `and`/`or`/`not`, `in`, arithmetic and `len`; never Python. Placeholders are `{{state.x}}`
(and `{{item}}` inside a `for_each` step).

    route:
      - {when: "score < 7", to: revise}   # E112 Unknown name 'score' ... Did you mean `state.score`?
""",
    ),
    "E113": (
        "a `state.x.y` path names no field of the state",
        """
Every path in a placeholder, an expression or an output mapping must exist in the state schema (and in
the classes of its fields); the finding points at the path's column and suggests the near name.

    route:
      - {when: "state.scroe < 7", to: revise}   # E113 Unknown path `state.scroe` ... Did you mean `state.score`?
""",
    ),
    "E114": (
        "types do not fit: an input and its parameter, an output and its state field, an operator",
        """
A `str` field bound to an `int` parameter, an output stored in a field of another type, a `set` whose
value does not fit, a `str` compared with a number, `for_each` over something that is not a list.
Widening is fine (`int` into `float`).

    inputs: {score: "{{state.topic}}"}   # E114 Step 'revise' passes {{state.topic}} (str) to parameter 'score' (int)
""",
    ),
    "E115": (
        "a required parameter is unbound, or an input or output names nothing",
        """
Every required parameter of the task must be bound under `inputs`, every input must be a parameter, and
every `outputs` entry must name an output field of the task (`output: field` stores the whole answer).

    outputs: {research: sumary}   # E115 ... 'sumary', which is not an output field ... Did you mean 'summary'?
""",
    ),
    "E116": (
        "a step reads a field that no step has written on some path to it",
        """
The data-flow check, per path through the routes: a field a step reads must be a run input, have a
default, or be written by a step on every path before it (a skipped or failed-and-continued step does
not count as writing).

    # `research` has `when:`, so on the path where it is skipped nothing writes `state.research`:
    - id: write
      inputs: {notes: "{{state.research}}"}   # E116 Step 'write' reads `state.research` but on the path
                                              # research (skipped) -> write no step has written it ...
""",
    ),
    "E117": (
        "a route target does not exist, a step is unreachable, or a route entry is never taken",
        """
Route and `on_failure: {to: ...}` targets must be step ids (or `end`); every step must be reachable from
the first; an entry after one without `when` is dead.

    route:
      - {when: "state.score < 7", to: revse}   # E117 ... 'revse', which is not a step ... Did you mean 'revise'?
""",
    ),
    "E118": (
        "a cycle has no `max_visits` bound, or a workflow runs itself",
        """
Every loop of steps needs a bound, so a run always ends: `max_visits: N` on one step of the cycle (the
run fails with `max_visits_exceeded` if it is reached). Workflows cannot run each other in a circle.

    - id: revise
      route: [{to: review}]   # E118 Steps review -> revise -> review form a cycle with no bound. Add `max_visits: N`
""",
    ),
    "E119": (
        "two steps of one `parallel` group write the same state field",
        """
The steps of a group run at once on the same state and join before the next step; two of them writing
one field would make the result depend on timing. Write different fields and combine them after.

    parallel:
      - {id: a, task: summarize, inputs: {...}, output: summary}
      - {id: b, task: summarize, inputs: {...}, output: summary}   # E119
""",
    ),
    "E120": (
        "a migration is wrong: its versions do not chain, or a field, value, step or function it names",
        """
`migrations` turn the state of a run recorded under an older `version` into the current one, on resume.
Checked before any run: one migration per `from` version, chaining to the current `version` with no
circle; the fields written (`rename` targets, `set`, `convert`) exist in the current state (or a later
migration drops or renames them); a dropped or renamed field was not already removed by the migration
before; `set` values fit their field; `resume_at` is a step; `call` imports from an `importable` package.

    version: "1.2"
    migrations:
      - {from: "1.0", to: "1.1", rename: {title: headlne}}   # E120 ... writes `state.headlne` (`rename`), but the
                                                             # state of the current version has no field ...
      - {from: "1.1", to: "1.2", set: {score: high}}         # E120 ... sets `state.score` (int) to 'high' ...
""",
    ),
}

#: (code, rule name, summary, explanation) of each workflow code, in code order.
WORKFLOW_RULE_TEXTS: list[tuple[str, str, str, str]] = [
    (code, WORKFLOW_ERROR_CODES[code].rule, summary, explanation) for code, (summary, explanation) in _TEXTS.items()
]
