"""Registration checks of workflows: every mistake found before a call, with its code, message and location."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from atomtask import SourceLocation, Workflow, WorkflowError, WorkflowTypeError
from atomtask.workflows import WorkflowRegistry
from atomtask.workflows._checks import check_workflow, compile_workflow

from tests.workflow_fixtures import article_writer, make_system, triage

Edit = Callable[[dict[str, Any]], None]


def _problems(doc: dict[str, Any], *children: dict[str, Any]) -> list[tuple[str, str]]:
    system = make_system("test")
    registry = WorkflowRegistry(system.templates, system.models)
    registry.register_all(Workflow.model_validate(child) for child in children)
    return [(e.code, e.message) for e in registry.check(Workflow.model_validate(doc)).errors]


def _edited(edit: Edit, base: Callable[[], dict[str, Any]] = article_writer) -> list[tuple[str, str]]:
    doc = base()
    edit(doc)
    return _problems(doc)


def _step(doc: dict[str, Any], step_id: str) -> dict[str, Any]:
    return next(s for s in doc["steps"] if s["id"] == step_id)


def test_the_issue_workflows_pass_every_check() -> None:
    """The article writer and the triage router compile without a problem."""
    assert ([], []) == (_problems(article_writer()), _problems(triage()))


CASES: list[tuple[str, Edit, str, str]] = [
    (
        "duplicate step id",
        lambda d: _step(d, "write").update(id="research"),
        "E110",
        "Step id 'research' is used twice in workflow 'article_writer'",
    ),
    (
        "bad state type",
        lambda d: d["state"]["fields"][0].update(type="strr"),
        "E110",
        "Invalid state of workflow 'article_writer': Unknown schema 'strr' in field 'topic'",
    ),
    (
        "bad step model",
        lambda d: _step(d, "write").update(model="opnai:gpt-4o"),
        "E110",
        "Unknown provider 'opnai' in model 'opnai:gpt-4o' in step 'write'",
    ),
    (
        "unknown task",
        lambda d: _step(d, "research").update(task="reseach_topic"),
        "E111",
        "Step 'research' runs task 'reseach_topic', which is not registered. Did you mean 'research_topic'?",
    ),
    (
        "unknown sub-workflow",
        lambda d: _step(d, "research").update(task=None, workflow="researcher"),
        "E111",
        "Step 'research': No workflow named 'researcher'.",
    ),
    (
        "unknown state schema",
        lambda d: d.update(state={"schema": "Articel"}),
        "E111",
        "The state of workflow 'article_writer': No schema named 'Articel'. Did you mean 'Article'?",
    ),
    (
        "expression syntax",
        lambda d: _step(d, "review")["route"][0].update(when="state.score <"),
        "E112",
        "Step 'review', route 1: Invalid expression 'state.score <'",
    ),
    (
        "python call",
        lambda d: _step(d, "review")["route"][0].update(when="__import__('os').system('ls')"),
        "E112",
        "Unknown function '__import__' in expression \"__import__('os').system('ls')\". Functions: len, str,",
    ),
    (
        "comprehension",
        lambda d: _step(d, "review")["route"][0].update(when="[[c for c in x] for x in state.topic]"),
        "E112",
        "Comprehensions cannot be nested in expression '[[c for c in x] for x in state.topic]': "
        "`[c for c in x]` is inside another. Use one comprehension, with one `for`.",
    ),
    (
        "bare field name",
        lambda d: _step(d, "review")["route"][0].update(when="score < 7"),
        "E112",
        "Unknown name 'score' in expression 'score < 7'. Did you mean `state.score`?",
    ),
    (
        "item outside for_each",
        lambda d: _step(d, "research")["inputs"].update(topic="{{item}}"),
        "E112",
        "Unknown name 'item' in placeholder '{{item}}'",
    ),
    (
        "malformed placeholder",
        lambda d: _step(d, "research")["inputs"].update(topic="{{state.topic!}}"),
        "E112",
        "Malformed placeholder '{{state.topic!}}'",
    ),
    (
        "misspelt state path",
        lambda d: _step(d, "review")["route"][0].update(when="state.scroe < 7"),
        "E113",
        "Unknown path `state.scroe` in route 1 of step 'review': the state has no field 'scroe'. "
        "Did you mean `state.score`?",
    ),
    (
        "misspelt nested path",
        lambda d: _step(d, "write")["inputs"].update(notes="{{state.article.titel}}"),
        "E113",
        "Unknown path `state.article.titel` in input 'notes' of step 'write': Article has no field 'titel'. "
        "Did you mean `state.article.title`?",
    ),
    (
        "output into an unknown field",
        lambda d: _step(d, "research").update(outputs={"reserch": "summary"}),
        "E113",
        "Step 'research' writes `state.reserch` (`outputs`), but the state has no field 'reserch'.",
    ),
    (
        "str compared with a number",
        lambda d: _step(d, "review")["route"][0].update(when="state.topic > 3"),
        "E114",
        "`>` cannot compare `state.topic` (str) with `3` (int)",
    ),
    (
        "str equal to a number",
        lambda d: _step(d, "review")["route"][0].update(when="state.topic == 3"),
        "E114",
        "comparing `state.topic` (str) with `3` (int) is always false",
    ),
    (
        "str into an int parameter",
        lambda d: _step(d, "revise")["inputs"].update(score="{{state.topic}}"),
        "E114",
        "Step 'revise' passes {{state.topic}} (str) to parameter 'score' (int) of task 'revise_article'",
    ),
    (
        "output type does not fit",
        lambda d: _step(d, "research").update(outputs={"score": "summary"}),
        "E114",
        "Step 'research' stores output field 'summary' of task 'research_topic' (str) in `state.score` (int)",
    ),
    (
        "set type does not fit",
        lambda d: _step(d, "revise").update(set={"rounds": "state.topic + '!'"}),
        "E114",
        "Step 'revise' sets `state.rounds` (int) to \"state.topic + '!'\", which is a str.",
    ),
    (
        "for_each over a str",
        lambda d: _step(d, "research").update(for_each="state.topic", collect="research", outputs={}),
        "E114",
        "`for_each: state.topic` is a str, not a list.",
    ),
    (
        "collect into a str",
        lambda d: _step(d, "research").update(for_each="[state.topic]", collect="research", outputs={}),
        "E114",
        "collects its answers into `state.research`, which is a str, not a list",
    ),
    (
        "unbound required parameter",
        lambda d: _step(d, "revise")["inputs"].pop("score"),
        "E115",
        "Step 'revise' does not bind the required parameter(s) 'score' of task 'revise_article'.",
    ),
    (
        "unknown parameter",
        lambda d: _step(d, "revise")["inputs"].update(scor=1),
        "E115",
        "Step 'revise' binds 'scor', which is not a parameter of task 'revise_article'. Did you mean 'score'?",
    ),
    (
        "unknown output field",
        lambda d: _step(d, "research").update(outputs={"research": "sumary"}),
        "E115",
        "maps `state.research` to 'sumary', which is not an output field of task 'research_topic'. "
        "Did you mean 'summary'?",
    ),
    (
        "read before written",
        lambda d: (d["state"]["fields"][1].pop("default"), _step(d, "research").update(when="state.topic != ''")),
        "E116",
        "Step 'write' reads `state.research` but on the path research (skipped) -> write no step has written "
        "`state.research`, and it has no default.",
    ),
    (
        "bad workflow model setting",
        lambda d: d.update(model_settings={"temprature": 0}),
        "E110",
        "Unknown model setting 'temprature'",
    ),
    (
        "bad step model setting",
        lambda d: _step(d, "write").update(model_settings={"max_tokens": "many"}),
        "E110",
        "'max_tokens'",
    ),
    (
        "unknown route target",
        lambda d: _step(d, "review")["route"][0].update(to="revse"),
        "E117",
        "Step 'review' goes to 'revse', which is not a step of the workflow. Did you mean 'revise'",
    ),
    (
        "dead route entry",
        lambda d: _step(d, "review").update(route=[{"to": "end"}, {"to": "revise"}]),
        "E117",
        "Route 2 of step 'review' is never taken: route 1 before it has no `when`.",
    ),
    (
        "unbounded cycle",
        lambda d: _step(d, "revise").pop("max_visits"),
        "E118",
        "Steps review -> revise -> review form a cycle with no bound. Add `max_visits: N`",
    ),
    (
        "itself as a sub-workflow",
        lambda d: _step(d, "research").update(task=None, workflow="article_writer"),
        "E118",
        "Step 'research' runs workflow 'article_writer' inside itself",
    ),
]


@pytest.mark.parametrize(("edit", "code", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_mistake_has_its_code_and_message(edit: Edit, code: str, message: str) -> None:
    """One mistake gives one problem first, under its code, with a message that says what and the fix."""
    problems = _edited(edit)
    assert code == problems[0][0], problems
    assert message in problems[0][1]


def test_int_goes_into_a_float_parameter() -> None:
    """Widening is fine: `state.score` (int) binds the float parameter of `half`."""
    doc = article_writer()
    doc["steps"].insert(3, {"id": "halve", "task": "half", "inputs": {"x": "{{state.score}}"}})
    doc["steps"][2]["route"][1]["to"] = "halve"
    doc["steps"][3]["route"] = [{"to": "end"}]
    assert [] == _problems(doc)


def test_a_handler_that_does_not_write_makes_the_join_a_data_flow_error() -> None:
    """In the router, a handler that writes nothing leaves `draft` unwritten on its path to `reply`."""
    doc = triage()
    _step(doc, "technical").pop("output")
    assert [
        (
            "E116",
            "Step 'reply' reads `state.draft` but on the path classify -> technical -> reply no step has written "
            "`state.draft`, and it has no default. Write it on every path before this step, or give the field a "
            "default.",
        )
    ] == _problems(doc)


def test_a_step_nobody_routes_to_is_unreachable() -> None:
    """A handler that no route reaches is reported."""
    doc = triage()
    _step(doc, "classify")["route"] = [{"when": "state.label == 'billing'", "to": "billing"}, {"to": "general"}]
    assert [
        (
            "E117",
            "Step 'technical' is never reached: no route leads to it, and the step before it always goes "
            "elsewhere. Route to it, or remove it.",
        )
    ] == _problems(doc)


def test_a_route_into_a_parallel_member_names_the_group() -> None:
    """Routes go to top-level steps; a member's id gets the group's name in the fix."""
    doc = _group()
    doc["steps"][0]["route"] = [{"to": "one"}]
    assert "Step 'one' is inside the `parallel` group 'both'; go to the group." in _problems(doc)[0][1]


def _group() -> dict[str, Any]:
    return {
        "name": "fan_out",
        "state": [{"name": "text", "type": "str"}, {"name": "a", "type": "str"}, {"name": "b", "type": "str"}],
        "steps": [
            {"id": "start", "task": "billing", "inputs": {"text": "{{state.text}}"}, "output": "a"},
            {
                "id": "both",
                "parallel": [
                    {"id": "one", "task": "billing", "inputs": {"text": "{{state.text}}"}, "output": "b"},
                    {"id": "two", "task": "technical", "inputs": {"text": "{{state.a}}"}, "output": "b"},
                ],
            },
        ],
    }


def test_two_members_of_a_group_writing_one_field_is_an_error() -> None:
    """E119 names both members and the field."""
    assert [
        (
            "E119",
            "Steps 'one' and 'two' of the `parallel` group 'both' both write `state.b`; which one wins would depend "
            "on timing. Write separate fields and combine them in a later step.",
        )
    ] == _problems(_group())


def test_sub_workflow_inputs_and_outputs_are_checked_against_its_state() -> None:
    """A sub-workflow step binds the child's run inputs and maps the child's fields, with near names."""
    child = {
        "name": "researcher",
        "state": [{"name": "subject", "type": "str"}, {"name": "notes", "type": "str"}],
        "steps": [
            {
                "id": "look",
                "task": "research_topic",
                "inputs": {"topic": "{{state.subject}}"},
                "outputs": {"notes": "summary"},
            }
        ],
    }
    doc = article_writer()
    doc["steps"][0] = {
        "id": "research",
        "workflow": "researcher",
        "inputs": {"subjct": "{{state.topic}}"},
        "outputs": {"research": "note"},
    }
    codes = [code for code, _ in _problems(doc, child)]
    messages = " ".join(message for _, message in _problems(doc, child))
    assert ["E115", "E115", "E115"] == codes
    assert "binds 'subjct', which is not a run input of workflow 'researcher'. Did you mean 'subject'?" in messages
    assert "does not bind the required run input(s) 'subject'" in messages
    assert "'note', which is not an output field of workflow 'researcher'. Did you mean 'notes'?" in messages


def test_every_problem_is_collected_and_the_first_is_raised_with_the_count() -> None:
    """`check_workflow` lists all problems; `compile_workflow` raises the first, saying how many more."""
    doc = article_writer()
    _step(doc, "research")["task"] = "reseach_topic"
    _step(doc, "review")["route"][0]["when"] = "state.scroe < 7"
    _step(doc, "revise").pop("max_visits")
    system = make_system("test")
    workflow = Workflow.model_validate(doc)
    found = check_workflow(workflow, templates=system.templates, models=system.models)
    assert ["E111", "E113", "E118"] == [e.code for e in found.errors]
    assert all(isinstance(e, WorkflowError) and e.workflow == "article_writer" for e in found.errors)
    with pytest.raises(WorkflowError, match=r"\(and 2 more problems; `atomtask check` lists them all\)"):
        compile_workflow(workflow, templates=system.templates, models=system.models)


def test_an_error_points_at_the_expression_in_the_file() -> None:
    """With origins from a file, the error's location is the route's line, at the column of the bad path."""
    doc = article_writer()
    _step(doc, "review")["route"][0]["when"] = "state.score < 7 and state.rouns < 2"
    workflow = Workflow.model_validate(doc).located(
        SourceLocation(file="wf.yaml", line=1, column=1),
        {"steps.2.route.0.when": SourceLocation(file="wf.yaml", line=20, column=17)},
    )
    system = make_system("test")
    error = check_workflow(workflow, templates=system.templates, models=system.models).errors[0]
    assert (SourceLocation(file="wf.yaml", line=20, column=17 + 20), "review") == (error.location, error.step)
    assert str(error).startswith("wf.yaml:20:37: Unknown path `state.rouns`")
    assert ["state.rounds"] == error.suggestions


def test_an_input_type_error_is_a_workflow_type_error() -> None:
    """The raised class carries the code, so callers may catch exactly it."""
    doc = article_writer()
    _step(doc, "revise")["inputs"]["score"] = "{{state.topic}}"
    system = make_system("test")
    with pytest.raises(WorkflowTypeError) as caught:
        compile_workflow(Workflow.model_validate(doc), templates=system.templates, models=system.models)
    assert ("E114", "revise") == (caught.value.code, caught.value.step)


def test_a_member_cannot_read_what_its_sibling_writes() -> None:
    """Members of a group run on the state as it was before the group: a sibling's write is not there yet."""
    doc = _group()
    doc["steps"][1]["parallel"][1].update(inputs={"text": "{{state.b}}"}, output="c")
    doc["state"].append({"name": "c", "type": "str"})
    [(code, message)] = _problems(doc)
    assert "E116" == code
    assert message.startswith(
        "Step 'two' (in the `parallel` group 'both') reads `state.b` but on the path start -> both no step has written"
    )


def test_a_step_that_may_fail_on_does_not_count_as_writing() -> None:
    """After `on_failure: continue`, the next step may see the field unwritten: the path says `(failed)`."""
    doc = triage()
    _step(doc, "classify")["on_failure"] = "continue"
    _step(doc, "classify")["route"] = [{"when": "state.text == 'x'", "to": "billing"}, {"to": "general"}]
    _step(doc, "technical")["when"] = "state.label == 'technical'"
    _step(doc, "billing")["route"] = [{"to": "technical"}]
    problems = _problems(doc)
    assert [
        (
            "E116",
            "Step 'technical' reads `state.label` but on the path classify (failed) -> billing -> technical no step "
            "has written `state.label`, and it has no default. Write it on every path before this step, or give "
            "the field a default.",
        )
    ] == problems


@pytest.mark.parametrize(("file", "hint"), [("flows.sexp", "`(max_visits N)`"), ("flows.yaml", "`max_visits: N`")])
def test_the_unbounded_cycle_hint_is_in_the_source_s_own_syntax(file: str, hint: str) -> None:
    """E118's fix is written as the workflow's file would write it: `(max_visits N)` in a .sexp file."""
    doc = article_writer()
    _step(doc, "revise").pop("max_visits")
    system = make_system("test")
    workflow = Workflow.model_validate(doc).located(SourceLocation(file=file, line=1, column=1))
    found = check_workflow(workflow, templates=system.templates, models=system.models)
    assert [("E118", True)] == [(e.code, f"Add {hint} to one of them" in e.message) for e in found.errors]


def _migrating(*migrations: dict[str, Any], version: str | None = "1.2") -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        doc["version"] = version
        doc["migrations"] = list(migrations)

    return edit


_RENAME = {"from": "1.0", "to": "1.1", "rename": {"title": "topic"}, "drop": ["notes"]}
MIGRATION_CASES: list[tuple[str, Edit, str, str]] = [
    ("no version", _migrating(_RENAME, version=None), "E120", "declares `migrations` but no `version`"),
    (
        "two from one version",
        _migrating(_RENAME, {**_RENAME, "to": "1.2"}, {"from": "1.1", "to": "1.2"}),
        "E120",
        "Migrations 1 and 2 both start from version '1.0'; keep one per version",
    ),
    ("from the current version", _migrating({"from": "1.2", "to": "1.3"}), "E120", "starts from '1.2', the current"),
    (
        "a dead end",
        _migrating(_RENAME),
        "E120",
        "Migration 1.0 -> 1.1 leads to version '1.1', from which no migration goes on, and the current version is "
        '\'1.2\'. Add `{from: "1.1", to: "1.2", ...}` or fix `to`.',
    ),
    (
        "a circle",
        _migrating({"from": "1.0", "to": "1.1"}, {"from": "1.1", "to": "1.0"}),
        "E120",
        "Migrations 1.0 -> 1.1 -> 1.0 form a circle; they must lead to '1.2'.",
    ),
    (
        "an unknown field written",
        _migrating({"from": "1.1", "to": "1.2", "set": {"scroe": 1}}),
        "E120",
        "Migration 1.1 -> 1.2 writes `state.scroe` (`set`), but the state of the current version has no field 'scroe'"
        " and no later migration drops or renames it. Did you mean 'score'?",
    ),
    (
        "a field written twice",
        _migrating({"from": "1.1", "to": "1.2", "set": {"score": 1}, "convert": {"score": "2"}}),
        "E120",
        "Migration 1.1 -> 1.2 writes `state.score` twice (`set` and `convert`); keep one.",
    ),
    (
        "renamed and dropped",
        _migrating({"from": "1.1", "to": "1.2", "rename": {"title": "topic"}, "drop": ["title"]}),
        "E120",
        "Migration 1.1 -> 1.2 both renames and drops `state.title`; keep one.",
    ),
    (
        "dropped after it was removed",
        _migrating(_RENAME, {"from": "1.1", "to": "1.2", "drop": ["notes"]}),
        "E120",
        "Migration 1.1 -> 1.2 drops `state.notes`, but version '1.1' has no such field: migration 1.0 -> 1.1 "
        "removed it.",
    ),
    (
        "a set value that does not fit",
        _migrating({"from": "1.1", "to": "1.2", "set": {"score": 11}}),
        "E120",
        "Migration 1.1 -> 1.2 sets `state.score` (int) to 11, which does not fit: Input should be less than or equal "
        "to 10.",
    ),
    (
        "a convert outside the language",
        _migrating({"from": "1.1", "to": "1.2", "convert": {"rounds": "__import__('os')"}}),
        "E112",
        "Migration 1.1 -> 1.2, `convert: rounds`: ",
    ),
    (
        "a convert of another type",
        _migrating({"from": "1.1", "to": "1.2", "convert": {"research": "len(state.notes)"}}),
        "E120",
        "`len(state.notes)` is an int, which does not fit `state.research` (str).",
    ),
    (
        "a convert reading a removed field",
        _migrating(_RENAME, {"from": "1.1", "to": "1.2", "convert": {"rounds": "len(state.notes)"}}),
        "E120",
        "`state.notes` reads the state of version '1.1', which has no field 'notes': migration 1.0 -> 1.1 removed it.",
    ),
    (
        "resume_at an unknown step",
        _migrating({"from": "1.1", "to": "1.2", "resume_at": "wrte"}),
        "E120",
        "Migration 1.1 -> 1.2 resumes at 'wrte', which is not a step of workflow 'article_writer'. Did you mean "
        "'write'?",
    ),
    (
        "resume_at a member of a parallel group",
        lambda d: (
            _migrating({"from": "1.1", "to": "1.2", "resume_at": "m"})(d),
            d["steps"].insert(0, {"id": "g", "parallel": [{"id": "m", "task": "shout", "inputs": {"word": "x"}}]}),
        ),
        "E120",
        "Migration 1.1 -> 1.2 resumes at 'm', which is not a step of workflow 'article_writer'. It is inside the "
        "`parallel` group 'g'; resume at the group.",
    ),
    (
        "call outside the importable packages",
        _migrating({"from": "1.1", "to": "1.2", "call": "os.path:join"}),
        "E120",
        "Migration 1.1 -> 1.2 names the Python function 'os.path:join', but module 'os.path' is not in the "
        "importable packages (none).",
    ),
]


@pytest.mark.parametrize(
    ("edit", "code", "message"), [c[1:] for c in MIGRATION_CASES], ids=[c[0] for c in MIGRATION_CASES]
)
def test_each_migration_mistake_is_found_before_any_run(edit: Edit, code: str, message: str) -> None:
    """Every `migrations:` mistake is a problem at registration, with the fix."""
    problems = _edited(edit)
    assert code == problems[0][0], problems
    assert message in problems[0][1]


def test_a_chain_of_migrations_compiles_with_its_expressions() -> None:
    """A valid chain passes; the compiled workflow holds each migration, `convert` parsed."""
    doc = article_writer()
    _migrating(_RENAME, {"from": "1.1", "to": "1.2", "convert": {"rounds": "len(state.topic)"}, "set": {"score": 1}})(
        doc
    )
    system = make_system("test")
    compiled = compile_workflow(Workflow.model_validate(doc), templates=system.templates, models=system.models)
    assert ["1.0 -> 1.1", "1.1 -> 1.2"] == [m.label for m in compiled.migrations]
    assert [("rounds", "len(state.topic)")] == [(f, e.text) for f, e in compiled.migrations[1].convert]
    assert "1.2" == compiled.version


def _gate(**fields: Any) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        doc["state"]["fields"].append({"name": "approved", "type": "bool", "default": False})
        gate = {"id": "gate", "type": "approval", "message": "Publish {{state.article.title}}?", "output": "approved"}
        doc["steps"].insert(3, {**gate, **fields, "route": [{"when": "state.approved", "to": "end"}, {"to": "revise"}]})
        _step(doc, "review")["route"] = [{"to": "gate"}]

    return edit


def test_an_approval_step_compiles_and_its_decision_flows_into_the_state() -> None:
    """The decision is written to `output` (a bool field gets `approved`); the message is parsed from state."""
    doc = article_writer()
    _gate(timeout="24h", on_timeout="approve")(doc)
    system = make_system("test")
    compiled = compile_workflow(Workflow.model_validate(doc), templates=system.templates, models=system.models)
    gate = compiled.index["gate"]
    assert (bool, frozenset({"approved"}), "approval") == (gate.output_type, gate.writes, gate.step.kind)
    assert (86400.0, "approve") == (gate.step.timeout, gate.step.on_timeout)
    assert gate.message is not None and ["state.article.title"] == [r.text for r in gate.message.all_refs()]
    assert (["gate"], False) == (compiled.writers()["approved"], "approved" in compiled.run_inputs)


def test_an_approval_decision_field_gets_the_whole_decision() -> None:
    """A field of class `ApprovalDecision` (or one with its fields) receives approved, note, by and at."""
    from atomtask import ApprovalDecision

    system = make_system("test")
    system.models.register(ApprovalDecision)
    doc = article_writer()
    _gate()(doc)
    doc["state"]["fields"][-1] = {"name": "approved", "type": "ApprovalDecision?", "default": None}
    _step(doc, "gate")["route"][0]["when"] = "state.approved.approved"
    registry = WorkflowRegistry(system.templates, system.models)
    assert [] == [e.message for e in registry.check(Workflow.model_validate(doc)).errors]
    compiled = registry.check(Workflow.model_validate(doc)).unwrap()
    assert ApprovalDecision is compiled.index["gate"].output_type


@pytest.mark.parametrize(
    ("change", "code", "message"),
    [
        (
            {"output": "score"},
            "E114",
            "Approval step 'gate' writes its decision to `state.score` (int), which takes neither `bool`",
        ),
        ({"output": "aproved"}, "E113", "Step 'gate' writes `state.aproved` (`output`), but the state has no field"),
        ({"message": "Publish {{state.titel}}?"}, "E113", "Unknown path `state.titel` in `message` of step 'gate'"),
    ],
)
def test_approval_mistakes_are_found_before_any_run(change: dict[str, Any], code: str, message: str) -> None:
    """The output field must exist and take the decision; the message's paths must exist."""
    problems = _edited(_gate(**change))
    assert code == problems[0][0], problems
    assert message in problems[0][1]


def test_redacted_state_fields_are_listed_in_the_compiled_workflow() -> None:
    """`redact: true` on a state field (or `json_schema_extra` on a named class) names it in `redacted_fields`."""
    from pydantic import BaseModel, Field

    class Secret(BaseModel):
        topic: str
        token: str = Field(default="", json_schema_extra={"redact": True})

    doc = article_writer()
    doc["state"]["fields"][0]["redact"] = True
    doc["state"]["fields"][1]["redact"] = False
    system = make_system("test")
    compiled = compile_workflow(Workflow.model_validate(doc), templates=system.templates, models=system.models)
    assert frozenset({"topic"}) == compiled.redacted_fields
    system.models.register(Secret)
    step = {"id": "a", "task": "shout", "inputs": {"word": "{{state.topic}}"}}
    named = {"name": "s", "state": "Secret", "steps": [step]}
    compiled = compile_workflow(Workflow.model_validate(named), templates=system.templates, models=system.models)
    assert frozenset({"token"}) == compiled.redacted_fields


def test_redact_is_true_or_false() -> None:
    """Any other value of `redact` is a shape mistake (E110)."""
    problems = _edited(lambda d: d["state"]["fields"][0].update(redact="yes"))
    assert [("E110", "`redact` of state field 'topic' in workflow 'article_writer' is true or false, not 'yes'.")] == (
        problems
    )


def test_an_approval_message_reading_an_unwritten_field_is_a_data_flow_error() -> None:
    """The message reads the state like an input: a field unwritten on some path to the step is E116."""
    doc = article_writer()
    _gate(message="Publish {{state.note}}?")(doc)
    doc["state"]["fields"].append({"name": "note", "type": "str"})
    _step(doc, "research").update(when="state.topic != ''", set={"note": "state.topic"})
    problems = _problems(doc)
    assert "E116" == problems[0][0], problems
    expected = "Step 'gate' reads `state.note` but on the path research (skipped) -> write -> review -> gate"
    assert expected in problems[0][1]
