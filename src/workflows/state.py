"""The typed state of a run and its budget: the first state from the run inputs, validated writes, the limits.

A state is an instance of the workflow's state class and is never changed in place: every write
validates the new values against their fields (types, constraints, the class's validators) on a copy
and returns the copy. A field that steps write may be absent until one does; reading it before is
an error (see `expressions.read_path`). The `Budget` holds a run's limits across all of its steps,
and a sub-workflow's budget draws on its parent's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
from atomtask.system.errors import did_you_mean
from atomtask.system.results import UsageNotes
from atomtask.system.templates import TemplateLimits
from atomtask.system.workflow_results import WorkflowFailure, WorkflowFailureReason
from atomtask.workflows.compiled import CompiledWorkflow
from atomtask.workflows.values import to_plain
from pydantic import BaseModel, ValidationError

__all__ = ["Budget", "StateWriteError", "initial_state", "write_state"]


class StateWriteError(Exception):
    """A value did not fit its state field; carries the field, the value and pydantic's first message."""

    def __init__(self, field: str, value: Any, problem: str) -> None:
        self.field = field
        self.value = value
        self.problem = problem
        super().__init__(f"`state.{field}` cannot be {_short(value)}: {problem}")


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def write_state(state: BaseModel, writes: Mapping[str, Any]) -> BaseModel:
    """A copy of `state` with `writes` validated into it; raises `StateWriteError` for a value that does not fit."""
    cls = type(state)
    new = state.model_copy()
    for field, value in writes.items():
        try:
            cls.__pydantic_validator__.validate_assignment(new, field, value)
        except ValidationError as exc:
            plain = to_plain(value)
            if plain is value or not _validates(cls, new, field, plain):
                raise StateWriteError(field, value, _first(exc)) from None
        except Exception as exc:  # a validator of the state class that cannot handle a partial state
            raise StateWriteError(field, value, f"{type(exc).__name__}: {exc}") from None
    # Keep the fields in declaration order (as `model_dump` and the repr show them), not in write order.
    values = new.__dict__
    object.__setattr__(new, "__dict__", {name: values[name] for name in cls.model_fields if name in values})
    return new


def _validates(cls: type[BaseModel], state: BaseModel, field: str, value: Any) -> bool:
    try:
        cls.__pydantic_validator__.validate_assignment(state, field, value)
    except ValidationError:
        return False
    return True


def _first(exc: ValidationError) -> str:
    error = exc.errors(include_url=False)[0]
    inner = ".".join(str(p) for p in error["loc"][1:])
    return f"{error['msg']}" + (f" (at `{inner}`)" if inner else "")


def initial_state(compiled: CompiledWorkflow, inputs: Mapping[str, Any]) -> BaseModel | WorkflowFailure:
    """The state a run starts from: the defaults and the validated run inputs; or why the inputs are wrong."""
    fields = compiled.state_cls.model_fields
    writers = compiled.writers()
    problems: list[str] = []
    for name in inputs:
        if name not in fields:
            problems.append(f"unknown input {name!r}.{did_you_mean(name, compiled.run_inputs)}".rstrip("."))
        elif name in writers:
            problems.append(f"{name!r} is written by step(s) {', '.join(map(repr, writers[name]))}, not a run input")
    for name in compiled.required_inputs:
        if name not in inputs:
            problems.append(f"missing required input {name!r}")
    state = compiled.state_cls.model_construct()
    if not problems:
        try:
            state = write_state(state, inputs)
        except StateWriteError as exc:
            problems.append(str(exc))
    if problems:
        listing = ", ".join(compiled.run_inputs) or "none"
        said = "; ".join(problems)
        stop = "" if said.endswith((".", "?", "!")) else "."
        return WorkflowFailure(
            reason=WorkflowFailureReason.INPUT_VALIDATION_FAILURE,
            message=f"Invalid inputs for workflow {compiled.name!r}: {said}{stop} Run inputs: {listing}.",
            details={"errors": problems, "run_inputs": list(compiled.run_inputs)},
        )
    return state


_METRICS = ("requests", "input_tokens", "output_tokens", "total_tokens", "cost")


@attrs.define
class Budget:
    """What a run may still spend: its own limits, and its parent's when it is a sub-workflow."""

    limits: TemplateLimits | None = None
    parent: Budget | None = None
    used: UsageNotes = attrs.field(factory=UsageNotes)

    def spend(self, usage: UsageNotes) -> None:
        """Count `usage` here and in every parent."""
        self.used = self.used + usage
        if self.parent is not None:
            self.parent.spend(usage)

    def exhausted(self) -> str | None:
        """The first limit already reached (e.g. `requests: 20`), or None."""
        left = self._left()
        for name in _METRICS:
            value = left.get(name)
            if value is not None and value <= 0:
                return name
        return None

    def remaining(self) -> TemplateLimits | None:
        """What the next call may spend (None: no limit); call `exhausted()` first."""
        left = {name: value for name, value in self._left().items() if value is not None and value > 0}
        return TemplateLimits(**left) if left else None

    def _left(self) -> dict[str, float | None]:
        own: dict[str, float | None] = {name: None for name in _METRICS}
        if self.limits is not None:
            spent = {
                "requests": self.used.requests,
                "input_tokens": self.used.input_tokens,
                "output_tokens": self.used.output_tokens,
                "total_tokens": self.used.total_tokens,
                "cost": self.used.cost or 0.0,
            }
            for name in _METRICS:
                limit = getattr(self.limits, name)
                if limit is not None:
                    own[name] = limit - spent[name]
        if self.parent is not None:
            for name, value in self.parent._left().items():
                if value is not None and (own[name] is None or value < (own[name] or 0)):
                    own[name] = value
        return own

    def describe(self, metric: str) -> str:
        """`requests: 20` for the limit that `metric` reached."""
        budget: Budget | None = self
        while budget is not None:
            if budget.limits is not None and getattr(budget.limits, metric) is not None:
                return f"{metric}: {getattr(budget.limits, metric)}"
            budget = budget.parent
        return metric
