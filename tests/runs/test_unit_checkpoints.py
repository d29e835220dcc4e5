"""A checkpoint per unit of a step: `for_each` elements, `parallel` members, sub-workflow steps; replayed on resume."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest
from atomtask import StepStatus, TaskStatus, TaskSystem
from atomtask.cli import main
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.pg_fixture import postgres_url
from tests.runs.run_helpers import Killed

__all__ = ["postgres_url"]  # the session fixture, for pytest

FLOWS = """\
name: say
params: {word: str}
instructions: "Repeat {{word}}"
---
name: many
state:
  - {name: words, type: "list[str]"}
  - {name: said, type: "list[str]"}
  - {name: last, type: str, default: "-"}
steps:
  - {id: each, task: say, for_each: "state.words", as: w, inputs: {word: "{{w}}"}, collect: said, concurrency: CONC}
  - {id: after, task: say, inputs: {word: "end"}, output: last}
---
name: fan
state:
  - {name: word, type: str}
  - {name: a, type: str}
  - {name: b, type: str}
  - {name: c, type: str}
steps:
  - id: all
    parallel:
      - {id: one, task: say, inputs: {word: "a"}, output: a}
      - {id: two, task: say, inputs: {word: "b"}, output: b}
      - {id: three, task: say, inputs: {word: "c"}, output: c}
  - {id: done, task: say, inputs: {word: "{{state.a}}{{state.b}}{{state.c}}"}, output: word}
---
name: inner
state:
  - {name: seed, type: str}
  - {name: x, type: str}
  - {name: y, type: str}
  - {name: z, type: str}
steps:
  - {id: s1, task: say, inputs: {word: "{{state.seed}}1"}, output: x}
  - {id: s2, task: say, inputs: {word: "{{state.seed}}2"}, output: y}
  - {id: s3, task: say, inputs: {word: "{{state.seed}}3"}, output: z}
---
name: outer
state:
  - {name: seed, type: str}
  - {name: got, type: str}
  - {name: last, type: str, default: "-"}
steps:
  - {id: sub, workflow: inner, inputs: {seed: "{{state.seed}}"}, outputs: {got: z}}
  - {id: after, task: say, inputs: {word: "end"}, output: last}
"""


def _model(asked: list[str], *, kill: str | None = None, slow: dict[str, float] | None = None) -> FunctionModel:
    """Answers each word upper-cased (after `slow[word]` seconds); raises `Killed` (kill -9) when asked `kill`."""

    async def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        word = str(messages[-1].parts[-1].content).removeprefix("Repeat ")  # type: ignore[union-attr]
        asked.append(word)
        await asyncio.sleep((slow or {}).get(word, 0))
        if word == kill:
            raise Killed()
        return ModelResponse(parts=[TextPart(word.upper())])

    return FunctionModel(answer)


def _system(tmp_path: Path, concurrency: int = 1) -> TaskSystem:
    (tmp_path / "flows.yaml").write_text(FLOWS.replace("CONC", str(concurrency)), encoding="utf-8")
    return TaskSystem(templates=tmp_path / "flows.yaml")


def _shown(tmp_path: Path, run_id: str, db: str, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    capsys.readouterr()
    assert 0 == main(["workflow", "show", run_id, "--json", "--db", db, "--templates", str(tmp_path)])
    shown: dict[str, object] = json.loads(capsys.readouterr().out)
    return shown


def test_a_for_each_killed_after_some_elements_resumes_asking_only_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Killed at element 4 of 5: resumed, elements 0-3 come back from their records; only 4 is asked."""
    system, db = _system(tmp_path), str(tmp_path / "runs.sqlite")
    words = ["a", "b", "c", "d", "e"]
    asked: list[str] = []
    with pytest.raises(Killed):
        system.run_workflow("many", {"words": words}, run_id="each-1", db=db, model=_model(asked, kill="e"))
    assert ["a", "b", "c", "d", "e"] == asked
    asked = []
    result = system.resume_workflow("each-1", db=db, model=_model(asked))
    assert TaskStatus.COMPLETE == result.status, result.error
    assert ["e", "end"] == asked
    assert (["A", "B", "C", "D", "E"], "END") == (result.state.said, result.state.last)
    assert [0, 1, 2, 3, 4, None] == [v.item for v in result.steps]
    shown = _shown(tmp_path, "each-1", db, capsys)
    assert ["each", "after"] == [s["step"] for s in shown["steps"]]  # type: ignore[attr-defined]
    assert ("COMPLETE", "after", 6) == (shown["status"], shown["current_step"], shown["requests"])


def test_elements_finished_out_of_order_with_concurrency_are_matched_by_index(tmp_path: Path) -> None:
    """`concurrency: 3`, element 0 slow and killed after 1-5 ended: resumed, only element 0 is asked again."""
    _out_of_order(tmp_path, str(tmp_path / "runs.sqlite"), "conc-1")


@pytest.mark.postgres
def test_elements_finished_out_of_order_are_matched_by_index_on_postgres(tmp_path: Path, postgres_url: str) -> None:
    """PostgreSQL: the same kill among concurrent elements, and the same resume asking only element 0."""
    _out_of_order(tmp_path, postgres_url, f"conc-pg-{uuid.uuid4().hex[:8]}")


def _out_of_order(tmp_path: Path, db: str, run_id: str) -> None:
    system = _system(tmp_path, concurrency=3)
    words = ["a", "b", "c", "d", "e", "f"]
    asked: list[str] = []
    with pytest.raises(Killed):
        model = _model(asked, kill="a", slow={"a": 1.0, "b": 0.2, "c": 0.05})
        system.run_workflow("many", {"words": words}, run_id=run_id, db=db, model=model)
    assert words == sorted(asked)
    asked = []
    result = system.resume_workflow(run_id, db=db, model=_model(asked, slow={"a": 0.1}))
    assert TaskStatus.COMPLETE == result.status, result.error
    assert ["a", "end"] == asked
    assert ["A", "B", "C", "D", "E", "F"] == result.state.said
    assert 7 == result.usage.requests


def test_a_completed_for_each_is_replayed_whole_when_the_next_step_was_in_flight(tmp_path: Path) -> None:
    """Killed in the step after a `for_each`: resumed, no element is asked again (their record ids are skipped)."""
    system, db = _system(tmp_path, concurrency=2), str(tmp_path / "runs.sqlite")
    asked: list[str] = []
    with pytest.raises(Killed):
        system.run_workflow(
            "many", {"words": ["a", "b", "c"]}, run_id="after-1", db=db, model=_model(asked, kill="end")
        )
    asked = []
    result = system.resume_workflow("after-1", db=db, model=_model(asked))
    assert TaskStatus.COMPLETE == result.status, result.error
    assert ["end"] == asked
    assert (["A", "B", "C"], "END") == (result.state.said, result.state.last)


def test_a_limit_counts_replayed_elements(tmp_path: Path) -> None:
    """`max_requests` of the run holds across the resume: elements replayed from records count against it."""
    system, db = _system(tmp_path), str(tmp_path / "runs.sqlite")
    asked: list[str] = []
    with pytest.raises(Killed):
        system.run_workflow(
            "many", {"words": ["a", "b", "c", "d"]}, run_id="lim-1", db=db, model=_model(asked, kill="d"),
            limits={"requests": 4},
        )  # fmt: skip
    asked = []
    result = system.resume_workflow("lim-1", db=db, model=_model(asked))
    assert ["d"] == asked  # a, b, c replayed (3) + d asked (1) = 4: the limit is reached before `after`
    assert (TaskStatus.FAILED, "after") == (result.status, result.error.step)


def test_a_parallel_group_killed_in_one_member_resumes_asking_only_that_member(tmp_path: Path) -> None:
    """Members `one` and `two` ended, `three` was killed: resumed, only `three` is asked, then the next step."""
    system, db = _system(tmp_path), str(tmp_path / "runs.sqlite")
    asked: list[str] = []
    with pytest.raises(Killed):
        system.run_workflow("fan", {}, run_id="fan-1", db=db, model=_model(asked, kill="c", slow={"c": 0.5}))
    assert ["a", "b", "c"] == sorted(asked)
    asked = []
    result = system.resume_workflow("fan-1", db=db, model=_model(asked))
    assert TaskStatus.COMPLETE == result.status, result.error
    assert ["c", "ABC"] == asked
    assert ("A", "B", "C", "ABC") == (result.state.a, result.state.b, result.state.c, result.state.word)
    assert ["one", "two", "three", "done"] == [v.step for v in result.steps]


def test_a_sub_workflow_killed_in_its_third_step_resumes_there(tmp_path: Path) -> None:
    """The child's first two steps are records of their own: resumed, only its third step (then `after`) is asked."""
    system, db = _system(tmp_path), str(tmp_path / "runs.sqlite")
    asked: list[str] = []
    with pytest.raises(Killed):
        system.run_workflow("outer", {"seed": "s"}, run_id="sub-1", db=db, model=_model(asked, kill="s3"))
    assert ["s1", "s2", "s3"] == asked
    asked = []
    result = system.resume_workflow("sub-1", db=db, model=_model(asked))
    assert TaskStatus.COMPLETE == result.status, result.error
    assert ["s3", "end"] == asked
    assert ("S3", "END") == (result.state.got, result.state.last)
    child = result.steps[0].subworkflow
    assert child is not None
    assert (["s1", "s2", "s3"], 3) == ([v.step for v in child.steps], child.usage.requests)
    assert [StepStatus.COMPLETE] * 2 == [v.status for v in result.steps]


def test_a_completed_sub_workflow_is_replayed_whole(tmp_path: Path) -> None:
    """Killed in the step after a sub-workflow: resumed, none of the child's steps is asked again."""
    system, db = _system(tmp_path), str(tmp_path / "runs.sqlite")
    asked: list[str] = []
    with pytest.raises(Killed):
        system.run_workflow("outer", {"seed": "s"}, run_id="sub-2", db=db, model=_model(asked, kill="end"))
    asked = []
    result = system.resume_workflow("sub-2", db=db, model=_model(asked))
    assert (TaskStatus.COMPLETE, ["end"]) == (result.status, asked)
    assert "S3" == result.state.got


SECRET = """\
name: say
params: {word: str}
instructions: "Repeat {{word}}"
---
name: hush
state:
  - {name: words, type: "list[str]"}
  - {name: said, type: "list[str]", redact: true}
  - {name: a, type: str, redact: true}
  - {name: b, type: str}
  - {name: got, type: str, redact: true}
steps:
  - {id: each, task: say, for_each: "state.words", as: w, inputs: {word: "{{w}}"}, collect: said}
  - id: all
    parallel:
      - {id: one, task: say, inputs: {word: "hushmember"}, output: a}
      - {id: two, task: say, inputs: {word: "plainmember"}, output: b}
  - {id: sub, workflow: inner, inputs: {seed: "hushchild"}, outputs: {got: z}}
---
name: inner
state:
  - {name: seed, type: str}
  - {name: x, type: str}
  - {name: y, type: str}
  - {name: z, type: str}
steps:
  - {id: s1, task: say, inputs: {word: "{{state.seed}}1"}, output: x}
  - {id: s2, task: say, inputs: {word: "{{state.seed}}2"}, output: y}
  - {id: s3, task: say, inputs: {word: "{{state.seed}}3"}, output: z}
"""


def test_units_writing_a_redacted_field_are_not_recorded(tmp_path: Path) -> None:
    """Elements collected into, members and sub-workflows writing a `redact: true` field leave no record of it."""
    (tmp_path / "flows.yaml").write_text(SECRET, encoding="utf-8")
    system, db = TaskSystem(templates=tmp_path / "flows.yaml"), tmp_path / "runs.sqlite"
    asked: list[str] = []
    result = system.run_workflow("hush", {"words": ["hushelement"]}, run_id="hush-1", db=str(db), model=_model(asked))
    assert TaskStatus.COMPLETE == result.status, result.error
    assert (["HUSHELEMENT"], "HUSHMEMBER", "PLAINMEMBER", "HUSHCHILD3") == (
        result.state.said, result.state.a, result.state.b, result.state.got,
    )  # fmt: skip
    stored = b"".join(path.read_bytes() for path in db.parent.glob(db.name + "*"))
    assert [] == [word for word in (b"HUSHELEMENT", b"HUSHMEMBER", b"HUSHCHILD") if word in stored]
    assert b"PLAINMEMBER" in stored  # the member writing a plain field has its record


NESTED = """\
name: say
params: {word: str}
instructions: "Repeat {{word}}"
---
name: twice
state:
  - {name: seed, type: str}
  - {name: x, type: str}
  - {name: y, type: str}
steps:
  - {id: s1, task: say, inputs: {word: "{{state.seed}}1"}, output: x}
  - {id: s2, task: say, inputs: {word: "{{state.seed}}2"}, output: y}
---
name: nested
state:
  - {name: words, type: "list[str]"}
  - {name: many, type: "list[str]"}
  - {name: one, type: str}
  - {name: subs, type: "list[any]"}
  - {name: deep, type: str}
steps:
  - id: group
    parallel:
      - {id: each, task: say, for_each: "state.words", as: w, inputs: {word: "{{w}}"}, collect: many, concurrency: 2}
      - {id: single, task: say, inputs: {word: "single"}, output: one}
  - {id: per, workflow: twice, for_each: "state.words", as: w, inputs: {seed: "{{w}}"}, collect: subs}
  - {id: sub, workflow: twice, inputs: {seed: "deep"}, outputs: {deep: y}}
"""


def test_units_inside_units_run_within_their_unit(tmp_path: Path) -> None:
    """A `for_each` member of a group, sub-workflows per element: one record each, the result of a plain run."""
    (tmp_path / "flows.yaml").write_text(NESTED, encoding="utf-8")
    system = TaskSystem(templates=tmp_path / "flows.yaml")
    plain = system.run_workflow("nested", {"words": ["a", "b", "c"]}, model=_model([]))
    asked: list[str] = []
    db = str(tmp_path / "runs.sqlite")
    durable = system.run_workflow("nested", {"words": ["a", "b", "c"]}, run_id="nest-1", db=db, model=_model(asked))
    assert (TaskStatus.COMPLETE, TaskStatus.COMPLETE) == (plain.status, durable.status), durable.error
    assert plain.state.model_dump() == durable.state.model_dump()
    assert (["A", "B", "C"], "SINGLE", "DEEP2") == (durable.state.many, durable.state.one, durable.state.deep)
    assert 12 == len(asked) == durable.usage.requests
