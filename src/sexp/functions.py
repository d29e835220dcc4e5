"""The builtin functions every script can call (`BUILTINS`), and the value rules they share.

`(list x...)`, `(not x)`, `(eq? a b)`, `(get-field value key...)` and `(unwrap result)` (a task's
`TaskResult` gives its answer, a workflow's `WorkflowResult` its final state), with what
the interpreter uses too: truthiness (`nil` and `false` are false), equality without `1 == True`,
the arity check of a form, and how a value is named in error messages.
"""

from __future__ import annotations

from typing import Any

from atomtask.sexp.errors import SexpEvalError, SexpTaskFailedError, SexpWorkflowFailedError
from atomtask.sexp.forms import literal_text
from atomtask.sexp.reader import Node, SList
from atomtask.sexp.values import Builtin, TaskFunction, WorkflowFunction
from atomtask.system.errors import did_you_mean
from atomtask.system.results import TaskResult
from atomtask.system.workflow_results import WorkflowResult
from pydantic import BaseModel

__all__ = ["BUILTINS", "arity", "equal", "truthy", "value_name"]


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
