"""Registration checks: mistakes raise before any model is called, with location and suggestions."""

from __future__ import annotations

import re

import pytest
from atomtask import (
    ConfigurationError,
    DuplicateNameError,
    ModelRegistry,
    OutputFormat,
    SchemaError,
    SourceLocation,
    Template,
    TemplateError,
    TemplateLimits,
    TemplateNotFoundError,
    TemplateRegistry,
)
from pydantic import BaseModel


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
