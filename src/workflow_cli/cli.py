"""The `atomtask workflow` actions: run a workflow with a status line per step, show its data flow, draw it, list them.

Each action takes a loaded `TaskSystem` and writes to the streams it is given; the main CLI
(`atomtask.cli_commands.workflow`) parses the arguments, builds the system and decides the exit
status. `show`, `graph` and `list` never import pydantic-ai: they read the checked workflows only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TextIO

from atomtask.system.workflow_results import StepVisit, WorkflowResult
from atomtask.workflows.graph import dataflow_summary, mermaid, visit_line

if TYPE_CHECKING:
    from atomtask.task_system import TaskSystem

__all__ = ["graph", "list_workflows", "run", "show", "state_json", "status_line"]


def run(
    system: TaskSystem,
    name: str,
    inputs: Mapping[str, Any],
    *,
    model: str | None,
    model_settings: Mapping[str, Any] | None,
    limits: Mapping[str, Any] | None,
    err: TextIO,
    quiet: bool,
) -> WorkflowResult[Any]:
    """Run workflow `name`, printing one line per top-level step visit on `err` as it ends (none with `quiet`).

    Raises what `TaskSystem.run_workflow` raises before a run (unknown workflow, bad model or settings).
    """
    compiled = system.workflows.compiled(name)  # an unknown name raises before the executor is built
    notice_shown = False

    def on_visit(visit: StepVisit) -> None:
        nonlocal notice_shown
        if quiet:
            return
        notice = visit.result.notes.default_model_notice if visit.result is not None else None
        if notice and not notice_shown:
            notice_shown = True
            print(notice, file=err)
        print(f"atomtask: {compiled.name} {visit_line(visit)}", file=err, flush=True)

    return system.run_workflow(
        name, inputs, model=model, model_settings=model_settings, limits=limits or None, on_visit=on_visit
    )


def status_line(result: WorkflowResult[Any]) -> str:
    """The final line of a run: status, where it stopped, steps, requests, tokens and time."""
    steps = len(result.steps)
    requests = result.usage.requests
    at = f" at step {result.error.step!r}" if result.error is not None and result.error.step else ""
    return (
        f"atomtask: {result.workflow} {result.status.value}{at} ({steps} step visit{'s' if steps != 1 else ''}, "
        f"{requests} request{'s' if requests != 1 else ''}, {result.usage.total_tokens} tokens, "
        f"{result.duration_ms / 1000:.2f}s)"
    )


def state_json(result: WorkflowResult[Any]) -> str:
    """The run's final state (as it was when a failed run stopped) as JSON."""
    state = result.state
    document = state.model_dump(mode="json") if state is not None else None
    return json.dumps(document, indent=2, ensure_ascii=False)


def show(system: TaskSystem, name: str, out: TextIO) -> None:
    """The workflow's state fields (run inputs marked), steps, what each reads and writes, and where each goes."""
    out.write(dataflow_summary(system.workflows.compiled(name)))


def graph(system: TaskSystem, name: str, out: TextIO) -> None:
    """The workflow as a Mermaid `flowchart` (paste it into a ```mermaid block)."""
    out.write(mermaid(system.workflows.compiled(name)))


def list_workflows(system: TaskSystem, out: TextIO) -> None:
    """Every registered workflow's name and description, one per line (tab-separated)."""
    for name in system.workflows.names():
        workflow = system.workflows.get(name)
        description = " ".join((workflow.description or "").split())
        print(f"{name}\t{description}".rstrip(), file=out)
