"""Nested objects in YAML field schemas: a field `type: object` with its own `fields:` under it.

    fields:
      - name: address
        type: object            # or `object?`, `list[object]`; `fields:` alone means `object`
        fields:
          - {name: street, type: str}

`flatten` turns each nested object into a schema of its own before the schemas are checked and built,
so a nested object is checked, built and described exactly like a named schema.
"""

from __future__ import annotations

from collections.abc import Iterable

from atomtask.schemas.declarations import FieldDef, SchemaDef
from atomtask.schemas.type_strings import (
    DictType,
    ListType,
    OptionalType,
    SchemaRef,
    TypeExpr,
    UnionType,
    parse_type,
    referenced_names,
)
from atomtask.system.errors import SchemaError

__all__ = ["flatten"]


def flatten(defs: Iterable[SchemaDef], known: Iterable[str] = ()) -> list[SchemaDef]:
    """`defs`, each nested object (a field `type: object` with `fields:` under it) made a schema of its own.

    The nested schema is named after its owner and field (`Contact.address` -> 'ContactAddress', with a
    number added if that name is taken by `defs` or `known`) and follows its owner in the list; the
    field's `object` becomes that name (`list[object]` -> `list[ContactAddress]`).
    """
    specs = list(defs)
    taken = {*known, *(spec.name for spec in specs)}
    out: list[SchemaDef] = []
    todo = list(reversed(specs))
    while todo:
        spec = todo.pop()
        if all(f.fields is None for f in spec.fields):
            out.append(spec)
            continue
        fields: list[FieldDef] = []
        nested: list[SchemaDef] = []
        for field_def in spec.fields:
            expr = _object_type(field_def)
            if field_def.fields is None or expr is None:
                fields.append(field_def)  # a `fields:` under any other type is reported by `_check_field`
                continue
            name = _free_name(spec.name + "".join(p.capitalize() for p in field_def.name.split("_")), taken)
            child = SchemaDef(name=name, fields=field_def.fields)
            child.location = field_def.location or spec.location
            nested.append(child)
            flat = field_def.model_copy(update={"type": str(_rename(expr, "object", name)), "fields": None})
            flat.location = field_def.location
            fields.append(flat)
        flat_spec = spec.model_copy(update={"fields": fields})
        flat_spec.location = spec.location
        out.append(flat_spec)
        todo.extend(reversed(nested))
    return out


def _object_type(field_def: FieldDef) -> TypeExpr | None:
    """The parsed type of a field declared with nested `fields:` when it has an `object` to replace, else None."""
    if field_def.fields is None:
        return None
    if "type" not in field_def.model_fields_set:
        return SchemaRef(name="object")  # `fields:` alone declares a nested object
    try:
        expr = parse_type(field_def.type)
    except SchemaError:
        return None
    return expr if "object" in referenced_names(expr) else None


def _rename(expr: TypeExpr, old: str, new: str) -> TypeExpr:
    match expr:
        case SchemaRef(name=name) if name == old:
            return SchemaRef(name=new)
        case ListType(item=item):
            return ListType(item=_rename(item, old, new))
        case DictType(key=key, value=value):
            return DictType(key=key, value=_rename(value, old, new))
        case OptionalType(inner=inner):
            return OptionalType(inner=_rename(inner, old, new))
        case UnionType(options=options):
            return UnionType(options=tuple(_rename(o, old, new) for o in options))
        case _:
            return expr


def _free_name(name: str, taken: set[str]) -> str:
    candidate, number = name, 2
    while candidate in taken:
        candidate, number = f"{name}{number}", number + 1
    taken.add(candidate)
    return candidate
