"""What the command line says about offline runs: an ignored `--base-url` refused, the notice once, no `?.`."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import pytest
from atomtask.cli._main import main
from atomtask.cli._workflow import _waiting_printer


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("model", [["--model", "test"], ["--model", "atomtask:synthetic"], []])
def test_base_url_with_an_embedded_model_is_a_configuration_error(
    model: list[str], templates_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--base-url` with `--model test`, `atomtask:synthetic` or no model at all fails, not silently offline."""
    monkeypatch.delenv("ATOMTASK_MODEL", raising=False)
    argv = ["run", "extract_contact", "-i", "text=Ann", "--templates", str(templates_dir), *model]
    code, out, err = run([*argv, "--base-url", "http://127.0.0.1:9/v1"])
    assert (2, "") == (code, out)
    assert "atomtask: error: configuration_error: " in err
    assert "has no endpoint: the `base_url` (`--base-url`) given would be ignored" in err


def test_the_command_line_shows_the_default_model_notice_once_and_raises_no_warning(
    templates_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the CLI the notice is its own line on stderr, once; the Python `DefaultModelWarning` stays silent."""
    from atomtask.executors import _atomic

    monkeypatch.delenv("ATOMTASK_MODEL", raising=False)
    monkeypatch.setattr(_atomic, "_default_model_warned", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, _, err = run(["run", "extract_contact", "-i", "text=Ann", "--templates", str(templates_dir)])
    assert 0 == code
    assert 1 == err.count("atomtask: no model configured")
    assert [] == [w for w in caught if "no model configured" in str(w.message)]


def test_the_waiting_line_does_not_put_a_period_after_a_question() -> None:
    """An approval message ending in `?` is followed by the next sentence, not by `?.`."""
    err = io.StringIO()
    _waiting_printer(err)("run-1", {"step": "review", "message": "Publish Tides?"})
    assert "WAITING at step 'review': Publish Tides? Approve from anywhere" in err.getvalue()
    assert "?." not in err.getvalue()
