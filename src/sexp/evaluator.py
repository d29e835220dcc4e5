"""Evaluating S-expression scripts against a `TaskSystem` (any `ScriptHost`).

The language is small on purpose:

- literals: strings, numbers, `true`, `false`, `nil`; `nil` and `false` are false, everything else true;
- special forms: `(quote x)` / `'x` (data: symbols read as strings, lists as lists), `(if c then [else])`,
  `(let ((name expr) ...) body...)` (bindings in order, each sees the previous), `(progn form...)`,
  `(and form...)`, `(or form...)` (short-circuit, value of the last form evaluated),
  `(defatom name clause...)`, `(defschema Name field...)`;
- builtins: `(list x...)`, `(not x)`, `(eq? a b)`, `(get-field value key...)`, `(unwrap result)`;
- task calls with named, evaluated arguments: `(extract_contact (text "...") (locale "fr"))` runs
  `TaskSystem.execute` and gives its `TaskResult`. A name bound by `defatom`, or any template the
  system has registered (from YAML or Python too), can be called.

There are no user-defined functions, so evaluation depth is bounded by the reader's nesting limit.
Every error is a `SexpEvalError` (or a registration `UsageError`) naming the line and column.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import attrs
from atomtask.loading.declarations import Declarations
from atomtask.loading.template_registry import TemplateRegistry
from atomtask.sexp.defatom import datum, describe, literal_text, schema_from_form, template_from_form
from atomtask.sexp.errors import SexpEvalError, SexpTaskFailedError
from atomtask.sexp.reader import Literal, Node, SList, Symbol, read
from atomtask.system.errors import TemplateError, did_you_mean
from atomtask.system.results import TaskResult
from atomtask.system.templates import Template
from pydantic import BaseModel

__all__ = ["BUILTINS", "SPECIAL_FORMS", "Environment", "Interpreter", "ScriptHost", "TaskFunction"]


class ScriptHost(Protocol):
    """What a script runs against: a `TaskSystem`, seen through the three things scripts use.

    The S-expression front end sits below the facade (`TaskSystem.defatom` evaluates scripts), so it
    names the facade by this protocol instead of importing it.
    """

    templates: TemplateRegistry

    def execute(self, name_or_request: str, inputs: Mapping[str, Any] | None = None) -> TaskResult[Any]: ...

    def register_declarations(self, declarations: Declarations) -> list[str]: ...


@attrs.frozen
class TaskFunction:
    """The value `defatom` binds: calling it runs the task of that name."""

    name: str

    def __str__(self) -> str:
        return f"<task {self.name}>"


@attrs.frozen
class Builtin:
    """A function of the language; its arguments are evaluated, in order."""

    name: str
    fn: Callable[[list[Any], SList], Any] = attrs.field(repr=False)

    def __str__(self) -> str:
        return f"<builtin {self.name}>"


_MISSING = object()


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
        return _MISSING

    def define(self, name: str, value: Any) -> None:
        """Bind `name` in this frame."""
        self._values[name] = value

    def names(self) -> set[str]:
        """Every name visible from this frame."""
        env: Environment | None = self
        found: set[str] = set()
        while env is not None:
            found.update(env._values)
            env = env._parent
        return found


class Interpreter:
    """Evaluates source text against one `TaskSystem`; keeps the names of the templates it defined.

    Example:
        ```python
        interpreter = Interpreter(system)
        value = interpreter.evaluate('(defatom greet (params who) (instructions "Hi {{who}}"))')
        ```
    """

    def __init__(self, system: ScriptHost) -> None:
        self.system = system
        self.defined: list[str] = []
        self._special: dict[str, Callable[[SList, Environment], Any]] = {
            "quote": self._quote,
            "if": self._if,
            "let": self._let,
            "progn": self._progn,
            "and": self._and,
            "or": self._or,
            "defatom": self._defatom,
            "defschema": self._defschema,
        }

    def evaluate(self, source: str, *, file: str = "<string>", variables: Mapping[str, Any] | None = None) -> Any:
        """Read and evaluate every form of `source`; returns the last value (`None` for no forms)."""
        forms = read(source, file)
        env = Environment(variables, parent=Environment(BUILTINS))
        value: Any = None
        for form in forms:
            value = self.eval(form, env)
        return value

    def eval(self, node: Node, env: Environment) -> Any:
        """The value of one form."""
        if isinstance(node, Literal):
            return node.value
        if isinstance(node, Symbol):
            return self._lookup(node, env)
        if not node.items:
            raise SexpEvalError("Cannot evaluate the empty list `()`; write `nil` or `(list)`.", location=node.location)
        head = node.items[0]
        if isinstance(head, Symbol) and head.name in self._special:
            return self._special[head.name](node, env)
        callee = self.eval(head, env)
        if isinstance(callee, Builtin):
            return callee.fn([self.eval(arg, env) for arg in node.items[1:]], node)
        if isinstance(callee, TaskFunction):
            return self._call_task(callee, node, env)
        raise SexpEvalError(
            f"Cannot call {_value_name(callee)} ({describe(head)}): only tasks and builtins can be called. "
            "Quote the list to make data: `'(a b)` or `(list a b)`.",
            location=node.location,
        )

    def _lookup(self, node: Symbol, env: Environment) -> Any:
        value = env.lookup(node.name)
        if value is not _MISSING:
            return value
        if node.name in self.system.templates:
            return TaskFunction(node.name)
        if node.name in self._special:
            raise SexpEvalError(
                f"`{node.name}` is a special form; use it at the head of a list: `({node.name} ...)`.",
                location=node.location,
            )
        known = env.names() | set(self.system.templates.names())
        raise SexpEvalError(
            f"Unbound symbol {node.name!r}.{did_you_mean(node.name, known)} Bind it with `let`, pass it as an "
            f'input (`-i {node.name}=...` or `variables=`), define a task with `defatom`, or write "{node.name}" '
            "for a string.",
            location=node.location,
        )

    # -- task calls ------------------------------------------------------------------------------

    def _call_task(self, task: TaskFunction, form: SList, env: Environment) -> TaskResult[Any]:
        inputs: dict[str, Any] = {}
        for arg in form.items[1:]:
            if not (isinstance(arg, SList) and len(arg.items) == 2 and isinstance(arg.items[0], Symbol)):
                raise SexpEvalError(
                    f"Arguments to task {task.name!r} are named: `({task.name} (param value) ...)`; found "
                    f"{describe(arg)}.",
                    location=arg.location,
                )
            name = arg.items[0].name
            if name in inputs:
                raise SexpEvalError(f"Argument {name!r} is given twice to task {task.name!r}.", location=arg.location)
            inputs[name] = self.eval(arg.items[1], env)
        return self.system.execute(task.name, inputs)

    # -- special forms ---------------------------------------------------------------------------

    def _quote(self, form: SList, env: Environment) -> Any:
        _arity(form, 1, 1)
        return datum(form.items[1])

    def _if(self, form: SList, env: Environment) -> Any:
        _arity(form, 2, 3, shape="(if condition then [else])")
        if truthy(self.eval(form.items[1], env)):
            return self.eval(form.items[2], env)
        return self.eval(form.items[3], env) if len(form.items) == 4 else None

    def _let(self, form: SList, env: Environment) -> Any:
        _arity(form, 2, None, shape="(let ((name value) ...) body...)")
        bindings = form.items[1]
        if not isinstance(bindings, SList):
            raise SexpEvalError(
                "`let` takes a list of bindings first, `(let ((name value) ...) body...)`; "
                f"found {describe(bindings)}.",
                location=bindings.location,
            )
        frame = Environment(parent=env)
        for binding in bindings.items:
            if not (isinstance(binding, SList) and len(binding.items) == 2 and isinstance(binding.items[0], Symbol)):
                raise SexpEvalError(
                    f"A `let` binding is `(name value)`; found {describe(binding)}.", location=binding.location
                )
            name = binding.items[0]
            if name.name in self._special:
                raise SexpEvalError(f"Cannot bind the special form `{name.name}`.", location=name.location)
            frame.define(name.name, self.eval(binding.items[1], frame))
        return self._body(form.items[2:], frame)

    def _progn(self, form: SList, env: Environment) -> Any:
        return self._body(form.items[1:], env)

    def _body(self, forms: Sequence[Node], env: Environment) -> Any:
        value: Any = None
        for node in forms:
            value = self.eval(node, env)
        return value

    def _and(self, form: SList, env: Environment) -> Any:
        value: Any = True
        for node in form.items[1:]:
            value = self.eval(node, env)
            if not truthy(value):
                return value
        return value

    def _or(self, form: SList, env: Environment) -> Any:
        value: Any = None
        for node in form.items[1:]:
            value = self.eval(node, env)
            if truthy(value):
                return value
        return value

    def _defatom(self, form: SList, env: Environment) -> str:
        template = declared_template(form)
        self.system.templates.register(template)
        env.define(template.name, TaskFunction(template.name))
        if template.name not in self.defined:
            self.defined.append(template.name)
        return template.name

    def _defschema(self, form: SList, env: Environment) -> str:
        schema = schema_from_form(form)
        self.system.register_declarations(Declarations(schemas=[schema]))
        return schema.name


def declared_template(form: SList) -> Template:
    """The template a `defatom` form declares; a name the language reserves is refused."""
    template = template_from_form(form)
    if template.name in SPECIAL_FORMS or template.name in BUILTINS:
        kind = "special form" if template.name in SPECIAL_FORMS else "builtin"
        raise TemplateError(
            f"Task name {template.name!r} is a {kind} of the language and could not be called; choose another name.",
            location=form.items[1].location,
        )
    return template


# ---------------------------------------------------------------------------------------------
# Builtins


def truthy(value: Any) -> bool:
    """`nil` and `false` are false; every other value (0 and "" included) is true."""
    return value is not None and value is not False


def _arity(form: SList, low: int, high: int | None, *, shape: str | None = None) -> None:
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
    _arity(form, 1, 1)
    return not truthy(args[0])


def _eq(args: list[Any], form: SList) -> bool:
    _arity(form, 2, 2)
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
    _arity(form, 2, None, shape='(get-field value "field" ...)')
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
        owner = "TaskResult" if isinstance(value, TaskResult) else type(value).__name__
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
            f"Cannot read field {_key_text(key)} of {_value_name(value)}{where}: it has no fields.",
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
    return repr(key) if isinstance(key, str) else literal_text(key) if _is_literal(key) else _value_name(key)


def _unwrap(args: list[Any], form: SList) -> Any:
    _arity(form, 1, 1)
    result = args[0]
    if not isinstance(result, TaskResult):
        raise SexpEvalError(
            f"`unwrap` takes a task's result, got {_value_name(result)}.", location=form.items[1].location
        )
    if result.ok:
        return result.parsedContent
    raise SexpTaskFailedError(
        f"Task {result.notes.template!r} failed ({_failure(result)}).", result=result, location=form.location
    )


def _is_literal(value: Any) -> bool:
    return value is None or isinstance(value, bool | int | float | str)


def _value_name(value: Any) -> str:
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
    if isinstance(value, TaskFunction | Builtin):
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

#: The special forms (their arguments are not evaluated first).
SPECIAL_FORMS: tuple[str, ...] = ("quote", "if", "let", "progn", "and", "or", "defatom", "defschema")
