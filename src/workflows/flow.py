"""The checks over a workflow's control flow: targets, reachability, bounded cycles, parallel writes, data flow.

The steps form a graph: after a step control goes to its route targets (or the next step), along an
`ok` edge (its writes done), a `skip` edge (`when` was false) or a `fail` edge (`on_failure:
continue` or `{to: ...}`). The data-flow check is a must-analysis over that graph: the fields written
on *every* path to a step; reading a field outside that set, with no default and not a run input,
is an error, reported with a path on which it is unwritten.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping

from atomtask.system.errors import did_you_mean, near_names
from atomtask.system.workflow_errors import (
    WorkflowControlError,
    WorkflowCycleError,
    WorkflowDataFlowError,
    WorkflowParallelError,
)
from atomtask.system.workflows import END
from atomtask.workflows.compiled import CompiledStep, EdgeKind, Read
from atomtask.workflows.problems import Problems

__all__ = ["check_flow"]

_Graph = dict[str, list[tuple[str, EdgeKind]]]


def check_flow(
    problems: Problems, steps: tuple[CompiledStep, ...], readable: frozenset[str], fields: Iterable[str]
) -> dict[str, frozenset[str]]:
    """Run every flow check; returns, per step id, the fields written by steps on every path to it.

    `readable` are the fields that may always be read (run inputs and fields with a default).
    """
    by_id = {step.id: step for step in steps}
    known_before = len(problems.errors)
    graph = _graph(problems, steps, by_id)
    reachable = _reachable(steps[0].id, graph)
    # A route to an unknown step is likely meant for the step that it leaves unreachable: say it once.
    targets_ok = not any(e.code == WorkflowControlError.code for e in problems.errors[known_before:])
    for step in steps:
        if step.id not in reachable and targets_ok:
            problems.add(
                WorkflowControlError,
                f"Step {step.id!r} is never reached: no route leads to it, and the step before it always goes "
                "elsewhere. Route to it, or remove it.",
                step.path,
                step=step.id,
            )
    _check_cycles(problems, by_id, graph, reachable)
    for step in steps:
        _check_parallel(problems, step)
    written = _must_write(steps[0].id, by_id, graph, reachable)
    state_fields = set(fields)
    for step in steps:
        if step.id in reachable:
            _check_reads(problems, step, written, readable, state_fields, graph, by_id)
    return written


def _graph(problems: Problems, steps: tuple[CompiledStep, ...], by_id: Mapping[str, CompiledStep]) -> _Graph:
    members = {m.id: step.id for step in steps for m in step.members}
    graph: _Graph = {}
    for step in steps:
        declared = step.step.route or []
        for index, route in enumerate(step.routes):
            if index > 0 and declared[index - 1].when is None:
                problems.add(
                    WorkflowControlError,
                    f"Route {index + 1} of step {step.id!r} is never taken: route "
                    f"{index} before it has no `when`. Remove it or give route {index} a `when`.",
                    route.where,
                    step=step.id,
                )
                break
        targets = [(r.to, f"{r.where}.to") for r in step.routes]
        if step.step.on_failure.to is not None:
            targets.append((step.step.on_failure.to, f"{step.path}.on_failure.to"))
        bad = {target for target, where in targets if not _known_target(problems, step, target, where, by_id, members)}
        graph[step.id] = [(t, kind) for t, kind in step.edges() if t not in bad and t != END]
    return graph


def _known_target(
    problems: Problems,
    step: CompiledStep,
    target: str,
    where: str,
    by_id: Mapping[str, CompiledStep],
    members: Mapping[str, str],
) -> bool:
    if target == END or target in by_id:
        return True
    if target in members:
        fix = f" Step {target!r} is inside the `parallel` group {members[target]!r}; go to the group."
    else:
        fix = f"{did_you_mean(target, [*by_id, END])} Steps: {', '.join(by_id)} (or `{END}`)."
    problems.add(
        WorkflowControlError,
        f"Step {step.id!r} goes to {target!r}, which is not a step of the workflow.{fix}",
        where,
        step=step.id,
        suggestions=near_names(target, [*by_id, END]),
    )
    return False


def _reachable(first: str, graph: _Graph) -> set[str]:
    seen = {first}
    todo = [first]
    while todo:
        for target, _ in graph.get(todo.pop(), []):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def _check_cycles(problems: Problems, by_id: Mapping[str, CompiledStep], graph: _Graph, reachable: set[str]) -> None:
    order = {step_id: index for index, step_id in enumerate(by_id)}
    for component in _components(graph, reachable):
        looping = len(component) > 1 or any(t == component[0] for t, _ in graph[component[0]])
        if not looping or any(by_id[s].step.max_visits is not None for s in component):
            continue
        first = min(component, key=order.__getitem__)
        cycle = _cycle_through(first, set(component), graph)
        location = problems.workflow.location
        bound = (
            "(max_visits N)" if location is not None and (location.file or "").endswith(".sexp") else "max_visits: N"
        )
        problems.add(
            WorkflowCycleError,
            f"Steps {' -> '.join(cycle)} form a cycle with no bound. Add `{bound}` to one of them (e.g. {first!r}).",
            by_id[first].path,
            step=first,
        )


def _components(graph: _Graph, nodes: set[str]) -> list[list[str]]:
    """Strongly connected components (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter([t for t, _ in graph.get(root, []) if t in nodes]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter([t for t, _ in graph.get(child, []) if t in nodes])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                found.append(component)
    return found


def _cycle_through(first: str, component: set[str], graph: _Graph) -> list[str]:
    """A shortest cycle from `first` back to it inside its component."""
    parents: dict[str, str] = {}
    queue = deque([first])
    while queue:
        node = queue.popleft()
        for target, _ in graph[node]:
            if target == first:
                path = [node]
                while path[-1] != first:
                    path.append(parents[path[-1]])
                return [*reversed(path), first]
            if target in component and target not in parents:
                parents[target] = node
                queue.append(target)
    return [first, first]


def _check_parallel(problems: Problems, group: CompiledStep) -> None:
    writers: dict[str, list[str]] = {}
    for member in group.members:
        for field in sorted(member.writes):
            writers.setdefault(field, []).append(member.id)
    for field, ids in writers.items():
        if len(ids) > 1:
            problems.add(
                WorkflowParallelError,
                f"Steps {' and '.join(repr(i) for i in ids)} of the `parallel` group "
                f"{group.id!r} both write `state.{field}`; which one wins would depend on timing. Write "
                "separate fields and combine them in a later step.",
                f"{group.path}.parallel",
                step=group.id,
            )


def _must_write(
    first: str, by_id: Mapping[str, CompiledStep], graph: _Graph, reachable: set[str]
) -> dict[str, frozenset[str]]:
    """For each reachable step, the fields written by steps on every path from the start to it."""
    universe = frozenset().union(*(step.writes for step in by_id.values()))
    written: dict[str, frozenset[str]] = {s: universe for s in reachable}
    written[first] = frozenset()
    changed = True
    while changed:
        changed = False
        incoming: dict[str, list[frozenset[str]]] = {s: [] for s in reachable}
        for source in reachable:
            for target, kind in graph[source]:
                carried = written[source] | (by_id[source].sure_writes if kind == "ok" else frozenset())
                incoming[target].append(carried)
        for node in reachable:
            if node == first or not incoming[node]:
                continue
            meet = frozenset.intersection(*incoming[node])
            if meet != written[node]:
                written[node] = meet
                changed = True
    return written


def _check_reads(
    problems: Problems,
    step: CompiledStep,
    written: Mapping[str, frozenset[str]],
    readable: frozenset[str],
    fields: set[str],
    graph: _Graph,
    by_id: Mapping[str, CompiledStep],
) -> None:
    before = written[step.id] | readable
    phases: list[tuple[CompiledStep, Iterable[Read], frozenset[str]]] = []
    for reader in (step, *step.members):  # members run on the state as it was before their group
        phases += [
            (reader, reader.reads_entry, before),
            (reader, reader.reads_run, before),
            (reader, reader.reads_set, before | reader.output_writes),
        ]
    # Routes are also followed when `when` skipped the step or `on_failure: continue` went on past it.
    partial = step.step.when is not None or step.step.on_failure.action == "continue"
    phases.append((step, step.reads_route, before if partial else before | step.sure_writes))
    for reader, reads, available in phases:
        for read in reads:
            if read.field in fields and read.field not in available:
                path = _unwritten_path(read.field, step.id, graph, by_id)
                inside = f" (in the `parallel` group {step.id!r})" if reader is not step else ""
                problems.add(
                    WorkflowDataFlowError,
                    f"Step {reader.id!r}{inside} reads `{read.ref.text}` but on the path {path} no step has written "
                    f"`state.{read.field}`, and it has no default. Write it on every path before this step, or give "
                    "the field a default.",
                    read.where,
                    step=reader.id,
                    offset=read.ref.offset,
                )


def _unwritten_path(field: str, target: str, graph: _Graph, by_id: Mapping[str, CompiledStep]) -> str:
    """A path from the start to `target` along which no step writes `field`, as text."""
    first = next(iter(by_id))
    parents: dict[str, tuple[str, EdgeKind]] = {}
    queue = deque([first])
    seen = {first}
    while queue and target not in parents and target != first:
        node = queue.popleft()
        for nxt, kind in graph[node]:
            if kind == "ok" and field in by_id[node].sure_writes:
                continue
            if nxt not in seen:
                seen.add(nxt)
                parents[nxt] = (node, kind)
                queue.append(nxt)
    hops: list[str] = [target]
    node = target
    while node in parents:
        node, kind = parents[node]
        note = {"ok": "", "skip": " (skipped)", "fail": " (failed)"}[kind]
        hops.append(node + note)
    return " -> ".join(reversed(hops))
