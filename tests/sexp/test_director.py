"""`director-evaluator`: direct, execute, evaluate, decide, round after round up to `max-rounds`."""

from __future__ import annotations

from typing import Any

import pytest
from atomtask import SexpEvalError, SourceLocation, TaskSystem
from atomtask.sexp._evaluator import DIRECTOR_CLAUSES

from tests.helpers import Recorder, user_text


def evaluate(source: str, system: TaskSystem | None = None, **variables: Any) -> Any:
    return (system or TaskSystem()).defatom(source, file="d.sexp", variables=variables)


COUNTING = """
(director-evaluator
  (max-rounds {rounds})
  (input "start")
  (direct (lambda (feedback round) (concat "plan " round " after " feedback)))
  (execute (lambda (plan) (concat "did " plan)))
  (evaluate (lambda (result round) round))
  (until (lambda (verdict) (>= verdict {stop}))))
"""


def test_the_loop_stops_when_until_holds() -> None:
    """Each round directs on the last verdict; `until` true ends the loop with `done` true."""
    outcome = evaluate(COUNTING.format(rounds=5, stop=2))
    assert {
        "result": "did plan 2 after 1",
        "verdict": 2,
        "plan": "plan 2 after 1",
        "rounds": 2,
        "done": True,
    } == outcome


def test_the_loop_stops_after_max_rounds() -> None:
    """Without `until` holding, the loop runs `max-rounds` rounds; `done` is false."""
    outcome = evaluate(COUNTING.format(rounds=3, stop=99))
    assert (3, False, "did plan 3 after 2") == (outcome["rounds"], outcome["done"], outcome["result"])


def test_phases_may_be_named_functions_and_builtins_taking_fewer_arguments() -> None:
    """A `define`d function, a builtin, or a lambda with fewer parameters than offered are all phases."""
    source = """
    (define (plan feedback) (if feedback (concat feedback "!") "first"))
    (director-evaluator (max-rounds 2) (direct plan) (execute str) (evaluate (lambda (r) r)) (until not))
    """
    assert {"result": "first!", "verdict": "first!", "plan": "first!", "rounds": 2, "done": False} == evaluate(source)


def test_tasks_run_in_each_phase() -> None:
    """The phases call tasks; the evaluator's verdict reaches the next round's director."""
    rec = Recorder("plan A", "draft A", "redo", "plan B", "draft B", "ok")
    system = TaskSystem(model=rec.model)
    source = """
    (defatom direct (params (feedback str)) (instructions "Plan. Feedback: {{feedback}}"))
    (defatom run (params (plan str)) (instructions "Do: {{plan}}"))
    (defatom judge (params (draft str)) (instructions "Judge: {{draft}}"))
    (get-field
      (director-evaluator
        (max-rounds 3) (input "none")
        (direct (lambda (feedback) (unwrap (direct (feedback feedback)))))
        (execute (lambda (plan) (unwrap (run (plan plan)))))
        (evaluate (lambda (draft) (unwrap (judge (draft draft)))))
        (until (lambda (verdict) (= verdict "ok"))))
      "result")
    """
    assert "draft B" == evaluate(source, system)
    assert ["Plan. Feedback: none", "Plan. Feedback: redo"] == [user_text(rec.calls[i][0]) for i in (0, 3)]


@pytest.mark.parametrize(
    ("source", "where", "fragment"),
    [
        ("(director-evaluator (direct not))", (1, 1), "has no `(max-rounds ...)`, `(execute ...)`"),
        ("(director-evaluator (max-round 1))", (1, 21), "Did you mean 'max-rounds'?"),
        ("(director-evaluator 3)", (1, 21), "Expected a clause like `(max-rounds ...)`"),
        (
            "(director-evaluator (max-rounds 0) (direct not) (execute not) (evaluate not) (until not))",
            (1, 33),
            "`max-rounds` is a whole number of rounds (1 or more), got the number 0",
        ),
        (
            "(director-evaluator (max-rounds 1) (direct 1) (execute not) (evaluate not) (until not))",
            (1, 44),
            "`(direct ...)` takes a function, like `(lambda (feedback round) ...)`; got the number 1",
        ),
        (
            "(director-evaluator (max-rounds 1) (direct not) (execute (lambda (a b c) a)) (evaluate not) (until not))",
            (1, 58),
            "The `execute` function is given (plan round), at most 2 arguments",
        ),
        (
            "(director-evaluator (max-rounds 1 2) (direct not) (execute not) (evaluate not) (until not))",
            (1, 21),
            "takes exactly one value, got 2",
        ),
    ],
)
def test_mistakes_are_located(source: str, where: tuple[int, int], fragment: str) -> None:
    """A missing, unknown or malformed clause, a bad bound or a non-function phase is a located error."""
    with pytest.raises(SexpEvalError) as info:
        evaluate(source)
    assert fragment in info.value.message
    assert SourceLocation(file="d.sexp", line=where[0], column=where[1]) == info.value.location


def test_the_clauses() -> None:
    """The clauses, in the order the docs give them."""
    assert ("max-rounds", "input", "direct", "execute", "evaluate", "until") == DIRECTOR_CLAUSES
