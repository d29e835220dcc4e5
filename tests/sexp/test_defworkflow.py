"""`defworkflow` forms become the same `Workflow` as YAML, located in the source, checked and run the same way."""

from __future__ import annotations

from typing import Any

import pytest
from atomtask import (
    SourceLocation,
    TaskSystem,
    Workflow,
    WorkflowCallFunctionError,
    WorkflowDeclarationError,
    WorkflowNameError,
    WorkflowPathError,
)
from atomtask.sexp._defworkflow import STEP_CLAUSES, workflow_from_form
from atomtask.sexp._reader import SList, read

from tests.workflow_fixtures import TaskAnswers, article_writer, make_system, triage

ARTICLE_WRITER = """\
(defworkflow article_writer
  (version "1.0")
  (description "Research a topic, write an article, review it.")
  (state (topic str)
         (research str (default ""))
         (article Article?)
         (score int (default 0) (ge 0) (le 10))
         (rounds int (default 0)))
  (limits (requests 20))
  (steps
    (step research (task research_topic)
          (inputs (topic "{{state.topic}}"))
          (outputs (research summary)))
    (step write (task write_article)
          (inputs (topic "{{state.topic}}") (notes "Use these notes: {{state.research}}"))
          (output article))
    (step review (task review_article)
          (inputs (article "{{state.article}}"))
          (outputs (score score))
          (route ((when "state.score < 7 and state.rounds < 2") (to revise)) end))
    (step revise (task revise_article)
          (inputs (article "{{state.article}}") (score "{{state.score}}"))
          (output article)
          (set (rounds "state.rounds + 1"))
          (route review)
          (max_visits 3))))
"""

TRIAGE = """\
(defworkflow triage
  (state (text str) (label "literal[\\"billing\\", \\"technical\\", \\"other\\"]") (draft str) (answer str))
  (steps
    (step classify (task classify) (inputs (text "{{state.text}}")) (outputs (label label))
          (route ((when "state.label == 'billing'") (to billing))
                 ((when "state.label == 'technical'") (to technical))
                 general))
    (step billing (task billing) (inputs (text "{{state.text}}")) (output draft) (route reply))
    (step technical (task technical) (inputs (text "{{state.text}}")) (output draft) (route reply))
    (step general (task general) (inputs (text "{{state.text}}")) (output draft) (route reply))
    (step reply (task reply) (inputs (draft "{{state.draft}}")) (output answer))))
"""


def form(source: str) -> SList:
    (node,) = read(source, "w.sexp")
    assert isinstance(node, SList)
    return node


def workflow(source: str) -> Workflow:
    return workflow_from_form(form(source))


def at(line: int, column: int) -> SourceLocation:
    return SourceLocation(file="w.sexp", line=line, column=column)


@pytest.mark.parametrize(("source", "yaml_form"), [(ARTICLE_WRITER, article_writer()), (TRIAGE, triage())])
def test_defworkflow_declares_the_same_workflow_as_yaml(source: str, yaml_form: dict[str, Any]) -> None:
    """The issue's article writer and the triage router read the same as their YAML mappings."""
    assert Workflow.model_validate(yaml_form).model_dump() == workflow(source).model_dump()


def test_every_step_clause_has_its_yaml_key() -> None:
    """parallel, for_each/as/concurrency/collect, when, on_failure forms and per-step settings map one to one."""
    source = """\
(defworkflow everything
  (description "All clauses.") (model "openai-chat:gpt-4o") (retries 2) (repair false)
  (model_settings ((temperature 0)))
  (state "Shared state." (items "list[str]") (done bool (default false)) (out "list[str]"))
  (steps
    (step each (task shout) (for_each "{{state.items}}") (as word) (concurrency 4) (collect out)
          (inputs (word "{{word}}") (tags ("a" 1 true nil)))
          (when state.done)
          (on_failure (retry_with "openai-chat:gpt-4o" "test") (then continue)))
    (step both (parallel (step a (task shout) (inputs (word "x")) (on_failure continue))
                         (step b (task shout) (inputs (word "y")) (model "test") (limits (requests 1))))
          (on_failure (to each)) (max_visits 2))
    (step sub (workflow child) (inputs (text "t")) (outputs (done ok)) (set (done true))
          (retries 1) (model_settings (max_tokens 5)) (on_failure stop))))
"""
    expected = {
        "name": "everything",
        "description": "All clauses.",
        "model": "openai-chat:gpt-4o",
        "retries": 2,
        "repair": False,
        "model_settings": {"temperature": 0},
        "state": {
            "description": "Shared state.",
            "fields": [
                {"name": "items", "type": "list[str]"},
                {"name": "done", "type": "bool", "default": False},
                {"name": "out", "type": "list[str]"},
            ],
        },
        "steps": [
            {
                "id": "each",
                "task": "shout",
                "for_each": "{{state.items}}",
                "as": "word",
                "concurrency": 4,
                "collect": "out",
                "inputs": {"word": "{{word}}", "tags": ["a", 1, True, None]},
                "when": "state.done",
                "on_failure": {"retry_with": ["openai-chat:gpt-4o", "test"], "then": "continue"},
            },
            {
                "id": "both",
                "parallel": [
                    {"id": "a", "task": "shout", "inputs": {"word": "x"}, "on_failure": "continue"},
                    {"id": "b", "task": "shout", "inputs": {"word": "y"}, "model": "test", "limits": {"requests": 1}},
                ],
                "on_failure": {"to": "each"},
                "max_visits": 2,
            },
            {
                "id": "sub",
                "workflow": "child",
                "inputs": {"text": "t"},
                "outputs": {"done": "ok"},
                "set": {"done": "true"},
                "retries": 1,
                "model_settings": {"max_tokens": 5},
                "on_failure": "stop",
            },
        ],
    }
    assert Workflow.model_validate(expected).model_dump() == workflow(source).model_dump()


def test_every_yaml_step_key_is_a_clause() -> None:
    """A step accepts a clause for each key a YAML step has (nothing the file format offers is missing)."""
    from atomtask import Step

    yaml_keys = {field.alias or name for name, field in Step.model_fields.items()} - {"id"}
    assert yaml_keys == set(STEP_CLAUSES)


def test_each_part_remembers_its_line_and_column() -> None:
    """The workflow, its name, fields, steps and values point into the source; strings at their text."""
    declared = workflow(ARTICLE_WRITER)
    assert at(1, 1) == declared.location
    assert at(1, 14) == declared.location_of("name")
    assert at(7, 17) == declared.location_of("state.fields.3.type")
    assert at(7, 33) == declared.location_of("state.fields.3.ge")
    assert at(11, 5) == declared.location_of("steps.0")
    assert at(12, 27) == declared.location_of("steps.0.inputs.topic")  # just inside the quote
    assert at(20, 26) == declared.location_of("steps.2.route.0.when")
    assert at(20, 69) == declared.location_of("steps.2.route.0.to")
    assert at(20, 78) == declared.location_of("steps.2.route.1.to")
    assert at(26, 23) == declared.location_of("steps.3.max_visits")
    assert at(26, 23) == declared.location_of("steps.3.max_visits.deeper")  # nearest known parent


def test_registry_checks_point_into_the_sexp_source() -> None:
    """A typo in an expression is E114 at its very characters; an unknown task gets "did you mean"."""
    system = make_system("test")
    typo = ARTICLE_WRITER.replace("state.rounds < 2", "state.rouns < 2")
    with pytest.raises(WorkflowPathError) as path_error:
        system.register_workflow(workflow(typo))
    assert at(20, 26 + len("state.score < 7 and ")) == path_error.value.location
    assert "Did you mean `state.rounds`?" in path_error.value.message
    unknown = ARTICLE_WRITER.replace("(task revise_article)", "(task revise_articel)")
    with pytest.raises(WorkflowNameError) as name_error:
        system.register_workflow(workflow(unknown))
    assert at(21, 24) == name_error.value.location
    assert "Did you mean 'revise_article'" in name_error.value.message
    assert "article_writer" not in system.workflows


@pytest.mark.parametrize(
    ("source", "where", "fragment"),
    [
        ("(defworkflow)", (1, 1), "`defworkflow` needs a workflow name first"),
        ('(defworkflow "w" (state (a str)))', (1, 14), "found the string 'w'"),
        ("(defworkflow w (steps (step s (task t))))", (1, 1), "has no `state` clause"),
        ("(defworkflow w (state (a str)))", (1, 1), "has no `steps` clause"),
        ("(defworkflow w (state (a str)) (stps))", (1, 32), "Unknown clause 'stps' in defworkflow 'w'. Did you mean"),
        ("(defworkflow w (state (a str)) (state (b str)) (steps))", (1, 32), "The clause 'state' is repeated"),
        ("(defworkflow w (state) (steps (step s (task t))))", (1, 16), "`state` of defworkflow 'w' has no fields"),
        ("(defworkflow w (state (a str)) (steps (s (task t))))", (1, 39), "lists `(step id (task name) ...)`"),
        ("(defworkflow w (state (a str)) (steps (step (task t))))", (1, 45), "needs an id first"),
        ("(defworkflow w (state (a str)) (steps (step s (tsk t))))", (1, 47), "Did you mean 'task'?"),
        ("(defworkflow w (state (a str)) (steps (step s (task t) (inputs (a state.a)))))", (1, 67), '"{{state.a}}"'),
        ("(defworkflow w (state (a str)) (steps (step s (task t) (inputs a))))", (1, 64), "`(name value)` pairs"),
        ('(defworkflow w (state (a str)) (steps (step s (task t) (route ((when "x"))))))', (1, 63), "no target"),
        ("(defworkflow w (state (a str)) (steps (step s (task t) (when (x)))))", (1, 62), "An expression is a string"),
        ("(defworkflow w (state (a str)) (steps (step s (task 1))))", (1, 53), "takes a name, found `1`"),
        ("(defworkflow w (state (a str)) (steps (step s (task t) (max_visits 0))))", (1, 68), "`steps.0.max_visits`"),
        ("(defworkflow w (state (a str)) (steps (step s (task t) (workflow u))))", (1, 39), "exactly one of `task`"),
        ("(defworkflow w (state (a str)) (steps))", (1, 32), "`steps`: List should have at least 1 item"),
        ("(defworkflow w (state (a str (dfault 1))) (steps (step s (task t))))", (1, 30), "Did you mean 'default'?"),
        (
            "(defworkflow w (state (a str)) (steps (step s (task t) (on_failure (too x)))))",
            (1, 68),
            "Did you mean 'to'",
        ),
    ],
)
def test_shape_mistakes_raise_located_workflow_errors(source: str, where: tuple[int, int], fragment: str) -> None:
    """A malformed `defworkflow` is an E110 WorkflowDeclarationError at the offending form, with the fix."""
    with pytest.raises(WorkflowDeclarationError) as info:
        workflow(source)
    assert fragment in info.value.message
    assert at(*where) == info.value.location
    assert "E110" == info.value.code


def test_a_validation_error_names_the_workflow_and_step() -> None:
    """An error inside a step carries the workflow's name and the step's id."""
    with pytest.raises(WorkflowDeclarationError) as info:
        workflow("(defworkflow w (state (a str)) (steps (step s (task t) (max_visits 0))))")
    assert ("w", "s") == (info.value.workflow, info.value.step)


def test_defworkflow_in_a_script_registers_it_and_it_runs_like_yaml() -> None:
    """Evaluated in a script, `defworkflow` registers with the system; the run matches the YAML workflow's."""
    replies: dict[str, list[Any]] = {
        "research_topic": [{"summary": "notes"}],
        "write_article": [{"title": "T", "body": "B"}],
        "review_article": [{"score": 4}, {"score": 9}],
        "revise_article": [{"title": "T2", "body": "B2"}],
    }
    runs = []
    for declare in ("sexp", "yaml"):
        answers = TaskAnswers(**{task: list(queue) for task, queue in replies.items()})
        system = make_system(answers.model)
        if declare == "sexp":
            assert "article_writer" == system.defatom(ARTICLE_WRITER)
        else:
            system.register_workflow(Workflow.model_validate(article_writer()))
        result = system.run_workflow("article_writer", {"topic": "tides"})
        runs.append((result.status, result.state.model_dump(), answers.tasks()))
    assert runs[1] == runs[0]
    assert ["research_topic", "write_article", "review_article", "revise_article", "review_article"] == runs[0][2]


def test_a_script_defworkflow_with_a_mistake_is_not_registered() -> None:
    """The registry's check raises the usage error from the script, and nothing is registered."""
    system = make_system("test")
    with pytest.raises(WorkflowNameError, match="runs task 'nope', which is not registered"):
        system.defatom('(defworkflow w (state (a str)) (steps (step s (task nope) (inputs (text "{{state.a}}")))))')
    assert "w" not in system.workflows


def test_redefining_an_identical_workflow_is_a_no_op() -> None:
    """Evaluating the same `defworkflow` twice (a script re-run beside its loaded file) is accepted."""
    system = make_system("test")
    system.defatom(ARTICLE_WRITER)
    assert "article_writer" == system.defatom(ARTICLE_WRITER)
    assert ["article_writer"] == system.workflows.names()


def test_a_plain_task_system_takes_defworkflow_forms() -> None:
    """`TaskSystem.defatom` accepts defworkflow beside defatom: the tasks first, then the workflow."""
    system = TaskSystem(model="test")
    system.defatom(
        '(defatom greet (params (who str)) (instructions "Hi {{who}}"))'
        "(defworkflow hello (state (who str) (greeting str))"
        '  (steps (step say (task greet) (inputs (who "{{state.who}}")) (output greeting))))'
    )
    result = system.run_workflow("hello", {"who": "Ada"})
    assert "COMPLETE" == result.status
    assert isinstance(result.state.greeting, str)


def test_state_may_name_a_schema() -> None:
    """`(state Name)` (a symbol or a string) is YAML's `state: Name`, located at the name."""
    for name, column in (("Contact", 23), ('"Contact"', 24)):  # a string is located at its text
        declared = workflow(f"(defworkflow w (state {name}) (steps (step s (task t))))")
        assert ("Contact", None) == (declared.state.schema_, declared.state.fields)
        assert at(1, column) == declared.location_of("state.schema")


DURABLE = """\
(defworkflow publish
  (version "1.2")
  (state (topic str (redact true)) (approved bool (default false)) (words int (default 0)))
  (steps
    (step gate (type approval) (message "Publish {{state.topic}}?") (output approved)
          (timeout "24h") (on_timeout approve)))
  (migrations
    (migration (from "1.0") (to 1.1) (rename (title topic)) (drop notes draft) (set (approved false))
               (convert (words "len(state.notes)")) (resume_at gate))
    (migration (from "1.1") (to "1.2") (call "myapp.migrations:to_1_2"))))
"""


def test_migrations_approval_steps_and_redact_read_the_same_as_yaml() -> None:
    """`(migrations (migration ...))`, `(type approval)` steps and `(redact true)` map to their YAML keys."""
    expected = {
        "name": "publish",
        "version": "1.2",
        "state": {
            "fields": [
                {"name": "topic", "type": "str", "redact": True},
                {"name": "approved", "type": "bool", "default": False},
                {"name": "words", "type": "int", "default": 0},
            ]
        },
        "steps": [
            {
                "id": "gate",
                "type": "approval",
                "message": "Publish {{state.topic}}?",
                "output": "approved",
                "timeout": "24h",
                "on_timeout": "approve",
            }
        ],
        "migrations": [
            {
                "from": "1.0",
                "to": "1.1",
                "rename": {"title": "topic"},
                "drop": ["notes", "draft"],
                "set": {"approved": False},
                "convert": {"words": "len(state.notes)"},
                "resume_at": "gate",
            },
            {"from": "1.1", "to": "1.2", "call": "myapp.migrations:to_1_2"},
        ],
    }
    declared = workflow(DURABLE)
    assert Workflow.model_validate(expected).model_dump() == declared.model_dump()
    assert (at(8, 53), at(5, 42)) == (
        declared.location_of("migrations.0.rename.title"),
        declared.location_of("steps.0.message"),
    )


def test_every_yaml_migration_key_is_a_clause() -> None:
    """A `(migration ...)` form accepts a clause for each key a YAML migration has."""
    from atomtask import Migration
    from atomtask.sexp._defworkflow import MIGRATION_CLAUSES

    assert {field.alias or name for name, field in Migration.model_fields.items()} == set(MIGRATION_CLAUSES)


@pytest.mark.parametrize(
    ("source", "where", "fragment"),
    [
        ("(migrations (from 1))", (1, 13), 'lists `(migration (from "1.0") (to "1.1") ...)` forms'),
        (
            "(migrations (migration (frm 1)))",
            (1, 24),
            "Unknown clause 'frm' in a migration of defworkflow 'w'. Did you",
        ),
        ("(migrations (migration (from 1) (to 2) (rename title)))", (1, 48), "`(name value)` pairs"),
        ("(migrations (migration (from 1) (to 1)))", (1, 13), "not from '1' to itself"),
    ],
)
def test_migration_mistakes_raise_located_workflow_errors(source: str, where: tuple[int, int], fragment: str) -> None:
    """A malformed `(migrations ...)` clause is an E110 at the offending form."""
    with pytest.raises(WorkflowDeclarationError) as info:
        workflow(f"(defworkflow w (state (a str)) (steps (step s (task t)))\n{source})")
    assert fragment in info.value.message
    assert SourceLocation(file="w.sexp", line=2, column=where[1]) == info.value.location


CODED = """\
(defworkflow coded
  (state (topic str) (research str) (stats TextStats) (score int (default 0)))
  (steps
    (step research (task research_topic) (inputs (topic "{{state.topic}}")) (outputs (research summary)))
    (step measure (call "tests.workflows.code_steps_funcs:measure") (inputs (text "{{state.research}}"))
          (output stats) (retries 2) (timeout "30s"))
    (step count (task count) (inputs (n "{{state.stats.words}}")) (outputs (score score)))))
"""


def test_a_code_step_reads_the_same_as_yaml_runs_and_its_checks_point_into_the_source() -> None:
    """`(call "pkg.mod:function")` is YAML's `call:`; the run passes the function's answer on; a bad name is located."""
    from tests.workflows.code_steps_funcs import TextStats

    measure = {"id": "measure", "call": "tests.workflows.code_steps_funcs:measure",
               "inputs": {"text": "{{state.research}}"}, "output": "stats", "retries": 2, "timeout": "30s"}  # fmt: skip
    yaml_form = Workflow.model_validate({"name": "x", "state": [{"name": "a", "type": "str"}], "steps": [measure]})
    assert yaml_form.steps[0] == workflow(CODED).steps[1]
    answers = TaskAnswers(research_topic=[{"summary": "the moon pulls the sea"}], count=[{"score": 3}])
    system = make_system(answers.model, importable=("tests",))
    system.models.register(TextStats)
    assert "coded" == system.defatom(CODED)
    result = system.run_workflow("coded", {"topic": "tides"})
    assert (5, 3) == (result.unwrap().stats.words, result.state.score)
    assert ["research_topic", "count"] == answers.tasks()
    with pytest.raises(WorkflowCallFunctionError, match="Did you mean 'measure'") as caught:
        system.register_workflow(workflow(CODED.replace("coded", "typo").replace(":measure", ":measur")))
    assert at(5, 26) == caught.value.location  # just inside the quote


def test_a_hyphenated_name_says_how_to_write_it() -> None:
    """`code-snippet`, natural in Lisp sources, is refused with the identifier to write instead."""
    from atomtask import SchemaError, TaskSystem, TemplateError

    system = TaskSystem(model="test")
    with pytest.raises(TemplateError, match=r"write 'code_snippet' \(and `\{\{code_snippet\}\}` in the text\)"):
        system.defatom('(defatom review (params (code-snippet str)) (instructions "Review {{code-snippet}}"))')
    with pytest.raises(SchemaError, match=r"\(e\.g\. 'code_snippet'\)"):
        system.defatom('(defschema Snip (code-snippet str "the code"))')


@pytest.mark.parametrize(
    ("clause", "said"),
    [
        ("(fail)", "`(fail ...)` in step 'stop' of defworkflow 'f' is empty."),
        ('(fail (reason ok) (mesage "x"))', "mesage"),
        ("(max_visits 2) (on_max_visits (too start))", "too"),
    ],
)
def test_a_wrong_fail_or_on_max_visits_clause_says_what_is_wrong(clause: str, said: str) -> None:
    from atomtask import TaskSystem, WorkflowDeclarationError

    source = f'(defworkflow f (state (n int)) (steps (step start (set (n "1"))) (step stop {clause})))'
    with pytest.raises(WorkflowDeclarationError) as raised:
        TaskSystem(model="test").defatom(source)
    assert said in raised.value.message
