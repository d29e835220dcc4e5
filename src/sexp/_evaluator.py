"""Evaluating S-expression scripts against a `TaskSystem` (any `ScriptHost`).

The language is small on purpose:

- literals: strings, numbers, `true`, `false`, `nil`; `nil` and `false` are false, everything else true;
- special forms: `(quote x)` / `'x` (data: symbols read as strings, lists as lists), `(if c then [else])`,
  `(let ((name expr) ...) body...)` (bindings in order, each sees the previous), `(progn form...)`,
  `(and form...)`, `(or form...)` (short-circuit, value of the last form evaluated),
  `(defatom name clause...)`, `(defschema Name field...)`, `(defworkflow name clause...)`
  (registered with the host's `register_workflow`), `(defmodels (fast "openai-chat:gpt-4o-mini") ...)`
  (model aliases, as YAML's `models:`);
- control forms:

      (define name value)              (define (name param...) body...)
      (lambda (param...) body...)      ; a closure: it sees the names bound where it was made
      (set! name value)                ; change the nearest binding of `name`
      (loop (max N) body...)           ; repeat the body, at most N times, until `(break value)`
      (while condition (max N) body...); repeat while `condition` holds, at most N times
      (for (name list) body...)        ; the body once per element; the list of its values
      (map function list)              ; the function applied to each element; the list of its values
      (break [value])                  ; leave the innermost loop; `value` is the loop's value

  and `(director-evaluator (max-rounds N) (input ...) (direct f) (execute f) (evaluate f) (until f))`,
  which runs direct, execute and evaluate round after round until `until` is true of the verdict or
  the rounds run out (its value: `result`, `verdict`, `plan`, `rounds`, `done`);
- builtins (`_builtins`), called with positional arguments: `(f 1 2)`;
- task calls with named, evaluated arguments: `(extract_contact (text "...") (locale "fr"))` runs
  `TaskSystem.execute` and gives its `TaskResult`. A name bound by `defatom`, or any template the
  system has registered (from YAML or Python too), can be called. An `Interpreter` made with
  `model=` / `model_settings=` passes them to every task call (`TaskSystem.defatom(..., model=)`);
- workflow calls, the same way: `(article_writer (topic "How tides work"))` runs
  `TaskSystem.run_workflow` on those run inputs and gives its `WorkflowResult` (`unwrap` gives the final
  state). A name that is both a template and a workflow calls the template.

Every loop has a bound (`loop` and `while` without `(max N)` are refused), and forms nest at most
`MAX_EVAL_DEPTH` deep while they are evaluated (a function that calls itself without end stops there),
so every script ends. A loop that reaches its bound gives the value of its last iteration; one left
with `break` gives the break value. Each iteration and each function call open a frame of their own,
so `define` inside them is local and `set!` changes the binding it finds outside. Every error is a
`SexpEvalError` (or a registration `UsageError`) naming the line and column.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs
from atomtask.errors import SexpEvalError, SourceLocation, TemplateError, did_you_mean
from atomtask.loading._declarations import Declarations
from atomtask.loading._template_registry import TemplateRegistry
from atomtask.sexp._builtins import BUILTINS as CORE_BUILTINS
from atomtask.sexp._builtins import (
    MISSING,
    OPERATORS,
    Builtin,
    Closure,
    Environment,
    TaskFunction,
    WorkflowFunction,
    arity,
    truthy,
    value_name,
)
from atomtask.sexp._defmodels import model_aliases_from_form
from atomtask.sexp._defworkflow import workflow_from_form
from atomtask.sexp._forms import (
    TemplateReading,
    clauses,
    datum,
    describe,
    read_template_form,
    schema_from_form,
    single,
)
from atomtask.sexp._reader import Literal, Node, SList, Symbol, read
from atomtask.system._results import TaskResult, WorkflowResult
from atomtask.system._templates import Template
from atomtask.system._workflows import Workflow

if TYPE_CHECKING:
    from pydantic_ai.models import Model

__all__ = [
    "BUILTINS",
    "CONTROL_FORMS",
    "DIRECTOR_CLAUSES",
    "MAX_EVAL_DEPTH",
    "SPECIAL_FORMS",
    "ControlForms",
    "Evaluates",
    "Interpreter",
    "ScriptHost",
    "director_evaluator",
]

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


#: The functions every script can call.
BUILTINS: dict[str, Builtin] = {**CORE_BUILTINS, **OPERATORS}

#: The special forms (their arguments are not evaluated first).
SPECIAL_FORMS: tuple[str, ...] = (
    "quote", "if", "let", "progn", "and", "or", "defatom", "defschema", "defworkflow", "defmodels", *CONTROL_FORMS,
    "director-evaluator",
)  # fmt: skip


class WorkflowNames(Protocol):
    """The registered workflows, as a script sees them (a `WorkflowRegistry`)."""

    def __contains__(self, name: object) -> bool: ...

    def names(self) -> list[str]: ...


class ScriptHost(Protocol):
    """What a script runs against: a `TaskSystem`, seen through the things scripts use.

    The S-expression front end sits below the facade (`TaskSystem.defatom` evaluates scripts), so it
    names the facade by this protocol instead of importing it.
    """

    templates: TemplateRegistry

    @property
    def workflows(self) -> WorkflowNames: ...

    def execute(
        self,
        name_or_request: str,
        inputs: Mapping[str, Any] | None = None,
        *,
        model: Model | str | None = None,
        model_settings: Mapping[str, Any] | None = None,
    ) -> TaskResult[Any]: ...

    def register_declarations(self, declarations: Declarations) -> list[str]: ...

    def register_workflow(self, workflow: Workflow, *, replace: bool = False) -> Workflow: ...

    def run_workflow(
        self,
        name: str,
        inputs: Mapping[str, Any] | None = None,
        *,
        model: Model | str | None = None,
        model_settings: Mapping[str, Any] | None = None,
    ) -> WorkflowResult[Any]: ...


class Interpreter:
    """Evaluates source text against one `TaskSystem`; keeps the names of the templates it defined.

    `model` and `model_settings` are passed to every task and workflow call the source makes (call-level:
    they win over each template's model and go on top of its settings).

    Example:
        ```python
        interpreter = Interpreter(system)
        value = interpreter.evaluate('(defatom greet (params who) (instructions "Hi {{who}}"))')
        ```
    """

    def __init__(
        self,
        system: ScriptHost,
        *,
        model: Model | str | None = None,
        model_settings: Mapping[str, Any] | None = None,
    ) -> None:
        self.system = system
        self.model = model
        self.model_settings = model_settings
        self.defined: list[str] = []
        #: The workflows `defworkflow` registered, in order.
        self.workflows: list[str] = []
        self._control = ControlForms(self, SPECIAL_FORMS)
        self._special: dict[str, Callable[[SList, Environment], Any]] = {
            **self._control.forms(),
            "director-evaluator": lambda form, env: director_evaluator(self._control, form, env),
            "defworkflow": self._defworkflow,
            "quote": self._quote,
            "if": self._if,
            "let": self._let,
            "progn": self._progn,
            "and": self._and,
            "or": self._or,
            "defatom": self._defatom,
            "defschema": self._defschema,
            "defmodels": self._defmodels,
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
        with self._control.nested(node.location):
            return self._apply(node, env)

    def _apply(self, node: SList, env: Environment) -> Any:
        head = node.items[0]
        if isinstance(head, Symbol) and head.name in self._special:
            return self._special[head.name](node, env)
        callee = self.eval(head, env)
        if isinstance(callee, Builtin | Closure):
            return self._control.call(callee, [self.eval(arg, env) for arg in node.items[1:]], node)
        if isinstance(callee, TaskFunction):
            inputs = self._named_arguments("task", callee.name, node, env)
            return self.system.execute(callee.name, inputs, model=self.model, model_settings=self.model_settings)
        if isinstance(callee, WorkflowFunction):
            inputs = self._named_arguments("workflow", callee.name, node, env)
            return self.system.run_workflow(callee.name, inputs, model=self.model, model_settings=self.model_settings)
        raise SexpEvalError(
            f"Cannot call {value_name(callee)} ({describe(head)}): only tasks, workflows, functions and builtins "
            "can be called. "
            "Quote the list to make data: `'(a b)` or `(list a b)`.",
            location=node.location,
        )

    def _lookup(self, node: Symbol, env: Environment) -> Any:
        value = env.lookup(node.name)
        if value is not MISSING:
            return value
        if node.name in self.system.templates:  # before the workflows: a template wins a shared name
            return TaskFunction(node.name)
        if node.name in self.system.workflows:
            return WorkflowFunction(node.name)
        if node.name in self._special:
            raise SexpEvalError(
                f"`{node.name}` is a special form; use it at the head of a list: `({node.name} ...)`.",
                location=node.location,
            )
        known = env.names() | set(self.system.templates.names()) | set(self.system.workflows.names())
        raise SexpEvalError(
            f"Unbound symbol {node.name!r}.{did_you_mean(node.name, known)} Bind it with `let` or `define`, pass "
            f"it as an input (`-i {node.name}=...` or `variables=`), define a task with `defatom`, or write "
            f'"{node.name}" for a string.',
            location=node.location,
        )

    # -- task and workflow calls -----------------------------------------------------------------

    def _named_arguments(self, kind: str, callee: str, form: SList, env: Environment) -> dict[str, Any]:
        """The evaluated `(param value)` arguments of a call to task or workflow `callee`."""
        inputs: dict[str, Any] = {}
        for arg in form.items[1:]:
            if not (isinstance(arg, SList) and len(arg.items) == 2 and isinstance(arg.items[0], Symbol)):
                raise SexpEvalError(
                    f"Arguments to {kind} {callee!r} are named: `({callee} (param value) ...)`; found {describe(arg)}.",
                    location=arg.location,
                )
            name = arg.items[0].name
            if name in inputs:
                raise SexpEvalError(f"Argument {name!r} is given twice to {kind} {callee!r}.", location=arg.location)
            inputs[name] = self.eval(arg.items[1], env)
        return inputs

    # -- special forms ---------------------------------------------------------------------------

    def _quote(self, form: SList, env: Environment) -> Any:
        arity(form, 1, 1)
        return datum(form.items[1])

    def _if(self, form: SList, env: Environment) -> Any:
        arity(form, 2, 3, shape="(if condition then [else])")
        if truthy(self.eval(form.items[1], env)):
            return self.eval(form.items[2], env)
        return self.eval(form.items[3], env) if len(form.items) == 4 else None

    def _let(self, form: SList, env: Environment) -> Any:
        arity(form, 2, None, shape="(let ((name value) ...) body...)")
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
            frame.define(name.name, ControlForms.named(self.eval(binding.items[1], frame), name.name))
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

    def _defworkflow(self, form: SList, env: Environment) -> str:
        workflow = workflow_from_form(form)
        self.system.register_workflow(workflow)
        if workflow.name not in self.workflows:
            self.workflows.append(workflow.name)
        return workflow.name

    def _defschema(self, form: SList, env: Environment) -> str:
        schema = schema_from_form(form)
        self.system.register_declarations(Declarations(schemas=[schema]))
        return schema.name

    def _defmodels(self, form: SList, env: Environment) -> list[str]:
        aliases = model_aliases_from_form(form)
        self.system.register_declarations(Declarations(model_aliases=aliases))
        return [alias.name for alias in aliases]


def declared_template(form: SList) -> Template:
    """The template a `defatom` form declares; raises its first mistake (a name the language reserves is one)."""
    reading = read_declared_template(form)
    if reading.template is None:
        raise reading.problems[0]
    return reading.template


def read_declared_template(form: SList) -> TemplateReading:
    """`read_template_form`, with a name the language reserves as one more mistake (in the name's place)."""
    reading = read_template_form(form)
    name = form.items[1] if len(form.items) > 1 else None
    if not isinstance(name, Symbol) or (name.name not in SPECIAL_FORMS and name.name not in BUILTINS):
        return reading
    kind = "special form" if name.name in SPECIAL_FORMS else "builtin"
    reserved = TemplateError(
        f"Task name {name.name!r} is a {kind} of the language and could not be called; choose another name.",
        location=name.location,
    )
    return TemplateReading(template=None, problems=(reserved, *reading.problems))
