"""Warnings about a valid workflow that still looks wrong: values computed or given that nothing uses.

Each came from real examples ported to atomtask, where they were bugs: an order fetched that no prompt
reads, a task whose answer is stored nowhere (paid for, then dropped), a run input no step reads. A
warning does not stop registration; `atomtask check` reports it (and fails on it with `--strict`).

- W110 a step writes state fields, none of which a step after it reads (a step written last makes results);
- W111 a step runs a task, a sub-workflow or a function, and stores its answer nowhere;
- W112 a run input is read by no step.
"""

from __future__ import annotations

import typing
from collections.abc import Iterator

import attrs
from atomtask.errors import SourceLocation
from atomtask.system._workflows import END
from atomtask.workflows._compiled import CompiledStep, CompiledWorkflow

__all__ = ["WorkflowWarning", "usage_warnings"]


@attrs.frozen(kw_only=True)
class WorkflowWarning:
    """One warning about a workflow: its code, the message, the step, and where it was declared."""

    code: str
    message: str
    step: str | None
    location: SourceLocation | None


def usage_warnings(compiled: CompiledWorkflow) -> list[WorkflowWarning]:
    """The W110-W112 warnings of a checked workflow, in step order."""
    steps = list(_all(compiled.steps))
    read = {r.field for step in steps for r in (*step.reads_entry, *step.reads_run, *step.reads_set, *step.reads_route)}
    found: list[WorkflowWarning] = []
    workflow = compiled.workflow

    def warn(code: str, message: str, where: str, step: str | None = None) -> None:
        found.append(WorkflowWarning(code=code, message=message, step=step, location=workflow.location_of(where)))

    for step in steps:
        if _drops_answer(step):
            runs = step.step.kind
            what = {"task": f"task {step.step.task!r}", "workflow": f"workflow {step.step.workflow!r}"}.get(
                runs, f"function {step.step.call!r}"
            )
            warn(
                "W111",
                f"Step {step.id!r} runs {what} but stores its answer nowhere (no `output`, `outputs` or `collect`), "
                "so what it returns is dropped. Store it in a state field, or remove the step.",
                step.path,
                step.id,
            )
    later = _followers(compiled)
    for step in steps:
        own = sorted(step.output_writes | {field for field, _ in step.sets})
        if not own or not later.get(step.id) or any(f in read or f in compiled.run_inputs for f in own):
            continue  # something it writes is used, or it is written last: a result of the run
        fields = ", ".join(f"`state.{f}`" for f in own)
        warn(
            "W110",
            f"Step {step.id!r} writes {fields}, but no step after it reads {'it' if len(own) == 1 else 'them'}. "
            f"Pass it to the step that needs it (an input such as `{{{{state.{own[0]}}}}}`), or stop writing it; if "
            "it is a result of the run, ignore this warning.",
            _write_path(step, own[0]),
            step.id,
        )
    for name in compiled.run_inputs:
        if name not in read:
            where = _field_path(compiled, name)
            warn(
                "W112",
                f"Run input `{name}` is read by no step: the caller's value is never used. Pass it to a step "
                f"(`{{{{state.{name}}}}}`), or remove the field.",
                where,
            )
    return found


def _all(steps: tuple[CompiledStep, ...]) -> Iterator[CompiledStep]:
    for step in steps:
        yield step
        yield from step.members


def _drops_answer(step: CompiledStep) -> bool:
    declared = step.step
    if declared.kind not in ("task", "workflow", "call"):
        return False
    if declared.output is not None or declared.outputs or declared.collect is not None:
        return False
    returns = step.call.returns if step.call is not None else None
    return not (declared.kind == "call" and returns in (None, type(None), typing.Any))


def _followers(compiled: CompiledWorkflow) -> dict[str, bool]:
    """For each step (members by their group), whether another step may run after it."""
    edges = {step.id: [t for t, _ in step.edges() if t != END] for step in compiled.steps}
    found: dict[str, bool] = {}
    for step in compiled.steps:
        seen: set[str] = set()
        todo = list(edges[step.id])
        while todo:
            nxt = todo.pop()
            if nxt not in seen:
                seen.add(nxt)
                todo.extend(edges.get(nxt, []))
        after = bool(seen)
        found[step.id] = after
        found.update((member.id, after) for member in step.members)
    return found


def _write_path(step: CompiledStep, field: str) -> str:
    declared = step.step
    if field in declared.set_:
        return f"{step.path}.set.{field}"
    if declared.output == field:
        return f"{step.path}.output"
    if field in declared.outputs:
        return f"{step.path}.outputs.{field}"
    if declared.collect == field:
        return f"{step.path}.collect"
    return step.path


def _field_path(compiled: CompiledWorkflow, name: str) -> str:
    for number, field in enumerate(compiled.workflow.state.fields or []):
        if isinstance(field, dict) and field.get("name") == name:
            return f"state.fields.{number}"
    return "state"
