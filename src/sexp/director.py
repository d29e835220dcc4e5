"""`director-evaluator`: direct, execute, evaluate and decide, round after round, up to a maximum.

    (director-evaluator
      (max-rounds 3)                                    ; required: the loop's bound
      (input "Write a haiku about tides.")              ; optional: the first round's feedback (nil)
      (direct   (lambda (feedback round) ...))          ; -> a plan
      (execute  (lambda (plan round) ...))              ; -> a result
      (evaluate (lambda (result round) ...))            ; -> a verdict
      (until    (lambda (verdict round) ...)))          ; true -> stop

Each clause is evaluated once, to a function (`lambda`, a `define`d name, a builtin); a function
may take fewer parameters than it is offered (`(lambda (plan) ...)`). Each round runs `direct` on
the previous round's verdict (the `input` in round 1), `execute` on the plan, `evaluate` on the
result, then stops when `until` is true of the verdict, or after `max-rounds` rounds. The value is a
mapping, read with `get-field`: `result` (the last result), `verdict`, `plan`, `rounds` (how many
ran) and `done` (true when `until` stopped the loop, false when the rounds ran out).

The same loop written by hand with `loop`, `set!` and `break` is the idiom this form names.
"""

from __future__ import annotations

from typing import Any

from atomtask.sexp.control import ControlForms
from atomtask.sexp.errors import SexpEvalError
from atomtask.sexp.forms import clauses, single
from atomtask.sexp.functions import truthy, value_name
from atomtask.sexp.reader import SList
from atomtask.sexp.values import Builtin, Closure, Environment

__all__ = ["DIRECTOR_CLAUSES", "director_evaluator"]

#: What each phase is offered, in order (a function may take fewer).
_OFFERED = {
    "direct": ("feedback", "round"),
    "execute": ("plan", "round"),
    "evaluate": ("result", "round"),
    "until": ("verdict", "round"),
}
#: The clauses of a `director-evaluator` form (`input` is optional).
DIRECTOR_CLAUSES = ("max-rounds", "input", *_OFFERED)
_SHAPE = "(director-evaluator (max-rounds N) [(input x)] (direct f) (execute f) (evaluate f) (until f))"


def director_evaluator(control: ControlForms, form: SList, env: Environment) -> dict[str, Any]:
    """Evaluate a `(director-evaluator ...)` form (see the module docstring)."""
    label = "`director-evaluator`"
    found = clauses(form.items[1:], DIRECTOR_CLAUSES, label, SexpEvalError, what="clause")
    missing = [name for name in DIRECTOR_CLAUSES if name != "input" and name not in found]
    if missing:
        raise SexpEvalError(
            f"{label} has no {', '.join(f'`({m} ...)`' for m in missing)}: `{_SHAPE}`. Every loop has a "
            "maximum number of rounds.",
            location=form.location,
        )
    values = {name: control.value(single(c.items[1:], c, label, SexpEvalError), env) for name, c in found.items()}
    rounds = values["max-rounds"]
    if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1:
        raise SexpEvalError(
            f"`max-rounds` is a whole number of rounds (1 or more), got {value_name(rounds)}.",
            location=found["max-rounds"].items[1].location,
        )
    for phase, offered in _OFFERED.items():
        _check_phase(phase, values[phase], offered, found[phase])
    outcome: dict[str, Any] = {"result": None, "verdict": values.get("input"), "plan": None, "rounds": 0}
    done = False
    for number in range(1, rounds + 1):
        outcome["rounds"] = number
        outcome["plan"] = _run(control, values["direct"], [outcome["verdict"], number], found["direct"])
        outcome["result"] = _run(control, values["execute"], [outcome["plan"], number], found["execute"])
        outcome["verdict"] = _run(control, values["evaluate"], [outcome["result"], number], found["evaluate"])
        if truthy(_run(control, values["until"], [outcome["verdict"], number], found["until"])):
            done = True
            break
    return {**outcome, "done": done}


def _check_phase(phase: str, function: Any, offered: tuple[str, ...], clause: SList) -> None:
    if isinstance(function, Closure) and len(function.params) > len(offered):
        raise SexpEvalError(
            f"The `{phase}` function is given ({' '.join(offered)}), at most {len(offered)} arguments; "
            f"the {function.label()} takes {len(function.params)} ({' '.join(function.params)}).",
            location=clause.items[1].location,
        )
    if not isinstance(function, Closure | Builtin):
        raise SexpEvalError(
            f"`({phase} ...)` takes a function, like `(lambda ({' '.join(offered)}) ...)`; got {value_name(function)}.",
            location=clause.items[1].location,
        )


def _run(control: ControlForms, function: Closure | Builtin, offered: list[Any], clause: SList) -> Any:
    wanted = len(function.params) if isinstance(function, Closure) else 1
    return control.call(function, offered[:wanted], clause)
