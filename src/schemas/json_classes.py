"""The classes built from JSON Schemas: what they carry, and how they validate.

`JsonSchemaObject` (one typed attribute per property) and `JsonSchemaValue` (`.root`, any other
schema) carry the declared schema, the schema the model receives, a `jsonschema` validator and the
load-time warnings. Their validation runs that validator on the raw answer and turns each violation
into a Pydantic error at its own path (`_line_errors`). `atomtask.schemas.json_models` checks
schemas, builds the subclasses and re-exports these names.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias

import jsonschema
from pydantic import (
    BaseModel,
    ConfigDict,
    ModelWrapValidatorHandler,
    RootModel,
    ValidationError,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

if TYPE_CHECKING:
    from atomtask.schemas.json_warnings import SchemaWarning

__all__ = ["JsonSchemaModel", "JsonSchemaObject", "JsonSchemaValue"]

_MAX_REPORTED_ERRORS = 8


class _JsonSchemaClass:
    """What every class built from a JSON Schema carries (set by the builder)."""

    #: The schema as declared.
    json_schema_declared: ClassVar[Any] = True
    #: What the model receives: self-contained, wrapped in `{"response": ...}` for a non-object root.
    json_schema_for_model: ClassVar[dict[str, Any]] = {}
    json_schema_validator: ClassVar[Any] = None
    #: Whether the answer travels as `{"response": <value>}`.
    json_schema_envelope: ClassVar[bool] = False
    #: What the schema holds that loads but is not enforced as written (`atomtask check` reports them).
    json_schema_warnings: ClassVar[tuple[SchemaWarning, ...]] = ()
    #: `model_json_schema()` as the builder made it (to see it can be given to a model); read, never modify.
    json_schema_generated: ClassVar[dict[str, Any] | None] = None

    @classmethod
    def _check_json_schema(cls, data: Any) -> Any:
        """The value to build the instance from, once the JSON Schema validator accepts it.

        Each violation becomes one Pydantic error at its own path (under `response` for an
        envelope), so pydantic-ai's retry feedback tells the model exactly what to fix.
        """
        value = data
        prefix: tuple[str, ...] = ()
        if cls.json_schema_envelope:
            if not (isinstance(data, dict) and set(data) == {"response"}):
                raise PydanticCustomError(
                    "json_schema_envelope", 'Expected an object with a single key "response" holding the answer'
                )
            value, prefix = data["response"], ("response",)
        validator = cls.json_schema_validator
        if validator is not None:
            errors = list(validator.iter_errors(value))
            if errors:
                raise ValidationError.from_exception_data(cls.__name__, _line_errors(errors, prefix))
        return value

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> dict[str, Any]:
        return copy.deepcopy(cls.json_schema_for_model)


class JsonSchemaObject(_JsonSchemaClass, BaseModel):
    """A class built from an object JSON Schema: one typed attribute per property (extra keys kept)."""

    model_config = ConfigDict(extra="allow", protected_namespaces=())

    @model_validator(mode="wrap")
    @classmethod
    def _validate_json_schema(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        if isinstance(data, cls):
            return data
        return handler(cls._check_json_schema(data))


class JsonSchemaValue(_JsonSchemaClass, RootModel[Any]):
    """A class built from any other JSON Schema: `.root` is the validated JSON value."""

    @model_validator(mode="wrap")
    @classmethod
    def _validate_json_schema(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        if isinstance(data, cls):
            return data
        return handler(cls._check_json_schema(data))


JsonSchemaModel: TypeAlias = JsonSchemaObject | JsonSchemaValue


def _line_errors(errors: list[jsonschema.ValidationError], prefix: tuple[str, ...]) -> list[InitErrorDetails]:
    ordered = sorted(errors, key=jsonschema.exceptions.relevance, reverse=True)  # most relevant first
    details: list[InitErrorDetails] = []
    for error in ordered[:_MAX_REPORTED_ERRORS]:
        message = error.message
        if error.context:
            best = jsonschema.exceptions.best_match(error.context)
            message += f" (closest: at `{best.json_path}`: {best.message})"
        details.append(
            InitErrorDetails(
                type=PydanticCustomError("json_schema", "{detail}", {"detail": message}),
                loc=(*prefix, *error.absolute_path),
                input=error.instance,
            )
        )
    if len(ordered) > _MAX_REPORTED_ERRORS:
        more = f"{len(ordered) - _MAX_REPORTED_ERRORS} more JSON Schema violation(s) not listed"
        details.append(
            InitErrorDetails(
                type=PydanticCustomError("json_schema", "{detail}", {"detail": more}), loc=prefix, input=None
            )
        )
    return details
