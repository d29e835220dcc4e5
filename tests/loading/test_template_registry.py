"""Registration checks: mistakes raise before any model is called, with location and suggestions."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from atomtask import (
    ConfigurationError,
    DuplicateNameError,
    OutputFormat,
    SchemaError,
    SourceLocation,
    Template,
    TemplateError,
    TemplateLimits,
    TemplateNotFoundError,
)
from atomtask.loading import TemplateRegistry
from atomtask.loading._readers import load_paths
from atomtask.schemas import ModelRegistry
from atomtask.system._templates import MODEL_SETTING_HINTS
from pydantic import BaseModel
from structlog.testing import capture_logs


class Contact(BaseModel):
    name: str


@pytest.fixture
def registry() -> TemplateRegistry:
    models = ModelRegistry()
    models.register(Contact)
    return TemplateRegistry(models)


def test_undeclared_placeholder_is_rejected_with_suggestion(registry: TemplateRegistry) -> None:
    """`{{txt}}` with a declared `text` raises TemplateError suggesting `text`."""
    with pytest.raises(TemplateError) as raised:
        registry.register(Template(name="t", params={"text": "str"}, instructions="Read {{txt}}"))
    assert "Placeholder '{{txt}}'" in str(raised.value)
    assert "Did you mean 'text'?" in str(raised.value)


def test_placeholder_in_system_text_is_checked_too(registry: TemplateRegistry) -> None:
    """Placeholders in `system` must be declared as well."""
    with pytest.raises(TemplateError, match="in the system of template 't'"):
        registry.register(Template(name="t", system="Be {{tone}}", instructions="hi"))


def test_malformed_placeholder_is_rejected(registry: TemplateRegistry) -> None:
    """`{{ a b }}` is not a placeholder; it is an error rather than text sent to the model."""
    with pytest.raises(TemplateError, match="Malformed placeholder"):
        registry.register(Template(name="t", params={"a": "str"}, instructions="{{ a b }}"))


def test_unknown_schema_suggests_registered_names(registry: TemplateRegistry) -> None:
    """An unknown schema name raises SchemaError with a did-you-mean and the location given."""
    template = Template(
        name="extract", instructions="x", output_format=OutputFormat(type="json", schema="Contct")
    ).located(SourceLocation(file="templates/extract.yaml", line=1))
    with pytest.raises(SchemaError) as raised:
        registry.register(template)
    message = str(raised.value)
    assert message.startswith("templates/extract.yaml:1: Unknown schema 'Contct' in template 'extract'.")
    assert "Did you mean 'Contact'?" in message
    assert ["Contact"] == raised.value.suggestions


def test_unknown_provider_is_rejected_without_importing_sdks(registry: TemplateRegistry) -> None:
    """`opnai-chat:` is an unknown provider; the error suggests `openai-chat`."""
    with pytest.raises(ConfigurationError) as raised:
        registry.register(Template(name="t", instructions="x", model="opnai-chat:gpt-4o-mini"))
    assert "Unknown provider 'opnai-chat'" in str(raised.value)
    assert "openai-chat" in raised.value.suggestions


def test_model_without_provider_prefix_is_rejected(registry: TemplateRegistry) -> None:
    """`gpt-4o` without a prefix says how to write a model string."""
    with pytest.raises(ConfigurationError, match="has no provider prefix"):
        registry.register(Template(name="t", instructions="x", model="gpt-4o"))


def test_bad_type_string_is_rejected(registry: TemplateRegistry) -> None:
    """A parameter typed `lisst[str]` raises SchemaError naming the parameter."""
    with pytest.raises(SchemaError) as raised:
        registry.register(Template(name="t", params={"xs": "lisst[str]"}, instructions="{{xs}}"))
    assert "parameter 'xs'" in str(raised.value)
    assert "list[str]" in str(raised.value)


def test_default_must_fit_the_type(registry: TemplateRegistry) -> None:
    """A default of the wrong type is caught at registration."""
    with pytest.raises(TemplateError, match="Default 'many' of parameter 'n'"):
        registry.register(Template(name="t", params={"n": {"type": "int", "default": "many"}}, instructions="{{n}}"))


def test_field_path_is_checked_against_the_schema(registry: TemplateRegistry) -> None:
    """`{{who.nmae}}` on a Contact parameter suggests `name`; on a str it says it has no fields."""
    with pytest.raises(TemplateError, match=re.escape("Contact has no field 'nmae'. Did you mean 'name'?")):
        registry.register(Template(name="t", params={"who": "Contact"}, instructions="{{who.nmae}}"))
    with pytest.raises(TemplateError, match="'s' is a str, which has no fields"):
        registry.register(Template(name="u", params={"s": "str"}, instructions="{{s.x}}"))


def test_duplicate_template_name_is_rejected(registry: TemplateRegistry) -> None:
    """A different template under a taken name raises; the identical one is a no-op."""
    first = Template(name="t", instructions="one").located(SourceLocation(file="a.yaml", line=1))
    registry.register(first)
    registry.register(Template(name="t", instructions="one"))
    with pytest.raises(DuplicateNameError, match=re.escape("already registered at a.yaml:1")):
        registry.register(Template(name="t", instructions="two"))
    registry.register(Template(name="t", instructions="two"), replace=True)
    assert "two" == registry.get("t").instructions


def test_get_unknown_template_suggests(registry: TemplateRegistry) -> None:
    """`get` of an unknown name raises TemplateNotFoundError (a LookupError) with near names."""
    registry.register(Template(name="extract", instructions="x"))
    with pytest.raises(TemplateNotFoundError, match="Did you mean 'extract'"):
        registry.get("extrat")
    assert ["extract"] == registry.names()


def test_json_output_needs_a_schema() -> None:
    """`type: json` without a schema is rejected when the template is built."""
    with pytest.raises(ValueError, match="no `schema`"):
        OutputFormat(type="json")


def test_python_class_can_be_the_schema(registry: TemplateRegistry) -> None:
    """An OutputFormat may name the class itself instead of a registered name."""
    registry.register(Template(name="t", instructions="x", output_format=OutputFormat(type="json", schema=Contact)))
    assert registry.compiled("t").output_cls is Contact


def test_limits_tightest_takes_the_stricter_of_each() -> None:
    """A call's limits and a template's combine field by field, the smaller winning, None meaning none."""
    template = TemplateLimits(requests=5, total_tokens=1000)
    call = TemplateLimits(requests=3, cost=0.5)
    assert TemplateLimits(requests=3, total_tokens=1000, cost=0.5) == call.tightest(template)
    assert call == call.tightest(None)


# -- single-brace placeholders: a warning at registration ---------------------------------------------------

SINGLE_BRACE_YAML = """\
name: summarize
params: {text: str, tone: str}
system: Write in a {{tone}} tone.
instructions: |
  Summarise this: {text}
  Keep {text.title} and {unknown} and {"json": 1} and {{text}} as they are.
"""


def registered_from_file(registry: TemplateRegistry, path: Path) -> list[dict[str, Any]]:
    with capture_logs() as logs:
        for template in load_paths([path]).templates:
            registry.register(template)
    return [event for event in logs if event["event"] == "single_brace_placeholder"]


def test_single_brace_param_is_a_warning_at_registration_naming_the_fix(
    registry: TemplateRegistry, tmp_path: Path
) -> None:
    """`{text}` (a declared param) logs one warning with the params, the file:line:col and `{{text}}`."""
    path = tmp_path / "summarize.yaml"
    path.write_text(SINGLE_BRACE_YAML)
    [event] = registered_from_file(registry, path)
    assert "summarize" == event["template"]
    assert ["text"] == event["params"]
    assert f"{path}:5" == event["location"]  # a block scalar: the line
    assert "write `{{text}}`" in event["fix"]
    assert "(1 more like it)" in event["fix"]  # `{text.title}`; `{unknown}` is no parameter
    assert "warning" == event["log_level"]


def test_single_brace_warning_is_logged_once_per_template(registry: TemplateRegistry, tmp_path: Path) -> None:
    """Registering the same template again (a no-op) does not repeat the warning."""
    path = tmp_path / "summarize.yaml"
    path.write_text(SINGLE_BRACE_YAML)
    assert 1 == len(registered_from_file(registry, path))
    assert [] == registered_from_file(registry, path)


def test_double_braces_and_other_braces_are_not_warned_about(registry: TemplateRegistry) -> None:
    """`{{text}}`, `{{{{`-free JSON and `{name}` of no parameter log nothing."""
    with capture_logs() as logs:
        registry.register(
            Template(
                name="t",
                params={"text": "str"},
                system='Answer as {"label": "..."}; {other} is literal.',
                instructions="Read {{text}}.",
            )
        )
    assert [] == logs


# -- model settings, checked at registration ----------------------------------------------------------------


def test_template_model_settings_are_checked_and_kept(registry: TemplateRegistry) -> None:
    """Known settings of the right type register; `temperature: 0` becomes the float pydantic-ai declares."""
    registry.register(Template(name="t", instructions="hi", model_settings={"temperature": 0, "max_tokens": 50}))
    assert {"temperature": 0.0, "max_tokens": 50} == registry.compiled("t").model_settings


def test_provider_specific_settings_pass_unchecked(registry: TemplateRegistry) -> None:
    """`openai_reasoning_effort` belongs to a provider's own settings: accepted as written."""
    registry.register(Template(name="t", instructions="hi", model_settings={"openai_reasoning_effort": "low"}))
    assert {"openai_reasoning_effort": "low"} == registry.compiled("t").model_settings


def test_unknown_model_setting_suggests_the_near_key_with_its_location(
    registry: TemplateRegistry, tmp_path: Path
) -> None:
    """`temprature` in a YAML template: TemplateError with "did you mean", the file and line."""
    path = tmp_path / "t.yaml"
    path.write_text("name: t\ninstructions: hi\nmodel_settings:\n  temprature: 0\n")
    [template] = load_paths([path]).templates
    with pytest.raises(TemplateError) as raised:
        registry.register(template)
    assert "Unknown model setting 'temprature' in template 't'. Did you mean 'temperature'?" in raised.value.message
    assert "temperature" in raised.value.suggestions
    assert raised.value.location is not None
    assert (str(path), 4) == (raised.value.location.file, raised.value.location.line)


def test_stop_suggests_stop_sequences(registry: TemplateRegistry) -> None:
    """A word of the real key is enough for a suggestion: `stop` -> `stop_sequences`."""
    with pytest.raises(TemplateError, match="Did you mean 'stop_sequences'"):
        registry.register(Template(name="t", instructions="hi", model_settings={"stop": ["END"]}))


def test_model_setting_of_the_wrong_type_names_key_and_type(registry: TemplateRegistry) -> None:
    """`max_tokens: "50"` is refused, naming the key, the type expected and the value."""
    with pytest.raises(TemplateError) as raised:
        registry.register(Template(name="t", instructions="hi", model_settings={"max_tokens": "50"}))
    assert "Model setting 'max_tokens' of template 't' must be int, got str '50'" in raised.value.message


def test_top_level_model_setting_says_to_write_it_under_model_settings(tmp_path: Path) -> None:
    """`temperature: 0` beside `instructions` is refused with the `model_settings: {temperature: 0}` fix."""
    path = tmp_path / "t.yaml"
    path.write_text("name: t\ninstructions: hi\ntemperature: 0\n")
    with pytest.raises(TemplateError) as raised:
        load_paths([path])
    assert "`model_settings: {temperature: 0}`" in raised.value.message
    assert raised.value.location is not None
    assert 3 == raised.value.location.line


def test_every_top_level_hint_is_a_pydantic_ai_model_setting() -> None:
    """The keys that get the `model_settings:` hint are all real `ModelSettings` keys."""
    from pydantic_ai.settings import ModelSettings

    assert MODEL_SETTING_HINTS <= set(ModelSettings.__annotations__)
