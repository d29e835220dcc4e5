"""The command line's values: `-i` inputs (files, stdin), model settings, model flags, log options."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from atomtask import UsageError
from atomtask.cli._args import build_parser, log_options, model_settings, parse_inputs
from atomtask.cli._main import main
from atomtask.cli._model_flag import check_model_flags


def test_at_dash_reads_stdin() -> None:
    """`key=@-` reads stdin (as UTF-8 bytes when there are bytes underneath)."""
    assert {"doc": "hello"} == parse_inputs(["doc=@-"], io.StringIO("hello"))
    assert {"doc": "café"} == parse_inputs(["doc=@-"], io.TextIOWrapper(io.BytesIO("café".encode())))


def test_stdin_through_main(templates_dir: Path) -> None:
    """`atomtask run ... -i document=@-` takes the document from the `stdin` given to `main`."""
    out, err = io.StringIO(), io.StringIO()
    argv = ["run", "summarize", "-i", "document=@-", "--templates", str(templates_dir)]
    assert 0 == main(argv, stdout=out, stderr=err, stdin=io.StringIO("A document."))
    assert "summarize COMPLETE" in err.getvalue()


def test_only_one_input_reads_stdin() -> None:
    """Two `@-` inputs are refused: stdin can be read once."""
    with pytest.raises(UsageError, match=r"Inputs 'a' and 'b' both read stdin"):
        parse_inputs(["a=@-", "b=@-"], io.StringIO("x"))


def test_non_utf8_input_file_and_stdin_name_the_source(tmp_path: Path) -> None:
    """A file or stdin that is not UTF-8 is a usage error naming it and the offending byte."""
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"caf\xe9")
    with pytest.raises(UsageError) as raised:
        parse_inputs([f"doc=@{latin}"])
    assert f"Input 'doc': {str(latin)!r} is not UTF-8 text (byte 0xe9 at offset 3)" in str(raised.value)
    with pytest.raises(UsageError, match=r"Input 'doc': stdin is not UTF-8 text \(byte 0xff at offset 0\)"):
        parse_inputs(["doc=@-"], io.TextIOWrapper(io.BytesIO(b"\xff")))


def test_non_utf8_input_file_exits_2(tmp_path: Path, templates_dir: Path) -> None:
    """Through the CLI, a non-UTF-8 `-i key=@file` exits 2 with one line, no traceback."""
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"\xff\xfe")
    out, err = io.StringIO(), io.StringIO()
    argv = ["run", "summarize", "-i", f"document=@{latin}", "--templates", str(templates_dir)]
    assert 2 == main(argv, stdout=out, stderr=err)
    assert [f"atomtask: error: Input 'document': {str(latin)!r} is not UTF-8 text"] == [
        line.split(" (byte")[0] for line in err.getvalue().splitlines()
    ]


def test_model_settings_from_flags_and_settings() -> None:
    """`--setting` values are JSON when they parse, else text; the named flags win over `--setting`."""
    args = build_parser().parse_args(
        [
            *("run", "t", "--setting", "temperature=0.5", "--setting", 'stop_sequences=["END"]'),
            *("--setting", "service_tier=auto", "--temperature", "0", "--max-tokens", "50", "--seed", "7"),
        ]
    )
    assert {
        "temperature": 0.0,
        "stop_sequences": ["END"],
        "service_tier": "auto",
        "max_tokens": 50,
        "seed": 7,
    } == model_settings(args)
    assert None is model_settings(build_parser().parse_args(["run", "t"]))


def test_a_setting_without_a_value_is_a_usage_error() -> None:
    """`--setting KEY` without `=VALUE` is refused with the form to use."""
    args = build_parser().parse_args(["eval", "s.sexp", "--setting", "temperature"])
    with pytest.raises(UsageError, match=r"Setting 'temperature' is not KEY=VALUE; write it as `--setting"):
        model_settings(args)


def test_a_mistyped_setting_names_the_command_line() -> None:
    """A setting of the wrong type is refused before anything runs, naming the command line."""
    args = build_parser().parse_args(["run", "t", "--setting", "temperature=hot"])
    with pytest.raises(UsageError, match=r"Model setting 'temperature' of the command line .* must be float"):
        model_settings(args)


def test_model_flags_are_checked_in_cli_terms(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bad `--model` names `--model`; without one, a bad `ATOMTASK_MODEL` names the variable.

    A name without a provider prefix waits until the files are read (it may be an alias they declare).
    """
    check_model_flags("gpt-4o")
    with pytest.raises(UsageError, match=r"Model 'gpt-4o' in `--model` has no provider prefix"):
        check_model_flags("gpt-4o", aliases=())
    with pytest.raises(UsageError, match=r"Did you mean 'gpt4o'\?"):
        check_model_flags("gpt-4o", aliases=["gpt4o"])
    check_model_flags("fast", aliases=["fast"])
    monkeypatch.setenv("ATOMTASK_MODEL", "nope:x")
    with pytest.raises(UsageError, match=r"in the `ATOMTASK_MODEL` environment variable"):
        check_model_flags(None)
    check_model_flags("test")  # a good `--model` wins over the variable


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["run", "t"], (0, False, "auto")),
        (["-v", "run", "t"], (1, False, "auto")),
        (["run", "t", "-vv"], (2, False, "auto")),
        (["-v", "run", "t", "-v"], (2, False, "auto")),
        (["-q", "list"], (0, True, "auto")),
        (["check", "-q", "--log-format", "json"], (0, True, "json")),
        (["--log-format", "json", "memory", "query", "x", "--log-format", "console"], (0, False, "console")),
    ],
)
def test_log_options_before_and_after_the_command(argv: list[str], expected: tuple[int, bool, str]) -> None:
    """-v counts on both sides of the command; -q and --log-format work on either (the later wins)."""
    assert expected == log_options(build_parser().parse_args(argv))


def test_the_budget_flag_is_max_total_tokens() -> None:
    """`--max-total-tokens` is the budget across attempts; `--max-tokens` the per-response setting."""
    args = build_parser().parse_args(["run", "t", "--max-total-tokens", "900", "--max-tokens", "50"])
    assert (900, 50) == (args.max_total_tokens, args.max_tokens)
