"""YAML text to located data: libyaml's fast path and the reference loader give the same data, nodes and errors."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
import yaml
from atomtask import SourceLocation, TemplateError
from atomtask.loading._yaml import yaml_documents

TEXT = """\
name: t
instructions: |
  Hello
system: "quoted"
params:
  text: {type: str, default: yes}
  n: {type: int, default: 0x1F}
"""


def read(text: str) -> list[tuple[Any, dict[str, SourceLocation], frozenset[str]]]:
    """Each document's data, with where the keys of its top-level mapping are and which hold block scalars."""
    out = []
    for data, loader in yaml_documents(text, "f.yaml"):
        node = loader.nodes.get(id(data))
        out.append((data, node.keys if node else {}, node.block_keys if node else frozenset()))
    return out


def test_plain_documents_keep_values_and_locations() -> None:
    """Every value is constructed as YAML 1.1 says, each key points at its value, quoted ones inside the quotes."""
    ((data, keys, block),) = read(TEXT)
    expected = {
        "name": "t",
        "instructions": "Hello\n",
        "system": "quoted",
        "params": {"text": {"type": "str", "default": True}, "n": {"type": "int", "default": 31}},
    }
    assert expected == data
    assert (2, 15) == (keys["instructions"].line, keys["instructions"].column)
    assert (4, 10) == (keys["system"].line, keys["system"].column)  # after the opening quote
    assert frozenset({"instructions"}) == block


def test_nested_mappings_are_located_too() -> None:
    """A mapping inside another has its own node, keyed by the identity of its dict."""
    ((data, loader),) = list(yaml_documents(TEXT, "f.yaml"))
    params = loader.nodes[id(data["params"])]
    assert SourceLocation(file="f.yaml", line=6, column=3) == params.start
    assert SourceLocation(file="f.yaml", line=7, column=6) == params.keys["n"]


def test_aliases_merge_keys_and_tags_are_constructed_as_pyyaml_does() -> None:
    """Documents with aliases, `<<` merges and other tags read as PyYAML's safe loader reads them."""
    text = "base: &b {x: 1}\nc:\n  <<: *b\n  y: 2\nd: 2001-12-14\ne: !!str 3\nf: [*b, *b]\n"
    ((data, keys, _),) = read(text)
    assert yaml.safe_load(text) == data
    assert data["f"][0] is data["f"][1]  # one object, as the alias says
    assert datetime.date(2001, 12, 14) == data["d"]
    assert 3 == keys["c"].line


def test_several_documents_are_read_in_order() -> None:
    """Each `---` document is its own data, with its own nodes."""
    assert [{"a": 1}, {"b": [2]}] == [data for data, _, _ in read("a: 1\n---\nb: [2]\n")]


def test_a_yaml_error_has_the_reference_message() -> None:
    """An undefined alias is reported with its name (PyYAML's own composer's message, not libyaml's)."""
    with pytest.raises(yaml.YAMLError, match="found undefined alias 'zz'"):
        read("a: 1\nb: *zz\n")


@pytest.mark.parametrize(
    ("text", "column"),
    [("- " * 2000 + "x", 201), ("- " * 101 + "x", 201), ("[" * 101 + "]" * 101, 101)],
    ids=["beyond-libyaml-limit", "just-over", "flow"],
)
def test_deep_nesting_is_refused_at_the_first_level_too_deep(text: str, column: int) -> None:
    """Nesting over 100 levels is refused where the 101st collection starts, however deep the text goes."""
    with pytest.raises(TemplateError, match="nested more than 100 levels deep") as raised:
        read(text)
    assert SourceLocation(file="f.yaml", line=1, column=column) == raised.value.location


def test_nesting_through_aliases_is_counted() -> None:
    """An alias to a 60-deep list inside a 50-deep one nests 110 levels: refused at the outer list's start."""
    text = "x: &a " + "[" * 60 + "]" * 60 + "\ny: " + "[" * 50 + "*a" + "]" * 50 + "\n"
    with pytest.raises(TemplateError, match="nested more than 100 levels deep") as raised:
        read(text)
    assert 2 == (raised.value.location.line if raised.value.location else None)


def test_a_recursive_alias_is_refused_by_the_constructor() -> None:
    """A list holding itself inside a mapping is PyYAML's constructor error, as with the reference loader."""
    with pytest.raises(yaml.constructor.ConstructorError, match="recursive"):
        read("a: &a [*a]\n")
