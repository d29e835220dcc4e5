"""`atomtask test`: shipped cases pass, failures exit 1 with why, `-k`, `--junit`, `--record`, usage errors exit 2."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from atomtask.cli._main import main
from atomtask.testing import FakeProviderServer, Reply

ADA = '{"name": "Ada", "email": "ada@example.com", "phone": null, "company": null}'


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _cases(tmp_path: Path, templates: Path, body: str) -> Path:
    path = tmp_path / "tests" / "contact.cases.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"templates: {templates}\ntemplate: extract_contact\ncases:\n{body}")
    return path


PASSING = f"  - name: ada\n    inputs: {{text: Ada}}\n    answers: ['{ADA}']\n    expect: output.name == 'Ada'\n"
FAILING = (
    f"  - name: grace\n    inputs: {{text: Grace}}\n    answers: ['{ADA}']\n"
    "    output: {name: Grace, email: null, phone: null, company: null}\n"
)


def test_the_shipped_cases_pass(templates_dir: Path) -> None:
    """`atomtask test templates/` passes out of the box: every shipped case, offline."""
    code, out, _ = run(["test", str(templates_dir)])
    assert (0, "6 passed, 0 failed (6 cases in 2 files)") == (code, out.splitlines()[-1])
    assert 6 == sum(1 for line in out.splitlines() if line.startswith("PASS "))


def test_a_failing_case_exits_1_with_the_fields_that_differ(tmp_path: Path, templates_dir: Path) -> None:
    """A failing case is FAIL with its problem and each changed field; the summary counts it."""
    path = _cases(tmp_path, templates_dir, PASSING + FAILING)
    code, out, _ = run(["test", str(path)])
    assert 1 == code
    assert [
        f"FAIL {path}::grace [extract_contact] (line 8)",
        "    the output differs from the recorded `output`",
        "    changed since recording:",
        '      now read differently: field `name` was "Grace", now "Ada"',
        '      now read differently: field `email` was null, now "ada@example.com"',
        "1 passed, 1 failed (2 cases in 1 file)",
    ] == out.splitlines()[1:]


def test_k_selects_cases_by_name_or_glob(tmp_path: Path, templates_dir: Path) -> None:
    """`-k` runs only the cases whose name (or template) contains the pattern, or matches it as a glob."""
    path = _cases(tmp_path, templates_dir, PASSING + FAILING)
    assert (0, "1 passed, 0 failed (1 case in 1 file)") == (lambda r: (r[0], r[1].splitlines()[-1]))(
        run(["test", str(path), "-k", "ADA"])
    )
    assert 1 == run(["test", str(path), "-k", "gr*"])[0]
    code, _, err = run(["test", str(path), "-k", "nobody"])
    assert (2, "atomtask: error: No case matches `-k nobody`") == (code, err.split(";")[0])


def test_junit_report_parses_with_a_failure_per_failing_case(tmp_path: Path, templates_dir: Path) -> None:
    """`--junit FILE` writes JUnit XML: one testsuite per file, a `<failure>` for each failing case."""
    path = _cases(tmp_path, templates_dir, PASSING + FAILING)
    report = tmp_path / "junit.xml"
    assert 1 == run(["test", str(path), "--junit", str(report), "-q"])[0]
    root = ET.parse(report).getroot()
    suite = root.find("testsuite")
    assert suite is not None
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert ("2", "1", ["ada", "grace"]) == (suite.get("tests"), suite.get("failures"), sorted(cases))
    assert (None, "the output differs from the recorded `output`") == (
        cases["ada"].find("failure"),
        cases["grace"].find("failure").get("message"),  # type: ignore[union-attr]
    )
    assert ("extract_contact", "8") == (cases["grace"].get("classname"), cases["grace"].get("line"))


def test_a_bad_cases_file_exits_2_at_its_line(tmp_path: Path, templates_dir: Path) -> None:
    """An unknown key is a usage error: file:line:col and the fix, before any case runs."""
    path = _cases(tmp_path, templates_dir, "  - name: a\n    inputs: {text: Ada}\n    answer: []\n")
    code, out, err = run(["test", str(path)])
    assert (2, "", f"atomtask: error: {path}:6:5: Unknown key 'answer' in case 'a'. Did you mean 'answers'?\n") == (
        code,
        out,
        err,
    )


def test_no_cases_files_exits_2(tmp_path: Path) -> None:
    """A folder without cases files says where they go."""
    code, _, err = run(["test", str(tmp_path)])
    assert 2 == code
    assert "write one in a `tests/` folder inside the templates folder" in err


def test_record_needs_a_model_and_model_needs_record(tmp_path: Path, templates_dir: Path) -> None:
    """`--record` without `--model`, and `--model` without `--record`, are usage errors."""
    path = _cases(tmp_path, templates_dir, PASSING)
    assert 2 == run(["test", str(path), "--record"])[0]
    assert 2 == run(["test", str(path), "--model", "openai-chat:gpt-4o-mini"])[0]


@pytest.mark.usefixtures("allow_model_requests")
def test_record_over_the_fake_server_writes_answers_then_replays(
    tmp_path: Path, templates_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--record --model openai-chat:...` asks the server, writes its answers and output, then replays them offline."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    path = _cases(tmp_path, templates_dir, "  - name: fresh  # recorded below\n    inputs: {text: Ada}\n")
    with FakeProviderServer() as server:
        server.script(Reply.tool_call(args='{"email": 3}'), Reply.tool_call(args=ADA))
        argv = [
            "test",
            str(path),
            "--record",
            "--model",
            "openai-chat:gpt-4o-mini",
            "--base-url",
            server.openai_base_url,
        ]
        code, out, err = run(argv)
    assert (0, "1 passed, 0 failed (1 case in 1 file)") == (code, out.splitlines()[-1])
    assert f"recorded {path}::fresh: 2 answer(s), COMPLETE" in err
    text = path.read_text()
    assert (
        "  - name: fresh  # recorded below\n    inputs: {text: Ada}\n    answers:\n      - '{\"email\": 3}'\n" in text
    )
    assert "    output:\n      name: Ada\n      email: ada@example.com\n" in text
    assert 0 == run(["test", str(path)])[0]  # offline, from the file alone


CURATED = (
    "  - name: curated  # hand-written\n    inputs: {text: Ada}\n    answers:\n      - '{\"email\": null}'\n"
    f"      - '{ADA}'\n    output: {{name: Ada, email: ada@example.com, phone: null, company: null}}\n\n"
)
FRESH = "  - name: fresh\n    inputs: {text: Bo}\n    expect: output.name == 'Ada'\n"
GRACE = '{"name": "Grace", "email": null, "phone": null, "company": null}'


def _record(path: Path, *extra: str, replies: tuple[str, ...]) -> tuple[int, str, str]:
    """`atomtask test PATH --record ...EXTRA` against the fake server answering `replies`, in order."""
    with FakeProviderServer() as server:
        server.script(*(Reply.tool_call(args=r) for r in replies))
        argv = ["test", str(path), "--record", "--model", "openai-chat:gpt-4o-mini", "--base-url"]
        return run([*argv, server.openai_base_url, *extra])


@pytest.mark.usefixtures("allow_model_requests")
def test_record_fills_in_only_the_cases_without_answers(
    tmp_path: Path, templates_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """By default `--record` leaves a case with answers byte for byte as it is and records only the new case."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    path = _cases(tmp_path, templates_dir, CURATED + FRESH)
    before = path.read_text()
    code, out, err = _record(path, replies=(ADA,))
    assert (0, "2 passed, 0 failed (2 cases in 1 file)") == (code, out.splitlines()[-1])
    assert "kept the recorded answers of 1 case(s); `--record --overwrite` re-records them" in err
    expected = before.replace(
        "    inputs: {text: Bo}\n", f"    inputs: {{text: Bo}}\n    answers:\n      - '{ADA}'\n"
    )  # no `output:` added: the case has its `expect`
    assert expected == path.read_text()


@pytest.mark.usefixtures("allow_model_requests")
def test_overwrite_re_records_answers_but_never_the_expectation(
    tmp_path: Path, templates_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--record --overwrite -k NAME` replaces that case's answers only; its flow `output` stays; the replay fails."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    path = _cases(tmp_path, templates_dir, CURATED + FRESH.replace("Bo}", "Bo}\n    answers: ['" + ADA + "']"))
    before = path.read_text()
    code, out, _ = _record(path, "--overwrite", "-k", "curated", replies=(GRACE,))
    assert 1 == code
    assert '      now read differently: field `name` was "Ada", now "Grace"' in out.splitlines()
    answers = f"      - '{{\"email\": null}}'\n      - '{ADA}'\n"
    assert before.replace(answers, f"      - '{GRACE}'\n") == path.read_text()


def test_overwrite_needs_record(tmp_path: Path, templates_dir: Path) -> None:
    """`--overwrite` (or `--rerecord`) without `--record` is a usage error."""
    path = _cases(tmp_path, templates_dir, PASSING)
    assert 2 == run(["test", str(path), "--overwrite"])[0]
    assert 2 == run(["test", str(path), "--rerecord"])[0]


def test_recording_the_shipped_cases_keeps_the_file(tmp_path: Path, templates_dir: Path) -> None:
    """`--record --model atomtask:synthetic` on the shipped cases (all recorded) changes nothing and passes."""
    path = tmp_path / "extract_contact.cases.yaml"
    shipped = (templates_dir / "tests" / "extract_contact.cases.yaml").read_text()
    path.write_text(shipped)
    code, out, _ = run(
        ["test", str(path), "--templates", str(templates_dir), "--record", "--model", "atomtask:synthetic"]
    )
    assert (0, shipped) == (code, path.read_text())
    assert out.splitlines()[-1].startswith("4 passed, 0 failed")


@pytest.mark.parametrize(
    ("expectation", "where", "message"),
    [
        ("expect: output.nam == 'Ada'", "6:13", "unknown path `output.nam` (Contact): Contact has no field 'nam'."),
        ("expect_subset: {nme: Ada}", "6:21", "`expect_subset` of case 'a': Contact has no field 'nme'"),
        ("output: {nmae: Ada}", "6:14", "`output` of case 'a': Contact has no field 'nmae'"),
        ("expect: output.name > 3", "6:13", "`>` cannot compare `output.name` (str) with `3` (int)"),
    ],
)
def test_an_unknown_field_in_an_expectation_exits_2_at_its_place(
    tmp_path: Path, templates_dir: Path, expectation: str, where: str, message: str
) -> None:
    """A field the output class lacks, in `expect`, `expect_subset` or `output`: a file error before any case runs."""
    path = _cases(tmp_path, templates_dir, f"  - name: a\n    inputs: {{text: Ada}}\n    {expectation}\n")
    code, out, err = run(["test", str(path)])
    assert (2, "") == (code, out)
    assert err.startswith(f"atomtask: error: {path}:{where}: ")
    assert message in err
    assert "Did you mean" in err or "cannot compare" in err


def test_a_passing_expected_failure_prints_no_warning_unless_verbose(tmp_path: Path, templates_dir: Path) -> None:
    """The replayed run's `task_failed` warning is not printed: the report says it; `-v` shows it."""
    body = "  - name: a\n    inputs: {text: Ada}\n    answers: ['{\"email\": null}']\n"
    path = _cases(tmp_path, templates_dir, body + "    expect_failure: output_validation_failure\n")
    assert (0, "") == (lambda r: (r[0], r[2]))(run(["test", str(path)]))
    code, _, err = run(["test", str(path), "-v"])
    assert (0, True) == (code, "task_failed" in err)


@pytest.mark.usefixtures("allow_model_requests")
def test_recording_a_failed_run_writes_its_expected_failure(
    tmp_path: Path, templates_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run whose answers are all rejected is written with `expect_failure: <reason>`; its replay then passes."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    path = _cases(tmp_path, templates_dir, "  - name: broken\n    inputs: {text: Ada}\n")
    code, out, err = _record(path, replies=('{"email": 3}',) * 3)
    assert (0, "1 passed, 0 failed (1 case in 1 file)") == (code, out.splitlines()[-1])
    assert (
        f"recorded {path}::broken: 3 answer(s), FAILED (output_validation_failure); "
        "wrote `expect_failure: output_validation_failure`"
    ) in err
    assert path.read_text().endswith(
        "    answers:\n"
        "      - '{\"email\": 3}'\n      - '{\"email\": 3}'\n      - '{\"email\": 3}'\n"
        "    expect_failure: output_validation_failure\n"
    )
    assert (0, []) == (lambda r: (r[0], [line for line in r[1].splitlines() if "changed since" in line]))(
        run(["test", str(path)])
    )


@pytest.mark.usefixtures("allow_model_requests")
def test_recording_a_run_that_failed_without_answers_is_refused(
    tmp_path: Path, templates_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A provider error is not the template's behaviour: nothing is written, the reason is said, exit 1."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    path = _cases(tmp_path, templates_dir, "  - name: fresh\n    inputs: {text: Ada}\n")
    before = path.read_text()
    with FakeProviderServer() as server:
        server.script(*[Reply.error(401, "Incorrect API key provided")] * 4)
        argv = ["test", str(path), "--record", "--model", "openai-chat:gpt-4o-mini", "--base-url"]
        code, _, err = run([*argv, server.openai_base_url, "-q"])
    assert 1 == code
    assert before == path.read_text()
    [line] = [line for line in err.splitlines() if line.startswith("atomtask: not recorded")]
    assert line.startswith(f"atomtask: not recorded {path}::fresh: the run failed with `provider_error` (")
    assert line.endswith(
        "and the model gave no answer to record. The case is left as it was: fix the cause and record again."
    )
