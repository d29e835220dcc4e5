"""A checked workflow, ready to run: `CompiledWorkflow`, its `CompiledStep`s, and their input values.

Everything the runner needs is resolved once, when the workflow is registered: the state class, each
step's task (or sub-workflow, or a code step's function) and parameter types, the parsed inputs and
expressions, the fields each step reads and writes, and where each step goes next; the workflow's
checked `migrations` and the state fields declared `redact: true` (never stored in clear nor logged).

A step input is a `Value`: a string that is exactly one placeholder (`"{{state.x}}"`) passes the
typed value it names (a list stays a list, a class instance stays an instance); a string with text
around placeholders is rendered as text (strings as they are, everything else as JSON, never a Python
repr); any other value is a literal, searched for placeholders inside lists and mappings.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any, Literal

import attrs
from atomtask.errors import SourceLocation, WorkflowExpressionError, did_you_mean
from atomtask.executors._prompts import format_value
from atomtask.loading._template_registry import CompiledTemplate
from atomtask.system._options import CallOptions
from atomtask.system._templates import find_placeholders
from atomtask.system._workflows import END, Migration, Step, Workflow
from atomtask.workflows._calls import CompiledCall
from atomtask.workflows._expressions import Expression, PathRef, read_path
from atomtask.workflows._types import NONE
from pydantic import BaseModel

__all__ = [
    "CompiledMigration",
    "CompiledRoute",
    "CompiledStep",
    "CompiledWorkflow",
    "EdgeKind",
    "Read",
    "Value",
    "parse_value",
    "to_plain",
]


@attrs.frozen(kw_only=True)
class Value:
    """One input value, parsed: `kind` is `whole`, `text`, `literal`, `list` or `dict`."""

    kind: str
    raw: Any
    refs: tuple[PathRef, ...] = ()
    #: For `text`: (start, end) of each placeholder, in order, matching `refs`.
    spans: tuple[tuple[int, int], ...] = ()
    children: tuple[tuple[str, Value], ...] = ()

    def all_refs(self) -> list[PathRef]:
        """Every path this value reads, nested values included."""
        found = list(self.refs)
        for _, child in self.children:
            found.extend(child.all_refs())
        return found

    def static_type(self, path_type: Callable[[PathRef], Any]) -> Any:
        """The type of the value the step will receive, given each path's type."""
        if self.kind == "whole":
            return path_type(self.refs[0])
        for ref in self.all_refs():
            path_type(ref)  # every path must exist, even inside text
        if self.kind == "text":
            return str
        if self.kind == "list":
            return list[Any]
        if self.kind == "dict":
            return dict[str, Any]
        return NONE if self.raw is None else type(self.raw)

    def render(self, env: Mapping[str, Any]) -> Any:
        """The value on `env` (`{"state": ..., "item": ...}`); raises `ExpressionRuntimeError` for a missing path."""
        if self.kind == "whole":
            ref = self.refs[0]
            return read_path(env[ref.root], ref.parts, ref.root)
        if self.kind == "text":
            pieces: list[str] = []
            cursor = 0
            for ref, (start, end) in zip(self.refs, self.spans, strict=True):
                pieces.append(self.raw[cursor:start])
                pieces.append(format_value(read_path(env[ref.root], ref.parts, ref.root)))
                cursor = end
            pieces.append(self.raw[cursor:])
            return "".join(pieces)
        if self.kind == "list":
            return [child.render(env) for _, child in self.children]
        if self.kind == "dict":
            return {key: child.render(env) for key, child in self.children}
        return self.raw


def parse_value(raw: Any, *, roots: Collection[str] = ("state",)) -> Value:
    """Parse an input value; raises `WorkflowExpressionError` (with `offset`) for a malformed placeholder."""
    if isinstance(raw, str):
        return _parse_text(raw, roots)
    if isinstance(raw, list):
        return Value(
            kind="list", raw=raw, children=tuple((str(i), parse_value(v, roots=roots)) for i, v in enumerate(raw))
        )
    if isinstance(raw, dict):
        return Value(
            kind="dict", raw=raw, children=tuple((str(k), parse_value(v, roots=roots)) for k, v in raw.items())
        )
    return Value(kind="literal", raw=raw)


def _parse_text(text: str, roots: Collection[str]) -> Value:
    placeholders, malformed = find_placeholders(text)
    if malformed:
        offset, bad = malformed[0]
        raise _error(
            f"Malformed placeholder {bad!r} in {text!r}; placeholders are `{{{{state.field}}}}` "
            "or `{{item.field}}` with identifier names.",
            offset,
        )
    refs: list[PathRef] = []
    for ph in placeholders:
        if ph.param not in roots:
            hint = did_you_mean(ph.param, roots) or f" Placeholders start with {' or '.join(sorted(roots))}."
            raise _error(f"Unknown name {ph.param!r} in placeholder {ph.text!r}.{hint}", ph.start)
        refs.append(PathRef(root=ph.param, parts=ph.path, offset=ph.start))
    if not refs:
        return Value(kind="literal", raw=text)
    only = placeholders[0]
    if len(placeholders) == 1 and not text[: only.start].strip() and not text[only.end :].strip():
        return Value(kind="whole", raw=text, refs=tuple(refs))
    return Value(kind="text", raw=text, refs=tuple(refs), spans=tuple((p.start, p.end) for p in placeholders))


def _error(message: str, offset: int) -> WorkflowExpressionError:
    error = WorkflowExpressionError(message)
    error.offset = offset
    return error


def to_plain(value: Any) -> Any:
    """`value` with every Pydantic instance in it turned into a dict, to validate against another class."""
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    return value


#: How control leaves a step: after it ran (`ok`), when `when` skipped it, or after a failure it survives.
EdgeKind = Literal["ok", "skip", "fail"]


@attrs.frozen(kw_only=True)
class Read:
    """One state field a step reads: the path that reads it and where (a dotted declaration path)."""

    field: str
    ref: PathRef
    where: str


@attrs.frozen(kw_only=True)
class CompiledRoute:
    """One route entry: the condition (None: always) and the target step id (or `end`)."""

    when: Expression | None
    to: str
    where: str


@attrs.frozen(kw_only=True)
class CompiledStep:
    """One checked step. `path` is where it is in the declaration (`steps.2`, `steps.2.parallel.0`)."""

    step: Step
    path: str
    task: CompiledTemplate | None = None
    child: CompiledWorkflow | None = None
    #: A code step's function (`call:`).
    call: CompiledCall | None = None
    members: tuple[CompiledStep, ...] = ()
    param_types: Mapping[str, Any] = attrs.field(factory=dict)
    output_type: Any = None
    #: The element type of a `for_each` step's list (what `{{item}}` is).
    item_type: Any = None
    inputs: Mapping[str, Value] = attrs.field(factory=dict)
    when: Expression | None = None
    for_each: Expression | None = None
    routes: tuple[CompiledRoute, ...] = ()
    sets: tuple[tuple[str, Expression], ...] = ()
    #: state field <- path in the answer (empty path: the whole answer).
    output_map: tuple[tuple[str, tuple[str, ...]], ...] = ()
    fallthrough: str = END
    reads_entry: tuple[Read, ...] = ()
    reads_run: tuple[Read, ...] = ()
    reads_set: tuple[Read, ...] = ()
    reads_route: tuple[Read, ...] = ()
    #: An approval step's message, rendered from the state like a text input.
    message: Value | None = None

    @property
    def id(self) -> str:
        return self.step.id

    @property
    def options(self) -> CallOptions:
        """What the step asks of the task it runs (its `model`, `retries`, `limits`, `repair`, `model_settings`)."""
        step = self.step
        return CallOptions(
            model=step.model,
            retries=step.retries,
            limits=step.limits,
            repair=step.repair,
            model_settings=step.model_settings,
        )

    @property
    def output_writes(self) -> frozenset[str]:
        """The fields its outputs (or `collect`) write."""
        found = {field for field, _ in self.output_map}
        if self.step.collect is not None:
            found.add(self.step.collect)
        return frozenset(found)

    @property
    def writes(self) -> frozenset[str]:
        """Every field it may write when it succeeds (its members' too)."""
        own = self.output_writes | {field for field, _ in self.sets}
        return frozenset(own.union(*(m.writes for m in self.members)))

    @property
    def sure_writes(self) -> frozenset[str]:
        """The fields written whenever it succeeds (a member that may be skipped or fail on is not sure)."""
        own = self.output_writes | {field for field, _ in self.sets}
        sure = [m.writes for m in self.members if m.step.when is None and m.step.on_failure.action == "stop"]
        return frozenset(own.union(*sure))

    @property
    def unconditional_route(self) -> bool:
        """Whether a route entry has no `when` (as declared: an entry whose `when` did not parse still has one)."""
        return any(route.when is None for route in self.step.route or [])

    def exits(self) -> list[str]:
        """Where control may go after this step, in order: the route targets, then the next step."""
        targets = [route.to for route in self.routes]
        if not self.unconditional_route:
            targets.append(self.fallthrough)
        return list(dict.fromkeys(targets))

    def edges(self) -> list[tuple[str, EdgeKind]]:
        """Every way out: `(target, kind)`. A `fail` step that runs ends the run; past its bound, a step with
        `on_max_visits: {to: STEP}` goes there without running (a `skip` edge)."""
        found: list[tuple[str, EdgeKind]] = [] if self.step.kind == "fail" else [(t, "ok") for t in self.exits()]
        bound = self.step.on_max_visits
        if self.step.max_visits is not None and bound.action == "to" and bound.to is not None:
            # The bound is reached after the step's visits: each of them wrote, unless it may be skipped or fail on.
            ran = self.step.when is None and self.step.on_failure.action == "stop"
            found.append((bound.to, "ok" if ran else "skip"))
        if self.step.when is not None:
            found.extend((t, "skip") for t in self.exits())
        action = self.step.on_failure.action
        if action == "continue":
            found.extend((t, "fail") for t in self.exits())
        elif action == "to" and self.step.on_failure.to is not None:
            found.append((self.step.on_failure.to, "fail"))
        return found


@attrs.frozen(kw_only=True)
class CompiledMigration:
    """One checked migration: its `convert` expressions parsed, its `call` function imported."""

    migration: Migration
    convert: tuple[tuple[str, Expression], ...] = ()
    call: Callable[[dict[str, Any]], Any] | None = None

    @property
    def label(self) -> str:
        return self.migration.label


@attrs.frozen(kw_only=True, eq=False)
class CompiledWorkflow:
    """A workflow checked against its tasks, sub-workflows, state and routes."""

    workflow: Workflow
    state_cls: type[BaseModel]
    steps: tuple[CompiledStep, ...]
    #: Run inputs: the state fields no step writes, in declaration order; `required_inputs` lack a default.
    run_inputs: tuple[str, ...]
    required_inputs: tuple[str, ...]
    #: Every step by id, members of `parallel` groups included.
    index: Mapping[str, CompiledStep] = attrs.field(factory=dict)
    #: The declared migrations, checked (a chain that ends at `workflow.version`).
    migrations: tuple[CompiledMigration, ...] = ()
    #: The state fields declared `redact: true`: never written to a run's store in clear, never logged.
    redacted_fields: frozenset[str] = frozenset()

    @property
    def name(self) -> str:
        return self.workflow.name

    @property
    def version(self) -> str | None:
        return self.workflow.version

    @property
    def first(self) -> str:
        return self.steps[0].id

    @property
    def options(self) -> CallOptions:
        """What the workflow asks of every task its steps run (below each step's own)."""
        workflow = self.workflow
        return CallOptions(
            model=workflow.model,
            retries=workflow.retries,
            repair=workflow.repair,
            model_settings=workflow.model_settings,
        )

    @property
    def location(self) -> SourceLocation | None:
        return self.workflow.location

    def writers(self) -> dict[str, list[str]]:
        """The ids of the steps that write each field."""
        found: dict[str, list[str]] = {}
        for step in self.index.values():
            own = step.output_writes | {field for field, _ in step.sets}
            for field in sorted(own):
                found.setdefault(field, []).append(step.id)
        return found

    def input_types(self) -> dict[str, Any]:
        """The annotation of each run input."""
        fields = self.state_cls.model_fields
        return {name: fields[name].annotation for name in self.run_inputs}
