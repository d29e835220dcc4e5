"""`atomtask run|workflow run --dry-run`: the estimate printed (or `--json`), exit 0, no request sent."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from atomtask.cli._main import main
from atomtask.testing import FakeProviderServer


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


def test_run_dry_run_prints_the_estimate_and_sends_nothing(server: FakeProviderServer, templates_dir: Path) -> None:
    """`run --dry-run` against the fake server's endpoint: the table on stdout, exit 0, no request received."""
    argv = ["run", "extract_contact", "-i", "text=Ada Lovelace, ada@example.com", "--dry-run"]
    argv += ["--model", "openai-chat:gpt-4o-mini", "--base-url", server.openai_base_url]
    code, out, _ = run([*argv, "--templates", str(templates_dir)])
    assert 0 == code
    assert [] == server.requests
    assert 0 == server.model_listings
    lines = out.splitlines()
    assert lines[0].startswith("Dry run of template 'extract_contact' (no model called)")
    assert ["template", "model", "requests", "input", "tokens", "output", "tokens", "USD"] == lines[1].split()
    assert lines[2].startswith("extract_contact  openai-chat:gpt-4o-mini  1 / 3 ")
    assert any(line.startswith("total") for line in lines)


def test_run_dry_run_json_needs_no_api_key(templates_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--dry-run --json` for `openai:gpt-4o-mini` with no key set: the figures as JSON, priced."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    argv = ["run", "extract_contact", "-i", "text=Ada", "--model", "openai:gpt-4o-mini", "--dry-run", "--json"]
    code, out, err = run([*argv, "--max-tokens", "100", "--templates", str(templates_dir)])
    assert 0 == code, err
    estimate = json.loads(out)
    assert ("extract_contact", "template") == (estimate["name"], estimate["kind"])
    assert {"expected": 1, "worst": 3} == estimate["total"]["requests"]
    assert 300 == estimate["total"]["output_tokens"]["worst"]  # --max-tokens 100, three attempts
    assert estimate["total"]["cost"]["expected"] > 0
    assert [] == estimate["unknown_prices"]


def test_run_dry_run_with_a_missing_input_fails_as_the_run_does(templates_dir: Path) -> None:
    """A missing input: the run's `input_validation_failure` line and exit status 2, nothing printed on stdout."""
    argv = ["run", "extract_contact", "--model", "openai:gpt-4o-mini", "--templates", str(templates_dir)]
    dry = run([*argv, "--dry-run"])
    ran = run(argv)
    assert 2 == dry[0] == ran[0]
    assert "" == dry[1]
    assert dry[2].startswith("atomtask: error: input_validation_failure: Invalid inputs for template 'extract_contact'")
    assert dry[2] == ran[2]


def test_workflow_run_dry_run_prints_every_template(server: FakeProviderServer, templates_dir: Path) -> None:
    """`workflow run --dry-run`: a row per template the workflow runs; no request reaches the server."""
    argv = ["workflow", "run", "article_writer", "-i", "topic=How tides work", "--dry-run", "--json"]
    argv += ["--model", "openai-chat:gpt-4o-mini", "--base-url", server.openai_base_url]
    code, out, err = run([*argv, "--templates", str(templates_dir)])
    assert 0 == code, err
    assert [] == server.requests
    estimate = json.loads(out)
    assert {"research_topic", "write_article", "review_article", "revise_article"} == {
        row["template"] for row in estimate["rows"]
    }


def test_workflow_run_dry_run_with_bad_inputs_fails_as_the_run_does(templates_dir: Path) -> None:
    """Run inputs that do not fit the state: the run's error and exit status 2; an unknown workflow: exit 2."""
    argv = ["workflow", "run", "article_writer", "-i", "subject=tides", "--templates", str(templates_dir)]
    code, out, err = run([*argv, "--dry-run"])
    assert (2, "") == (code, out)
    assert err.startswith("atomtask: error: input_validation_failure: Invalid inputs for workflow 'article_writer'")
    code, _, err = run(["workflow", "run", "nope", "--dry-run", "--templates", str(templates_dir)])
    assert 2 == code
    assert "No workflow named 'nope'" in err
