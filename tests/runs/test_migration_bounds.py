"""A migration's `convert` that cannot work on the recorded state is a `MigrationError`, the stored run unchanged.

Each `convert` here reads a field whose type in the older version registration cannot know (it is
dropped, or its value is too big only at run time), so the refusal happens at resume, on a real
durable run (DBOS on SQLite), before anything is written.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from atomtask import MigrationError, TaskSystem, Workflow
from atomtask.runs._migrations import migrate
from atomtask.workflows import WorkflowRegistry

from tests.runs.run_helpers import Killed, crashing_model
from tests.workflow_fixtures import make_system

SAY = """\
name: say
params: {word: str}
instructions: "Repeat {{word}}"
"""

V1 = """\
name: flow
version: "1.0"
state:
  - {name: word, type: str}
  - {name: big, type: int}
  - {name: one, type: str}
  - {name: two, type: str}
steps:
  - {id: first, task: say, inputs: {word: "{{state.word}}"}, output: one}
  - {id: second, task: say, inputs: {word: "{{state.one}}"}, output: two}
"""

V11 = """\
name: flow
version: "1.1"
state:
  - {name: word, type: str}
  - {name: big, type: int}
  - {name: heard, type: str}
  - {name: two, type: str}
migrations:
  - {from: "1.0", to: "1.1", drop: [one], convert: {CONVERT}}
steps:
  - {id: first, task: say, inputs: {word: "{{state.word}}"}, output: heard}
  - {id: second, task: say, inputs: {word: "{{state.heard}}"}, output: two}
"""

BIG = 10**4000 - 1


def _balanced_product(levels: int) -> str:
    """`(state.big) * (state.big)`, nested `levels` times: 2**levels factors in a tree only `levels` deep."""
    return "state.big" if levels == 0 else f"({_balanced_product(levels - 1)}) * ({_balanced_product(levels - 1)})"


def _system(tmp_path: Path, flow: str) -> TaskSystem:
    folder = tmp_path / f"flows-{abs(hash(flow))}"
    folder.mkdir(exist_ok=True)
    (folder / "flows.yaml").write_text(SAY + "---\n" + flow, encoding="utf-8")
    return TaskSystem(templates=folder)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("runs") / "runs.sqlite")


def _rows(db: str, run_id: str) -> list[Any]:
    with sqlite3.connect(db) as connection:
        status = connection.execute("SELECT * FROM workflow_status WHERE workflow_uuid LIKE ?", [run_id + "%"])
        steps = connection.execute("SELECT * FROM operation_outputs WHERE workflow_uuid LIKE ?", [run_id + "%"])
        return [*status.fetchall(), *steps.fetchall()]


@pytest.mark.parametrize(
    ("convert", "first_answer", "message"),
    [
        ('{heard: "state.one * 10000000000"}', "one", "`*` needs numbers; got a str and an int"),
        ('{heard: "state.one % 7"}', "%0999999999d", "`%` needs numbers; got a str and an int"),
        (
            "{big: " + repr(_balanced_product(8)) + "}",
            "one",
            "would make a whole number of about 8,000 digits, over the limit of 4,300",
        ),
    ],
    ids=["str-times-ten-billion", "percent-format", "big-int-product"],
)
def test_a_convert_too_big_for_the_recorded_state_refuses_the_resume(
    tmp_path: Path, db: str, convert: str, first_answer: str, message: str
) -> None:
    """At resume: `MigrationError` naming the field and the operation; the stored run is exactly as it was."""
    run_id = f"bounds-{abs(hash(convert))}"
    model, _ = crashing_model(first_answer, crash_at=2)
    with pytest.raises(Killed):
        _system(tmp_path, V1).run_workflow("flow", {"word": "w", "big": BIG}, run_id=run_id, db=db, model=model)
    before = _rows(db, run_id)
    flow = V11.replace("{CONVERT}", convert)
    if "heard" not in convert:
        flow = flow.replace("drop: [one], ", "rename: {one: heard}, ")
    with pytest.raises(MigrationError) as caught:
        _system(tmp_path, flow).resume_workflow(run_id, db=db, model=crashing_model("two")[0])
    assert message in caught.value.message
    assert ("1.0", "1.1") == (caught.value.from_version, caught.value.to_version)
    assert "the stored run is unchanged" in caught.value.message
    assert before == _rows(db, run_id)


T = TypeVar("T")


def _with_little_stack(call: Callable[[], T], room: int = 40) -> T:
    """`call()` with only `room` frames of stack left, as in a thread with a small stack."""
    depth, frame = 0, sys._getframe()
    while frame.f_back is not None:
        depth, frame = depth + 1, frame.f_back
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + room)
    try:
        return call()
    finally:
        sys.setrecursionlimit(limit)


def test_a_convert_that_runs_out_of_stack_is_a_migration_error() -> None:
    """Not only `ExpressionRuntimeError`: any exception of a `convert` (RecursionError here) is a `MigrationError`."""
    system = make_system("test")
    registry = WorkflowRegistry(system.templates, system.models)
    deep = "len(str(" * 45 + "state.title" + "))" * 45
    doc = {
        "name": "notes",
        "version": "1.1",
        "state": [{"name": "title", "type": "str", "default": ""}, {"name": "words", "type": "int", "default": 0}],
        "steps": [{"id": "write", "task": "shout", "inputs": {"word": "{{state.title}}"}, "output": "title"}],
        "migrations": [{"from": "1.0", "to": "1.1", "convert": {"words": deep}}],
    }
    registry.register(Workflow.model_validate(doc))
    compiled = registry.compiled("notes")
    old = {"title": "t"}
    assert {"title": "t", "words": 1} == migrate(compiled, old, "1.0", "f", run_id="r1").state
    with pytest.raises(MigrationError) as caught:
        _with_little_stack(lambda: migrate(compiled, old, "1.0", "f", run_id="r1"))
    assert "`convert: words`" in caught.value.message
    assert "RecursionError" in caught.value.message
    assert {"title": "t"} == old
