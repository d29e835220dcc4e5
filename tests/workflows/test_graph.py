"""Pictures of workflows: the Mermaid flowchart and the data-flow summary."""

from __future__ import annotations

from typing import Any

from atomtask.workflows import WorkflowRunner
from atomtask.workflows._graph import dataflow_summary, mermaid, visit_line

from tests.workflow_fixtures import TaskAnswers, article_writer, make_system, register, triage


def _compiled(doc: dict[str, Any]) -> Any:
    return register(make_system("test"), doc).compiled(doc["name"])


def test_the_article_writer_flowchart_shows_routes_loops_and_bounds() -> None:
    """Nodes with their tasks, conditions on edges (escaped), the loop back, the bound, `end`."""
    chart = mermaid(_compiled(article_writer()))
    assert chart.startswith("flowchart TD\n    start((start)) --> s_research\n")
    assert '    s_revise["revise<br/>task: revise_article<br/>max 3 visits"]' in chart
    assert '    s_review -->|"state.score #lt; 7 and state.rounds #lt; 2"| s_revise' in chart
    assert "    s_review --> stop((end))" in chart
    assert "    s_revise --> s_review" in chart


def test_groups_are_subgraphs_and_escalations_are_dotted() -> None:
    """A `parallel` group is a subgraph of its members; `on_failure` edges are dotted."""
    doc = {
        "name": "fan_out",
        "state": [{"name": "text", "type": "str"}, {"name": "a", "type": "str"}, {"name": "b", "type": "str"}],
        "steps": [
            {
                "id": "both",
                "on_failure": {"to": "fallback"},
                "parallel": [
                    {"id": "one", "task": "billing", "inputs": {"text": "{{state.text}}"}, "output": "a"},
                    {"id": "two", "task": "technical", "inputs": {"text": "{{state.text}}"}, "output": "b"},
                ],
            },
            {
                "id": "fallback",
                "task": "general",
                "inputs": {"text": "{{state.text}}"},
                "on_failure": {"retry_with": "test"},
            },
        ],
    }
    chart = mermaid(_compiled(doc))
    assert '    subgraph s_both ["both"]\n        direction LR\n        s_one["one<br/>task: billing"]' in chart
    assert '    s_both -.->|"failed"| s_fallback' in chart
    assert '    s_fallback -.->|"failed: retry with test"| s_fallback' in chart


def test_the_router_flowchart_has_one_edge_per_route() -> None:
    """Each conditional route is an edge with its condition; quotes are entities."""
    chart = mermaid(_compiled(triage()))
    assert "    s_classify -->|\"state.label == 'billing'\"| s_billing" in chart
    assert "    s_classify --> s_general" in chart


def test_the_summary_lists_inputs_reads_writes_and_next_steps() -> None:
    """`workflow show`: each field's role, and per step what it reads, writes and where it goes."""
    summary = dataflow_summary(_compiled(article_writer()))
    assert "  topic: str  (run input, required)\n" in summary
    assert "  article: Article | None  (written by write, revise)\n" in summary
    assert (
        "  4. revise: task revise_article\n"
        "     reads: state.article, state.rounds, state.score\n"
        "     writes: article <- (the whole answer), rounds <- state.rounds + 1\n"
        "     max visits: 3\n"
        "     next: review\n"
    ) in summary
    assert "     next: revise if state.score < 7 and state.rounds < 2; end\n" in summary


def test_each_visit_has_a_status_line() -> None:
    """`workflow run` prints one line per visit: step, visit, status, model, requests; failures say why."""
    answers = TaskAnswers(
        research_topic=[{"wrong": 1}],
        write_article=[{"title": "T", "body": "b"}],
        review_article=[{"score": 9}],
    )
    doc = article_writer()
    doc["steps"][0].update(retries=0, on_failure="continue")
    system = make_system(answers.model)
    lines: list[str] = []
    compiled = register(system, doc).compiled("article_writer")
    WorkflowRunner(system.executor, on_visit=lambda visit: lines.append(visit_line(visit))).run(
        compiled, {"topic": "tides"}
    )
    assert 3 == len(lines)
    assert lines[0].startswith("research #1: FAILED (function:")
    assert "1 request, " in lines[0]
    assert "step_failed: Step 'research': task 'research_topic' failed (output_validation_failure" in lines[0]
    assert lines[2].startswith("review #1: COMPLETE (function:")


def test_an_approval_step_shows_as_an_approval_writing_the_decision() -> None:
    """The flowchart labels it `approval`; the summary says where the decision goes."""
    doc = {
        "name": "gated",
        "state": [{"name": "text", "type": "str"}, {"name": "ok", "type": "bool", "default": False}],
        "steps": [{"id": "gate", "type": "approval", "message": "Send {{state.text}}?", "output": "ok"}],
    }
    compiled = _compiled(doc)
    assert '    s_gate["gate<br/>approval"]' in mermaid(compiled)
    summary = dataflow_summary(compiled)
    assert "  1. gate: approval -> state.ok\n" in summary
    assert "     writes: ok <- (the decision)\n" in summary


def test_a_code_step_is_a_subroutine_box_naming_its_function() -> None:
    """The flowchart draws a code step as `[[...]]` with `call: ...`; the summary and status lines name it."""
    ref = "tests.workflows.code_steps_funcs:shout"
    doc = {
        "name": "coded",
        "state": [{"name": "word", "type": "str"}, {"name": "loud", "type": "str"}],
        "steps": [{"id": "loud", "call": ref, "inputs": {"word": "{{state.word}}"}, "output": "loud"}],
    }
    system = make_system("test", importable=("tests",))
    compiled = register(system, doc).compiled("coded")
    assert f'    s_loud[["loud<br/>call: {ref}"]]' in mermaid(compiled)
    summary = dataflow_summary(compiled)
    assert f"  1. loud: call {ref}\n" in summary
    assert "     writes: loud <- (the whole answer)\n" in summary
    lines: list[str] = []
    WorkflowRunner(system.executor, on_visit=lambda visit: lines.append(visit_line(visit))).run(compiled, {"word": "a"})
    assert [f"loud #1: COMPLETE (call {ref})"] == lines
