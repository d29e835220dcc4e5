r"""JSON Schema as a schema language: declarations, load-time checks, exact validation, classes.

A JSON Schema declaration (`{name, description, json_schema}` in YAML, a `.json` file in a
templates folder, or `output_format: {schema: {json_schema: ...}}`) becomes a Pydantic class:

- validation follows JSON Schema exactly: a `jsonschema` validator (the schema's own draft,
  2020-12 by default) runs on the raw answer before anything else, with every `format` asserted
  (not treated as an annotation) and `pattern`s matched by the `regex` module (which knows the
  Unicode property escapes `\p{...}` of ECMA-262). Each violation becomes a Pydantic error at its
  own path (`_line_errors`), so pydantic-ai sends them back to the model as retry feedback like any
  validation failure;
- an object schema whose properties have identifier names gives a `JsonSchemaObject` with one typed
  field per property (the caller gets `answer.name`, nested objects as nested classes); any other
  schema gives a `JsonSchemaValue`, a `RootModel` holding the validated JSON value (`answer.root`).
  Both carry the declared schema, the schema the model receives, the validator and the load-time
  warnings;
- the model receives the declared schema itself (local `$ref`s inlined, since providers and
  Pydantic's schema generator want self-contained schemas); a schema whose root is not an object
  is sent wrapped as `{"response": <value>}`, the way pydantic-ai wraps non-object outputs.

Schemas that cannot be honoured are refused when they are loaded, never enforced loosely: an
invalid schema, a `$ref` that does not resolve (nothing is fetched from the network), a `pattern`
that does not compile, a required vocabulary this library does not know. A valid schema that may
not say what its author meant loads with warnings (`_dialects`: a keyword that looks misspelt, a
`format` nothing checks, which JSON Schema makes an annotation), carried on the class for
`atomtask check`; `strict_schema: true` on the declaration refuses them instead. A schema without
`$schema` is read as 2020-12, or as the newest older draft whose metaschema accepts it when
2020-12's does not (tuple `items`, boolean `exclusiveMinimum`); a json-schema.org `$schema` written
another way (`https://`, no `#`, hyper-schema, the unversioned "latest") names its draft.
"""

from __future__ import annotations

import copy
import functools
import keyword
import threading
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias

import attrs
import jsonschema
import jsonschema.validators
import referencing
import referencing.exceptions
import referencing.jsonschema
import regex
from atomtask.errors import SchemaError
from atomtask.schemas._declarations import JsonSchemaDef, canonical
from atomtask.schemas.json_schema._dialects import (
    DRAFTS,
    FORMAT_CHECKER,
    VOCABULARIES,
    SchemaWarning,
    compiled_pattern,
    dialect_alias,
    dialect_text,
    format_warning,
    keyword_warning,
    known_dialect,
    re_compiles,
    strict_refusal,
    validator_class,
)
from atomtask.schemas.json_schema._views import ModelView, subschemas, typed_fields
from jsonschema_specifications import REGISTRY as SPECIFICATIONS
from pydantic import (
    BaseModel,
    ConfigDict,
    ModelWrapValidatorHandler,
    RootModel,
    ValidationError,
    create_model,
    model_validator,
)
from pydantic.errors import PydanticUserError
from pydantic_core import InitErrorDetails, PydanticCustomError

if TYPE_CHECKING:
    from referencing._core import Resolver  # not re-exported by `referencing`, only needed for annotations

__all__ = ["JsonSchemaModel", "JsonSchemaObject", "JsonSchemaResources", "JsonSchemaValue", "build_json_schema_model"]

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


JsonSchema: TypeAlias = dict[str, Any] | bool

_DEFAULT_DIALECT = "https://json-schema.org/draft/2020-12/schema"


@attrs.frozen(kw_only=True)
class JsonSchemaResources:
    """Documents that `$ref`s may point to, by URI (a `referencing` registry, never the network)."""

    documents: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)

    def with_document(self, uri: str, contents: Any) -> JsonSchemaResources:
        """A copy that also holds `contents` under `uri`."""
        return JsonSchemaResources(documents={**self.documents, uri: contents})

    @functools.cached_property
    def digest(self) -> str:
        return canonical(dict(sorted(self.documents.items())))

    @functools.cached_property
    def registry(self) -> referencing.Registry[Any]:
        # The drafts' own metaschemas (what `jsonschema` ships) resolve, as they do in `jsonschema`.
        registry: referencing.Registry[Any] = SPECIFICATIONS
        return registry.with_resources(
            (uri, referencing.Resource.from_contents(doc, default_specification=referencing.jsonschema.DRAFT202012))
            for uri, doc in self.documents.items()
        )


_CacheKey: TypeAlias = tuple[str, str, str, str, str, bool]
_CACHE: weakref.WeakValueDictionary[_CacheKey, type[JsonSchemaObject | JsonSchemaValue]] = weakref.WeakValueDictionary()
_LOCK = threading.RLock()


def build_json_schema_model(
    definition: JsonSchemaDef, *, resources: JsonSchemaResources | None = None
) -> type[JsonSchemaObject | JsonSchemaValue]:
    """Check `definition` and build its class; equal definitions give the same class.

    Raises `SchemaError` (at the definition's location) for a schema that cannot be honoured, and with
    `strict_schema` for one that would load with warnings (`cls.json_schema_warnings`).

    Example:
        ```python
        cls = build_json_schema_model(JsonSchemaDef(name="Age", json_schema={"type": "integer", "minimum": 0}))
        cls.model_validate({"response": 3}).root  # 3
        ```
    """
    resources = resources or JsonSchemaResources()
    schema = definition.json_schema
    strict = definition.strict_schema
    base = definition.base_uri or ""
    key = (definition.name, definition.description or "", canonical(schema), base, resources.digest, strict)
    with _LOCK:
        cached = _CACHE.get(key)
        if cached is not None:
            return cached
        cls = _Builder(definition, resources).build()
        _CACHE[key] = cls
        return cls


class _Builder:
    def __init__(self, definition: JsonSchemaDef, resources: JsonSchemaResources) -> None:
        self.definition = definition
        self.name = definition.name
        self.location = definition.location
        schema: JsonSchema = definition.json_schema
        if definition.base_uri and isinstance(schema, dict) and "$id" not in schema:
            schema = {"$id": definition.base_uri, **schema}
        declared = schema.get("$schema") if isinstance(schema, dict) else None
        alias = dialect_alias(declared) if isinstance(declared, str) else None
        if alias is not None and isinstance(schema, dict):  # `https://json-schema.org/draft-07/schema#` and the like
            schema = {k: v for k, v in schema.items() if k != "$schema"} | ({"$schema": alias} if alias else {})
        self.schema = schema
        self.registry = resources.registry
        self.warnings: list[SchemaWarning] = []
        #: The draft read for a schema without `$schema` that 2020-12's metaschema refuses.
        self.inferred_dialect: str | None = None

    def fail(self, message: str, *, at: str | None = None, suggestions: list[str] | None = None) -> SchemaError:
        """The error for this schema, located at the JSON Pointer `at` when the declaration knows where that is."""
        location = self.definition.location_at(at) if at is not None else self.location
        return SchemaError(f"JSON Schema {self.name!r}: {message}", location=location, suggestions=suggestions or [])

    def build(self) -> type[JsonSchemaObject | JsonSchemaValue]:
        if not self.name.isidentifier() or keyword.iskeyword(self.name):
            raise SchemaError(
                f"Schema name {self.name!r} is not a valid Python identifier; use letters, digits and underscores "
                "(e.g. 'InvoiceSchema').",
                location=self.location,
            )
        validator_cls = self.validator_class()
        try:
            validator_cls.check_schema(self.schema, format_checker=FORMAT_CHECKER)
        except jsonschema.SchemaError as exc:
            older = self.older_draft()
            if older is None:
                raise self.fail(
                    f"the schema is not valid JSON Schema: at `{_pointer(exc.absolute_path)}`: {exc.message}. "
                    "Fix the schema.",
                    at=_pointer(exc.absolute_path),
                ) from None
            validator_cls = older
        root = referencing.Resource.from_contents(self.schema, default_specification=self.specification)
        resolver = self.registry.resolver_with_root(root)
        self.stdlib_only: list[tuple[str, str]] = []
        self.unevaluated = False
        declared = isinstance(self.schema, dict) and "$schema" in self.schema
        self.dialect_text = dialect_text(validator_cls, declared=declared, inferred=self.inferred_dialect is not None)
        self.walk(self.schema, resolver, "", validator_cls)
        if self.stdlib_only and self.unevaluated:
            self.refuse_stdlib_only()
        if self.warnings and self.definition.strict_schema:
            self.refuse_warnings()
        validator = validator_cls(
            self.schema,
            registry=self.registry,
            format_checker=FORMAT_CHECKER,
        )
        for_model = self.model_view(resolver)
        envelope = for_model.get("type") != "object"
        if envelope:
            for_model = {
                "type": "object",
                "properties": {"response": for_model},
                "required": ["response"],
                "additionalProperties": False,
            }
        if self.definition.description:
            for_model = {**for_model, "description": self.definition.description}
        for_model.setdefault("title", self.name)
        cls = self.make_class(envelope)
        cls.json_schema_declared = self.definition.json_schema
        cls.json_schema_for_model = for_model
        cls.json_schema_validator = validator
        cls.json_schema_envelope = envelope
        cls.json_schema_warnings = tuple(self.warnings)
        cls.__doc__ = self.definition.description or f"The JSON Schema {self.name!r}."
        try:
            # What pydantic-ai will ask for when it builds the output tool; kept, so `check` does not make it again.
            cls.json_schema_generated = cls.model_json_schema()
        except (PydanticUserError, KeyError, TypeError) as exc:
            raise self.fail(f"the schema cannot be given to a model ({exc!r}). Simplify it.") from None
        return cls

    # -- dialect and vocabularies ------------------------------------------------------------

    @functools.cached_property
    def specification(self) -> referencing.Specification[Any]:
        return referencing.jsonschema.specification_with(
            self.meta_dialect(), default=referencing.jsonschema.DRAFT202012
        )

    def meta_dialect(self) -> str:
        """The dialect that defines the keywords: `$schema`, or its own `$schema` for a custom metaschema."""
        declared = self.schema.get("$schema", _DEFAULT_DIALECT) if isinstance(self.schema, dict) else _DEFAULT_DIALECT
        if not isinstance(declared, str):
            return _DEFAULT_DIALECT
        if self.inferred_dialect is not None:  # set only for a schema without `$schema`
            return self.inferred_dialect
        if known_dialect(declared):
            return declared
        meta = self.metaschema(declared)
        inner = meta.get("$schema", _DEFAULT_DIALECT) if isinstance(meta, dict) else _DEFAULT_DIALECT
        return inner if isinstance(inner, str) and known_dialect(inner) else _DEFAULT_DIALECT

    def metaschema(self, uri: str) -> Any:
        try:
            return self.registry.resolver().lookup(uri).contents
        except referencing.exceptions.Unresolvable:
            raise self.fail(
                f"`$schema` {uri!r} is neither a JSON Schema draft nor a metaschema loaded here; use "
                f"{_DEFAULT_DIALECT!r} or add the metaschema as a `.json` file.",
                at="/$schema",
            ) from None

    def older_draft(self) -> type[Any] | None:
        """For a schema without `$schema` that 2020-12 refuses: the newest older draft that accepts it, if any."""
        if not isinstance(self.schema, dict) or "$schema" in self.schema:
            return None
        for _, base in reversed(DRAFTS[1:-1]):  # 2019-09 down to draft-04
            try:
                base.check_schema(self.schema, format_checker=FORMAT_CHECKER)
            except jsonschema.SchemaError:
                continue
            meta = base.META_SCHEMA
            self.inferred_dialect = str(meta.get("$id", meta.get("id")))
            return validator_class(base, None)
        return None

    def validator_class(self) -> type[Any]:
        declared = self.schema.get("$schema") if isinstance(self.schema, dict) else None
        if not isinstance(declared, str) or known_dialect(declared):
            base = jsonschema.validators.validator_for(self.schema, default=jsonschema.Draft202012Validator)
            return validator_class(base, None)
        meta = self.metaschema(declared)
        vocabularies = meta.get("$vocabulary") if isinstance(meta, dict) else None
        base = jsonschema.validators.validator_for(meta, default=jsonschema.Draft202012Validator)
        if not isinstance(vocabularies, dict):
            return validator_class(base, None)
        unknown = sorted(v for v, required in vocabularies.items() if v not in VOCABULARIES and required)
        if unknown:
            raise self.fail(
                f"its metaschema {declared!r} requires vocabularies this library does not implement: "
                f"{', '.join(unknown)}. Drop them from `$vocabulary` or mark them `false`.",
                at="/$schema",
            )
        enabled = frozenset(v for v in vocabularies if v in VOCABULARIES)
        return validator_class(base, enabled)

    # -- the load-time walk ------------------------------------------------------------------

    def walk(self, schema: Any, resolver: Resolver[Any], path: str, validator_cls: type[Any]) -> None:
        if not isinstance(schema, dict):
            return
        if path and isinstance(schema.get("$id"), str):
            resource = referencing.Resource.from_contents(schema, default_specification=self.specification)
            resolver = resolver.in_subresource(resource)
        for ref_keyword in ("$ref", "$dynamicRef"):
            ref = schema.get(ref_keyword)
            if isinstance(ref, str):
                try:
                    resolver.lookup(ref)
                except referencing.exceptions.Unresolvable:
                    raise self.fail(
                        f"`{ref_keyword}` {ref!r} at `{path or '/'}` does not resolve. Point it at a `$defs` entry, "
                        "or load the document it names as a `.json` file (nothing is fetched from the network).",
                        at=f"{path}/{ref_keyword}",
                    ) from None
        fmt = schema.get("format")
        if isinstance(fmt, str):
            self.warn(format_warning(fmt, schema, path))
        for word in ("pattern",):
            if isinstance(schema.get(word), str):
                self.check_pattern(schema[word], f"{path}/{word}")
        if isinstance(schema.get("patternProperties"), dict):
            for pattern in schema["patternProperties"]:
                self.check_pattern(pattern, f"{path}/patternProperties")
                if not re_compiles(pattern):
                    self.stdlib_only.append((pattern, f"{path}/patternProperties"))
                    if "additionalProperties" in schema:
                        self.refuse_stdlib_only()
        if "unevaluatedProperties" in schema:
            self.unevaluated = True
            if self.stdlib_only:
                self.refuse_stdlib_only()
        for word in schema:
            if word not in validator_cls.VALIDATORS:
                self.warn(keyword_warning(word, path, validator_cls, self.dialect_text))
        for sub_path, sub in subschemas(schema, path):
            self.walk(sub, resolver, sub_path, validator_cls)

    def warn(self, warning: SchemaWarning | None) -> None:
        if warning is not None:
            self.warnings.append(warning)

    def refuse_warnings(self) -> None:
        first = self.warnings[0]
        raise self.fail(strict_refusal(self.warnings), at=first.pointer, suggestions=list(first.suggestions))

    def refuse_stdlib_only(self) -> None:
        pattern, path = self.stdlib_only[0]
        raise self.fail(
            f"`{path}` key {pattern!r} uses regular-expression syntax (such as `\\p{{...}}`) that `jsonschema` "
            "cannot apply when it works out `additionalProperties` or `unevaluatedProperties`, so it would not be "
            "enforced exactly. Rewrite the pattern without it (e.g. a character class).",
            at=path,
        )

    def check_pattern(self, pattern: str, path: str) -> None:
        try:
            compiled_pattern(pattern)
        except regex.error as exc:
            raise self.fail(
                f"`{path}` {pattern!r} is not a valid regular expression: {exc}. Fix it.", at=path
            ) from None

    # -- what the model receives -------------------------------------------------------------

    def model_view(self, resolver: Resolver[Any]) -> dict[str, Any]:
        view = ModelView(self.specification).convert(self.schema, resolver, ())
        if view is False:
            return {"not": {}}
        return view if isinstance(view, dict) else {}

    # -- the class ---------------------------------------------------------------------------

    def make_class(self, envelope: bool) -> type[JsonSchemaObject | JsonSchemaValue]:
        schema = self.schema
        if not envelope and isinstance(schema, dict):
            fields = typed_fields(schema, self.name)
            if fields is not None:
                typed: type[JsonSchemaObject] = create_model(
                    self.name, __base__=JsonSchemaObject, __module__=__name__, **fields
                )
                return typed
        root_cls: type[JsonSchemaValue] = type(
            self.name, (JsonSchemaValue,), {"__module__": __name__, "__qualname__": self.name}
        )
        return root_cls


def _pointer(path: Any) -> str:
    return "/" + "/".join(str(p) for p in path) if path else "/"
