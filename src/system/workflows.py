"""What users declare: a `Workflow` (also the YAML file format): a typed `state` and the `steps` over it.

A plain declaration, like `Template`: the state fields are kept as written (the schemas layer builds
the class), and every check against the registered tasks, the state and the routes happens when the
workflow is registered (`atomtask.workflows`). A workflow read from a file remembers where each of
its parts was declared (`location_of("steps.2.inputs.topic")`), so errors point at file:line:col.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from atomtask.system.errors import SourceLocation
from atomtask.system.templates import RepairMode, TemplateLimits
from atomtask.system.workflow_steps import END, ApprovalDecision, OnFailure, Route, Step
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

__all__ = [
    "END",
    "ApprovalDecision",
    "Migration",
    "NodeLocator",
    "OnFailure",
    "Route",
    "Step",
    "Workflow",
    "WorkflowState",
    "collect_origins",
]

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")

#: For a mapping read from a file: where it starts and where each of its keys' values start.
NodeLocator = Callable[[Mapping[str, Any]], "tuple[SourceLocation, Mapping[str, SourceLocation]] | None"]


class WorkflowState(BaseModel):
    """The workflow's state: `fields` (the field syntax of named schemas) or `schema: Name`.

    In YAML `state: Name` is short for `state: {schema: Name}`, and a bare list for `{fields: [...]}`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    fields: list[dict[str, Any]] | None = None
    schema_: str | None = Field(default=None, alias="schema")
    description: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"schema": value}
        if isinstance(value, list):
            return {"fields": value}
        return value

    @model_validator(mode="after")
    def _one_source(self) -> WorkflowState:
        if (self.fields is None) == (self.schema_ is None):
            raise ValueError("`state` has either `fields: [...]` or `schema: Name`")
        if self.fields is not None and not self.fields:
            raise ValueError("`state.fields` needs at least one field")
        return self


def _version_label(value: Any) -> Any:
    # `version: 1.0` in YAML is a float; a version is a label, kept as written.
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


class Migration(BaseModel):
    """How a run's state recorded under version `from` becomes the state of version `to` (on resume).

    Either edits, applied in this order to the old state: `rename` (`{old: new}`), `drop` (`[field]`),
    `set` (`{field: value}`, a literal) and `convert` (`{field: EXPR}`, an expression of the workflow's
    language over the OLD state, e.g. `len(state.notes)`); or `call: "package.module:function"`, a
    function of the old state (a dict) giving the new one, importable only from the `importable`
    packages. `resume_at` names the step the resumed run continues at (when its step is gone).

    Example (YAML): `{from: "1.0", to: "1.1", rename: {title: headline}, set: {score: 0}}`
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    from_: str = Field(alias="from")
    to: str
    rename: dict[str, str] = Field(default_factory=dict)
    drop: list[str] = Field(default_factory=list)
    set_: dict[str, Any] = Field(default_factory=dict, alias="set")
    convert: dict[str, str] = Field(default_factory=dict)
    call: str | None = None
    resume_at: str | None = None

    _versions = field_validator("from_", "to", mode="before")(_version_label)

    @model_validator(mode="after")
    def _one_way(self) -> Migration:
        edits = [key for key in ("rename", "drop", "set_", "convert") if key in self.model_fields_set]
        if self.call is not None and edits:
            raise ValueError(f"a migration has `call` or edits (`{edits[0].rstrip('_')}`), not both")
        if self.from_ == self.to:
            raise ValueError(f"a migration goes from one version to another, not from {self.from_!r} to itself")
        return self

    @property
    def label(self) -> str:
        """`1.0 -> 1.1`."""
        return f"{self.from_} -> {self.to}"


class Workflow(BaseModel):
    """A workflow: typed state flowing through steps, checked before any model is called.

    Example:
        ```python
        Workflow(
            name="greet_twice",
            state={"fields": [{"name": "who", "type": "str"}, {"name": "hello", "type": "str"}]},
            steps=[Step(id="hi", task="greet", inputs={"who": "{{state.who}}"}, output="hello")],
        )
        ```

    `model`, `model_settings`, `retries` and `repair` are defaults for every step (a step's own
    setting wins; both win over the task's). `limits` hold across every step of a run. `migrations`
    turn the state of a run recorded under an older `version` into this version's, on resume.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    version: str | None = None
    description: str | None = None
    state: WorkflowState
    limits: TemplateLimits | None = None
    steps: list[Step] = Field(min_length=1)
    model: str | None = None
    model_settings: dict[str, Any] | None = None
    retries: int | None = Field(default=None, ge=0, le=20)
    repair: bool | RepairMode | None = None  # `true`/`false` or a mode (`safe`, `lenient`, `off`)
    migrations: list[Migration] = Field(default_factory=list)

    _location: SourceLocation | None = PrivateAttr(default=None)
    _origins: dict[str, SourceLocation] = PrivateAttr(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        if not _NAME_RE.match(value):
            raise ValueError(
                f"workflow name {value!r} must start with a letter or `_` and contain only letters, digits, `_` and `-`"
            )
        return value

    _version_text = field_validator("version", mode="before")(_version_label)

    @property
    def location(self) -> SourceLocation | None:
        """Where this workflow was declared, when it came from a file or source text."""
        return self._location

    def located(self, location: SourceLocation | None, origins: Mapping[str, SourceLocation] | None = None) -> Workflow:
        """Attach its source location and the locations of its parts (see `collect_origins`); returns `self`."""
        self._location = location
        if origins:
            self._origins = dict(origins)
        return self

    def location_of(self, path: str) -> SourceLocation | None:
        """The location of a dotted part (`steps.2.route.0.when`), else of its nearest known parent."""
        parts = path.split(".") if path else []
        while parts:
            found = self._origins.get(".".join(parts))
            if found is not None:
                return found
            parts.pop()
        return self._location

    def all_steps(self) -> list[tuple[str, Step]]:
        """Every step with its dotted path (`steps.1`, `steps.1.parallel.0`), groups before their members."""
        found: list[tuple[str, Step]] = []
        for index, step in enumerate(self.steps):
            found.append((f"steps.{index}", step))
            found.extend((f"steps.{index}.parallel.{i}", member) for i, member in enumerate(step.members))
        return found


def collect_origins(doc: Mapping[str, Any], node_of: NodeLocator) -> dict[str, SourceLocation]:
    """The locations of every part of a workflow mapping read from a file, by dotted path.

    `node_of(mapping)` says where a mapping starts and where each key's value starts (a file reader
    knows this); the result is what `Workflow.located` takes. Paths follow the document: `steps.2`,
    `steps.2.inputs.topic`, `steps.2.route.0.when`, `state.fields.1`.
    """
    origins: dict[str, SourceLocation] = {}

    def walk(value: Any, path: str) -> None:
        if isinstance(value, Mapping):
            node = node_of(value)
            if node is not None:
                start, keys = node
                if path:
                    origins.setdefault(path, start)
                for key, location in keys.items():
                    origins[f"{path}.{key}" if path else str(key)] = location
            for key, item in value.items():
                walk(item, f"{path}.{key}" if path else str(key))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, f"{path}.{index}")

    walk(doc, "")
    if isinstance(doc.get("state"), list):  # `state: [fields]` is short for `state: {fields: [...]}`
        origins = {_long_state_path(path): location for path, location in origins.items()}
    return origins


def _long_state_path(path: str) -> str:
    head, _, rest = path.partition(".")
    if head == "state" and rest[:1].isdigit():
        return f"state.fields.{rest}"
    return path
