"""Turning `(defworkflow name ...)` forms into the same `Workflow` a YAML workflow file declares.

    (defworkflow article_writer
      (version "1.0")
      (description "Research a topic, write an article, review it.")
      (state (topic str)
             (research str (default ""))
             (article Article?)
             (score int (default 0) (ge 0) (le 10))
             (rounds int (default 0)))
      (limits (requests 20) (cost 0.5))
      (steps
        (step research (task research_topic)
              (inputs (topic "{{state.topic}}"))
              (outputs (research summary)))
        (step write (task write_article)
              (inputs (topic "{{state.topic}}") (notes "Use these notes: {{state.research}}"))
              (output article))
        (step review (task review_article)
              (inputs (article "{{state.article}}"))
              (outputs (score score))
              (route ((when "state.score < 7 and state.rounds < 2") (to revise)) end))
        (step revise (task revise_article)
              (inputs (article "{{state.article}}") (score "{{state.score}}"))
              (output article)
              (set (rounds "state.rounds + 1"))
              (route review)
              (max_visits 3))))

Every YAML key is a clause of the same name, read without evaluating anything: `(state Name)` names
a schema, a field may say `(redact true)`; `(migrations (migration (from "1.0") (to "1.1") (rename
(title headline)) (drop notes) (set (score 0)) (convert (words "len(state.body)")) (resume_at write))
...)`, or `(migration (from "1.1") (to "1.2") (call "myapp.migrations:to_1_2"))`; an approval step is
`(step ok (type approval) (message "Publish {{state.title}}?") (output approved) (timeout "24h")
(on_timeout reject))`; a code step is `(step fetch (call "myshop.orders:fetch_order") (inputs (order_id
"{{state.order_id}}")) (output order) (retries 2) (timeout "30s"))`; `(route ...)` lists routes, each
`((when "expr") (to step))` or a bare target; `(on_failure stop)`, `(on_failure continue)`,
`(on_failure (retry_with "model" ...) (to step))`; `(parallel (step ...) ...)`. A state field may say
`(input true)`; a step that only computes has just `(set ...)`; `(fail not_found)` or `(fail (reason
not_found) (message "No order {{state.id}}"))` ends the run failed; `(max_visits 3) (on_max_visits
end)` (or `fail`, or `(to step)`) ends a loop at its bound. Expressions (`when`,
`set`, `for_each`) are strings (a symbol such as `state.done` is read as its text). An input value is
a literal (string, number, `true`, `false`, `nil`, or a list of these); `"{{state.x}}"` passes a state
field. Each part remembers its line and column, so every check of the workflow registry (E110-E124)
points into the S-expression source, as it does for YAML.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from atomtask.errors import SourceLocation, WorkflowDeclarationError
from atomtask.sexp._forms import FIELD_OPTIONS, clauses, datum, describe, entries, literal_text, single, spec
from atomtask.sexp._forms import pairs as pair_forms
from atomtask.sexp._reader import Literal, Node, SList, Symbol
from atomtask.system._templates import TemplateLimits
from atomtask.system._workflows import Workflow
from pydantic import ValidationError

__all__ = ["MIGRATION_CLAUSES", "STEP_CLAUSES", "WORKFLOW_CLAUSES", "workflow_from_form"]

#: The clauses of a `defworkflow` form (`state` and `steps` are required).
WORKFLOW_CLAUSES = (
    "version",
    "description",
    "state",
    "limits",
    "model",
    "model_settings",
    "retries",
    "repair",
    "steps",
    "migrations",
)
#: The clauses of a `(step id ...)` form: the keys of a YAML step.
STEP_CLAUSES = (
    "task", "workflow", "call", "parallel", "inputs", "outputs", "output", "set", "when", "route", "max_visits",
    "for_each", "as", "concurrency", "collect", "on_failure", "model", "model_settings", "retries", "limits", "repair",
    "type", "message", "timeout", "on_timeout", "on_max_visits", "fail",
)  # fmt: skip
#: The clauses of a `(migration ...)` form: the keys of a YAML migration.
MIGRATION_CLAUSES = ("from", "to", "rename", "drop", "set", "convert", "call", "resume_at")
_NAMES = ("task", "workflow", "call", "output", "collect", "as", "model", "type", "on_timeout")
_LITERALS = ("retries", "concurrency", "max_visits", "repair", "timeout", "message")
_EXPRESSIONS = ("when", "for_each")
_LIMIT_KEYS = tuple(TemplateLimits.model_fields)
_ROUTE_KEYS = ("when", "to")
_ON_FAILURE_KEYS = ("retry_with", "to", "then")
_Error = WorkflowDeclarationError


def workflow_from_form(form: SList) -> Workflow:
    """Build the `Workflow` a `(defworkflow name clause...)` form declares; raises `WorkflowDeclarationError`.

    The workflow's shape is checked here; the checks against tasks, schemas and routes happen when it
    is registered (`TaskSystem.register_workflow`), with this form's locations.
    """
    name_node = form.items[1] if len(form.items) > 1 else None
    if not isinstance(name_node, Symbol):
        found = f", found {describe(name_node)}" if name_node is not None else ""
        raise _Error(
            f"`defworkflow` needs a workflow name first{found}: `(defworkflow name (state ...) (steps ...))`.",
            location=name_node.location if name_node is not None else form.location,
        )
    reader = _Reader(name_node.name)
    data = reader.workflow(form, name_node)
    try:
        workflow = Workflow.model_validate(data)
    except ValidationError as exc:
        raise reader.invalid(exc, data, form) from None
    return workflow.located(form.location, reader.origins)


class _Reader:
    """Reads one `defworkflow` form into the mapping YAML would give, noting where each part is."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.label = f"defworkflow {name!r}"
        self.origins: dict[str, SourceLocation] = {}

    def note(self, path: str, node: Node) -> None:
        """Remember where `path` is: a string's text (placeholder offsets count from there), else the node."""
        text_start = node.text_start if isinstance(node, Literal) else None
        self.origins[path] = text_start or node.location

    def workflow(self, form: SList, name_node: Symbol) -> dict[str, Any]:
        found = clauses(form.items[2:], WORKFLOW_CLAUSES, self.label, _Error, what="clause")
        for required, shape in (("state", "(state (field type) ...)"), ("steps", "(steps (step id (task name)) ...)")):
            if required not in found:
                raise _Error(f"{self.label} has no `{required}` clause; add `{shape}`.", location=form.location)
        data: dict[str, Any] = {"name": self.name}
        self.note("name", name_node)
        for key, clause in found.items():
            args = clause.items[1:]
            self.origins[key] = clause.location
            if key == "state":
                data[key] = self.state(args, clause)
            elif key == "steps":
                data[key] = [self.step(node, f"steps.{i}") for i, node in enumerate(args)]
            elif key == "migrations":
                data[key] = [self.migration(node, f"migrations.{i}") for i, node in enumerate(args)]
            else:
                data[key] = self.setting(key, args, clause, key, self.label)
        return data

    def setting(self, key: str, args: Sequence[Node], clause: SList, path: str, label: str) -> Any:
        """A clause a workflow and a step share: model, model_settings, retries, repair, limits (and text)."""
        if key == "limits":
            found = entries(args, _LIMIT_KEYS, f"`limits` of {label}", _Error)
            for k, entry in found.items():
                self.note(f"{path}.{k}", entry)
            return {k: datum(single(e.items[1:], e, label, _Error)) for k, e in found.items()}
        if key == "model_settings":
            return self.pairs(args, path, label, key, datum)
        node = single(args, clause, label, _Error)
        self.note(path, node)
        if key in _NAMES:
            return self.name_of(node, key, label)
        if key in ("description", "version"):
            if not isinstance(node, Literal) or (key == "description" and not isinstance(node.value, str)):
                raise _Error(f'`({key} ...)` in {label} takes a string, like `({key} "...")`.', location=node.location)
            return node.value
        if not isinstance(node, Literal):
            raise _Error(
                f"`({key} ...)` in {label} takes a literal value, found {describe(node)}.", location=node.location
            )
        return node.value

    def state(self, args: Sequence[Node], clause: SList) -> dict[str, Any]:
        """`(state Name)` (a named schema) or `(state ["description"] (field type ...) ...)`."""
        if len(args) == 1 and not isinstance(args[0], SList):
            self.note("state.schema", args[0])
            return {"schema": self.name_of(args[0], "state", self.label)}
        state: dict[str, Any] = {}
        rest = list(args)
        first = rest[0] if rest else None
        if isinstance(first, Literal) and isinstance(first.value, str):
            state["description"] = first.value
            rest.pop(0)
        if not rest:
            raise _Error(
                f"`state` of {self.label} has no fields; add `(state (topic str) (score int (default 0)))` or "
                "name a schema: `(state Name)`.",
                location=clause.location,
            )
        fields = []
        for index, node in enumerate(rest):
            name, options = spec(node, (*FIELD_OPTIONS, "redact", "input"), f"the state of {self.label}", _Error)
            fields.append({"name": name, **options})
            assert isinstance(node, SList)  # spec refused anything else
            self.origins[f"state.fields.{index}"] = node.location
            for part, item in zip(("name", "type"), node.items, strict=False):
                self.note(f"state.fields.{index}.{part}", item)
            for option in node.items[1:]:
                if isinstance(option, SList) and option.head is not None:
                    self.origins[f"state.fields.{index}.{option.head}"] = option.location
        state["fields"] = fields
        return state

    def step(self, node: Node, path: str) -> dict[str, Any]:
        """`(step id clause...)` as a YAML step mapping."""
        if not (isinstance(node, SList) and node.head == "step"):
            raise _Error(
                f"`steps` of {self.label} lists `(step id (task name) ...)` forms; found {describe(node)}.",
                location=node.location,
            )
        id_node = node.items[1] if len(node.items) > 1 else None
        if not isinstance(id_node, Symbol):
            found = f", found {describe(id_node)}" if id_node is not None else ""
            raise _Error(
                f"A step of {self.label} needs an id first{found}: `(step research (task research_topic) ...)`.",
                location=id_node.location if id_node is not None else node.location,
            )
        label = f"step {id_node.name!r} of {self.label}"
        self.origins[path] = node.location
        self.note(f"{path}.id", id_node)
        data: dict[str, Any] = {"id": id_node.name}
        for key, clause in clauses(node.items[2:], STEP_CLAUSES, label, _Error, what="clause").items():
            args, where = clause.items[1:], f"{path}.{key}"
            self.origins[where] = clause.location
            if key == "parallel":
                data[key] = [self.step(member, f"{where}.{i}") for i, member in enumerate(args)]
            elif key == "inputs":
                data[key] = self.pairs(args, where, label, key, lambda value: self.input_value(value, label))
            elif key == "outputs":
                data[key] = self.pairs(args, where, label, key, lambda value: self.name_of(value, "outputs", label))
            elif key == "set":
                data[key] = self.pairs(args, where, label, key, self.expression)
            elif key == "route":
                data[key] = [self.route(entry, f"{where}.{i}", label) for i, entry in enumerate(args)]
            elif key == "on_failure":
                data[key] = self.on_failure(args, clause, where, label)
            elif key in ("on_max_visits", "fail"):
                data[key] = self.choice(key, args, clause, where, label)
            elif key in _EXPRESSIONS:
                value = single(args, clause, label, _Error)
                self.note(where, value)
                data[key] = self.expression(value)
            elif key in _LITERALS or key in _NAMES or key in ("limits", "model_settings"):
                data[key] = self.setting(key, args, clause, where, label)
        return data

    def migration(self, node: Node, path: str) -> dict[str, Any]:
        """`(migration (from "1.0") (to "1.1") (rename (old new)) (drop a b) (set (f 0)) (convert (f "expr")) ...)`."""
        if not (isinstance(node, SList) and node.head == "migration"):
            raise _Error(
                f'`migrations` of {self.label} lists `(migration (from "1.0") (to "1.1") ...)` forms; found '
                f"{describe(node)}.",
                location=node.location,
            )
        label = f"a migration of {self.label}"
        self.origins[path] = node.location
        data: dict[str, Any] = {}
        for key, clause in clauses(node.items[1:], MIGRATION_CLAUSES, label, _Error, what="clause").items():
            args, where = clause.items[1:], f"{path}.{key}"
            self.origins[where] = clause.location
            if key == "rename":
                data[key] = self.pairs(args, where, label, key, lambda value: self.name_of(value, "rename", label))
            elif key == "set":
                data[key] = self.pairs(args, where, label, key, datum)
            elif key == "convert":
                data[key] = self.pairs(args, where, label, key, self.expression)
            elif key == "drop":
                data[key] = [self.name_of(value, key, label) for value in args]
            else:
                value = single(args, clause, label, _Error)
                self.note(where, value)
                data[key] = value.value if isinstance(value, Literal) else self.name_of(value, key, label)
        return data

    def route(self, node: Node, path: str, label: str) -> dict[str, Any]:
        """`((when "expr") (to step))`, `((to step))` or a bare target `end`."""
        self.origins[path] = node.location
        if not isinstance(node, SList):
            self.note(f"{path}.to", node)
            return {"to": self.name_of(node, "route", label)}
        route: dict[str, Any] = {}
        for key, entry in entries(node.items, _ROUTE_KEYS, f"a route of {label}", _Error).items():
            value = single(entry.items[1:], entry, label, _Error)
            self.note(f"{path}.{key}", value)
            route[key] = self.expression(value) if key == "when" else self.name_of(value, "to", label)
        if "to" not in route:
            raise _Error(
                f'A route of {label} has no target; write `((when "...") (to step))`, or `end` to finish.',
                location=node.location,
            )
        return route

    def on_failure(self, args: Sequence[Node], clause: SList, path: str, label: str) -> Any:
        """`stop`, `continue`, or `(retry_with "model" ...)` / `(to step)` / `(then continue)` entries."""
        if len(args) == 1 and not isinstance(args[0], SList):
            self.note(path, args[0])
            return self.name_of(args[0], "on_failure", label)
        escalation: dict[str, Any] = {}
        for key, entry in entries(args, _ON_FAILURE_KEYS, f"`on_failure` of {label}", _Error).items():
            self.note(f"{path}.{key}", entry)
            values = entry.items[1:]
            if key == "retry_with" and values:
                escalation[key] = [self.name_of(value, key, label) for value in values]
            else:
                escalation[key] = self.name_of(single(values, entry, label, _Error), key, label)
        return escalation

    def choice(self, key: str, args: Sequence[Node], clause: SList, path: str, label: str) -> Any:
        """`(on_max_visits end)`, `(on_max_visits (to step))`; `(fail name)`, `(fail (reason r) (message "..."))`."""
        if len(args) == 1 and not isinstance(args[0], SList):
            self.note(path, args[0])
            return self.name_of(args[0], key, label)
        keys = ("to", "then") if key == "on_max_visits" else ("reason", "message")
        found: dict[str, Any] = {}
        for name, entry in entries(args, keys, f"`{key}` of {label}", _Error).items():
            value = single(entry.items[1:], entry, label, _Error)
            self.note(f"{path}.{name}", value)
            found[name] = (
                value.value if name == "message" and isinstance(value, Literal) else self.name_of(value, name, label)
            )
        if not found:
            raise _Error(f"`({key} ...)` in {label} is empty.", location=clause.location)
        return found

    def pairs(
        self, args: Sequence[Node], path: str, label: str, key: str, read: Callable[[Node], Any]
    ) -> dict[str, Any]:
        """`(name value) ...` (or `((name value) ...)`) as a mapping, each value read by `read`."""
        found: dict[str, Any] = {}
        for name, value, _ in pair_forms(args, key, label, _Error, noun="name", example=f"({key} (topic ...))"):
            found[name] = read(value)
            self.note(f"{path}.{name}", value)
        return found

    def name_of(self, node: Node, key: str, label: str) -> str:
        """A name written as a symbol or a string."""
        if isinstance(node, Symbol):
            return node.name
        if isinstance(node, Literal) and isinstance(node.value, str):
            return node.value
        raise _Error(f"`({key} ...)` in {label} takes a name, found {describe(node)}.", location=node.location)

    def expression(self, node: Node) -> str:
        """An expression's text: a string as written, a symbol or literal as its text (`nil` is `null`)."""
        if isinstance(node, Symbol):
            return node.name
        if isinstance(node, Literal):
            return (
                node.value
                if isinstance(node.value, str)
                else "null"
                if node.value is None
                else literal_text(node.value)
            )
        raise _Error(
            f'An expression is a string, like `"state.score < 7"`; found {describe(node)}.', location=node.location
        )

    def input_value(self, node: Node, label: str) -> Any:
        """A literal input value; a symbol is refused (it would otherwise pass its name as text)."""
        if isinstance(node, Literal):
            return node.value
        if isinstance(node, SList):
            return [self.input_value(item, label) for item in node.items]
        path = node.name if node.name.startswith("state.") else f"state.{node.name}"
        raise _Error(
            f"An input of {label} is a literal (a string, number, `true`, `false`, `nil` or a list of these); found "
            f'{describe(node)}. Write `"{{{{{path}}}}}"` to pass a state field, or `"{node.name}"` for the text.',
            location=node.location,
        )

    def invalid(self, exc: ValidationError, data: dict[str, Any], form: SList) -> WorkflowDeclarationError:
        """The first validation error of the declaration, located at its part of the form."""
        error = exc.errors()[0]
        parts = [str(p) for p in error["loc"]]
        location, probe = form.location, list(parts)
        while probe:
            if ".".join(probe) in self.origins:
                location = self.origins[".".join(probe)]
                break
            probe.pop()
        step = None
        if len(parts) > 1 and parts[0] == "steps" and parts[1].isdigit() and int(parts[1]) < len(data["steps"]):
            step = data["steps"][int(parts[1])].get("id")
        message = error["msg"].removeprefix("Value error, ")
        where = f"`{'.'.join(parts)}`: " if parts else ""
        return _Error(f"Invalid {self.label}: {where}{message}.", location=location, workflow=self.name, step=step)
