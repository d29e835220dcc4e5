"""`atomtask run/eval/list/show`, called as `main(argv)`: output, `--model`, settings and exit status."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from atomtask.cli._main import main
from atomtask.testing import FakeProviderServer, Reply

CONTACT = {"name": "Ada Lovelace", "email": "ada@example.com", "phone": None, "company": None}


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


@pytest.fixture
def anthropic_template(tmp_path: Path) -> Path:
    """A folder with a template that names its own (Anthropic) model."""
    (tmp_path / "t.yaml").write_text(
        "name: hello\nmodel: anthropic:claude-haiku-4-5\nparams: {who: {type: str}}\ninstructions: Greet {{who}}.\n"
    )
    return tmp_path


def test_run_prints_validated_json_and_a_status_line(templates_dir: Path) -> None:
    """`run` prints the output JSON on stdout and the status and default-model notice on stderr."""
    code, out, err = run(["run", "extract_contact", "-i", "text=Ann <ann@x.org>", "--templates", str(templates_dir)])
    assert 0 == code
    assert {"name", "email", "phone", "company"} == set(json.loads(out))
    lines = err.strip().splitlines()
    assert lines[0].startswith("atomtask: no model configured")
    assert lines[1].startswith("atomtask: extract_contact COMPLETE on ")


def test_run_reads_inputs_from_files_and_json(tmp_path: Path, templates_dir: Path) -> None:
    """`key=@file` reads the file's text and `key:=json` passes a JSON value."""
    doc = tmp_path / "doc.txt"
    doc.write_text("A long document.")
    argv = ["run", "summarize", "-i", f"document=@{doc}", "-i", "max_points:=3", "--result"]
    code, out, _ = run([*argv, "--templates", str(templates_dir)])
    assert 0 == code
    result = json.loads(out)
    assert ("COMPLETE", "summarize") == (result["status"], result["notes"]["template"])


@pytest.mark.parametrize(
    ("inputs", "reason"),
    [
        ([], "input_validation_failure: Invalid inputs for template 'extract_contact': missing required"),
        (
            ["-i", "text:=5"],
            "input_validation_failure: Invalid inputs for template 'extract_contact': parameter 'text'",
        ),
        (["-i", "text=x", "-i", "txt=y"], "unknown parameter 'txt'. Did you mean 'text'? Declared parameters"),
    ],
)
def test_missing_unknown_or_mistyped_inputs_exit_2(inputs: list[str], reason: str, templates_dir: Path) -> None:
    """The task never ran: bad inputs exit 2 with the reason, and no status line."""
    code, out, err = run(["run", "extract_contact", *inputs, "--templates", str(templates_dir)])
    assert (2, "") == (code, out)
    assert reason in err
    assert "?." not in err
    assert "FAILED on" not in err


def test_unknown_template_exits_2_with_suggestion(templates_dir: Path) -> None:
    """An unknown template name exits 2 and suggests the near one."""
    code, _, err = run(["run", "extract_contakt", "--templates", str(templates_dir)])
    assert 2 == code
    assert "Did you mean 'extract_contact'" in err


def test_bad_input_syntax_exits_2(templates_dir: Path) -> None:
    """`-i` without `=` is a usage error."""
    code, _, err = run(["run", "summarize", "-i", "document", "--templates", str(templates_dir)])
    assert 2 == code
    assert "is not KEY=VALUE" in err


def test_model_flag_rejects_unknown_providers_in_cli_terms(templates_dir: Path) -> None:
    """`--model` with an unknown provider exits 2, naming `--model` and the near provider."""
    argv = ["run", "summarize", "-i", "document=x", "--model", "opena-chat:x", "--templates", str(templates_dir)]
    code, _, err = run(argv)
    assert 2 == code
    assert "Unknown provider 'opena-chat' in model 'opena-chat:x' in `--model`. Did you mean 'openai-chat'" in err
    assert "TaskSystem" not in err


@pytest.mark.parametrize("command", [["run", "summarize", "-i", "document=x"], ["show", "summarize"]])
def test_a_bad_atomtask_model_exits_2_naming_the_variable(
    command: list[str], templates_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bad `ATOMTASK_MODEL` stops the command before anything runs, naming the variable."""
    monkeypatch.setenv("ATOMTASK_MODEL", "gpt-4o")
    code, out, err = run([*command, "--templates", str(templates_dir)])
    assert (2, "") == (code, out)
    assert "atomtask: error: Model 'gpt-4o' in the `ATOMTASK_MODEL` environment variable has no provider prefix" in err


def test_model_flag_overrides_the_templates_own_model(anthropic_template: Path) -> None:
    """`--model` is the call's choice: it wins over the model the template declares."""
    code, _, err = run(["run", "hello", "-i", "who=Ada", "--model", "test", "--templates", str(anthropic_template)])
    assert 0 == code, err
    assert "atomtask: hello COMPLETE on test " in err


def test_eval_model_flag_applies_to_every_task_call(anthropic_template: Path, tmp_path: Path) -> None:
    """`eval --model` runs each task call of the script on that model, over the template's own."""
    script = tmp_path / "s.sexp"
    script.write_text('(list (hello (who "Ada")) (hello (who "Bob")))')
    code, out, err = run(["eval", str(script), "--model", "test", "--templates", str(anthropic_template)])
    assert 0 == code, err
    assert [("COMPLETE", "test"), ("COMPLETE", "test")] == [(r["status"], r["notes"]["model"]) for r in json.loads(out)]


@pytest.mark.usefixtures("allow_model_requests")
@pytest.mark.parametrize("command", ["run", "eval"])
def test_model_settings_reach_the_provider_request(
    command: str, server: FakeProviderServer, templates_dir: Path, tmp_path: Path
) -> None:
    """`--temperature 0 --max-tokens 50 --setting seed=7` are in the body the provider receives."""
    server.script(Reply.tool_call(args=CONTACT))
    if command == "run":
        target = ["run", "extract_contact", "-i", "text=Ada"]
    else:
        script = tmp_path / "s.sexp"
        script.write_text('(extract_contact (text "Ada"))')
        target = ["eval", str(script)]
    model = ["--model", "openai-chat:llama3.2", "--base-url", server.openai_base_url]
    settings = ["--temperature", "0", "--max-tokens", "50", "--setting", "seed=7"]
    code, _, err = run([*target, *model, *settings, "--templates", str(templates_dir)])
    assert 0 == code, err
    body = server.requests[0].body
    assert (0, 50, 7) == (body["temperature"], body.get("max_completion_tokens", body.get("max_tokens")), body["seed"])


def test_an_unknown_setting_exits_2_with_a_suggestion(templates_dir: Path) -> None:
    """A misspelt `--setting` key is a usage error naming the command line and the near key."""
    argv = ["run", "summarize", "-i", "document=x", "--setting", "temprature=0", "--templates", str(templates_dir)]
    code, _, err = run(argv)
    assert 2 == code
    assert "Unknown model setting 'temprature' in the command line" in err
    assert "Did you mean 'temperature'?" in err


@pytest.mark.usefixtures("allow_model_requests")
def test_a_connection_error_names_the_url(templates_dir: Path) -> None:
    """A provider that cannot be reached fails (exit 1) with the URL the request went to."""
    with FakeProviderServer() as gone:
        url = gone.openai_base_url
    argv = ["run", "summarize", "-i", "document=x", "--model", "openai-chat:x", "--base-url", url]
    code, _, err = run([*argv, "--templates", str(templates_dir)])
    assert 1 == code
    assert f"(request to {url}/chat/completions)" in err


def test_a_missing_api_key_exits_2_naming_the_variable(templates_dir: Path) -> None:
    """A model whose API key is not set cannot run: exit 2, naming the variable in atomtask's terms."""
    argv = ["run", "summarize", "-i", "document=x", "--model", "openai-chat:gpt-4o", "--templates", str(templates_dir)]
    code, _, err = run(argv)
    assert 2 == code
    assert (
        "atomtask: error: configuration_error: Model 'openai-chat:gpt-4o' needs an API key: set the "
        "`OPENAI_API_KEY` environment variable, or choose another model."
    ) in err
    assert "Agent(" not in err


def test_run_passes_retries_repair_and_limits(templates_dir: Path) -> None:
    """`--retries`, `--no-repair` and `--max-*` reach the call; a bad limit exits 2 before any model call."""
    base = ["run", "extract_contact", "-i", "text=Ann", "--templates", str(templates_dir)]
    # The test model has no prices: the cost limit cannot be enforced, and the command says so (once, in its words).
    code, _, err = run([*base, "--retries", "0", "--no-repair", "--max-requests", "1", "--max-cost", "0.01"])
    assert 0 == code, err
    assert 1 == err.count("atomtask: warning: `--max-cost` was not enforced: the model's prices are unknown")
    assert "CostNotFoundWarning" not in err
    code, _, err = run([*base, "--max-requests", "0"])
    assert 2 == code
    assert "configuration_error: Invalid `limits=`" in err


def test_max_total_tokens_is_the_budget_flag(templates_dir: Path) -> None:
    """`--max-total-tokens` limits the tokens of all attempts (`--max-tokens` is the per-response setting)."""
    argv = ["run", "summarize", "-i", "document=x", "--max-total-tokens", "1", "--templates", str(templates_dir)]
    code, _, err = run(argv)
    assert 1 == code
    assert "usage_limit_exceeded" in err


def test_output_writes_the_json_to_a_file(tmp_path: Path, templates_dir: Path) -> None:
    """`--output FILE` writes what would go to stdout into FILE, for `run` and `eval`."""
    target = tmp_path / "out.json"
    code, out, _ = run(
        ["run", "summarize", "-i", "document=x", "--output", str(target), "--templates", str(templates_dir)]
    )
    assert (0, "") == (code, out)
    assert "summary" in json.loads(target.read_text(encoding="utf-8"))
    script = tmp_path / "s.sexp"
    script.write_text("(list 1 2)")
    code, out, _ = run(["eval", str(script), "-o", str(target), "--templates", str(templates_dir)])
    assert (0, "", [1, 2]) == (code, out, json.loads(target.read_text(encoding="utf-8")))


def test_output_into_a_missing_folder_exits_2_before_running(tmp_path: Path, templates_dir: Path) -> None:
    """An `--output` whose folder does not exist is refused before any model is called."""
    target = tmp_path / "no" / "out.json"
    code, _, err = run(["run", "summarize", "-i", "document=x", "-o", str(target), "--templates", str(templates_dir)])
    assert 2 == code
    assert "its folder does not exist" in err
    assert "COMPLETE" not in err


def _durations(document: Any) -> list[float]:
    if isinstance(document, dict):
        found = [v for k, v in document.items() if k == "duration_ms" and isinstance(v, float)]
        return found + [d for v in document.values() for d in _durations(v)]
    if isinstance(document, list):
        return [d for v in document for d in _durations(v)]
    return []


def test_printed_durations_are_rounded(tmp_path: Path, templates_dir: Path) -> None:
    """`--result` and `eval` print `duration_ms` rounded to 0.1 ms."""
    _, out, _ = run(["run", "summarize", "-i", "document=x", "--result", "--templates", str(templates_dir)])
    durations = _durations(json.loads(out))
    script = tmp_path / "s.sexp"
    script.write_text('(list (summarize (document "x")))')
    _, out, _ = run(["eval", str(script), "--templates", str(templates_dir)])
    durations += _durations(json.loads(out))
    assert 4 == len(durations)  # the result's and its attempt's, twice
    assert [round(d, 1) for d in durations] == durations


def test_list_and_show(templates_dir: Path) -> None:
    """`list` names every template; `show` prints the template and its output JSON Schema."""
    code, out, _ = run(["list", "--templates", str(templates_dir)])
    assert 0 == code
    names = [line.split("\t")[0] for line in out.splitlines()]
    assert {"classify_ticket", "extract_contact", "extract_event", "summarize"} <= set(names)
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
    # Every field required, nothing outside OpenAI's strict subset: pydantic-ai sends it strict.
    assert {"model": "openai-chat:gpt-4o", "mode": "tool", "tool_name": "final_result", "strict": True} == {
        k: openai["output_delivery"][k] for k in ("model", "mode", "tool_name", "strict")
    }


def test_show_native_mode_prints_the_output_object(tmp_path: Path) -> None:
    """In native mode `show` prints the output object's schema, not a tool."""
    (tmp_path / "t.yaml").write_text(
        "name: n\ninstructions: x\noutput_format:\n  type: json\n  mode: native\n"
        "  schema: {json_schema: {type: integer, description: A count.}}\n"
    )
    _, out, _ = run(["show", "n", "--templates", str(tmp_path)])
    shown = json.loads(out)
    assert ("native", "NOutput") == (shown["output_delivery"]["mode"], shown["output_delivery"]["name"])
    assert {"type": "integer", "description": "A count."} == shown["output_json_schema"]["properties"]["response"]


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
    assert "atomtask: draft_reply COMPLETE on " in err


def test_eval_errors_exit_2_with_file_line_and_column(tmp_path: Path, templates_dir: Path) -> None:
    """Syntax and evaluation mistakes exit 2 and point into the script; a missing or non-UTF-8 file too."""
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
    script.write_bytes(b'(list "caf\xe9")')
    code, _, err = run(["eval", str(script), "--templates", str(templates_dir)])
    assert 2 == code
    assert f"atomtask: error: Script {str(script)!r} is not UTF-8 text (byte 0xe9 at offset 10)" in err


def test_eval_unwrap_of_a_task_that_never_ran_exits_2_with_the_result(tmp_path: Path, templates_dir: Path) -> None:
    """`(unwrap r)` on a result FAILED for missing inputs stops the script: exit 2, the result on stdout."""
    script = tmp_path / "s.sexp"
    script.write_text("(unwrap (extract_contact))")
    code, out, err = run(["eval", str(script), "--templates", str(templates_dir)])
    assert 2 == code
    assert "input_validation_failure" == json.loads(out)["error"]["reason"]
    assert f"{script}:1:1: Task 'extract_contact' failed (input_validation_failure" in err


@pytest.mark.usefixtures("allow_model_requests")
def test_eval_of_a_task_the_provider_failed_exits_1(
    tmp_path: Path, templates_dir: Path, server: FakeProviderServer
) -> None:
    """A script whose task ran and failed at the provider exits 1, with the failed result on stdout."""
    server.script(*[Reply.error(400, "bad request")] * 3)
    script = tmp_path / "s.sexp"
    script.write_text('(unwrap (extract_contact (text "Ada")))')
    model = ["--model", "openai-chat:llama3.2", "--base-url", server.openai_base_url]
    code, out, err = run(["eval", str(script), *model, "--templates", str(templates_dir)])
    assert 1 == code, err
    assert "provider_error" == json.loads(out)["error"]["reason"]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("(lambda (y) (* y 2))", "<function (y)>"),
        ("(define (square n) (* n n)) square", "<function square (n)>"),
        ("(lambda () 1)", "<function ()>"),
    ],
)
def test_eval_prints_a_function_by_its_name_and_parameters(
    source: str, expected: str, tmp_path: Path, templates_dir: Path
) -> None:
    """A returned function prints as `<function name (params)>`, not Python's internal repr."""
    script = tmp_path / "s.sexp"
    script.write_text(source)
    code, out, _ = run(["eval", str(script), "--templates", str(templates_dir)])
    assert 0 == code
    assert expected == json.loads(out)


WORKFLOW_SCRIPT = """\
(defatom say (params word) (instructions "Say {{word}}"))
(defworkflow loud
  (state (word str) (said str (default "")))
  (steps (step speak (task say) (inputs (word "{{state.word}}")) (output said))))
"""


def test_eval_prints_a_workflow_result_and_exits_by_its_status(tmp_path: Path, templates_dir: Path) -> None:
    """A script's WorkflowResult prints as JSON; a FAILED run (or its `unwrap`) sets the exit status."""
    script = tmp_path / "s.sexp"
    script.write_text(WORKFLOW_SCRIPT + '(loud (word "hi"))')
    code, out, _ = run(["eval", str(script), "--model", "test", "--templates", str(templates_dir)])
    assert (0, "COMPLETE", "loud") == (code, json.loads(out)["status"], json.loads(out)["workflow"])
    script.write_text(WORKFLOW_SCRIPT + "(loud (wrd 1))")
    code, out, err = run(["eval", str(script), "--model", "test", "--templates", str(templates_dir)])
    assert (2, "FAILED") == (code, json.loads(out)["status"])
    assert "input_validation_failure" in err
    script.write_text(WORKFLOW_SCRIPT + "(unwrap (loud (wrd 1)))")
    code, out, err = run(["eval", str(script), "--model", "test", "--templates", str(templates_dir)])
    assert (2, "FAILED") == (code, json.loads(out)["status"])
    assert "Workflow 'loud' failed (input_validation_failure" in err
