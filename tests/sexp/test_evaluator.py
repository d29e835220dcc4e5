"""Evaluating scripts: special forms, builtins, task calls through TaskSystem.execute, errors, fuzzing."""

from __future__ import annotations

from typing import Any

import pytest
from atomtask import (
    AtomTaskError,
    ConfigurationError,
    FailureReason,
    SexpEvalError,
    SexpSyntaxError,
    SexpTaskFailedError,
    SourceLocation,
    TaskResult,
    TaskSystem,
    UsageError,
)
from atomtask.sexp._builtins import TaskFunction, equal
from atomtask.sexp._evaluator import BUILTINS, SPECIAL_FORMS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from tests.helpers import Recorder, user_text

GREET = '(defatom greet (params (who str) (punct str (default "!"))) (instructions "Say hi to {{who}}{{punct}}"))'


def evaluate(source: str, system: TaskSystem | None = None, **variables: Any) -> Any:
    return (system or TaskSystem()).defatom(source, file="s.sexp", variables=variables)


def eval_error(source: str, system: TaskSystem | None = None, **variables: Any) -> SexpEvalError:
    with pytest.raises(SexpEvalError) as info:
        evaluate(source, system, **variables)
    return info.value


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('"text"', "text"),
        ("42", 42),
        ("nil", None),
        ("", None),
        ("1 2 3", 3),
        ('(quote (a (b "c") 1))', ["a", ["b", "c"], 1]),
        ("'sym", "sym"),
        ('(list 1 (list 2) "x")', [1, [2], "x"]),
        ("(if true 1 2)", 1),
        ("(if nil 1 2)", 2),
        ("(if false 1)", None),
        ("(if 0 1 2)", 1),
        ('(if "" 1 2)', 1),
        ("(let ((a 1) (b (list a a))) b)", [1, 1]),
        ("(let ((a 1)) (let ((a 2)) a))", 2),
        ("(progn 1 2)", 2),
        ("(progn)", None),
        ("(and 1 2)", 2),
        ("(and 1 nil 2)", None),
        ("(and)", True),
        ("(or nil false 3)", 3),
        ("(or nil false)", False),
        ("(or)", None),
        ("(not nil)", True),
        ("(not 0)", False),
        ("(eq? 1 1.0)", True),
        ("(eq? 1 true)", False),
        ('(eq? \'(a 1) (list "a" 1))', True),
        ('(eq? "a" "b")', False),
    ],
)
def test_core_forms_evaluate(source: str, expected: Any) -> None:
    """The special forms and builtins give these values (nil and false are the only false values)."""
    assert expected == evaluate(source)


def test_special_forms_short_circuit() -> None:
    """`and`, `or` and `if` do not evaluate the forms they skip (an unbound name would fail)."""
    assert None is evaluate("(and nil unbound)")
    assert 1 == evaluate("(or 1 unbound)")
    assert 1 == evaluate("(if true 1 unbound)")


def test_variables_are_bound_as_names() -> None:
    """`variables=` values are visible as symbols; a let binding shadows them."""
    assert ["Ada", "x"] == evaluate('(list who (let ((who "x")) who))', who="Ada")


def test_equal_does_not_conflate_booleans_and_numbers() -> None:
    """`eq?` keeps Python's `1 == True` out, and compares lists item by item."""
    assert equal([1, "a"], [1.0, "a"])
    assert not equal(True, 1)
    assert not equal([True], [1])


@pytest.mark.parametrize(
    ("source", "where", "fragment"),
    [
        ("(list 1\n  nope)", (2, 3), "Unbound symbol 'nope'"),
        ("(lst 1)", (1, 2), "Did you mean 'list'"),
        ("()", (1, 1), "Cannot evaluate the empty list"),
        ('("a" 1)', (1, 1), "Cannot call the string 'a'"),
        ("(if)", (1, 1), "`if` takes 2 to 3 arguments, got 0"),
        ("(let (a 1) a)", (1, 7), "A `let` binding is `(name value)`"),
        ("(let x 1)", (1, 6), "`let` takes a list of bindings first"),
        ("(let ((if 1)) 1)", (1, 8), "Cannot bind the special form `if`"),
        ("(quote)", (1, 1), "`quote` takes exactly 1 argument"),
        ("(not 1 2)", (1, 1), "`not` takes exactly 1 argument, got 2"),
        ("let", (1, 1), "`let` is a special form"),
        ("(get-field (list 1 2) 5)", (1, 23), "use an index from 0 to 1"),
        ('(get-field "s" "x")', (1, 16), "Cannot read field 'x' of the string 's'"),
        ('(unwrap "s")', (1, 9), "`unwrap` takes a task's or a workflow's result"),
    ],
)
def test_evaluation_errors_name_line_and_column(source: str, where: tuple[int, int], fragment: str) -> None:
    """Run-time mistakes raise SexpEvalError at the offending form, with what to do."""
    error = eval_error(source)
    assert SourceLocation(file="s.sexp", line=where[0], column=where[1]) == error.location
    assert fragment in error.message
    assert str(error).startswith(f"s.sexp:{where[0]}:{where[1]}: ")


def test_eval_errors_are_typed_run_errors() -> None:
    """SexpEvalError is an AtomTaskError but not a UsageError; SexpTaskFailedError is a SexpEvalError."""
    assert issubclass(SexpEvalError, AtomTaskError)
    assert not issubclass(SexpEvalError, UsageError)
    assert issubclass(SexpTaskFailedError, SexpEvalError)


def test_defatom_returns_the_name_and_binds_a_callable() -> None:
    """`defatom` registers the template, returns its name, and binds the name to the task."""
    system = TaskSystem()
    assert ["greet", TaskFunction("greet")] == evaluate(f"(list {GREET} greet)", system)
    assert "greet" in system.templates
    assert "<task greet>" == str(evaluate("greet", system))


def test_task_call_runs_execute_with_named_evaluated_arguments() -> None:
    """`(greet (who expr))` evaluates the argument, runs the task, and gives the TaskResult."""
    rec = Recorder("Hello, Ada!")
    system = TaskSystem(model=rec.model)
    result = evaluate(f'{GREET} (greet (who (if true name "nobody")))', system, name="Ada")
    assert isinstance(result, TaskResult)
    assert "Hello, Ada!" == result.unwrap()
    assert "Say hi to Ada!" == user_text(rec.calls[0][0])


def test_a_scripts_model_and_settings_apply_to_every_task_call() -> None:
    """`defatom(..., model=, model_settings=)`: every task call runs on that model, with those settings on top."""
    rec = Recorder("Hi, Ada!", "Hi, Bo!")
    system = TaskSystem()
    source = (
        '(defatom greet (params who) (instructions "Say hi to {{who}}") (model "test")'
        " (model_settings ((temperature 0.7) (max_tokens 20))))"
        ' (list (greet (who "Ada")) (greet (who "Bo")))'
    )
    results = system.defatom(source, model=rec.model, model_settings={"temperature": 0})
    assert ["Hi, Ada!", "Hi, Bo!"] == [r.unwrap() for r in results]
    assert ["call", "call"] == [r.notes.model_source for r in results]
    received = [info.model_settings or {} for _, info in rec.calls]
    assert [(0.0, 20), (0.0, 20)] == [(s["temperature"], s["max_tokens"]) for s in received]


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"model_settings": {"temprature": 0}}, "Did you mean 'temperature'?"),
        ({"model": "opanai:gpt-4o"}, "Unknown provider 'opanai'"),
    ],
)
def test_a_bad_script_model_or_setting_raises_before_evaluating(options: dict[str, Any], fragment: str) -> None:
    """A bad `model=` or `model_settings=` is a ConfigurationError before any form runs (nothing is defined)."""
    system = TaskSystem()
    with pytest.raises(ConfigurationError) as info:
        system.defatom(GREET, **options)
    assert fragment in info.value.message
    assert "greet" not in system.templates


def test_yaml_and_python_templates_can_be_called_by_name(templates_dir: Any) -> None:
    """Any registered template is callable, not only those defined in the same script."""
    rec = Recorder({"name": "Ada", "email": None, "phone": None, "company": None})
    system = TaskSystem(model=rec.model, templates=templates_dir)
    name = evaluate('(get-field (extract_contact (text "Ada")) "parsedContent" "name")', system)
    assert "Ada" == name


def test_placeholders_inside_argument_values_are_data() -> None:
    """Braces in an argument value reach the model verbatim; they are never rendered again."""
    rec = Recorder("ok")
    system = TaskSystem(model=rec.model)
    evaluate(f'{GREET} (greet (who "{{{{punct}}}} and {{{{who}}}}"))', system)
    assert "Say hi to {{punct}} and {{who}}!" == user_text(rec.calls[0][0])


@pytest.mark.parametrize(
    ("call", "inputs"),
    [("(greet)", {}), ('(greet (who "a") (whom "b"))', {"who": "a", "whom": "b"}), ("(greet (who 3))", {"who": 3})],
)
def test_bad_arguments_give_the_same_failure_as_python(call: str, inputs: dict[str, Any]) -> None:
    """Missing, unknown or mistyped arguments give the same input_validation_failure as `execute`."""
    system = TaskSystem()
    from_sexp = evaluate(f"{GREET} {call}", system)
    from_python = system.execute("greet", inputs)
    assert FailureReason.INPUT_VALIDATION_FAILURE == from_sexp.error.reason
    assert from_python.error == from_sexp.error


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        ('(greet "Ada")', "Arguments to task 'greet' are named"),
        ('(greet (who "a" "b"))', "Arguments to task 'greet' are named"),
        ('(greet (who "a") (who "b"))', "Argument 'who' is given twice"),
    ],
)
def test_malformed_task_arguments_are_errors(call: str, fragment: str) -> None:
    """Arguments are `(name expr)` pairs, each name once."""
    assert fragment in eval_error(f"{GREET} {call}").message


class Contact(BaseModel):
    name: str
    email: str | None = None


def contact_system(*replies: Any) -> TaskSystem:
    system = TaskSystem(model=Recorder(*replies).model)
    system.models.register(Contact)
    evaluate('(defatom find (params text) (instructions "{{text}}") (output_format (schema Contact)))', system)
    return system


def test_get_field_walks_results_models_and_lists() -> None:
    """`get-field` reads a result's fields, then the model's, then list items by index."""
    system = contact_system({"name": "Ada", "email": "ada@x.org"})
    value = evaluate(
        '(let ((r (find (text "t")))) (list (get-field r "status") (get-field r "parsedContent" "email") '
        "(get-field (list 10 20) -1)))",
        system,
    )
    assert ["COMPLETE", "ada@x.org", 20] == value


def test_a_missing_field_names_the_available_ones() -> None:
    """A field that does not exist is an error listing the fields, with "did you mean"."""
    system = contact_system({"name": "Ada", "email": None})
    error = eval_error('(get-field (find (text "t")) "parsedContent" "emial")', system)
    assert "No field 'emial' in Contact (at parsedContent). Did you mean 'email'? Available fields: name, email." == (
        error.message
    )
    assert SourceLocation(file="s.sexp", line=1, column=46) == error.location


def test_unwrap_gives_the_instance_or_stops_the_script_with_the_result() -> None:
    """`unwrap` returns the validated instance; on a FAILED result it raises with the result attached."""
    system = contact_system({"name": "Ada", "email": None})
    assert Contact(name="Ada") == evaluate('(unwrap (find (text "t")))', system)
    with pytest.raises(SexpTaskFailedError) as info:
        evaluate("(progn\n  (unwrap (find)))", system)
    assert FailureReason.INPUT_VALIDATION_FAILURE == info.value.result.error.reason
    assert SourceLocation(file="s.sexp", line=2, column=3) == info.value.location
    assert "Task 'find' failed (input_validation_failure: " in info.value.message


def test_reading_parsed_content_of_a_failed_result_is_an_error() -> None:
    """A FAILED result's missing answer is not a silent nil: get-field stops with the failure."""
    system = contact_system({"wrong": 1}, {"wrong": 2})
    with pytest.raises(SexpTaskFailedError) as info:
        evaluate('(get-field (find (text "t")) "parsedContent" "name")', system)
    assert FailureReason.OUTPUT_VALIDATION_FAILURE == info.value.result.error.reason
    assert 2 == len(info.value.result.notes.attempts)  # the raw answers survive


def test_status_can_be_checked_before_reading() -> None:
    """Branching on the status lets a script handle a failure itself."""
    system = contact_system()
    assert "failed" == evaluate('(let ((r (find))) (if (eq? (get-field r "status") "FAILED") "failed" r))', system)


@pytest.mark.parametrize("name", [n for n in (*SPECIAL_FORMS, *BUILTINS) if n[0].isalpha() and n[-1].isalpha()])
def test_task_names_cannot_shadow_the_language(name: str) -> None:
    """A task named like a special form or builtin (a valid template name) could not be called, so it is refused."""
    with pytest.raises(UsageError, match="of the language"):
        evaluate(f'(defatom {name} (instructions "x"))')


# ---------------------------------------------------------------------------------------------
# Fuzzing. Hypothesis spends most of its time per example, so each example draws one block of
# bytes and cuts it into CHUNKS scripts: 200 examples x 20 = 4,000 scripts per run (with the
# reader's 6,000 texts, 10,000 generated inputs).

CHUNKS = 20
CHUNK = 12
_VOCAB = [
    "(", "(", "(", "(", ")", ")", ")", "'x", "'(a 1)", "if", "let", "progn", "and", "or", "quote", "not", "eq?",
    "list", "get-field", "unwrap", "defatom", "defschema", "params", "instructions", "output_format", "schema",
    "default", "str", "int?", "x", "r", "ok", "t", "n", "flag", '"s"', '"{{x}}"', '"parsedContent"', '"status"',
    "1", "-2.5", "nil", "true", "(x 1)", "(a str)", "(n 1)", '(instructions "{{x}}")', ";c\n",
]  # fmt: skip


def _script(chunk: bytes) -> str:
    """Tokens from the vocabulary, parentheses balanced, so that most scripts reach the evaluator."""
    tokens: list[str] = []
    depth = 0
    for byte in chunk:
        token = _VOCAB[byte % len(_VOCAB)]
        if token == ")" and depth == 0:
            continue
        depth += {"(": 1, ")": -1}.get(token, 0)
        tokens.append(token)
    return " ".join(tokens) + " )" * depth


def _fuzz_system() -> TaskSystem:
    system = TaskSystem(model=Recorder(*["answer"] * CHUNKS).model)
    system.defatom('(defatom t (params (n int) (flag bool)) (instructions "{{n}} {{flag}}"))')
    return system


_OK_RESULT = _fuzz_system().defatom("(t (n 1) (flag true))")


@settings(max_examples=200, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.binary(min_size=CHUNKS * CHUNK, max_size=CHUNKS * CHUNK))
def test_fuzz_evaluator_raises_only_typed_located_errors(block: bytes) -> None:
    """Generated scripts either evaluate or raise one of atomtask's own errors, located when it is ours."""
    system = _fuzz_system()
    for i in range(CHUNKS):
        source = _script(block[i * CHUNK : (i + 1) * CHUNK])
        try:
            system.defatom(source, file="fuzz.sexp", variables={"x": "{{x}}", "r": _OK_RESULT, "ok": True})
        except (SexpSyntaxError, SexpEvalError) as exc:
            assert exc.location is not None and exc.location.line is not None, source
        except AtomTaskError:
            pass
