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
    assert "Did you mean 'extract_contact'" in err


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
    names = [line.split("\t")[0] for line in out.splitlines()]
    assert {
        "associative_match",
        "classify_ticket",
        "draft_reply",
        "extract_contact",
        "extract_event",
        "extract_invoice",
        "find_sender",
        "summarize",
    } <= set(names)
    assert sorted(names) == names
    code, out, _ = run(["show", "classify_ticket", "--templates", str(templates_dir)])
    shown = json.loads(out)
    schema = shown["output_json_schema"]
    assert ["billing", "bug", "feature_request", "account", "other"] == schema["properties"]["category"]["enum"]
    assert "TicketClassification" == shown["output_format"]["schema"]


def test_show_prints_the_schema_as_an_openai_model_receives_it(templates_dir: Path) -> None:
    """`show --model` applies that model's profile: OpenAI's drops `title` and decides strict mode."""
    args = ["show", "extract_event", "--templates", str(templates_dir)]
    _, out, _ = run(args)
    plain = json.loads(out)
    _, out, _ = run([*args, "--model", "openai-chat:gpt-4o"])
    openai = json.loads(out)
    assert "Event" == plain["output_json_schema"]["title"]
    assert "title" not in openai["output_json_schema"]
    # `uniqueItems` and `minLength` are outside OpenAI's strict subset, so pydantic-ai sends it non-strict.
    assert {"model": "openai-chat:gpt-4o", "mode": "tool", "tool_name": "final_result", "strict": False} == {
        k: openai["output_delivery"][k] for k in ("model", "mode", "tool_name", "strict")
    }
    assert "date-time" == openai["output_json_schema"]["properties"]["starts_at"]["format"]


def test_show_native_mode_prints_the_output_object(tmp_path: Path) -> None:
    """In native mode `show` prints the output object's schema, not a tool."""
    (tmp_path / "t.yaml").write_text(
        "name: n\ninstructions: x\noutput_format:\n  type: json\n  mode: native\n"
        "  schema: {json_schema: {type: integer, description: A count.}}\n"
    )
    _, out, _ = run(["show", "n", "--templates", str(tmp_path)])
    shown = json.loads(out)
    assert "native" == shown["output_delivery"]["mode"]
    assert "NOutput" == shown["output_delivery"]["name"]
    assert {"type": "integer", "description": "A count."} == shown["output_json_schema"]["properties"]["response"]


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


def test_eval_binds_inputs_as_variables_and_prints_json(tmp_path: Path, templates_dir: Path) -> None:
    """`eval` binds each `-i` as a variable and prints the script's final value as JSON."""
    script = tmp_path / "s.sexp"
    script.write_text("(list who n 'sym (not nil))")
    code, out, _ = run(["eval", str(script), "-i", "who=Ada", "-i", "n:=3", "--templates", str(templates_dir)])
    assert 0 == code
    assert ["Ada", 3, "sym", True] == json.loads(out)


def test_eval_prints_a_validated_instance_as_a_json_object(tmp_path: Path, templates_dir: Path) -> None:
    """A script ending in `(unwrap r)` prints the model instance's fields as JSON."""
    script = tmp_path / "s.sexp"
    script.write_text('(unwrap (extract_contact (text "Ann <ann@x.org>")))')
    code, out, _ = run(["eval", str(script), "--templates", str(templates_dir)])
    assert 0 == code
    assert {"name", "email", "phone", "company"} == set(json.loads(out))


def test_eval_runs_the_shipped_pipeline(templates_dir: Path) -> None:
    """The shipped pipeline runs end to end on the embedded model and prints the last TaskResult."""
    pipeline = templates_dir / "pipeline.sexp"
    code, out, err = run(["eval", str(pipeline), "-i", "message=Hi, Ada here.", "--templates", str(templates_dir)])
    assert 0 == code
    result = json.loads(out)
    assert ("COMPLETE", "draft_reply") == (result["status"], result["notes"]["template"])
    assert {"greeting", "body"} == set(result["parsedContent"])
    assert "atomtask: draft_reply COMPLETE on test" in err


def test_eval_errors_exit_2_with_file_line_and_column(tmp_path: Path, templates_dir: Path) -> None:
    """Syntax and evaluation mistakes exit 2 and point into the script; a missing file too."""
    script = tmp_path / "s.sexp"
    script.write_text("(list\n  who)")
    code, out, err = run(["eval", str(script), "--templates", str(templates_dir)])
    assert (2, "") == (code, out)
    assert f"atomtask: error: {script}:2:3: Unbound symbol 'who'." in err
    script.write_text("(list 1")
    code, _, err = run(["eval", str(script), "--templates", str(templates_dir)])
    assert 2 == code
    assert f"{script}:1:1: This `(` is never closed" in err
    code, _, err = run(["eval", str(tmp_path / "nope.sexp"), "--templates", str(templates_dir)])
    assert 2 == code
    assert "Cannot read script" in err


def test_eval_unwrap_of_a_failed_task_exits_1_with_the_result(tmp_path: Path, templates_dir: Path) -> None:
    """`(unwrap r)` on a FAILED result stops the script: exit 1, the failed result on stdout."""
    script = tmp_path / "s.sexp"
    script.write_text("(unwrap (extract_contact))")
    code, out, err = run(["eval", str(script), "--templates", str(templates_dir)])
    assert 1 == code
    assert "input_validation_failure" == json.loads(out)["error"]["reason"]
    assert f"{script}:1:1: Task 'extract_contact' failed (input_validation_failure" in err


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["eval", "--help"]])
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
