"""A checked workflow, ready to run: `CompiledWorkflow` and its `CompiledStep`s (made by `workflows.checks`).

Everything the runner needs is resolved here once: the state class, each step's task (or
sub-workflow) and parameter types, the parsed inputs and expressions, the fields each step reads
and writes, and where each step goes next; the workflow's checked `migrations` and the state fields
declared `redact: true` (never stored in clear nor logged).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

import attrs
from atomtask.loading.checks import CompiledTemplate
from atomtask.system.errors import SourceLocation
from atomtask.system.workflows import END, Migration, Step, Workflow
from atomtask.workflows.expressions import Expression, PathRef
from atomtask.workflows.values import Value
from pydantic import BaseModel

__all__ = ["CompiledMigration", "CompiledRoute", "CompiledStep", "CompiledWorkflow", "EdgeKind", "Read"]

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
        """Every way out: `(target, kind)`."""
        found: list[tuple[str, EdgeKind]] = [(t, "ok") for t in self.exits()]
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
