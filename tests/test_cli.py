"""The `atomtask` command, called as `main(argv)` and, for start-up cost, as a subprocess."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from atomtask.cli import main
from pydantic_ai import CostNotFoundWarning


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_run_prints_validated_json_and_a_status_line(templates_dir: Path) -> None:
    """`run` prints the output JSON on stdout and the status and default-model notice on stderr."""
    code, out, err = run(["run", "extract_contact", "-i", "text=Ann <ann@x.org>", "--templates", str(templates_dir)])
    assert 0 == code
    assert {"name", "email", "phone", "company"} == set(json.loads(out))
    lines = err.strip().splitlines()
    assert lines[0].startswith("atomtask: no model configured")
    assert lines[1].startswith("atomtask: extract_contact COMPLETE on test (1 attempt")


def test_run_reads_inputs_from_files_and_json(tmp_path: Path, templates_dir: Path) -> None:
    """`key=@file` reads the file's text and `key:=json` passes a JSON value."""
    doc = tmp_path / "doc.txt"
    doc.write_text("A long document.")
    code, out, _ = run(
        [
            "run",
            "summarize",
            "-i",
            f"document=@{doc}",
            "-i",
            "max_points:=3",
            "--templates",
            str(templates_dir),
            "--result",
        ]
    )
    assert 0 == code
    result = json.loads(out)
    assert "COMPLETE" == result["status"]
    assert "summarize" == result["notes"]["template"]


def test_run_failure_exits_1_with_the_error(templates_dir: Path) -> None:
    """A task that fails exits 1 and prints the reason on stderr."""
    code, out, err = run(["run", "extract_contact", "--templates", str(templates_dir)])
    assert 1 == code
    assert "" == out
    assert "input_validation_failure: Invalid inputs for template 'extract_contact'" in err


def test_unknown_template_exits_1_with_suggestion(templates_dir: Path) -> None:
    """An unknown template name exits 1 and suggests the near one."""
    code, _, err = run(["run", "extract_contakt", "--templates", str(templates_dir)])
    assert 1 == code
    assert "Did you mean 'extract_contact'?" in err


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    """A broken template file exits 2 with file:line."""
    (tmp_path / "t.yaml").write_text("name: t\ninstructions: '{{x}}'\n")
    code, _, err = run(["list", "--templates", str(tmp_path)])
    assert 2 == code
    assert f"{tmp_path / 't.yaml'}:2" in err


def test_bad_input_syntax_exits_2(templates_dir: Path) -> None:
    """`-i` without `=` is a usage error."""
    code, _, err = run(["run", "summarize", "-i", "document", "--templates", str(templates_dir)])
    assert 2 == code
    assert "is not KEY=VALUE" in err


def test_list_and_show(templates_dir: Path) -> None:
    """`list` names every template; `show` prints the template and its output JSON Schema."""
    code, out, _ = run(["list", "--templates", str(templates_dir)])
    assert 0 == code
    assert ["classify_ticket", "extract_contact", "summarize"] == [line.split("\t")[0] for line in out.splitlines()]
    code, out, _ = run(["show", "classify_ticket", "--templates", str(templates_dir)])
    shown = json.loads(out)
    schema = shown["output_json_schema"]
    assert ["billing", "bug", "feature_request", "account", "other"] == schema["properties"]["category"]["enum"]
    assert "TicketClassification" == shown["output_format"]["schema"]


def test_model_flag_rejects_unknown_providers(templates_dir: Path) -> None:
    """`--model` with an unknown provider exits 2 with a suggestion."""
    code, _, err = run(
        ["run", "summarize", "-i", "document=x", "--model", "opena-chat:x", "--templates", str(templates_dir)]
    )
    assert 2 == code
    assert "Did you mean 'openai-chat'" in err


def test_help_does_not_import_provider_sdks_or_pydantic_ai() -> None:
    """`atomtask --help` imports neither the provider SDKs nor pydantic-ai."""
    code = (
        "import sys\nfrom atomtask.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('openai', 'anthropic', 'pydantic_ai') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith("[]")


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"]])
def test_help_exits_zero(argv: list[str]) -> None:
    """Help for the command and its subcommands exits 0."""
    with pytest.raises(SystemExit) as raised:
        main(argv)
    assert 0 == raised.value.code


def test_run_passes_retries_repair_and_limits(templates_dir: Path) -> None:
    """`--retries`, `--no-repair` and `--max-*` reach the call; a bad limit fails before any model call."""
    base = ["run", "extract_contact", "-i", "text=Ann", "--templates", str(templates_dir)]
    # The test model has no prices: the cost limit cannot be enforced, and pydantic-ai says so.
    with pytest.warns(CostNotFoundWarning):
        code, _, err = run([*base, "--retries", "0", "--no-repair", "--max-requests", "1", "--max-cost", "0.01"])
    assert 0 == code, err
    code, _, err = run([*base, "--max-requests", "0"])
    assert 1 == code
    assert "configuration_error: Invalid `limits=`" in err
