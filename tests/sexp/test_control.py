"""Control forms of scripts: define, lambda, set!, bounded loops with break, for, map; located errors; fuzzing."""

from __future__ import annotations

from typing import Any

import pytest
from atomtask import AtomTaskError, SexpEvalError, SexpSyntaxError, SourceLocation, TaskSystem
from atomtask.sexp._evaluator import MAX_EVAL_DEPTH
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import Recorder, user_text


def evaluate(source: str, system: TaskSystem | None = None, **variables: Any) -> Any:
    return (system or TaskSystem()).defatom(source, file="c.sexp", variables=variables)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("(define x 2) (* x x)", 4),
        ("(define (square n) (* n n)) (square 7)", 49),
        ("((lambda (a b) (- a b)) 5 2)", 3),
        ("(define (fact n) (if (<= n 1) 1 (* n (fact (- n 1))))) (fact 10)", 3628800),
        ("(let ((n 1)) (set! n (+ n 1)) n)", 2),
        ("(let ((i 0)) (loop (max 10) (set! i (+ i 1)) (if (= i 3) (break (* i 10)))))", 30),
        ("(let ((i 0)) (loop (max 4) (set! i (+ i 1))))", 4),  # the bound reached: the last value
        ("(loop (max 0) 1)", None),
        ("(loop (max 3) (break))", None),
        ("(let ((i 0)) (while (< i 5) (max 100) (set! i (+ i 1))) i)", 5),
        ("(let ((i 0)) (while (< i 5) (max 2) (set! i (+ i 1))) i)", 2),
        ("(while false (max 3) 1)", None),
        ("(for (x (list 1 2 3)) (* x x))", [1, 4, 9]),
        ("(for (x (list)) x)", []),
        ('(for (x (list 1 2 3)) (if (= x 2) (break "two") x))', "two"),
        ("(map (lambda (x) (+ x 1)) (list 1 2))", [2, 3]),
        ("(map not (list nil 1))", [True, False]),
        ("(map str (list 1 nil))", ["1", "nil"]),
        ("(for (x (list 1 2)) (loop (max 5) (break (* x 10))))", [10, 20]),  # break leaves the innermost loop
        ("(for (x (list 1 2)) (define y (* x 2)) y)", [2, 4]),  # each iteration's frame is its own
        ("(define make (lambda () (let ((n 0)) (lambda () (set! n (+ n 1)) n)))) (define c (make)) (c) (c)", 2),
        ("(define fs (for (x (list 1 2)) (lambda () x))) (map (lambda (f) (f)) fs)", [1, 2]),
        ("(let ((total 0)) (for (x (list 1 2 3)) (set! total (+ total x))) total)", 6),
        ("(define n (length (list 1 2))) (define (twice f x) (f (f x))) (twice (lambda (v) (* v n)) 3)", 12),
    ],
)
def test_control_forms_evaluate(source: str, expected: Any) -> None:
    """Functions close over their frame, set! changes the binding it finds, loops stop at break or their bound."""
    assert expected == evaluate(source)


def test_a_function_bound_by_let_or_define_is_named_in_messages() -> None:
    """`define` and `let` name an anonymous function, so its arity error says which one."""
    assert "<function f>" == str(evaluate("(define f (lambda (x) x)) f"))
    assert "<function g>" == str(evaluate("(let ((g (lambda () 1))) g)"))
    with pytest.raises(SexpEvalError, match=r"The function 'g' takes 0 arguments \(none\), got 1"):
        evaluate("(let ((g (lambda () 1))) (g 2))")


@pytest.mark.parametrize(
    ("source", "where", "fragment"),
    [
        ("(loop 1)", (1, 7), "`loop` needs a bound: `(loop (max N) body...)`; found `1`"),
        ("(loop)", (1, 1), "`loop` takes at least 1 argument"),
        ("(while true 1)", (1, 13), "`while` needs a bound"),
        ("(while (max 3) true)", (1, 8), "The condition of `while` comes first"),
        ("(loop (max -1) 1)", (1, 12), "a whole number of iterations (0 or more), got the number -1"),
        ("(loop (max true) 1)", (1, 12), "got the boolean true"),
        ("(loop (max 1 2) 1)", (1, 7), "`max` takes exactly 1 argument"),
        ("(break 1)", (1, 1), "`break` is outside any `loop`, `while` or `for`"),
        ("(define (f) (break 1))\n(loop (max 2) (f))", (1, 13), "a function body starts outside the loops"),
        ("(define (f a b) a)\n(f 1)", (2, 1), "The function 'f' takes 2 arguments (a b), got 1"),
        ("((lambda (x) x))", (1, 1), "The lambda at c.sexp:1:2 takes 1 argument (x), got 0"),
        ("(let ((count 0)) (set! coutn 1))", (1, 24), "Cannot `set!` 'coutn': it is not bound. Did you mean 'count'?"),
        ("(set! list 1)", (1, 7), "Cannot `set!` 'list': it is a builtin"),
        ("(set! 1 2)", (1, 7), "`set!` takes a name here, found `1`"),
        ("(lambda (if) 1)", (1, 10), "Cannot bind the special form `if`"),
        ("(lambda (a a) 1)", (1, 12), "Parameter 'a' is named twice"),
        ("(lambda x 1)", (1, 9), "`lambda` takes a list of parameter names"),
        ("(define (loop) 1)", (1, 10), "Cannot bind the special form `loop`"),
        ("(define x)", (1, 1), "`define` takes exactly 2 arguments"),
        ("(for x 1)", (1, 6), "`for` takes `(name list)` first"),
        ('(for (x "abc") x)', (1, 9), "`for` goes over a list, got the string 'abc'"),
        ("(map 1 (list 1))", (1, 6), "`map` applies a function"),
        ("(map (lambda (a b) a) (list 1))", (1, 1), "takes 2 arguments (a b), got 1"),
        ("(define (f n) (f n)) (f 1)", None, f"nests more than {MAX_EVAL_DEPTH} levels deep"),
        ("(define (f n) (map f (list n))) (f 1)", None, f"nests more than {MAX_EVAL_DEPTH} levels deep"),
        ("(let ((x 1)) (x 2))", (1, 14), "Cannot call the number 1"),
        ("(lenght (list))", (1, 2), "Did you mean 'length'?"),
    ],
)
def test_control_errors_name_line_and_column(source: str, where: tuple[int, int] | None, fragment: str) -> None:
    """Unbound names (with "did you mean"), loops without a bound and wrong arities are located errors."""
    with pytest.raises(SexpEvalError) as info:
        evaluate(source)
    assert fragment in info.value.message
    assert info.value.location is not None
    if where is not None:
        assert SourceLocation(file="c.sexp", line=where[0], column=where[1]) == info.value.location


def test_runaway_recursion_stops_before_pythons_own_limit() -> None:
    """Deep recursion through every kind of call is a located SexpEvalError, never a RecursionError."""
    for recursion in (
        "(define (f n) (if true (progn (let ((x 1)) (and (or (f n))))))) (f 1)",
        "(define (f n) (+ 1 (f n))) (f 1)",
        "(define (f n) (for (x (list 1)) (loop (max 1) (while true (max 1) (f n))))) (f 1)",
        "(define (f n) (director-evaluator (max-rounds 1) (direct f) (execute f) (evaluate f) (until f))) (f 1)",
    ):
        with pytest.raises(SexpEvalError, match="levels deep"):
            evaluate(recursion)


def test_loops_call_tasks_and_stop_on_the_answer() -> None:
    """A bounded loop retries a task until its answer satisfies a check, with each answer fed back."""
    rec = Recorder("too long answer", "ok")
    system = TaskSystem(model=rec.model)
    source = """
    (defatom shorten (params (text str)) (instructions "Shorten: {{text}}"))
    (let ((text "a long text") (tries 0))
      (loop (max 3)
        (set! tries (+ tries 1))
        (set! text (unwrap (shorten (text text))))
        (if (< (length text) 5) (break (list text tries)))))
    """
    assert ["ok", 2] == evaluate(source, system)
    assert ["Shorten: a long text", "Shorten: too long answer"] == [user_text(m) for m, _ in rec.calls]


def test_the_director_evaluator_idiom_by_hand() -> None:
    """Direct, execute, evaluate, decide, at most N rounds: the loop `director-evaluator` names, with set!/break."""
    rec = Recorder("plan 1", "draft 1", "bad", "plan 2", "draft 2", "good")
    system = TaskSystem(model=rec.model)
    source = """
    (defatom direct (params (feedback str)) (instructions "Plan. Feedback: {{feedback}}"))
    (defatom execute (params (plan str)) (instructions "Write: {{plan}}"))
    (defatom evaluate (params (draft str)) (instructions "Judge: {{draft}}"))
    (let ((feedback "none") (draft nil) (rounds 0))
      (loop (max 3)
        (set! rounds (+ rounds 1))
        (set! draft (unwrap (execute (plan (unwrap (direct (feedback feedback)))))))
        (set! feedback (unwrap (evaluate (draft draft))))
        (if (= feedback "good") (break (list draft rounds)))))
    """
    assert ["draft 2", 2] == evaluate(source, system)
    assert "Plan. Feedback: bad" == user_text(rec.calls[3][0])


# ---------------------------------------------------------------------------------------------
# Fuzzing: generated scripts built from the control forms either evaluate or raise atomtask's
# own, located errors (never a RecursionError, a Python TypeError or a loop that does not end).

CHUNKS = 20
CHUNK = 14
_VOCAB = [
    "(", "(", "(", "(", ")", ")", ")", "loop", "while", "for", "map", "break", "set!", "define", "lambda",
    "(max 2)", "(max 1)", "(x (list 1 2))", "(x)", "(f x)", "(f)", "f", "x", "+", "-", "*", "/", "<", "=",
    "concat", "str", "length", "append", "if", "let", "list", "not", "1", "0", "-2.5", '"s"', "nil", "true",
    "director-evaluator", "(max-rounds 1)", "(direct f)", "(until f)", ";c\n",
]  # fmt: skip


def _script(chunk: bytes) -> str:
    tokens: list[str] = []
    depth = 0
    for byte in chunk:
        token = _VOCAB[byte % len(_VOCAB)]
        if token == ")" and depth == 0:
            continue
        depth += {"(": 1, ")": -1}.get(token, 0)
        tokens.append(token)
    return " ".join(tokens) + " )" * depth


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.binary(min_size=CHUNKS * CHUNK, max_size=CHUNKS * CHUNK))
def test_fuzz_control_forms_raise_only_typed_located_errors(block: bytes) -> None:
    """Generated scripts with loops, functions and assignment end, with a value or a located atomtask error."""
    system = TaskSystem(model="test")
    for i in range(CHUNKS):
        source = _script(block[i * CHUNK : (i + 1) * CHUNK])
        try:
            system.defatom(f"(define (f x) x) (define x 1) {source}", file="fuzz.sexp")
        except (SexpSyntaxError, SexpEvalError) as exc:
            assert exc.location is not None and exc.location.line is not None, source
        except AtomTaskError:
            pass
