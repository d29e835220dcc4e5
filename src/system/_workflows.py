"""What users declare: a `Workflow` (also the YAML file format): a typed `state` and the `steps` over it.

A plain declaration, like `Template`: the state fields are kept as written (the schemas layer builds
the class), and every check against the registered tasks, the state and the routes happens when the
workflow is registered (`atomtask.workflows`). A workflow read from a file remembers where each of
its parts was declared (`location_of("steps.2.inputs.topic")`), so errors point at file:line:col.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Literal

from atomtask.errors import SourceLocation
from atomtask.system._templates import RepairSetting, TemplateLimits
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

__all__ = [
    "END",
    "ApprovalDecision",
    "FailEnd",
    "Migration",
    "NodeLocator",
    "OnFailure",
    "OnMaxVisits",
    "Route",
    "Step",
    "Workflow",
    "WorkflowState",
    "collect_origins",
    "parse_duration",
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
    repair: RepairSetting | None = None  # `true`/`false` or a mode (`safe`, `lenient`, `off`)
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


#: The route target that ends the run.
END = "end"

_ID_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Keys that only make sense on a step that runs a task or a sub-workflow, not on a `parallel` group.
_RUN_KEYS = ("inputs", "outputs", "output", "model", "retries", "limits", "model_settings", "repair", "set_")
# Keys of a step that runs something, which an approval step (it waits for a person) does not take.
_NOT_APPROVAL = (
    "inputs", "outputs", "model", "retries", "limits", "model_settings", "repair", "for_each", "on_failure", "fail",
)  # fmt: skip
_APPROVAL_KEYS = ("message", "timeout", "on_timeout")
_NUMBER = r"(\d+(?:\.\d+)?)"
_DURATION_RE = re.compile(rf"^\s*(?:{_NUMBER}d)?\s*(?:{_NUMBER}h)?\s*(?:{_NUMBER}m)?\s*(?:{_NUMBER}s)?\s*$")


def parse_duration(value: Any) -> float:
    """Seconds from a duration: a number of seconds, or text such as `24h`, `30m`, `1h30m`, `45s`, `2d`.

    Raises `ValueError` (with the accepted forms) for anything else, zero or negative included.
    """
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        match = _DURATION_RE.match(value) if isinstance(value, str) else None
        if match is None or not any(match.groups()):
            raise ValueError(
                f"a duration is a number of seconds or text like `24h`, `30m`, `1h30m`, `45s`, `2d`; not {value!r}"
            )
        days, hours, minutes, secs = (float(g) if g else 0.0 for g in match.groups())
        seconds = days * 86400 + hours * 3600 + minutes * 60 + secs
    if seconds <= 0:
        raise ValueError(f"a duration must be more than zero, not {value!r}")
    return seconds


class ApprovalDecision(BaseModel):
    """The decision an approval step writes to its `output:` field (a `bool` field gets only `approved`).

    `by` is who decided (when known); `at` is when; a timeout decides by `on_timeout` with `by` None.
    """

    model_config = ConfigDict(frozen=True)

    approved: bool
    note: str | None = None
    by: str | None = None
    at: datetime


class Route(BaseModel):
    """One way out of a step: go `to` a step id (or `end`) when `when` is true (always, without `when`).

    In YAML a bare step id is short for `{to: STEP}`: `route: [{when: "...", to: revise}, end]`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    when: str | None = None
    to: str

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return {"to": value} if isinstance(value, str) else value


class OnFailure(BaseModel):
    """What to do when a step's task FAILED (or its outputs did not fit the state).

    In YAML: `stop` (the default: the run fails), `continue` (go on as if the step had been skipped),
    `{to: STEP}` (jump to a step), or `{retry_with: MODEL}` (run the step again with each model in
    turn; `retry_with` may be a list, and may be combined with `to` or `then` for when they all fail).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    retry_with: list[str] = Field(default_factory=list)
    to: str | None = None
    then: Literal["stop", "continue"] = "stop"

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            if value not in ("stop", "continue"):
                raise ValueError(
                    f"`on_failure` is `stop`, `continue`, `{{to: STEP}}` or `{{retry_with: MODEL}}`, not {value!r}"
                )
            return {"then": value}
        if isinstance(value, dict) and isinstance(value.get("retry_with"), str):
            return {**value, "retry_with": [value["retry_with"]]}
        return value

    @model_validator(mode="after")
    def _one_exit(self) -> OnFailure:
        if self.to is not None and "then" in self.model_fields_set:
            raise ValueError("`on_failure` has both `to` and `then`; keep one")
        return self

    @property
    def action(self) -> Literal["stop", "continue", "to"]:
        """What happens once every `retry_with` model has failed too."""
        return "to" if self.to is not None else self.then


class OnMaxVisits(BaseModel):
    """What happens when a step is reached once more than its `max_visits`.

    In YAML: `fail` (the default: the run fails with `max_visits_exceeded`), `end` (the run ends
    normally, as a `loop max N` does), or `{to: STEP}` (go on at a step after the loop, without running
    this one). The step is not run again in any case.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    to: str | None = None
    then: Literal["fail", "end"] = "fail"

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            if value not in ("fail", "end"):
                raise ValueError(f"`on_max_visits` is `fail`, `end` or `{{to: STEP}}`, not {value!r}")
            return {"then": value}
        return value

    @model_validator(mode="after")
    def _one_exit(self) -> OnMaxVisits:
        if self.to is not None and "then" in self.model_fields_set:
            raise ValueError("`on_max_visits` has both `to` and `then`; keep one")
        return self

    @property
    def action(self) -> Literal["fail", "end", "to"]:
        """`fail`, `end`, or `to` (go on at step `to`; `to: end` ends the run)."""
        if self.to == END:
            return "end"
        return "to" if self.to is not None else self.then


class FailEnd(BaseModel):
    """A step that ends the run FAILED on purpose: `fail: {reason: NAME, message: "..."}`.

    The run's error has the reason `failed_by_step`, the step's id, the rendered `message` (placeholders
    such as `{{state.x}}` are filled from the state) and `details.name`, the `reason` written here (an
    identifier the caller can branch on). In YAML `fail: NAME` is short for `fail: {reason: NAME}`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    reason: str
    message: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return {"reason": value} if isinstance(value, str) else value

    @field_validator("reason")
    @classmethod
    def _identifier(cls, value: str) -> str:
        if not _IDENT_RE.match(value):
            raise ValueError(f"`fail.reason` is a name such as `not_found` (letters, digits, `_`), not {value!r}")
        return value


class Step(BaseModel):
    """One step of a workflow.

    Example:
        ```python
        Step(id="review", task="review_article", inputs={"article": "{{state.article}}"},
             outputs={"score": "score"}, route=[Route(when="state.score < 7", to="revise"), Route(to="end")])
        ```

    `inputs` maps each parameter to a value: a whole-value placeholder (`"{{state.x}}"`) passes the
    typed value, other strings are rendered text, anything else is a literal. `outputs` maps a state
    field to an output field (`{score: score}`); `output` stores the whole answer in one field.
    `set` assigns expressions to fields after the outputs. `for_each` runs the step once per element
    of a list (`as` names the element, `{{item}}` by default) and `collect` stores the answers in order.

    `call: "package.module:function"` runs a typed Python function instead of a task (a *code step*):
    `inputs` bind its parameters, its return value is the answer; the function is imported from the
    `importable` packages only. On a code step `retries` re-runs the function after an exception and
    `timeout` (seconds, or `30s`, `2m`) bounds each run.

    A step with only `set` (no task, workflow or call) computes: it assigns its expressions, in order,
    to state fields. A step with `fail: {reason: NAME, message: "..."}` ends the run FAILED on purpose
    (with `when`, only when its condition holds). `max_visits` bounds how often a step runs;
    `on_max_visits` says what happens when it is reached once more: `fail` (the default), `end` or
    `{to: STEP}`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    id: str
    task: str | None = None
    workflow: str | None = None
    #: A Python function to run instead of a task: `"package.module:function"`.
    call: str | None = None
    parallel: list[Step] | None = None
    inputs: dict[str, Any] = Field(default_factory=dict)
    outputs: dict[str, str] = Field(default_factory=dict)
    output: str | None = None
    model: str | None = None
    retries: int | None = Field(default=None, ge=0, le=20)
    limits: TemplateLimits | None = None
    model_settings: dict[str, Any] | None = None
    repair: RepairSetting | None = None  # `true`/`false` or a mode (`safe`, `lenient`, `off`)
    when: str | None = None
    route: list[Route] | None = None
    set_: dict[str, str] = Field(default_factory=dict, alias="set")
    for_each: str | None = None
    as_: str = Field(default="item", alias="as")
    concurrency: int = Field(default=1, ge=1)
    collect: str | None = None
    on_failure: OnFailure = Field(default_factory=OnFailure)
    max_visits: int | None = Field(default=None, ge=1)
    on_max_visits: OnMaxVisits = Field(default_factory=OnMaxVisits)
    #: Ends the run FAILED on purpose, with this reason and message.
    fail: FailEnd | None = None
    #: `approval` for a step that waits for a person's decision; other steps say what they run instead.
    type: Literal["approval"] | None = None
    #: An approval step's text for the person deciding (with `{{state.x}}` placeholders).
    message: str | None = None
    #: How long an approval step waits, or a code step's function may run, in seconds (`24h`, `30m` and
    #: `45s` are read as durations).
    timeout: float | None = None
    on_timeout: Literal["reject", "approve"] = "reject"

    @field_validator("timeout", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return None if value is None else parse_duration(value)

    @field_validator("id")
    @classmethod
    def _valid_id(cls, value: str) -> str:
        if not _ID_RE.match(value):
            raise ValueError(
                f"step id {value!r} must start with a letter or `_` and contain only letters, digits, `_` and `-`"
            )
        if value == END:
            raise ValueError(f"`{END}` is the route target that ends the run; give the step another id")
        return value

    @field_validator("as_")
    @classmethod
    def _valid_item_name(cls, value: str) -> str:
        if not _IDENT_RE.match(value) or value == "state":
            raise ValueError(f"`as: {value}` must be an identifier other than `state`")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Step:
        if self.type == "approval":
            return self._check_approval()
        extra = [key for key in _APPROVAL_KEYS if key in self.model_fields_set]
        if extra == ["timeout"] and self.call is not None:
            extra = []  # a code step's function runs for at most `timeout`
        if extra:
            also = " or a code step (`call`)" if extra[0] == "timeout" else ""
            raise ValueError(f"`{extra[0]}` only applies to an approval step (`type: approval`){also}")
        if "on_max_visits" in self.model_fields_set and self.max_visits is None:
            raise ValueError("`on_max_visits` says what happens at the bound: give the step `max_visits: N` too")
        kinds = [key for key in ("task", "workflow", "parallel") if getattr(self, key) is not None]
        if self.fail is not None:
            return self._check_fail([*kinds, *(["call"] if self.call is not None else [])])
        # `call` beside another kind is reported by the workflow checks, under its own code (E121).
        if self.call is None and not kinds and self.set_:
            return self._check_compute()
        if self.call is None and len(kinds) != 1:
            found = ", ".join(f"`{k}`" for k in kinds) or "none of them"
            raise ValueError(
                f"a step has exactly one of `task`, `workflow`, `call` or `parallel` (found {found}); a step that "
                "only computes has just `set`, and one that ends the run failed has `fail`"
            )
        if self.output is not None and self.outputs:
            raise ValueError("a step has `output` (the whole answer) or `outputs` (chosen fields), not both")
        loop_keys = [k for k in ("collect", "as_", "concurrency") if k in self.model_fields_set]
        if self.for_each is None and loop_keys:
            raise ValueError(f"`{loop_keys[0].rstrip('_')}` only applies with `for_each`")
        if self.for_each is not None and (self.output is not None or self.outputs):
            raise ValueError("a `for_each` step stores its answers with `collect: FIELD`, not `output`/`outputs`")
        if self.parallel is not None:
            self._check_group(self.parallel)
        return self

    def _check_compute(self) -> Step:
        """A step that only computes: `set`, and what decides whether and where it goes (`when`, `route`)."""
        for key in (*_RUN_KEYS, "for_each", "collect", "as_", "concurrency"):
            if key != "set_" and key in self.model_fields_set:
                raise ValueError(
                    f"`{key.rstrip('_')}` does not apply to a step that only computes (`set` without `task`, "
                    "`workflow` or `call`)"
                )
        if self.on_failure.retry_with:
            raise ValueError("a step that only computes calls no model: it cannot `retry_with`")
        return self

    def _check_fail(self, kinds: list[str]) -> Step:
        """A step that ends the run failed: `fail`, and `when` (it fails only when its condition holds)."""
        if kinds:
            raise ValueError(
                f"a step with `fail` ends the run; it has no `{kinds[0]}` (put `fail` on a step of its own after it)"
            )
        allowed = {"id", "fail", "when"}
        extra = [key for key in self.model_fields_set if key not in allowed]
        if extra:
            key = sorted(extra)[0].rstrip("_")
            raise ValueError(f"`{key}` does not apply to a step with `fail` (it takes `when` and nothing else)")
        return self

    def _check_approval(self) -> Step:
        runs = [key for key in ("task", "workflow", "call", "parallel") if getattr(self, key) is not None]
        if runs:
            raise ValueError(f"an approval step waits for a person; it has no `{runs[0]}`")
        for key in (*_NOT_APPROVAL, "collect", "as_", "concurrency"):
            if key in self.model_fields_set:
                raise ValueError(f"`{key.rstrip('_')}` does not apply to an approval step (`type: approval`)")
        if self.output is None:
            raise ValueError("an approval step needs `output: FIELD`, the state field that receives the decision")
        return self

    def _check_group(self, members: list[Step]) -> None:
        if not members:
            raise ValueError("`parallel` needs at least one step")
        if self.for_each is not None:
            raise ValueError("a `parallel` group cannot have `for_each`; put `for_each` on a step inside it")
        if self.on_failure.retry_with:
            raise ValueError("a `parallel` group cannot `retry_with`; put `on_failure` on the steps inside it")
        for key in _RUN_KEYS:
            if key in self.model_fields_set:
                raise ValueError(f"`{key.rstrip('_')}` belongs on the steps inside `parallel`, not on the group")
        for member in members:
            if member.parallel is not None:
                raise ValueError(f"step {member.id!r}: `parallel` groups do not nest")
            if member.type == "approval":
                raise ValueError(f"step {member.id!r}: an approval step cannot be inside `parallel`")
            if member.fail is not None:
                raise ValueError(f"step {member.id!r}: `fail` ends the run; put it on a step after the group")
            if member.route is not None or member.max_visits is not None:
                raise ValueError(f"step {member.id!r} is inside `parallel`: put `route`/`max_visits` on the group")
            if member.on_failure.to is not None:
                raise ValueError(
                    f"step {member.id!r} is inside `parallel`: `on_failure: {{to: ...}}` goes on the group"
                )

    @property
    def kind(self) -> Literal["task", "workflow", "call", "parallel", "approval", "set", "fail"]:
        """Which of `task`, `workflow`, `call` or `parallel` this step runs, or `approval` (it waits for a
        decision), `set` (it only computes) or `fail` (it ends the run failed)."""
        if self.type == "approval":
            return "approval"
        if self.fail is not None:
            return "fail"
        if self.task is not None:
            return "task"
        if self.workflow is not None:
            return "workflow"
        if self.call is not None:
            return "call"
        return "parallel" if self.parallel is not None else "set"

    @property
    def members(self) -> list[Step]:
        """The steps of a `parallel` group (empty for other steps)."""
        return list(self.parallel or [])
