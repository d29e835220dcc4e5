"""`atomtask.lint._compat`: the P3xx analysis in a helper process gives the findings made in-process."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from atomtask.lint import _compat as compat
from atomtask.lint import check
from atomtask.lint._compat import InlineAnalyses, ProcessAnalyses, main
from atomtask.loading._providers import known_providers
from pydantic import BaseModel, Field

from tests.lint.test_cache import mixed_project


class Verdict(BaseModel):
    """A verdict."""

    reasoning: str = Field(description="Why.")
    label: str = Field(pattern="^[a-z]+$")
    scores: dict[str, float]
    note: str | None = None


SCHEMA = Verdict.model_json_schema()
REQUESTS = [
    (SCHEMA, "openai-chat:gpt-4o-mini", "tool"),
    (SCHEMA, "google:gemini-2.5-flash", "native"),
    (SCHEMA, "anthropic:claude-sonnet-4-5", "tool"),
    (SCHEMA, "test", "tool"),
]


def test_the_helper_sends_the_providers_then_each_analysis() -> None:
    """The first line is the known providers; each request line gets `compat.analyse`'s issues, by index."""
    lines = b"".join(json.dumps([i, *request]).encode() + b"\n" for i, request in enumerate(REQUESTS))
    out = io.BytesIO()
    assert 0 == main(io.BytesIO(lines), out)
    first, *answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert {"providers": sorted(known_providers())} == first
    expected = [
        [i, [[issue.code, issue.message, issue.owner, issue.field] for issue in compat.analyse(*request)]]
        for i, request in enumerate(REQUESTS)
    ]
    assert expected == answers


def test_process_analyses_equal_inline_ones() -> None:
    """Through a real helper process, the same issues in the order submitted, and the same providers."""
    inline, helper = InlineAnalyses(), ProcessAnalyses()
    try:
        for request in REQUESTS:
            inline.submit(*request)
            helper.submit(*request)
        assert known_providers() == helper.providers()
        assert inline.results() == helper.results()
    finally:
        helper.close()


def test_a_schema_json_does_not_carry_exactly_is_analysed_here() -> None:
    """A tuple, a NaN or an object that is not JSON never reaches the helper; the issues are this process's."""
    odd = [
        {"type": "object", "title": "T", "properties": {"a": {"type": "string", "enum": ("x", "y")}}},
        {"type": "object", "title": "N", "properties": {"a": {"type": "number", "maximum": float("nan")}}},
        {"type": "object", "title": "O", "properties": {"a": {"type": "string", "x-note": object()}}},
    ]
    helper = ProcessAnalyses()
    try:
        for schema in odd:
            helper.submit(schema, "google:gemini-2.5-flash", "native")
        assert [compat.analyse(schema, "google:gemini-2.5-flash", "native") for schema in odd] == helper.results()
    finally:
        helper.close()


@pytest.mark.parametrize("program", ["/nonexistent/python", shutil.which("true") or "/bin/true"])
def test_without_a_working_helper_everything_is_analysed_here(program: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A helper that cannot start, or exits answering nothing, leaves the analyses to this process."""
    monkeypatch.setattr(sys, "executable", program)
    helper = ProcessAnalyses()
    for request in REQUESTS:
        helper.submit(*request)
    assert helper.providers() is None
    assert [compat.analyse(*request) for request in REQUESTS] == helper.results()


def test_a_check_with_the_helper_finds_what_an_in_process_check_finds(tmp_path: Path) -> None:
    """In a fresh interpreter, `helper_process=True` gives the same report and never imports pydantic-ai itself."""
    mixed_project(tmp_path)
    models = ["openai-chat:gpt-4o-mini", "google:gemini-2.5-flash", "atomtask:synthetic"]
    expected = check([tmp_path], models=models)
    script = (
        "import json, sys\n"
        "from atomtask.lint._engine import check\n"
        f"report = check([{str(tmp_path)!r}], models={models!r}, helper_process=True)\n"
        "print(json.dumps([[f.to_json() for f in report.findings], report.templates, report.schemas,"
        " 'pydantic_ai' in sys.modules]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    findings, templates, schemas, imported = json.loads(done.stdout)
    assert [f.to_json() for f in expected.findings] == findings
    assert (expected.templates, expected.schemas, False) == (templates, schemas, imported)
    assert any(f.code.startswith("P") for f in expected.findings)  # the analysis ran, and said something


def test_no_helper_once_pydantic_ai_is_imported() -> None:
    """In a process that imported pydantic-ai already there is nothing to overlap: the check makes no helper."""
    import pydantic_ai  # noqa: F401  # what an application or a test run has done
    from atomtask.lint import _engine as engine

    assert engine._helper() is None


def test_stopping_the_helper_leaves_the_analyses_to_this_process() -> None:
    """`stop` (after an error) ends the helper at once; whatever it had not answered is analysed here."""
    helper = ProcessAnalyses()
    helper.submit(*REQUESTS[0])
    helper.stop()
    assert [compat.analyse(*REQUESTS[0])] == helper.results()


def test_a_helper_asked_nothing_is_not_waited_for() -> None:
    """With no analysis asked (`--select E`), reading the results ends the helper instead of waiting for its import."""
    helper = ProcessAnalyses()
    helper.start()
    assert [] == helper.results()
    assert helper._process is None
