"""Evaluating S-expression scripts against a `TaskSystem` (any `ScriptHost`).

The language is small on purpose:

- literals: strings, numbers, `true`, `false`, `nil`; `nil` and `false` are false, everything else true;
- special forms: `(quote x)` / `'x` (data: symbols read as strings, lists as lists), `(if c then [else])`,
  `(let ((name expr) ...) body...)` (bindings in order, each sees the previous), `(progn form...)`,
  `(and form...)`, `(or form...)` (short-circuit, value of the last form evaluated),
  `(defatom name clause...)`, `(defschema Name field...)`, `(defworkflow name clause...)`
  (`atomtask.sexp.defworkflow`: registered with the host's `register_workflow`);
- control forms (`atomtask.sexp.control`): `define`, `lambda`, `set!`, bounded loops `(loop (max N) ...)`
  and `(while cond (max N) ...)` with `break`, `(for (x list) ...)`, `(map f list)`, and
  `(director-evaluator ...)` (`atomtask.sexp.director`);
- builtins: `(list x...)`, `(not x)`, `(eq? a b)`, `(get-field value key...)`, `(unwrap result)`, and
  `+ - * /`, `< <= > >= =`, `concat`, `str`, `length`, `append` (`atomtask.sexp.operators`); functions
  are called with positional arguments: `(f 1 2)`;
- task calls with named, evaluated arguments: `(extract_contact (text "...") (locale "fr"))` runs
  `TaskSystem.execute` and gives its `TaskResult`. A name bound by `defatom`, or any template the
  system has registered (from YAML or Python too), can be called. An `Interpreter` made with
  `model=` / `model_settings=` passes them to every task call (`TaskSystem.defatom(..., model=)`);
- workflow calls, the same way: `(article_writer (topic "How tides work"))` runs
  `TaskSystem.run_workflow` on those run inputs and gives its `WorkflowResult` (`unwrap` gives the final
  state). Any registered workflow can be called (`defworkflow`, YAML, Python); the call's `model` and
  `model_settings` apply too. A name that is both a template and a workflow calls the template.

Every loop has a bound, and forms nest at most `MAX_EVAL_DEPTH` deep while they are evaluated (a
function that calls itself without end stops there), so every script ends. Every error is a
`SexpEvalError` (or a registration `UsageError`) naming the line and column.

This module is the interpreter (`Interpreter`, its special forms, and the `ScriptHost` it runs
against); the values and environment are in `atomtask.sexp.values`, the builtins in
`atomtask.sexp.functions`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from atomtask.loading.declarations import Declarations
from atomtask.loading.template_registry import TemplateRegistry
from atomtask.sexp.control import CONTROL_FORMS, MAX_EVAL_DEPTH, ControlForms
from atomtask.sexp.defatom import schema_from_form, template_from_form
from atomtask.sexp.defworkflow import workflow_from_form
from atomtask.sexp.director import director_evaluator
from atomtask.sexp.errors import SexpEvalError
from atomtask.sexp.forms import datum, describe
from atomtask.sexp.functions import BUILTINS as CORE_BUILTINS
from atomtask.sexp.functions import arity, truthy, value_name
from atomtask.sexp.operators import OPERATORS
from atomtask.sexp.reader import Literal, Node, SList, Symbol, read
from atomtask.sexp.values import MISSING, Builtin, Closure, Environment, TaskFunction, WorkflowFunction
from atomtask.system.errors import TemplateError, did_you_mean
from atomtask.system.results import TaskResult
from atomtask.system.templates import Template
from atomtask.system.workflow_results import WorkflowResult
from atomtask.system.workflows import Workflow

if TYPE_CHECKING:
    from pydantic_ai.models import Model

__all__ = ["BUILTINS", "MAX_EVAL_DEPTH", "SPECIAL_FORMS", "Environment", "Interpreter", "ScriptHost", "TaskFunction"]

#: The functions every script can call.
BUILTINS: dict[str, Builtin] = {**CORE_BUILTINS, **OPERATORS}

#: The special forms (their arguments are not evaluated first).
SPECIAL_FORMS: tuple[str, ...] = (
    "quote", "if", "let", "progn", "and", "or", "defatom", "defschema", "defworkflow", *CONTROL_FORMS,
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
