"""`atomtask check`: linter-style lines, a summary, exit codes, JSON, code selection and explanations."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from atomtask.cli._main import main
from atomtask.lint import RULES


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


WARN_ONLY = "name: t\nparams: {text: str, spare: {type: str, default: x}}\ninstructions: '{{text}}'\n"


def test_clean_exit_0(templates_dir: Path) -> None:
    """Clean declarations exit 0 with only the summary line (which counts the workflows when there are any)."""
    from atomtask.lint import check

    seen = check([templates_dir])
    counts = f"{seen.files} files, {seen.templates} templates, {seen.schemas} schemas, {seen.workflows} workflows"
    assert (0, f"All clear: checked {counts}.\n", "") == run(["check", str(templates_dir)])


def test_error_lines_and_exit_1(tmp_path: Path) -> None:
    """Each finding is `file:line:col: CODE message` (the column of the placeholder itself); errors exit 1."""
    path = tmp_path / "t.yaml"
    path.write_text("name: t\nparams: {text: str}\ninstructions: 'Read {{txet}}'\n")
    code, out, _ = run(["check", str(path)])
    lines = out.splitlines()
    assert 1 == code
    assert lines[0].startswith(f"{path}:3:21: E102 Placeholder '{{{{txet}}}}'")  # inside the quotes
    assert "Found 1 error and 0 warnings in 1 file, 1 template, 0 schemas." == lines[-1]


def test_warnings_fail_only_with_strict(tmp_path: Path) -> None:
    """A warning alone exits 0, or 1 with `--strict`; `--ignore` drops it."""
    path = tmp_path / "t.yaml"
    path.write_text(WARN_ONLY)
    assert 0 == run(["check", str(path)])[0]
    assert 1 == run(["check", "--strict", str(path)])[0]
    assert (0, "All clear: checked 1 file, 1 template, 0 schemas.\n", "") == run(
        ["check", "--strict", "--ignore", "W201", str(path)]
    )


def test_json_format(tmp_path: Path) -> None:
    """`--format json` prints findings with code, severity and position, and a summary."""
    path = tmp_path / "t.yaml"
    path.write_text(WARN_ONLY)
    code, out, _ = run(["check", "--format", "json", str(path)])
    document = json.loads(out)
    assert 0 == code
    assert [("W201", "warning", str(path), 2, 28)] == [
        (f["code"], f["severity"], f["file"], f["line"], f["column"]) for f in document["findings"]
    ]
    assert {"errors": 0, "warnings": 1, "failed": False} == {
        k: document["summary"][k] for k in ("errors", "warnings", "failed")
    }


def test_explain_every_code() -> None:
    """`--explain CODE` prints each code's summary and example."""
    for code, rule in RULES.items():
        status, out, _ = run(["check", "--explain", code.lower()])
        assert 0 == status
        assert out.startswith(f"{code} {rule.name} ({rule.severity.value}): {rule.summary}")
        assert code in out.split("\n", 1)[1] or code in ("E106", "P302")


def test_unknown_codes_are_usage_errors(tmp_path: Path) -> None:
    """An unknown code in `--select` or `--explain` exits 2."""
    assert 2 == run(["check", "--select", "X9", str(tmp_path)])[0]
    assert 2 == run(["check", "--explain", "X9"])[0]


def test_default_path_is_local_templates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without PATH, `./templates` is checked; without it either, nothing to check exits 2."""
    monkeypatch.chdir(tmp_path)
    assert (2, "") == run(["check"])[:2]
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "t.yaml").write_text(WARN_ONLY)
    code, out, _ = run(["check"])
    assert (0, "templates/t.yaml:2:28: W201") == (code, out.split(" Parameter")[0])


def test_syntax_error_in_one_file_does_not_hide_the_others(tmp_path: Path) -> None:
    """A YAML syntax error is E101 at its line and column; the other files are still checked."""
    (tmp_path / "a.yaml").write_text("name: a\ninstructions: [unclosed\n")
    (tmp_path / "b.yaml").write_text("name: b\ninstructions: '{{x}}'\n")
    code, out, _ = run(["check", str(tmp_path)])
    assert 1 == code
    assert [f"{tmp_path / 'a.yaml'}:3:1: E101", f"{tmp_path / 'b.yaml'}:2:16: E102"] == [
        line.split(" Invalid")[0].split(" Placeholder")[0] for line in out.splitlines()[:-1]
    ]


def test_unsupported_mode_points_at_the_template(tmp_path: Path) -> None:
    """P301 is reported at the template's `mode`, for the template's own model."""
    (tmp_path / "t.yaml").write_text(
        "schemas:\n  - {name: Out, fields: [{name: a, description: A}]}\n"
        "templates:\n  - name: t\n    instructions: hi\n    model: mistral:mistral-large-latest\n"
        "    output_format: {type: json, schema: Out, mode: native}\n"
    )
    code, out, _ = run(["check", str(tmp_path)])
    assert 1 == code
    assert out.startswith(f"{tmp_path / 't.yaml'}:7:52: P301 'mistral:mistral-large-latest' does not support")


def test_check_command_imports_no_provider_sdk(tmp_path: Path) -> None:
    """The whole command, on templates naming OpenAI, Anthropic and Google models, imports none of their SDKs."""
    for provider, model in [
        ("a", "openai:gpt-4o"),
        ("b", "anthropic:claude-sonnet-4-5"),
        ("c", "google:gemini-2.5-pro"),
    ]:
        (tmp_path / f"{provider}.yaml").write_text(
            f"name: {provider}\ninstructions: hi\nmodel: {model}\noutput_format: {{type: json, schema: Out}}\n"
        )
    (tmp_path / "d.yaml").write_text(
        "name: d\ninstructions: hi\noutput_format: {type: json, schema: Out, mode: native}\n"
    )
    (tmp_path / "s.yaml").write_text("name: Out\nfields: [{name: a, type: 'str?', description: A}]\n")
    others = ["mistral:mistral-large-latest", "groq:llama-3.3-70b-versatile", "ollama:qwen3", "cohere:command-r"]
    argv = ["check", str(tmp_path), "--ignore", "P", *(f"--model={model}" for model in others)]
    code = (
        "import sys\nfrom atomtask.cli import main\n"
        "SDKS = ('openai', 'anthropic', 'google', 'mistralai', 'groq', 'cohere')\n"
        f"status = main({argv!r})\n"
        "print(status, sorted(m for m in sys.modules if m.split('.')[0] in SDKS))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "0 []" == done.stdout.strip().splitlines()[-1]


def test_unknown_provider_in_model_option_exits_2(templates_dir: Path) -> None:
    """`--model` with an unknown provider is a usage error with a suggestion."""
    code, _, err = run(["check", str(templates_dir), "--model", "opnai:gpt-4o"])
    assert 2 == code
    assert "Did you mean 'openai'" in err


def test_a_missing_path_exits_2(tmp_path: Path, templates_dir: Path) -> None:
    """A path or `--python` file that does not exist is a usage error (exit 2), not a finding."""
    code, out, err = run(["check", str(templates_dir), str(tmp_path / "nope")])
    assert (2, "") == (code, out)
    assert f"atomtask: error: no such file or folder: {str(tmp_path / 'nope')!r}" in err
    code, _, err = run(["check", "--python", str(tmp_path / "gone.py")])
    assert 2 == code
    assert "gone.py'" in err


def test_a_module_that_exits_on_import_is_an_error_finding(tmp_path: Path) -> None:
    """`--python` on a module calling `sys.exit` while imported reports it (E106, exit 1) instead of exiting."""
    script = tmp_path / "script.py"
    script.write_text("import sys\n\nsys.exit(0)\n")
    code, out, _ = run(["check", "--python", str(script)])
    assert 1 == code
    assert out.startswith(f"{script}:3: E106 Importing {str(script)!r} failed: RuntimeError: the module called")
    assert "`sys.exit(0)`" in out and "while being imported" in out


def test_a_bad_atomtask_model_names_the_variable(templates_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bad `ATOMTASK_MODEL` (the default models to check against) exits 2 naming the variable."""
    monkeypatch.setenv("ATOMTASK_MODEL", "gpt-4o")
    code, out, err = run(["check", str(templates_dir)])
    assert (2, "") == (code, out)
    assert "Model 'gpt-4o' in the `ATOMTASK_MODEL` environment variable has no provider prefix" in err


def test_a_check_called_in_process_leaves_the_collector_as_it_was(templates_dir: Path) -> None:
    """`main([...])` from a caller's process (not the command's own) re-enables the collector and freezes nothing."""
    import gc

    frozen = gc.get_freeze_count()
    assert 0 == run(["check", str(templates_dir), "--no-cache"])[0]
    assert (True, frozen) == (gc.isenabled(), gc.get_freeze_count())


def test_the_command_in_its_own_process_reports_what_main_does(templates_dir: Path) -> None:
    """`python -m atomtask.cli check` (the process's own command line: helper process, no final collection)."""
    expected = run(["check", str(templates_dir), "--no-cache", "--format", "json"])
    done = subprocess.run(
        [sys.executable, "-m", "atomtask.cli", "check", str(templates_dir), "--no-cache", "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (expected[0], json.loads(expected[1])) == (done.returncode, json.loads(done.stdout))
