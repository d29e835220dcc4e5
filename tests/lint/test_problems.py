"""Every problem of a template, found by compiling one concern at a time with registration's own code."""

from __future__ import annotations

import pytest
from atomtask import OutputFormat, Template, UsageError
from atomtask.lint._session import closure, template_problems
from atomtask.loading._template_registry import compile_template
from atomtask.schemas import ModelRegistry
from atomtask.schemas._declarations import FieldDef, SchemaDef


def test_each_concern_of_a_template_is_reported() -> None:
    """A bad parameter type, a bad default, a bad model, bad placeholders and an unknown schema: all of them."""
    template = Template(
        name="t",
        params={"a": "lst[str]", "b": {"type": "int", "default": "x"}},
        model="opanai:gpt-4o",
        system="Be {{nope}}.",
        instructions="Do {{a}} {{b.c}} {{zzz}}",
        output_format=OutputFormat(type="json", schema="Missing"),
    )
    starts = [
        "Unknown provider 'opanai'",
        "In parameter 'a' of template",
        "Default 'x' of parameter 'b'",
        "Placeholder '{{nope}}' in the system",
        "Placeholder '{{zzz}}' in the instructions",
        "Unknown schema 'Missing'",
    ]
    messages = [problem.message for problem in template_problems(template, ModelRegistry())]
    assert starts == [m[: len(start)] for m, start in zip(messages, starts, strict=False)]
    assert len(starts) == len(messages)


def test_the_first_problem_is_the_one_registration_raises() -> None:
    """Registration's own error is among the problems, word for word."""
    template = Template(name="t", params={"a": "int"}, instructions="{{b}}", model="opanai:x")
    with pytest.raises(UsageError) as raised:
        compile_template(template, ModelRegistry())
    assert raised.value.message in [p.message for p in template_problems(template, ModelRegistry())]


def test_a_sound_template_has_no_problems() -> None:
    """No problem for a template registration accepts."""
    assert [] == template_problems(Template(name="t", params={"a": "str"}, instructions="{{a}}"), ModelRegistry())


def test_closure_follows_nested_fields() -> None:
    """A schema's closure includes what its nested objects reference."""
    inner = FieldDef(name="x", type="object", fields=[FieldDef(name="tag", type="Tag")])
    batch = {
        "A": SchemaDef(name="A", fields=[inner]),
        "Tag": SchemaDef(name="Tag", fields=[FieldDef(name="v")]),
        "Other": SchemaDef(name="Other", fields=[FieldDef(name="v")]),
    }
    assert ["A", "Tag"] == [s.name for s in closure(batch["A"], batch)]
