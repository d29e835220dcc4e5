"""The values scripts compute with, and the builtin functions every script can call (`BUILTINS`, `OPERATORS`).

Values that are not data: `TaskFunction` (what `defatom` binds and a template's name evaluates to),
`WorkflowFunction` (what a registered workflow's name evaluates to), `Builtin` (a function of the
language), `Closure` (what `lambda` makes) and `Environment`, the chain of frames that `let` and each
function call open.

    (list x...)  (not x)  (eq? a b)  (get-field value key...)  (unwrap result)
    (+ 1 2 3)  ; 6          (- 10 4)  ; 6          (- 3)  ; -3
    (* 2 3)    ; 6          (/ 7 2)   ; 3.5        (/ 6 3)  ; 2 (whole numbers stay whole when exact)
    (< 1 2 3)  ; true: each argument below the next (numbers with numbers, text with text)
    (= a b)    ; equality without Python's `1 == true`, lists item by item
    (concat "Round " 2 ": " feedback)  ; text: strings as they are, other values as `str` writes them
    (str 2.5)  ; "2.5"      (str nil)  ; "nil"      (str (list 1 "a"))  ; "[1, "a"]" (JSON)
    (length "abc") ; 3      (append (list 1) 2 3)  ; a new list (1 2 3)

`unwrap` gives a task's answer or a workflow's final state. Truthiness (`nil` and `false` are false),
equality without `1 == True`, the arity check of a form and how a value is named in error messages are
shared with the interpreter. Numbers are integers and floats; booleans are not numbers here, and text is
joined with `concat`, never with `+`. A mistake names the argument at fault, with its line and column.
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Callable, Mapping
from typing import Any

import attrs
from atomtask.errors import SexpEvalError, SexpTaskFailedError, SexpWorkflowFailedError, SourceLocation, did_you_mean
from atomtask.sexp._forms import literal_text
from atomtask.sexp._reader import Node, SList
from atomtask.system._results import TaskResult, WorkflowResult
from pydantic import BaseModel

__all__ = [
    "BUILTINS",
    "MISSING",
    "OPERATORS",
    "Builtin",
    "Closure",
    "Environment",
    "TaskFunction",
    "WorkflowFunction",
    "arity",
    "equal",
    "text_of",
    "truthy",
    "value_name",
]


@attrs.frozen
class TaskFunction:
    """The value `defatom` binds: calling it runs the task of that name."""

    name: str

    def __str__(self) -> str:
        return f"<task {self.name}>"


@attrs.frozen
class WorkflowFunction:
    """What a registered workflow's name evaluates to: calling it runs the workflow of that name."""

    name: str

    def __str__(self) -> str:
        return f"<workflow {self.name}>"


@attrs.frozen
class Builtin:
    """A function of the language; its arguments are evaluated, in order."""

    name: str
    fn: Callable[[list[Any], SList], Any] = attrs.field(repr=False)

    def __str__(self) -> str:
        return f"<builtin {self.name}>"


@attrs.frozen(eq=False)
class Closure:
    """A function made by `(lambda (param...) body...)`: its body runs in a frame over the one it was made in."""

    params: tuple[str, ...]
    body: tuple[Node, ...] = attrs.field(repr=False)
    env: Environment = attrs.field(repr=False)
    location: SourceLocation
    #: The name it was first bound to (`define`, `let`), for messages.
    name: str | None = None

    def __str__(self) -> str:
        return f"<function {self.name}>" if self.name else f"<lambda at {self.location}>"

    def signature(self) -> str:
        """How a printed value shows it: `<function square (n)>`, or `<function (y)>` for a lambda."""
        name = f" {self.name}" if self.name else ""
        return f"<function{name} ({' '.join(self.params)})>"

    def label(self) -> str:
        """How messages name it: `function 'f'` or `lambda at file:line:col`."""
        return f"function {self.name!r}" if self.name else f"lambda at {self.location}"


MISSING = object()


class Environment:
    """Names bound to values, in a chain of frames (each `let` opens one)."""

    def __init__(self, bindings: Mapping[str, Any] | None = None, parent: Environment | None = None) -> None:
        self._values: dict[str, Any] = dict(bindings or {})
        self._parent = parent

    def lookup(self, name: str) -> Any:
        """The value bound to `name` here or in an enclosing frame, else a private sentinel."""
        env: Environment | None = self
        while env is not None:
            if name in env._values:
                return env._values[name]
            env = env._parent
        return MISSING

    def define(self, name: str, value: Any) -> None:
        """Bind `name` in this frame."""
        self._values[name] = value

    def frame_of(self, name: str) -> Environment | None:
        """The nearest frame that binds `name` (this one or an enclosing one), else None."""
        env: Environment | None = self
        while env is not None:
            if name in env._values:
                return env
            env = env._parent
        return None

    @property
    def is_root(self) -> bool:
        """True for the outermost frame (the builtins)."""
        return self._parent is None

    def names(self) -> set[str]:
        """Every name visible from this frame."""
        env: Environment | None = self
        found: set[str] = set()
        while env is not None:
            found.update(env._values)
            env = env._parent
        return found


def truthy(value: Any) -> bool:
    """`nil` and `false` are false; every other value (0 and "" included) is true."""
    return value is not None and value is not False


def arity(form: SList, low: int, high: int | None, *, shape: str | None = None) -> None:
    """Raise `SexpEvalError` at `form` unless it has between `low` and `high` (None: no limit) arguments."""
    count = len(form.items) - 1
    if count >= low and (high is None or count <= high):
        return
    name = form.head or "?"
    if high is None:
        wanted = f"at least {low}"
    elif low == high:
        wanted = f"exactly {low}"
    else:
        wanted = f"{low} to {high}"
    usage = f" Usage: `{shape}`." if shape else ""
    raise SexpEvalError(
        f"`{name}` takes {wanted} argument{'s' if high != 1 else ''}, got {count}.{usage}", location=form.location
    )


def _list(args: list[Any], form: SList) -> list[Any]:
    return args


def _not(args: list[Any], form: SList) -> bool:
    arity(form, 1, 1)
    return not truthy(args[0])


def _eq(args: list[Any], form: SList) -> bool:
    arity(form, 2, 2)
    return equal(args[0], args[1])


def equal(a: Any, b: Any) -> bool:
    """Equality without Python's `1 == True`: booleans equal only booleans, lists compare item by item."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return str(a) == str(b)  # a StrEnum (a result's status) equals its text
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def _get_field(args: list[Any], form: SList) -> Any:
    arity(form, 2, None, shape='(get-field value "field" ...)')
    value = args[0]
    path: list[str] = []
    for key, node in zip(args[1:], form.items[2:], strict=True):
        value = _field(value, key, path, node)
        path.append(str(key))
    return value


def _field(value: Any, key: Any, path: list[str], node: Node) -> Any:
    where = f" (at {'.'.join(path)})" if path else ""
    if isinstance(value, BaseModel):
        fields = list(type(value).model_fields)
        if isinstance(value, TaskResult) and key == "parsedContent" and not value.ok:
            # A FAILED result's missing answer is an error, not a silent nil.
            raise SexpTaskFailedError(
                f"Task {value.notes.template!r} failed ({_failure(value)}), so its result has no "
                '`parsedContent`. Check `(get-field r "status")` first, or let `(unwrap r)` stop the script.',
                result=value,
                location=node.location,
            )
        if isinstance(key, str) and key in fields:
            return getattr(value, key)
        available = fields
        owner = (
            "TaskResult"
            if isinstance(value, TaskResult)
            else "WorkflowResult"
            if isinstance(value, WorkflowResult)
            else type(value).__name__
        )
    elif isinstance(value, dict):
        if isinstance(key, str | int) and not isinstance(key, bool) and key in value:
            return value[key]
        available = [str(k) for k in value]
        owner = "the mapping"
    elif isinstance(value, list):
        if isinstance(key, int) and not isinstance(key, bool) and -len(value) <= key < len(value):
            return value[key]
        raise SexpEvalError(
            f"Cannot read {_key_text(key)} of a list of {len(value)} item{'s' if len(value) != 1 else ''}{where}; "
            f"use an index from 0 to {len(value) - 1}."
            if value
            else f"Cannot read {_key_text(key)} of an empty list{where}.",
            location=node.location,
        )
    else:
        raise SexpEvalError(
            f"Cannot read field {_key_text(key)} of {value_name(value)}{where}: it has no fields.",
            location=node.location,
        )
    hint = did_you_mean(key, available) if isinstance(key, str) else ""
    raise SexpEvalError(
        f"No field {_key_text(key)} in {owner}{where}.{hint} Available fields: {', '.join(available) or 'none'}.",
        location=node.location,
    )


def _failure(result: TaskResult[Any]) -> str:
    error = result.error
    return f"{error.reason.value}: {error.message}" if error is not None else "no error recorded"


def _key_text(key: Any) -> str:
    return repr(key) if isinstance(key, str) else literal_text(key) if _is_literal(key) else value_name(key)


def _unwrap(args: list[Any], form: SList) -> Any:
    arity(form, 1, 1)
    result = args[0]
    if isinstance(result, WorkflowResult):
        if result.ok:
            return result.state
        raise SexpWorkflowFailedError(_workflow_failure(result), result=result, location=form.location)
    if not isinstance(result, TaskResult):
        raise SexpEvalError(
            f"`unwrap` takes a task's or a workflow's result, got {value_name(result)}.",
            location=form.items[1].location,
        )
    if result.ok:
        return result.parsedContent
    raise SexpTaskFailedError(
        f"Task {result.notes.template!r} failed ({_failure(result)}).", result=result, location=form.location
    )


def _workflow_failure(result: WorkflowResult[Any]) -> str:
    error = result.error
    at = f" at step {error.step!r}" if error is not None and error.step else ""
    detail = f"{error.reason.value}: {error.message}" if error is not None else "no error recorded"
    return f"Workflow {result.workflow!r} failed{at} ({detail})."


def _is_literal(value: Any) -> bool:
    return value is None or isinstance(value, bool | int | float | str)


def value_name(value: Any) -> str:
    """What a value is, for messages."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return f"the boolean {literal_text(value)}"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value[:30]!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, TaskResult):
        return f"a {value.status.value} TaskResult"
    if isinstance(value, WorkflowResult):
        return f"a {value.status.value} WorkflowResult"
    if isinstance(value, TaskFunction | WorkflowFunction | Builtin):
        return str(value)
    return f"a {type(value).__name__}"


#: The functions every script can call.
BUILTINS: dict[str, Builtin] = {
    builtin.name: builtin
    for builtin in (
        Builtin("list", _list),
        Builtin("not", _not),
        Builtin("eq?", _eq),
        Builtin("get-field", _get_field),
        Builtin("unwrap", _unwrap),
    )
}


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
