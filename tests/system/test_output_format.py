"""`OutputFormat`: a `schema` means `type: json` wherever it is written, and a class is a schema."""

from __future__ import annotations

from pathlib import Path

import pytest
from atomtask import OutputFormat, TaskSystem, Template
from pydantic import BaseModel, ValidationError


class Contact(BaseModel):
    name: str
    email: str


@pytest.mark.parametrize("schema", ["Contact", Contact, {"fields": [{"name": "name", "type": "str"}]}])
def test_a_schema_alone_means_json(schema: object) -> None:
    """`OutputFormat(schema=...)` (a name, a class or an inline schema) is `type: json` without writing it."""
    answer = OutputFormat(schema=schema)
    assert ("json", schema) == (answer.type, answer.schema_)


def test_an_explicit_type_is_still_checked() -> None:
    """`type: text` beside a `schema` is still a mistake, and no schema is still text."""
    with pytest.raises(ValidationError, match="has a `schema` but `type: text`"):
        OutputFormat(type="text", schema="Contact")
    assert "text" == OutputFormat().type


def test_a_yaml_template_infers_json_from_its_schema(tmp_path: Path) -> None:
    """`output_format: {schema: Contact}` in YAML loads and answers a `Contact` (no `type: json` needed)."""
    (tmp_path / "t.yaml").write_text(
        "schemas:\n"
        "  - name: Contact\n"
        "    fields: [{name: name, type: str}, {name: email, type: str}]\n"
        "templates:\n"
        "  - name: extract\n"
        "    params: {text: str}\n"
        "    instructions: 'Extract the contact from {{text}}'\n"
        "    output_format: {schema: Contact}\n"
    )
    system = TaskSystem(model="test", templates=tmp_path)
    assert "json" == system.templates.get("extract").output_format.type
    assert {"name", "email"} == set(system.execute("extract", {"text": "Ada"}).unwrap().model_dump())


def test_a_class_schema_runs_and_batches() -> None:
    """`OutputFormat(schema=Contact)` with the class itself answers a `Contact`, one call or a batch."""
    system = TaskSystem(model="test")
    answer = OutputFormat(schema=Contact)
    system.register(Template(name="extract", params={"text": "str"}, instructions="{{text}}", output_format=answer))
    assert isinstance(system.execute("extract", {"text": "Ada"}).unwrap(), Contact)
    assert {"python": f"{__name__}:Contact"} == answer.model_dump(mode="json", by_alias=True)["schema"]
    [item] = system.batch_sync("extract", [{"text": "Ada"}])
    assert {"name", "email"} == set(item.output or {})
