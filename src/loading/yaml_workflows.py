"""Reading one workflow mapping of a YAML file (a mapping with `steps`) into a located `Workflow`.

The workflow remembers where each of its parts was written (`Workflow.location_of("steps.2.when")`),
so the checks at registration point at file:line:col. A shape mistake (unknown key, a step with both
`task` and `workflow`, ...) is a `WorkflowDeclarationError` (E110) at its key's line, each one noted.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from atomtask.loading.yaml_nodes import DeclarationProblems, YamlNode, validation_errors
from atomtask.system.errors import SourceLocation
from atomtask.system.templates import TemplateLimits
from atomtask.system.workflow_errors import WorkflowDeclarationError
from atomtask.system.workflows import Migration, OnFailure, Route, Step, Workflow, WorkflowState, collect_origins
from pydantic import BaseModel, ValidationError

__all__ = ["read_workflow"]


def read_workflow(doc: dict[str, Any], nodes: Mapping[int, YamlNode], location: SourceLocation) -> Workflow:
    """The `Workflow` of `doc`, located; raises `DeclarationProblems` with every shape mistake (E110)."""
    try:
        workflow = Workflow.model_validate(doc)
    except ValidationError as exc:
        name = doc.get("name")
        kind = functools.partial(WorkflowDeclarationError, workflow=name if isinstance(name, str) else None)
        problems = validation_errors(
            kind, "workflow", doc, exc, nodes, location, keys=_keys(Workflow), keys_at=_keys_at
        )
        raise DeclarationProblems(problems) from None

    def node_of(mapping: Mapping[str, Any]) -> tuple[SourceLocation, Mapping[str, SourceLocation]] | None:
        node = nodes.get(id(mapping))
        return (node.start, node.keys) if node is not None else None

    return workflow.located(location, collect_origins(doc, node_of))


def _keys(model: type[BaseModel]) -> list[str]:
    """The keys a declaration class accepts, as written in a file (aliases: `set`, `as`, `schema`)."""
    return [info.alias or name for name, info in model.model_fields.items()]


def _keys_at(path: Sequence[Any]) -> Iterable[str] | None:
    """The valid keys of the mapping at `path` in a workflow document, when it is one of the declaration's parts."""
    head = [p for p in path if not isinstance(p, int)]
    if head and head[0] == "steps":
        inner = head[1:]
        if inner[:1] == ["parallel"]:
            inner = inner[1:]
        if not inner:
            return _keys(Step)
        part: dict[str, type[BaseModel]] = {"route": Route, "on_failure": OnFailure, "limits": TemplateLimits}
        return _keys(part[inner[0]]) if len(inner) == 1 and inner[0] in part else None
    if head == ["state"]:
        return _keys(WorkflowState)
    if head == ["limits"]:
        return _keys(TemplateLimits)
    if head == ["migrations"]:
        return _keys(Migration)
    return None
