"""The typed state of a run and its budget: the first state from the run inputs, validated writes, the limits.

A state is an instance of the workflow's state class and is never changed in place: every write
validates the new values against their fields (types, constraints, the class's validators) on a copy
and returns the copy. A field that steps write may be absent until one does; reading it before is
an error (see `_expressions.read_path`). The `Budget` holds a run's limits across all of its steps,
and a sub-workflow's budget draws on its parent's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from atomtask.errors import StateWriteError, did_you_mean
from atomtask.system._results import FailureReason, TaskError
from atomtask.workflows._compiled import CompiledWorkflow, to_plain
from pydantic import BaseModel, ValidationError

__all__ = ["initial_state", "write_state"]


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
    # Fields in declaration order (as `model_dump` and the repr show them), not in write order: a state
    # built up from nothing (a migrated run's) gets its fields as they are written, so it is rebuilt.
    values = dict(new)
    if list(values) != [name for name in cls.model_fields if name in values]:
        ordered = {name: values[name] for name in cls.model_fields if name in values}
        return cls.model_construct(new.model_fields_set, **ordered)
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


def initial_state(compiled: CompiledWorkflow, inputs: Mapping[str, Any]) -> BaseModel | TaskError:
    """The state a run starts from: the defaults and the validated run inputs; or why the inputs are wrong."""
    fields = compiled.state_cls.model_fields
    writers = compiled.writers()
    problems: list[str] = []
    for name in inputs:
        if name not in fields:
            problems.append(f"unknown input {name!r}.{did_you_mean(name, compiled.run_inputs)}".rstrip("."))
        elif name not in compiled.run_inputs:
            problems.append(
                f"{name!r} is written by step(s) {', '.join(map(repr, writers.get(name, [])))}, not a run input (to "
                f"give its first value, declare the state field `input: true`)"
            )
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
        return TaskError(
            reason=FailureReason.INPUT_VALIDATION_FAILURE,
            message=f"Invalid inputs for workflow {compiled.name!r}: {said}{stop} Run inputs: {listing}.",
            details={"errors": problems, "run_inputs": list(compiled.run_inputs)},
        )
    return state
