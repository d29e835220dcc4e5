"""Model aliases on the command line: `--model fast`, `ATOMTASK_MODEL=fast`, `list --models`, `list --providers`."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from atomtask.cli._main import main
from atomtask.loading._providers import known_providers

DECLARATIONS = """\
models:
  fast: atomtask:synthetic
  quick: fast
---
name: greet
params: {who: str}
instructions: "Say hi to {{who}}."
---
name: hello
state: [{name: who, type: str}, {name: said, type: str}]
steps:
  - {id: hi, task: greet, inputs: {who: "{{state.who}}"}, output: said}
"""


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def folder(tmp_path: Path) -> str:
    (tmp_path / "greet.yaml").write_text(DECLARATIONS, encoding="utf-8")
    return str(tmp_path)


def test_model_flag_names_an_alias_the_files_declare(folder: str) -> None:
    """`--model fast` runs the model `fast` stands for; the result names both."""
    code, out, _ = run(["run", "greet", "-i", "who=Ada", "--model", "quick", "--result", "--templates", folder])
    assert 0 == code
    notes = json.loads(out)["notes"]
    assert ("atomtask:synthetic", "quick", "call") == (notes["model"], notes["model_alias"], notes["model_source"])


def test_an_unknown_alias_on_the_command_line_exits_2_with_did_you_mean(folder: str) -> None:
    """`--model fsat` stops the command before anything runs, naming `--model` and the near alias."""
    code, out, err = run(["run", "greet", "-i", "who=Ada", "--model", "fsat", "--templates", folder])
    assert (2, "") == (code, out)
    assert "Model 'fsat' in `--model` has no provider prefix and is not a model alias. Did you mean 'fast'?" in err
    assert "Model aliases: fast, quick." in err


def test_atomtask_model_may_be_an_alias(folder: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`ATOMTASK_MODEL=fast` is resolved through the files' aliases, for `run` and `workflow run`."""
    monkeypatch.setenv("ATOMTASK_MODEL", "fast")
    code, out, _ = run(["run", "greet", "-i", "who=Ada", "--result", "--templates", folder])
    assert 0 == code
    notes = json.loads(out)["notes"]
    assert ("atomtask:synthetic", "fast") == (notes["model"], notes["model_alias"])
    assert "environment" == notes["model_source"]
    code, out, err = run(["workflow", "run", "hello", "-i", "who=Ada", "--model", "quick", "--templates", folder])
    assert 0 == code, err
    assert "said" in json.loads(out)
    monkeypatch.setenv("ATOMTASK_MODEL", "fsat")
    code, _, err = run(["workflow", "run", "hello", "-i", "who=Ada", "--templates", folder])
    assert 2 == code
    assert "in the `ATOMTASK_MODEL` environment variable has no provider prefix" in err


def test_list_models_shows_each_alias_and_its_model(folder: str) -> None:
    """`list --models`: each alias, its target, and the model a chain ends at."""
    code, out, _ = run(["list", "--models", "--templates", folder])
    assert 0 == code
    assert ["fast\tatomtask:synthetic", "quick\tfast\t(atomtask:synthetic)"] == out.splitlines()


def test_list_providers_lists_every_provider_prefix() -> None:
    """`list --providers` is the full list the unknown-provider message points to."""
    code, out, _ = run(["list", "--providers"])
    assert 0 == code
    assert sorted(known_providers()) == out.splitlines()


def test_check_accepts_an_alias_as_the_model_to_check_against(folder: str) -> None:
    """`atomtask check --model fast` resolves the alias the files declare; an unknown one exits 2."""
    code, out, err = run(["check", folder, "--model", "fast", "--no-cache"])
    assert (0, "") == (code, err), out
    code, out, err = run(["check", folder, "--model", "fsat", "--no-cache"])
    assert 2 == code
    assert "Model 'fsat' in the models to check against has no provider prefix" in err
    assert "Did you mean 'fast'?" in err
