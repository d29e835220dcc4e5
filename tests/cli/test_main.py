"""The `atomtask` entry point: help, version, global options, and the guard that never shows a traceback."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from atomtask.cli import _commands as commands
from atomtask.cli._main import main

COMMAND = [sys.executable, "-m", "atomtask.cli"]


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _command_env(**extra: str) -> dict[str, str]:
    """The environment of a real `atomtask` process: no pytest or CI markers, which hide pydantic-ai's banner."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_VERSION", "CI", "PYDANTIC_AI_NO_BANNER")}
    return {**env, **extra}


def test_help_does_not_import_provider_sdks_or_pydantic_ai() -> None:
    """`atomtask --help` imports neither the provider SDKs nor pydantic-ai."""
    code = (
        "import sys\nfrom atomtask.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('openai', 'anthropic', 'pydantic_ai') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith("[]")


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["eval", "--help"], ["memory", "query", "--help"]])
def test_help_exits_zero(argv: list[str]) -> None:
    """Help for the command and its subcommands exits 0."""
    with pytest.raises(SystemExit) as raised:
        main(argv)
    assert 0 == raised.value.code


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    """`atomtask --version` prints `atomtask <version>` and exits 0."""
    from importlib.metadata import version

    with pytest.raises(SystemExit) as raised:
        main(["--version"])
    assert 0 == raised.value.code
    assert f"atomtask {version('atomtask')}" == capsys.readouterr().out.strip()


def test_bare_command_prints_help_and_exits_2() -> None:
    """`atomtask` with no arguments prints the help (on stderr) and exits 2."""
    code, out, err = run([])
    assert (2, "") == (code, out)
    assert err.startswith("usage: atomtask")
    assert "run" in err and "Exit status:" in err


def test_a_broken_template_file_exits_2(tmp_path: Path) -> None:
    """A broken template file exits 2 with file:line."""
    (tmp_path / "t.yaml").write_text("name: t\ninstructions: '{{x}}'\n")
    code, _, err = run(["list", "--templates", str(tmp_path)])
    assert 2 == code
    assert f"{tmp_path / 't.yaml'}:2" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["-v", "--log-format", "json", "run", "summarize", "-i", "document=x"],
        ["run", "summarize", "-i", "document=x", "-v", "--log-format", "json"],
        ["--log-format", "console", "run", "summarize", "-i", "document=x", "-v", "--log-format", "json"],
    ],
)
def test_log_options_work_before_and_after_the_command(argv: list[str], templates_dir: Path) -> None:
    """`-v` and `--log-format` are accepted on either side of the command (the later one wins)."""
    code, _, err = run([*argv, "--templates", str(templates_dir)])
    assert 0 == code
    events = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert "task_started" in [e["event"] for e in events]


def test_without_v_info_events_are_not_printed(templates_dir: Path) -> None:
    """The default level is WARNING: a successful run prints no log event."""
    code, _, err = run(
        ["--log-format", "json", "run", "summarize", "-i", "document=x", "--templates", str(templates_dir)]
    )
    assert 0 == code
    assert [] == [line for line in err.splitlines() if line.startswith("{")]


def test_quiet_prints_only_errors(templates_dir: Path) -> None:
    """`-q` leaves out the notice and status line; an error is still printed."""
    code, out, err = run(["run", "summarize", "-i", "document=x", "-q", "--templates", str(templates_dir)])
    assert (0, "") == (code, err)
    assert "summary" in json.loads(out)
    code, _, err = run(["-q", "run", "nope", "--templates", str(templates_dir)])
    assert 2 == code
    assert ["atomtask: error: template_not_found"] == [line.split(": No")[0] for line in err.splitlines()]


def test_an_unexpected_exception_is_one_line_and_exit_1(templates_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An exception nobody expected prints one line (the traceback only with -vv) and exits 1."""

    def broken(*_: object) -> int:
        raise RuntimeError("boom")

    monkeypatch.setattr(commands, "list_templates", broken)
    code, _, err = run(["list", "--templates", str(templates_dir)])
    assert 1 == code
    assert "atomtask: error: unexpected RuntimeError: boom (`-vv` prints the traceback)\n" == err
    code, _, err = run(["list", "-vv", "--templates", str(templates_dir)])
    assert 1 == code
    assert err.startswith("Traceback (most recent call last):")


def test_ctrl_c_exits_130_without_a_traceback(templates_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C during a command exits 130 with one line."""

    def interrupted(*_: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(commands, "list_templates", interrupted)
    assert (130, "", "atomtask: interrupted\n") == run(["list", "--templates", str(templates_dir)])


def test_closing_stdout_early_exits_quietly(templates_dir: Path) -> None:
    """A reader that has gone (`| head -1`) ends the command with 141 and nothing on stderr."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before anything is written
    try:
        done = subprocess.run(
            [*COMMAND, "-q", "run", "summarize", "-i", "document=x", "--templates", str(templates_dir)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert (141, "") == (done.returncode, done.stderr)


def test_the_pydantic_ai_banner_is_not_printed(templates_dir: Path) -> None:
    """pydantic-ai's Logfire banner (shown to a terminal or a coding agent) never reaches the command's stderr."""
    # `AI_AGENT=1` makes pydantic-ai show its banner on a pipe as it would on a terminal.
    done = subprocess.run(
        [*COMMAND, "run", "summarize", "-i", "document=x", "--templates", str(templates_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        env=_command_env(AI_AGENT="1"),
    )
    assert 0 == done.returncode, done.stderr
    assert "pydantic-ai v" not in done.stderr
    assert "PYDANTIC_AI_NO_BANNER" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith("atomtask: summarize COMPLETE")
