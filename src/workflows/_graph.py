"""Pictures of a workflow: a Mermaid flowchart (`atomtask workflow graph`) and a data-flow summary (`workflow show`).

Both are plain text built from the compiled workflow, so they show what the checks saw: the routes
with their conditions, escalation edges, loops with their bounds, and for each step what it reads
from the state and what it writes back. A code step (`call:`) is drawn as a subroutine box, `[[...]]`,
labelled with its function.
"""

from __future__ import annotations

from atomtask.system._results import StepStatus, StepVisit
from atomtask.system._workflows import END
from atomtask.workflows._compiled import CompiledStep, CompiledWorkflow
from atomtask.workflows._types import describe

__all__ = ["dataflow_summary", "mermaid", "visit_line"]


def _node(step_id: str) -> str:
    # Mermaid ids: `end` is a keyword and `-` reads as an edge; prefix and replace.
    return "s_" + step_id.replace("-", "_")


def _quote(text: str) -> str:
    """Text for a Mermaid label in double quotes (`"` and `<`/`>` as entities, `|` kept out of edge syntax)."""
    return (
        text.replace("&", "#amp;")
        .replace('"', "#quot;")
        .replace("<", "#lt;")
        .replace(">", "#gt;")
        .replace("|", "#124;")
    )


def _label(step: CompiledStep) -> str:
    declared = step.step
    lines = [declared.id]
    if declared.task is not None:
        lines.append(f"task: {declared.task}")
    elif declared.workflow is not None:
        lines.append(f"workflow: {declared.workflow}")
    elif declared.call is not None:
        lines.append(f"call: {declared.call}")
    elif declared.kind == "approval":
        lines.append("approval")
    elif declared.kind == "set":
        lines.append("set " + ", ".join(declared.set_))
    elif declared.fail is not None:
        lines.append(f"fail: {declared.fail.reason}")
    if declared.for_each is not None:
        lines.append(f"for each {declared.as_} in {declared.for_each.strip('{} ')}")
    if declared.when is not None:
        lines.append(f"when {declared.when}")
    if declared.max_visits is not None:
        lines.append(f"max {declared.max_visits} visits")
    return "<br/>".join(_quote(line) for line in lines)


def mermaid(compiled: CompiledWorkflow) -> str:
    """A Mermaid `flowchart` of the workflow (GitHub renders it in a ```mermaid block).

    Example output:
        ```
        flowchart TD
            start((start)) --> s_research
            s_research["research<br/>task: research_topic"]
            s_research --> s_write
        ```
    """
    lines = ["flowchart TD", f"    start((start)) --> {_node(compiled.first)}"]
    for step in compiled.steps:
        if step.members:
            lines.append(f'    subgraph {_node(step.id)} ["{_label(step)}"]')
            lines.append("        direction LR")
            lines.extend(f"        {_box(m)}" for m in step.members)
            lines.append("    end")
        else:
            lines.append(f"    {_box(step)}")
    for step in compiled.steps:
        source = _node(step.id)
        for route in step.routes:
            target = _target(route.to)
            if route.when is None:
                lines.append(f"    {source} --> {target}")
            else:
                lines.append(f'    {source} -->|"{_quote(route.when.text)}"| {target}')
        bound = step.step.on_max_visits
        if step.step.max_visits is not None and bound.action != "fail":
            target = _target(bound.to if bound.action == "to" and bound.to is not None else END)
            lines.append(f'    {source} -.->|"{_quote(f"after {step.step.max_visits} visits")}"| {target}')
        if step.step.kind == "fail":
            lines.append(f"    {source} --> failed((failed))")
            if step.step.when is None:
                continue
        if not step.unconditional_route:
            label = "otherwise" if step.routes else ""
            arrow = f'-->|"{label}"|' if label else "-->"
            lines.append(f"    {source} {arrow} {_target(step.fallthrough)}")
        on_failure = step.step.on_failure
        if on_failure.retry_with:
            models = ", ".join(on_failure.retry_with)
            lines.append(f'    {source} -.->|"{_quote("failed: retry with " + models)}"| {source}')
        if on_failure.to is not None:
            lines.append(f'    {source} -.->|"failed"| {_target(on_failure.to)}')
    return "\n".join(lines) + "\n"


def _box(step: CompiledStep) -> str:
    """A step's node: a rectangle, or a subroutine box (`[[...]]`) for a code step."""
    if step.step.kind == "call":
        return f'{_node(step.id)}[["{_label(step)}"]]'
    return f'{_node(step.id)}["{_label(step)}"]'


def _target(step_id: str) -> str:
    return "stop((end))" if step_id == END else _node(step_id)


def dataflow_summary(compiled: CompiledWorkflow) -> str:
    """The steps in order with what each reads and writes, the run inputs, and where control goes."""
    workflow = compiled.workflow
    fields = compiled.state_cls.model_fields
    head = f"workflow {workflow.name}" + (f" (version {workflow.version})" if workflow.version else "")
    lines = [head]
    if workflow.description:
        lines.append(f"  {workflow.description.strip()}")
    lines.append(f"state: {compiled.state_cls.__name__}")
    for name, info in fields.items():
        writers = ", ".join(compiled.writers().get(name, []))
        role = (
            "run input, required"
            if name in compiled.required_inputs
            else "run input, optional"
            if name in compiled.run_inputs
            else "written by " + writers
        )
        if name in compiled.run_inputs and writers:
            role += f"; written by {writers}"
        lines.append(f"  {name}: {describe(info.annotation)}  ({role})")
    if workflow.limits is not None:
        set_limits = {k: v for k, v in workflow.limits.model_dump().items() if v is not None}
        lines.append("limits: " + ", ".join(f"{k}={v}" for k, v in set_limits.items()))
    lines.append("steps:")
    for number, step in enumerate(compiled.steps, start=1):
        lines.extend(_step_lines(step, f"{number}.", "  "))
    return "\n".join(lines) + "\n"


def _step_lines(step: CompiledStep, number: str, indent: str) -> list[str]:
    declared = step.step
    runs = (
        f"task {declared.task}"
        if declared.task
        else f"workflow {declared.workflow}"
        if declared.workflow
        else f"call {declared.call}"
        if declared.call
        else f"approval -> state.{declared.output}"
        if declared.kind == "approval"
        else f"fail: {declared.fail.reason}"
        if declared.fail is not None
        else "set"
        if declared.kind == "set"
        else f"parallel ({len(step.members)} steps)"
    )
    lines = [f"{indent}{number} {declared.id}: {runs}"]
    inner = indent + "   "
    if declared.when is not None:
        lines.append(f"{inner}when: {declared.when}")
    if declared.for_each is not None:
        concurrency = f", {declared.concurrency} at a time" if declared.concurrency > 1 else ""
        lines.append(f"{inner}for each {declared.as_} in {declared.for_each.strip('{} ')}{concurrency}")
    reads = sorted({r.ref.text for r in (*step.reads_entry, *step.reads_run, *step.reads_set, *step.reads_route)})
    if reads:
        lines.append(f"{inner}reads: {', '.join(reads)}")
    whole = "(the decision)" if declared.kind == "approval" else "(the whole answer)"
    writes = [f"{field} <- {'.'.join(parts) or whole}" for field, parts in step.output_map]
    if declared.collect is not None:
        writes.append(f"{declared.collect} <- [answers]")
    writes += [f"{field} <- {expr.text}" for field, expr in step.sets]
    if writes:
        lines.append(f"{inner}writes: {', '.join(writes)}")
    for index, member in enumerate(step.members, start=1):
        lines.extend(_step_lines(member, f"{number}{index}.", inner))
    if declared.on_failure.retry_with:
        lines.append(f"{inner}on failure: retry with {', '.join(declared.on_failure.retry_with)}")
    if declared.on_failure.action != "stop" or declared.on_failure.retry_with:
        then = declared.on_failure.to if declared.on_failure.action == "to" else declared.on_failure.action
        lines.append(f"{inner}on failure{' (then)' if declared.on_failure.retry_with else ''}: {then}")
    if declared.max_visits is not None:
        bound = declared.on_max_visits
        then = {"fail": "", "end": ", then end"}.get(bound.action, f", then {bound.to}")
        lines.append(f"{inner}max visits: {declared.max_visits}{then}")
    nexts = [f"{r.to} if {r.when.text}" if r.when is not None else r.to for r in step.routes]
    if not step.unconditional_route and (step.routes or step.members or number.count(".") == 1):
        nexts.append(step.fallthrough + (" otherwise" if step.routes else ""))
    if declared.kind == "fail":
        nexts = ["the run fails" + (f"; {step.fallthrough} when skipped" if declared.when is not None else "")]
    if nexts and number.count(".") == 1:
        lines.append(f"{inner}next: {'; '.join(nexts)}")
    return lines


def visit_line(visit: StepVisit) -> str:
    """One status line for a step visit (what `atomtask workflow run` prints on stderr).

    Example: `review #2: COMPLETE (openai-chat:gpt-4o, 1 request, 812 ms)`.
    """
    head = f"{visit.step} #{visit.visit}"
    if visit.item is not None:
        head += f" [item {visit.item}]"
    if visit.attempt:
        head += f" (retry {visit.attempt})"
    if visit.status is StepStatus.SKIPPED:
        return f"{head}: SKIPPED"
    if visit.call is not None:  # a code step calls no model
        facts = [f"call {visit.call}"]
    else:
        facts = [visit.model] if visit.model else []
        requests = visit.usage.requests
        facts.append(f"{requests} request{'s' if requests != 1 else ''}")
    duration = visit.result.notes.duration_ms if visit.result is not None else None
    if visit.subworkflow is not None:
        duration = visit.subworkflow.duration_ms
    if duration is not None:
        facts.append(f"{duration:.0f} ms")
    line = f"{head}: {visit.status.value} ({', '.join(facts)})"
    if visit.error is not None:
        line += f": {visit.error.reason.value}: {visit.error.message}"
    return line
