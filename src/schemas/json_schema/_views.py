"""Walking JSON Schemas: their subschemas, the view a model is sent, and typed fields where they map.

The model view is the declared schema made self-contained (local `$ref`s inlined; recursive ones
described in words), because providers and Pydantic's schema generator want no external
references. Typed fields may be looser than the schema (`Any` for what does not map) but never
stricter: by the time they apply, the JSON Schema validator has accepted the value.
"""

from __future__ import annotations

import json
import keyword
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any, Literal

import referencing
import referencing.exceptions
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, create_model

if TYPE_CHECKING:
    from referencing._core import Resolver  # not re-exported by `referencing`, only needed for annotations

__all__ = ["ONE_SUBSCHEMA", "SUBSCHEMA_LISTS", "SUBSCHEMA_MAPS", "ModelView", "subschemas", "typed_fields"]


class _Nested(BaseModel):
    model_config = ConfigDict(extra="allow", protected_namespaces=())


ONE_SUBSCHEMA = ("additionalProperties", "contains", "else", "if", "not", "propertyNames", "then", "unevaluatedItems",
        "unevaluatedProperties", "contentSchema", "additionalItems", "items")  # fmt: skip
SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
SUBSCHEMA_MAPS = ("$defs", "definitions", "dependentSchemas", "patternProperties", "properties", "dependencies")


def subschemas(schema: dict[str, Any], path: str) -> Iterator[tuple[str, Any]]:
    """The direct subschemas of `schema`, with their JSON Pointer paths."""
    for word in ONE_SUBSCHEMA:
        value = schema.get(word)
        if isinstance(value, dict | bool):
            yield f"{path}/{word}", value
    for word in SUBSCHEMA_LISTS:
        value = schema.get(word)
        if isinstance(value, list):
            for index, item in enumerate(value):
                yield f"{path}/{word}/{index}", item
    for word in SUBSCHEMA_MAPS:
        value = schema.get(word)
        if isinstance(value, dict):
            for name, item in value.items():
                if isinstance(item, dict | bool):
                    yield f"{path}/{word}/{name}", item


class ModelView:
    """The schema as the model should see it: self-contained, refs inlined where they end."""

    _DROP = frozenset(
        {"$schema", "$id", "$anchor", "$dynamicAnchor", "$defs", "definitions", "$comment", "$vocabulary"}
    )

    def __init__(self, specification: referencing.Specification[Any]) -> None:
        self.specification = specification

    def convert(self, schema: Any, resolver: Resolver[Any], stack: tuple[int, ...]) -> Any:
        if not isinstance(schema, dict):
            return schema  # `true` / `false` subschemas are sent as they are
        if isinstance(schema.get("$id"), str) and stack:
            resolver = resolver.in_subresource(
                referencing.Resource.from_contents(schema, default_specification=self.specification)
            )
        inner = (*stack, id(schema))
        out: dict[str, Any] = {}
        targets: list[Any] = []
        for word, value in schema.items():
            if word in self._DROP:
                continue
            if word in ("$ref", "$dynamicRef") and isinstance(value, str):
                targets.append(self.inline(value, resolver, inner))
            elif word in ONE_SUBSCHEMA and isinstance(value, dict | bool):
                out[word] = self.convert(value, resolver, inner)
            elif word in SUBSCHEMA_LISTS and isinstance(value, list):
                out[word] = [self.convert(v, resolver, inner) for v in value]
            elif word in SUBSCHEMA_MAPS and isinstance(value, dict):
                out[word] = {k: self.convert(v, resolver, inner) for k, v in value.items()}
            elif word != "examples" and _has_ref_key(value):
                # Pydantic's schema generator takes any `{"$ref": "..."}` for a reference of its own and
                # fails; the value stays enforced by validation, and the model is told in words.
                out["description"] = f"{out.get('description', '')} `{word}`: {json.dumps(value)}".strip()
            else:
                out[word] = value
        if targets and not out and len(targets) == 1:
            return targets[0]  # a bare `$ref`: the model sees the target itself
        if targets:
            out["allOf"] = [*out.get("allOf", []), *targets]
        return out

    def inline(self, ref: str, resolver: Resolver[Any], stack: tuple[int, ...]) -> Any:
        try:
            resolved = resolver.lookup(ref)
        except referencing.exceptions.Unresolvable:
            return {}
        target = resolved.contents
        if id(target) in stack or len(stack) > 32:
            # A recursive structure cannot be inlined: the model sees this part unconstrained, and
            # validation (which follows the `$ref`) still enforces it.
            return {"description": f"Recursive: the same structure as {ref!r}."}
        return self.convert(target, resolved.resolver, (*stack, id(target)))


def _has_ref_key(value: Any) -> bool:
    if isinstance(value, dict):
        return isinstance(value.get("$ref"), str) or any(_has_ref_key(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_ref_key(v) for v in value)
    return False


# ---------------------------------------------------------------------------------------------
# Typed fields where the schema maps cleanly


def typed_fields(schema: dict[str, Any], name: str) -> dict[str, Any] | None:
    """Fields for an object schema whose property names are usable as attributes; else None.

    The annotations may be looser than the schema (`Any` for what does not map) but never
    stricter: the JSON Schema validator has already accepted the value when they apply.
    """
    properties = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(properties, dict) or not properties:
        return None
    required_value = schema.get("required")
    required: list[Any] = required_value if isinstance(required_value, list) else []
    fields: dict[str, Any] = {}
    for prop, sub in properties.items():
        if not _usable_name(prop):
            return None
        annotation = _annotation(sub, f"{name}_{prop}")
        description = sub.get("description") if isinstance(sub, dict) else None
        if prop in required:
            fields[prop] = (annotation, Field(description=description))
        else:
            fields[prop] = (annotation | None, Field(default=None, description=description))
    return fields


def _usable_name(prop: str) -> bool:
    return (
        prop.isidentifier()
        and not prop.startswith("_")
        and not keyword.iskeyword(prop)
        and not hasattr(BaseModel, prop)
        and not prop.startswith("json_schema_")
        and not prop.startswith("model_")
    )


def _integral(value: Any) -> Any:
    # JSON Schema counts 1.0 and 1e308 as integers; Pydantic's `int` refuses floats beyond 64 bits.
    return int(value) if isinstance(value, float) and value.is_integer() else value


_SIMPLE: dict[str, Any] = {
    "string": str,
    "integer": Annotated[int, BeforeValidator(_integral)],
    "number": int | float,
    "boolean": bool,
    "null": type(None),
}
_REF_WORDS = frozenset({"$ref", "$dynamicRef", "allOf", "anyOf", "oneOf", "not", "if", "then", "else"})


def _annotation(schema: Any, name: str) -> Any:
    if not isinstance(schema, dict) or _REF_WORDS & set(schema):
        return Any
    kind = schema.get("type")
    kinds = [kind] if isinstance(kind, str) else kind if isinstance(kind, list) else None
    if not kinds or not all(isinstance(k, str) for k in kinds):
        return Any
    options: list[Any] = []
    for each in kinds:
        if each in _SIMPLE:
            enum = schema.get("enum")
            if each == "string" and isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
                options.append(Literal.__getitem__(tuple(enum)))
            else:
                options.append(_SIMPLE[each])
        elif each == "array":
            # With `prefixItems`, `items` covers only the later positions: the list is not uniform.
            items = schema.get("items") if "prefixItems" not in schema else None
            options.append(list.__class_getitem__(_annotation(items, name) if items is not None else Any))
        elif each == "object":
            nested = typed_fields(schema, name)
            if nested is None:
                options.append(dict[str, Any])
            else:
                options.append(create_model(name, __base__=_Nested, __module__=__name__, **nested))
        else:
            return Any
    result = options[0]
    for option in options[1:]:
        result = result | option
    return result
