"""Model aliases declared and checked: `models:` in YAML, `defmodels` in `.sexp`, `ModelAliases`, load-time errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from atomtask import ConfigurationError, DuplicateNameError, TaskSystem, Template, WorkflowError
from atomtask.loading import ModelAliases
from atomtask.testing import scripted_model

MODELS = """\
models:
  fast: openai-chat:gpt-4o-mini
  strong: "anthropic:claude-sonnet-4-5"
"""

GREET = """\
name: greet
model: {model}
params: {{who: str}}
instructions: "Say hi to {{{{who}}}}."
"""


def _files(tmp_path: Path, **files: str) -> Path:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_yaml_models_declare_aliases_that_templates_name(tmp_path: Path) -> None:
    """`models:` maps names to model strings; a template's `model: fast` loads and resolves to its model."""
    system = TaskSystem(templates=_files(tmp_path, **{"a.yaml": MODELS, "b.yaml": GREET.format(model="fast")}))
    assert ["fast", "strong"] == list(system.model_aliases)
    assert "openai-chat:gpt-4o-mini" == system.model_aliases.resolve("fast")
    assert "fast" == system.templates.get("greet").model
    location = system.model_aliases.location_of("strong")
    assert (str(tmp_path / "a.yaml"), 3, 12) == (location.file, location.line, location.column)


def test_models_may_sit_beside_templates_in_one_document(tmp_path: Path) -> None:
    """`models:` is a key of a document of `templates:`/`schemas:`/`workflows:`, declared before those templates."""
    text = 'models: {quick: "openai-chat:gpt-4o-mini"}\ntemplates:\n  - {name: hi, model: quick, instructions: "Hi."}\n'
    system = TaskSystem(templates=_files(tmp_path, **{"all.yaml": text}))
    assert "quick" == system.templates.get("hi").model


def test_an_unknown_alias_in_a_template_says_did_you_mean_at_its_line_and_column(tmp_path: Path) -> None:
    """`model: fsat` is refused at load with the near alias, the declared ones, and the file, line and column."""
    folder = _files(tmp_path, **{"a.yaml": MODELS, "b.yaml": GREET.format(model="fsat")})
    with pytest.raises(ConfigurationError) as raised:
        TaskSystem(templates=folder)
    error = raised.value
    assert (
        "Model 'fsat' in template 'greet' has no provider prefix and is not a model alias. Did you mean 'fast'? "
        "Model aliases: fast, strong."
    ) in error.message
    assert (str(folder / "b.yaml"), 2, 8) == (error.location.file, error.location.line, error.location.column)
    assert "fast" == error.suggestions[0]


def test_a_name_without_prefix_and_no_aliases_says_how_to_declare_one() -> None:
    """With no alias declared, a bare name gets the `provider:model` form and how to declare an alias."""
    with pytest.raises(ConfigurationError) as raised:
        TaskSystem().register(Template(name="t", instructions="x", model="anthropic"))
    message = raised.value.message
    assert "Model 'anthropic' in template 't' has no provider prefix and no model alias is declared." in message
    assert "Did you mean `anthropic:<model-name>`?" in message
    assert '`models: {anthropic: "openai-chat:gpt-4o-mini"}`' in message


def test_an_alias_to_an_invalid_model_string_is_an_error_at_the_alias(tmp_path: Path) -> None:
    """`fast: opnai-chat:...` is refused where the alias is declared, with the nearest providers only."""
    folder = _files(tmp_path, **{"a.yaml": "models:\n  fast: opnai-chat:gpt-4o-mini\n"})
    with pytest.raises(ConfigurationError) as raised:
        TaskSystem(templates=folder)
    error = raised.value
    assert error.message.startswith(
        "Unknown provider 'opnai-chat' in model 'opnai-chat:gpt-4o-mini' in model alias 'fast'. Did you mean"
    )
    assert "openai-chat" in error.suggestions
    assert (str(folder / "a.yaml"), 2, 9) == (error.location.file, error.location.line, error.location.column)


def test_an_alias_naming_no_alias_says_did_you_mean(tmp_path: Path) -> None:
    """A target without a prefix must be another alias; an unknown one is refused at the declaration."""
    folder = _files(tmp_path, **{"a.yaml": "models:\n  strong: anthropic:claude-sonnet-4-5\n  best: strnog\n"})
    with pytest.raises(ConfigurationError) as raised:
        TaskSystem(templates=folder)
    assert (
        "Model alias 'best' stands for 'strnog', which is neither a model alias nor a model string. Did you mean "
        "'strong'?"
    ) in raised.value.message
    assert 3 == raised.value.location.line


def test_aliases_of_aliases_resolve_through_the_chain() -> None:
    """`cheap -> fast -> openai-chat:gpt-4o-mini -> a model`: each link followed, whichever order they came in."""
    model = scripted_model("hi")
    aliases = ModelAliases({"cheap": "fast", "fast": "openai-chat:gpt-4o-mini"})
    assert "openai-chat:gpt-4o-mini" == aliases.resolve("cheap")
    aliases.add({"openai-chat:gpt-4o-mini": model})
    assert model is aliases.resolve("cheap")
    assert "fast" == aliases["cheap"]  # the mapping holds each alias's own target
    assert "anthropic:claude-x" == aliases.resolve("anthropic:claude-x")  # not an alias: itself


def test_a_cycle_of_aliases_is_refused_where_it_is_declared(tmp_path: Path) -> None:
    """`a: b`, `b: a` never reaches a model: refused at load, naming the cycle; in code, nothing is added."""
    folder = _files(tmp_path, **{"a.yaml": "models:\n  a: b\n  b: a\n"})
    with pytest.raises(ConfigurationError, match=r"goes round in a cycle \(a -> b -> a\)") as raised:
        TaskSystem(templates=folder)
    assert 2 == raised.value.location.line
    aliases = ModelAliases({"x": "openai-chat:gpt-4o-mini"})
    with pytest.raises(ConfigurationError, match=r"cycle \(x -> y -> x\)"):
        aliases.add({"x": "y", "y": "x"})
    assert "openai-chat:gpt-4o-mini" == aliases.resolve("x")


def test_bad_names_and_targets_in_code_are_refused() -> None:
    """A name with a space, an unknown provider in a model-string name, a target of another type: each refused."""
    with pytest.raises(ConfigurationError, match=r"Model alias name 'two words' in `model_aliases=` is not a name"):
        TaskSystem(model_aliases={"two words": "openai-chat:gpt-4o-mini"})
    with pytest.raises(ConfigurationError, match=r"Unknown provider 'antropic' .* in the name of a model alias"):
        TaskSystem(model_aliases={"antropic:claude": "openai-chat:gpt-4o-mini"})
    with pytest.raises(ConfigurationError, match=r"The target of model alias 'fast' of `model_aliases=` is int 3"):
        TaskSystem(model_aliases={"fast": 3})  # type: ignore[dict-item]
    with pytest.raises(ConfigurationError, match=r"`model_aliases=` must be a mapping"):
        TaskSystem(model_aliases=["fast"])  # type: ignore[arg-type]


def test_two_files_declaring_one_alias_differently_are_refused(tmp_path: Path) -> None:
    """The same alias with two targets is a `DuplicateNameError` naming the first place; the same twice is fine."""
    folder = _files(
        tmp_path,
        **{"a.yaml": MODELS, "b.yaml": MODELS, "c.yaml": "models:\n  fast: openai-chat:gpt-4o\n"},
    )
    with pytest.raises(DuplicateNameError) as raised:
        TaskSystem(templates=folder)
    assert f"Model alias 'fast' is already declared at {folder / 'a.yaml'}:2:9" in raised.value.message
    assert str(folder / "c.yaml") == raised.value.location.file


def test_aliases_given_in_code_win_over_the_files(tmp_path: Path) -> None:
    """`TaskSystem(model_aliases=)` keeps its target for a name the files declare too (a test swaps a model in)."""
    model = scripted_model("hi")
    system = TaskSystem(model_aliases={"fast": model}, templates=_files(tmp_path, **{"a.yaml": MODELS}))
    assert model is system.model_aliases.resolve("fast")
    assert "anthropic:claude-sonnet-4-5" == system.model_aliases.resolve("strong")


def test_models_that_is_not_a_mapping_is_refused_at_its_line(tmp_path: Path) -> None:
    """`models: [fast]` and `fast: 3` say what `models:` holds, where."""
    folder = _files(tmp_path, **{"a.yaml": "models:\n  - fast\n"})
    with pytest.raises(ConfigurationError, match=r"`models:` must map names to model strings") as raised:
        TaskSystem(templates=folder)
    assert 2 == raised.value.location.line
    (folder / "a.yaml").write_text("models:\n  fast: 3\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"Model alias `fast: 3` must map a name to a model string"):
        TaskSystem(templates=folder)


def test_an_alias_added_after_registration_applies_to_the_next_call() -> None:
    """A template naming a model string resolves at each call: an alias added later stands in for it."""
    system = TaskSystem()
    system.register(Template(name="hi", instructions="Say hi.", model="anthropic:claude-sonnet-4-5"))
    system.model_aliases.add({"anthropic:claude-sonnet-4-5": scripted_model("Hello!", model_name="stand-in")})
    result = system.execute("hi")
    assert ("Hello!", "function:stand-in") == (result.content, result.notes.model)
    assert "anthropic:claude-sonnet-4-5" == result.notes.model_alias


def test_defmodels_in_a_sexp_file_declares_aliases(tmp_path: Path) -> None:
    """`(defmodels (fast "...") ...)` is YAML's `models:` in S-expressions, read by `load` and located."""
    source = '(defmodels (fast "openai-chat:gpt-4o-mini") ("anthropic:claude-x" fast))\n'
    source += '(defatom hi (instructions "Hi.") (model "fast"))\n'
    system = TaskSystem(templates=_files(tmp_path, **{"m.sexp": source}))
    assert "openai-chat:gpt-4o-mini" == system.model_aliases.resolve("anthropic:claude-x")
    assert (1, 18) == (system.model_aliases.location_of("fast").line, system.model_aliases.location_of("fast").column)
    (tmp_path / "m.sexp").write_text("(defmodels fast)", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"Each entry of `defmodels` is `\(name \"model\"\)`"):
        TaskSystem(templates=tmp_path)


def test_defmodels_in_a_script_adds_aliases_the_script_then_uses() -> None:
    """Evaluated in a script, `defmodels` adds to the system's aliases; an unknown name stays an error."""
    system = TaskSystem()
    value = system.defatom('(defmodels (quick "test")) (defatom hi (instructions "Hi.") (model "quick")) (hi)')
    assert ("test", "quick") == (value.notes.model, value.notes.model_alias)
    with pytest.raises(ConfigurationError, match=r"Did you mean 'quick'"):
        system.defatom('(defatom hey (instructions "Hey.") (model "quikc"))')


def test_workflow_models_and_retry_with_are_checked_against_the_aliases(tmp_path: Path) -> None:
    """A step's `model` and `retry_with` may be aliases; an unknown one is refused at its path, did-you-mean."""
    flow = """\
name: flow
state: [{name: who, type: str}, {name: said, type: str}]
steps:
  - id: hi
    task: greet
    model: fast
    inputs: {who: "{{state.who}}"}
    output: said
    on_failure: {retry_with: [strong, strnog]}
"""
    folder = _files(tmp_path, **{"a.yaml": MODELS, "b.yaml": GREET.format(model="fast"), "c.yaml": flow})
    with pytest.raises(WorkflowError) as raised:
        TaskSystem(templates=folder)
    error = raised.value
    assert "Model 'strnog' in step 'hi' of workflow 'flow' has no provider prefix" in error.message
    assert "Did you mean 'strong'?" in error.message
    assert (str(folder / "c.yaml"), 9) == (error.location.file, error.location.line)
    (folder / "c.yaml").write_text(flow.replace(", strnog", ""), encoding="utf-8")
    assert "flow" in TaskSystem(templates=folder).workflows
