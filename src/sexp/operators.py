"""Arithmetic, comparison and text builtins: `+ - * /`, `< <= > >= =`, `concat`, `str`, `length`, `append`.

    (+ 1 2 3)  ; 6          (- 10 4)  ; 6          (- 3)  ; -3
    (* 2 3)    ; 6          (/ 7 2)   ; 3.5        (/ 6 3)  ; 2 (whole numbers stay whole when exact)
    (< 1 2 3)  ; true: each argument below the next (numbers with numbers, text with text)
    (= a b)    ; equality without Python's `1 == true`, lists item by item
    (concat "Round " 2 ": " feedback)  ; text: strings as they are, other values as `str` writes them
    (str 2.5)  ; "2.5"      (str nil)  ; "nil"      (str (list 1 "a"))  ; "[1, \"a\"]" (JSON)
    (length "abc") ; 3      (append (list 1) 2 3)  ; a new list (1 2 3)

Numbers are integers and floats; booleans are not numbers here, and text is joined with `concat`,
never with `+`. A mistake names the argument at fault, with its line and column.
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Callable
from typing import Any

from atomtask.sexp.errors import SexpEvalError
from atomtask.sexp.forms import literal_text
from atomtask.sexp.functions import arity, equal, value_name
from atomtask.sexp.reader import SList
from atomtask.sexp.values import Builtin, Closure, TaskFunction
from pydantic import BaseModel

__all__ = ["OPERATORS", "text_of"]

Number = int | float


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _numbers(args: list[Any], form: SList) -> list[Number]:
    for index, value in enumerate(args):
        if not _is_number(value):
            hint = " Join text with `(concat ...)`." if isinstance(value, str) and form.head == "+" else ""
            raise SexpEvalError(
                f"`{form.head}` works on numbers; argument {index + 1} is {value_name(value)}.{hint}",
                location=form.items[index + 1].location,
            )
    return args


def _add(args: list[Any], form: SList) -> Number:
    return sum(_numbers(args, form))


def _subtract(args: list[Any], form: SList) -> Number:
    arity(form, 1, None, shape="(- x) or (- x y...)")
    numbers = _numbers(args, form)
    if len(numbers) == 1:
        return -numbers[0]
    return functools.reduce(operator.sub, numbers)


def _multiply(args: list[Any], form: SList) -> Number:
    return functools.reduce(operator.mul, _numbers(args, form), 1)


def _divide(args: list[Any], form: SList) -> Number:
    arity(form, 2, None, shape="(/ x y...)")
    numbers = _numbers(args, form)
    result = numbers[0]
    for index, divisor in enumerate(numbers[1:], start=2):
        if divisor == 0:
            raise SexpEvalError(f"`/` divides by zero (argument {index}).", location=form.items[index].location)
        exact = isinstance(result, int) and isinstance(divisor, int) and result % divisor == 0
        result = result // divisor if exact else result / divisor
    return result


def _comparison(name: str, compare: Callable[[Any, Any], bool]) -> Builtin:
    def check(args: list[Any], form: SList) -> bool:
        arity(form, 2, None, shape=f"({name} a b...)")
        kinds = [str if isinstance(v, str) else float if _is_number(v) else None for v in args]
        for index, (value, kind) in enumerate(zip(args, kinds, strict=True)):
            if kind is None or kind is not kinds[0]:
                raise SexpEvalError(
                    f"`{name}` compares numbers with numbers or text with text; argument {index + 1} is "
                    f"{value_name(value)}{'' if kind is None else f' and argument 1 is {value_name(args[0])}'}.",
                    location=form.items[index + 1].location,
                )
        return all(compare(a, b) for a, b in itertools.pairwise(args))

    return Builtin(name, check)


def _equal(args: list[Any], form: SList) -> bool:
    arity(form, 2, None, shape="(= a b...)")
    return all(equal(a, b) for a, b in itertools.pairwise(args))


def text_of(value: Any) -> str:
    """A value as text: strings as they are, literals as written (`nil`, `true`, `2.5`), data as JSON."""
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, bool | int | float):
        return literal_text(value)
    if isinstance(value, TaskFunction | Builtin | Closure):
        return str(value)
    import pydantic_core

    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return pydantic_core.to_json(value, fallback=str).decode()


def _concat(args: list[Any], form: SList) -> str:
    return "".join(text_of(value) for value in args)


def _str(args: list[Any], form: SList) -> str:
    arity(form, 1, 1)
    return text_of(args[0])


def _length(args: list[Any], form: SList) -> int:
    arity(form, 1, 1)
    value = args[0]
    if not isinstance(value, str | list | dict):
        raise SexpEvalError(
            f"`length` counts the items of a list, the characters of a string or the keys of a mapping; got "
            f"{value_name(value)}.",
            location=form.items[1].location,
        )
    return len(value)


def _append(args: list[Any], form: SList) -> list[Any]:
    arity(form, 1, None, shape="(append list item...)")
    if not isinstance(args[0], list):
        raise SexpEvalError(
            f"`append` adds items to a list, like `(append (list 1) 2)`; its first argument is {value_name(args[0])}.",
            location=form.items[1].location,
        )
    return [*args[0], *args[1:]]  # a new list: values are never changed in place


#: The arithmetic, comparison and text builtins.
OPERATORS: dict[str, Builtin] = {
    builtin.name: builtin
    for builtin in (
        Builtin("+", _add),
        Builtin("-", _subtract),
        Builtin("*", _multiply),
        Builtin("/", _divide),
        _comparison("<", operator.lt),
        _comparison("<=", operator.le),
        _comparison(">", operator.gt),
        _comparison(">=", operator.ge),
        Builtin("=", _equal),
        Builtin("concat", _concat),
        Builtin("str", _str),
        Builtin("length", _length),
        Builtin("append", _append),
    )
}
