"""The `WorkflowRegistry`: checked workflows by name, batches in dependency order, every problem for `check`."""

from __future__ import annotations

from typing import Any

import pytest
from atomtask import DuplicateNameError, Workflow, WorkflowCycleError, WorkflowNotFoundError
from atomtask.workflows import WorkflowRegistry

from tests.workflow_fixtures import article_writer, make_system, triage


def _registry() -> WorkflowRegistry:
    system = make_system("test")
    return WorkflowRegistry(system.templates, system.models)


def _calls(name: str, child: str) -> dict[str, Any]:
    return {
        "name": name,
        "state": [{"name": "text", "type": "str"}],
        "steps": [{"id": "inner", "workflow": child, "inputs": {"text": "{{state.text}}"}}],
    }


def _leaf(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "state": [{"name": "text", "type": "str"}],
        "steps": [{"id": "say", "task": "billing", "inputs": {"text": "{{state.text}}"}}],
    }


def test_register_get_names_and_did_you_mean() -> None:
    """A registered workflow is found by name; an unknown name suggests near ones."""
    registry = _registry()
    registry.register(Workflow.model_validate(article_writer()))
    assert (["article_writer"], "article_writer") == (registry.names(), registry.get("article_writer").name)
    assert "article_writer" in registry and 1 == len(registry)
    with pytest.raises(WorkflowNotFoundError, match=r"named 'article_writr'\. Did you mean 'article_writer'"):
        registry.compiled("article_writr")


def test_the_same_name_twice_is_refused_unless_identical_or_replaced() -> None:
    """Identical re-registration is a no-op; a different workflow needs `replace=True`."""
    registry = _registry()
    registry.register(Workflow.model_validate(article_writer()))
    registry.register(Workflow.model_validate(article_writer()))
    changed = {**triage(), "name": "article_writer"}
    with pytest.raises(DuplicateNameError, match="Workflow name 'article_writer' is already registered"):
        registry.register(Workflow.model_validate(changed))
    registry.register(Workflow.model_validate(changed), replace=True)
    assert "classify" == registry.compiled("article_writer").first


def test_a_batch_registers_children_before_their_parents() -> None:
    """`register_all` orders a batch so a parent may come before the sub-workflow it runs."""
    registry = _registry()
    names = registry.register_all(Workflow.model_validate(d) for d in (_calls("outer", "leaf"), _leaf("leaf")))
    assert (["outer", "leaf"], ["leaf", "outer"]) == (names, registry.names())


def test_workflows_running_each_other_are_refused() -> None:
    """A circle of sub-workflows is E118, naming the circle."""
    with pytest.raises(WorkflowCycleError, match="Workflows 'a' -> 'b' -> 'a' run each other"):
        _registry().register_all(Workflow.model_validate(d) for d in (_calls("a", "b"), _calls("b", "a")))


def test_check_all_reports_every_workflow_without_registering_any() -> None:
    """For `atomtask check`: a batch is checked in dependency order; a broken child is named in its parent."""
    registry = _registry()
    broken = _leaf("leaf")
    broken["steps"][0]["task"] = "biling"
    checks = registry.check_all(Workflow.model_validate(d) for d in (_calls("outer", "leaf"), broken))
    assert [["E111"], ["E111"]] == [[e.code for e in c.errors] for c in checks]
    assert "Sub-workflow 'leaf' has problems of its own" in checks[0].errors[0].message
    assert "Did you mean 'billing'?" in checks[1].errors[0].message
    assert [] == registry.names()


def test_check_all_reports_a_circle_without_hiding_other_problems() -> None:
    """A circle of sub-workflows is E118 at each of its steps; the other workflows' problems are still reported."""
    registry = _registry()
    broken = _leaf("other")
    broken["steps"][0]["task"] = "biling"
    batch = (_calls("rec1", "rec2"), _calls("rec2", "rec1"), broken)
    checks = registry.check_all(Workflow.model_validate(d) for d in batch)
    assert [["E118"], ["E118"], ["E111"]] == [[e.code for e in c.errors] for c in checks]
    assert "Step 'inner': Workflows 'rec1' -> 'rec2' -> 'rec1' run each other" in checks[0].errors[0].message
    assert ("rec1", "inner") == (checks[0].errors[0].workflow, checks[0].errors[0].step)
    assert "Workflows 'rec2' -> 'rec1' -> 'rec2'" in checks[1].errors[0].message


def test_check_all_suggests_the_workflows_of_the_batch() -> None:
    """An unknown sub-workflow name suggests the workflows declared in the batch, not only registered ones."""
    checks = _registry().check_all(Workflow.model_validate(d) for d in (_calls("outer", "d55"), _leaf("d5")))
    message = checks[0].errors[0].message
    assert "No workflow named 'd55'. Did you mean 'd5'? Workflows declared or registered: d5, outer." in message
