"""The control forms of scripts: functions, assignment, bounded loops and iteration over lists.

    (define name value)              (define (name param...) body...)
    (lambda (param...) body...)      ; a closure: it sees the names bound where it was made
    (set! name value)                ; change the nearest binding of `name`
    (loop (max N) body...)           ; repeat the body, at most N times, until `(break value)`
    (while condition (max N) body...); repeat while `condition` holds, at most N times
    (for (name list) body...)        ; the body once per element; the list of its values
    (map function list)              ; the function applied to each element; the list of its values
    (break [value])                  ; leave the innermost loop; `value` is the loop's value

Every loop has a bound: `loop` and `while` without `(max N)` are refused, so a script always ends
(a function that calls itself runs into the interpreter's nesting limit). A `loop` or `while` that
reaches its bound gives the value of its last iteration; one left with `break` gives the break value.
Each iteration and each function call open a frame of their own, so `define` inside them is local and
`set!` changes the binding it finds outside. `break` belongs to the loops of the body it is written
in: a function body starts outside any loop.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any, Protocol

import attrs
from atomtask.sexp.errors import SexpEvalError
from atomtask.sexp.forms import describe
from atomtask.sexp.functions import arity, truthy, value_name
from atomtask.sexp.reader import Literal, Node, SList, Symbol
from atomtask.sexp.values import Builtin, Closure, Environment
from atomtask.system.errors import SourceLocation, did_you_mean

__all__ = ["CONTROL_FORMS", "MAX_EVAL_DEPTH", "ControlForms", "Evaluates"]

#: The control forms (special forms: their arguments are not evaluated first).
CONTROL_FORMS = ("define", "lambda", "set!", "loop", "while", "for", "map", "break")

#: How deep forms and function calls may nest while a script runs. Each level costs a few Python
#: frames; the limit keeps a runaway recursion well inside Python's own, as a located error.
MAX_EVAL_DEPTH = 128

SpecialForm = Callable[[SList, Environment], Any]


class Evaluates(Protocol):
    """What the control forms need from the interpreter: the value of one form."""

    def eval(self, node: Node, env: Environment) -> Any: ...


class _Break(Exception):
    """`(break value)` on its way to the loop it leaves (a signal, never seen outside the interpreter)."""

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value


class ControlForms:
    """The control forms of one interpreter, and applying a function value (`call`).

    `reserved` are the names that cannot be bound (the special forms).
    """

    def __init__(self, interpreter: Evaluates, reserved: Collection[str]) -> None:
        self._eval = interpreter.eval
        self._reserved = reserved
        self._loops = 0  # loops open around the form being evaluated, in the current function body
        self._depth = 0  # forms and function calls being evaluated, one inside the other

    def forms(self) -> dict[str, SpecialForm]:
        """The special forms by name."""
        return {
            "define": self._define,
            "lambda": self._lambda,
            "set!": self._set,
            "loop": self._loop,
            "while": self._while,
            "for": self._for,
            "map": self._map,
            "break": self._break,
        }

    @contextlib.contextmanager
    def nested(self, location: SourceLocation) -> Iterator[None]:
        """One more level of nesting (a form or a function call); past `MAX_EVAL_DEPTH` an error at `location`."""
        if self._depth >= MAX_EVAL_DEPTH:
            raise SexpEvalError(
                f"Evaluation nests more than {MAX_EVAL_DEPTH} levels deep here: a function that calls itself without "
                "end? Give the recursion a base case, or use a bounded `(loop (max N) ...)`.",
                location=location,
            )
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1

    def value(self, node: Node, env: Environment) -> Any:
        """The value of one form (the interpreter's `eval`)."""
        return self._eval(node, env)

    def body(self, forms: Sequence[Node], env: Environment) -> Any:
        """Evaluate `forms` in order; the value of the last one (nil for none)."""
        value: Any = None
        for node in forms:
            value = self._eval(node, env)
        return value

    def call(self, function: Any, args: list[Any], form: SList) -> Any:
        """Apply a closure or builtin to evaluated `args`; `form` is where the call is written (for errors)."""
        if isinstance(function, Builtin):
            if len(form.items) - 1 == len(args) and form.head == function.name:
                return function.fn(args, form)
            # Called by `map` or `director-evaluator`: the builtin checks a form of its own call's shape.
            head = Symbol(name=function.name, location=form.location)
            stand_in = tuple(Literal(value=None, location=form.location) for _ in args)
            return function.fn(args, SList(items=(head, *stand_in), location=form.location))
        if not isinstance(function, Closure):
            raise SexpEvalError(
                f"Cannot call {value_name(function)}: only functions (`lambda`, `define`), builtins and tasks can be "
                "called.",
                location=form.location,
            )
        if len(args) != len(function.params):
            count = len(function.params)
            raise SexpEvalError(
                f"The {function.label()} takes {count} argument{'s' if count != 1 else ''} "
                f"({' '.join(function.params) or 'none'}), got {len(args)}.",
                location=form.location,
            )
        frame = Environment(dict(zip(function.params, args, strict=True)), parent=function.env)
        outer_loops, self._loops = self._loops, 0
        try:
            with self.nested(form.location):
                return self.body(function.body, frame)
        finally:
            self._loops = outer_loops

    # -- functions and names ---------------------------------------------------------------------

    def _lambda(self, form: SList, env: Environment) -> Closure:
        arity(form, 1, None, shape="(lambda (param...) body...)")
        return Closure(
            params=self._params(form.items[1], "lambda"), body=form.items[2:], env=env, location=form.location
        )

    def _define(self, form: SList, env: Environment) -> Any:
        arity(form, 1, None, shape="(define name value) or (define (name param...) body...)")
        target = form.items[1]
        if isinstance(target, SList):  # (define (name param...) body...)
            if not target.items:
                raise SexpEvalError("`(define (name param...) body...)` needs a name.", location=target.location)
            name = self._name(target.items[0], "define")
            params = self._params(SList(items=target.items[1:], location=target.location), "define")
            value: Any = Closure(params=params, body=form.items[2:], env=env, location=form.location, name=name)
        else:
            name = self._name(target, "define")
            arity(form, 2, 2, shape="(define name value)")
            value = self.named(self._eval(form.items[2], env), name)
        env.define(name, value)
        return value

    def _set(self, form: SList, env: Environment) -> Any:
        arity(form, 2, 2, shape="(set! name value)")
        name = self._name(form.items[1], "set!")
        frame = env.frame_of(name)
        if frame is None:
            raise SexpEvalError(
                f"Cannot `set!` {name!r}: it is not bound.{did_you_mean(name, env.names())} Bind it first with "
                f"`(let (({name} ...)) ...)` or `(define {name} ...)`.",
                location=form.items[1].location,
            )
        if frame.is_root:
            raise SexpEvalError(
                f"Cannot `set!` {name!r}: it is a builtin. Bind a name of your own with `let` or `define`.",
                location=form.items[1].location,
            )
        value = self._eval(form.items[2], env)
        frame.define(name, value)
        return value

    def _name(self, node: Node, form: str) -> str:
        if not isinstance(node, Symbol):
            raise SexpEvalError(f"`{form}` takes a name here, found {describe(node)}.", location=node.location)
        if node.name in self._reserved:
            raise SexpEvalError(f"Cannot bind the special form `{node.name}`.", location=node.location)
        return node.name

    def _params(self, node: Node, form: str) -> tuple[str, ...]:
        if not isinstance(node, SList):
            raise SexpEvalError(
                f"`{form}` takes a list of parameter names, like `(lambda (x y) ...)`; found {describe(node)}.",
                location=node.location,
            )
        names: list[str] = []
        for item in node.items:
            name = self._name(item, form)
            if name in names:
                raise SexpEvalError(f"Parameter {name!r} is named twice.", location=item.location)
            names.append(name)
        return tuple(names)

    @staticmethod
    def named(value: Any, name: str) -> Any:
        """`value`, named `name` when it is a function without a name yet (for messages)."""
        return attrs.evolve(value, name=name) if isinstance(value, Closure) and value.name is None else value

    # -- loops -----------------------------------------------------------------------------------

    def _loop(self, form: SList, env: Environment) -> Any:
        shape = "(loop (max N) body...)"
        arity(form, 1, None, shape=shape)
        bound = self._bound(form, 1, env, shape)
        return self._repeat(bound, None, form.items[2:], env)

    def _while(self, form: SList, env: Environment) -> Any:
        shape = "(while condition (max N) body...)"
        arity(form, 2, None, shape=shape)
        if _is_bound(form.items[1]):
            raise SexpEvalError(
                f"The condition of `while` comes first, then its bound: `{shape}`.", location=form.items[1].location
            )
        bound = self._bound(form, 2, env, shape)
        return self._repeat(bound, form.items[1], form.items[3:], env)

    def _repeat(self, bound: int, condition: Node | None, body: Sequence[Node], env: Environment) -> Any:
        value: Any = None
        self._loops += 1
        try:
            for _ in range(bound):
                frame = Environment(parent=env)
                if condition is not None and not truthy(self._eval(condition, frame)):
                    break
                value = self.body(body, frame)
        except _Break as signal:
            return signal.value
        finally:
            self._loops -= 1
        return value

    def _bound(self, form: SList, index: int, env: Environment, shape: str) -> int:
        clause = form.items[index] if len(form.items) > index else None
        if clause is None or not _is_bound(clause):
            where = clause.location if clause is not None else form.location
            found = f"; found {describe(clause)}" if clause is not None else ""
            raise SexpEvalError(
                f"`{form.head}` needs a bound: `{shape}`{found}. Every loop has a maximum number of iterations; "
                "leave it early with `(break value)`.",
                location=where,
            )
        assert isinstance(clause, SList)
        arity(clause, 1, 1, shape="(max N)")
        count = self._eval(clause.items[1], env)
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise SexpEvalError(
                f"The bound of `{form.head}` is a whole number of iterations (0 or more), got {value_name(count)}.",
                location=clause.items[1].location,
            )
        return count

    def _for(self, form: SList, env: Environment) -> Any:
        arity(form, 1, None, shape="(for (name list) body...)")
        binding = form.items[1]
        if not (isinstance(binding, SList) and len(binding.items) == 2):
            raise SexpEvalError(
                f"`for` takes `(name list)` first, like `(for (x (list 1 2)) ...)`; found {describe(binding)}.",
                location=binding.location,
            )
        name = self._name(binding.items[0], "for")
        items = self._list(self._eval(binding.items[1], env), "for", binding.items[1].location)
        values: list[Any] = []
        self._loops += 1
        try:
            for item in items:
                values.append(self.body(form.items[2:], Environment({name: item}, parent=env)))
        except _Break as signal:
            return signal.value
        finally:
            self._loops -= 1
        return values

    def _map(self, form: SList, env: Environment) -> list[Any]:
        arity(form, 2, 2, shape="(map function list)")
        function = self._eval(form.items[1], env)
        if not isinstance(function, Closure | Builtin):
            raise SexpEvalError(
                f"`map` applies a function, like `(lambda (x) ...)`, to each element; got {value_name(function)}. "
                "To call a task on each element, wrap the call: `(map (lambda (t) (task (text t))) items)`.",
                location=form.items[1].location,
            )
        items = self._list(self._eval(form.items[2], env), "map", form.items[2].location)
        return [self.call(function, [item], form) for item in items]

    def _break(self, form: SList, env: Environment) -> Any:
        arity(form, 0, 1, shape="(break [value])")
        if self._loops == 0:
            raise SexpEvalError(
                "`break` is outside any `loop`, `while` or `for` (a function body starts outside the loops "
                "around it). Return a value from the function instead.",
                location=form.location,
            )
        raise _Break(self._eval(form.items[1], env) if len(form.items) == 2 else None)

    @staticmethod
    def _list(value: Any, form: str, location: SourceLocation) -> list[Any]:
        if not isinstance(value, list):
            raise SexpEvalError(f"`{form}` goes over a list, got {value_name(value)}.", location=location)
        return value


def _is_bound(node: Node) -> bool:
    return isinstance(node, SList) and node.head == "max"
