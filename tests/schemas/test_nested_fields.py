"""Nested objects in field schemas become schemas of their own before checking and building."""

from __future__ import annotations

from atomtask.schemas._declarations import FieldDef, SchemaDef
from atomtask.schemas._fields import flatten


def test_each_nested_object_follows_its_owner_named_after_it() -> None:
    """`Order.lines` (a list of objects with an object inside) gives `OrderLines` and `OrderLinesItem`."""
    item = FieldDef(name="item", type="object", fields=[FieldDef(name="sku", type="str")])
    order = SchemaDef(name="Order", fields=[FieldDef(name="lines", type="list[object]?", fields=[item])])
    flat = flatten([order])
    assert ["Order", "OrderLines", "OrderLinesItem"] == [s.name for s in flat]
    assert ["list[OrderLines]?", "OrderLinesItem", "str"] == [s.fields[0].type for s in flat]
    assert [None, None, None] == [s.fields[0].fields for s in flat]


def test_schemas_without_nested_objects_are_kept_as_they_are() -> None:
    """A schema with no nested `fields:` is passed through unchanged (the same object)."""
    plain = SchemaDef(name="Plain", fields=[FieldDef(name="a", type="str")])
    assert [plain] == flatten([plain])
    assert plain is flatten([plain])[0]


def test_a_field_with_fields_but_no_object_type_is_left_for_the_checks() -> None:
    """`fields:` under a type without `object` is not flattened (the field checks report it)."""
    odd = SchemaDef(name="Odd", fields=[FieldDef(name="a", type="int", fields=[FieldDef(name="b")])])
    assert ["Odd"] == [s.name for s in flatten([odd])]
    assert odd.fields[0].fields == flatten([odd])[0].fields[0].fields
