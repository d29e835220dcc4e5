"""The `TemplateRegistry`: templates checked against everything known, compiled into what a run needs.

Every mistake that can be found without calling a model is found at registration and raised as a
usage error pointing at the template's source: undeclared placeholders, unknown schemas, bad type
strings, unknown providers, defaults that do not fit their type, unknown or mistyped model settings.
What is suspicious but valid (a `{param}` written with single braces, sent to the model as written)
is logged as a warning (`single_brace_placeholder`; `atomtask check` reports it as the finding W206).
A checked template is a `CompiledTemplate`: the output class, the input validator, the placeholders of
each text, and its `image`, `document` and `audio` parameters (`system._media`: sent beside the text,
so never a placeholder).
"""

from __future__ import annotations

import functools
import re
import types
import typing
from collections.abc import Collection, Mapping
from typing import Any, NotRequired, Required

import attrs
from atomtask._logs import get_logger
from atomtask._registry import Registry
from atomtask.errors import (
    DuplicateNameError,
    SchemaError,
    SourceLocation,
    TemplateError,
    TemplateNotFoundError,
    UsageError,
    did_you_mean,
    near_names,
)
from atomtask.loading._model_aliases import ModelAliases
from atomtask.loading._providers import check_model_settings, check_model_string
from atomtask.loading._tools import ResolvedTools, resolve_tools
from atomtask.schemas import _type_strings as type_strings
from atomtask.schemas._model_registry import ModelRegistry
from atomtask.system._media import MEDIA_ANNOTATIONS, MEDIA_KINDS
from atomtask.system._templates import OutputMode, Placeholder, Template, find_placeholders
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from typing_extensions import TypedDict

__all__ = ["CompiledTemplate", "SingleBrace", "TemplateRegistry", "compile_template", "single_braces"]

# `{name}` or `{name.field}` with single braces, once the `{{...}}` placeholders are masked out.
_SINGLE_BRACE_RE = re.compile(r"(?<!\{)\{\s*([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*\}(?!\})")


@attrs.frozen(kw_only=True)
class SingleBrace:
    """A `{param}` in a template's text, where `{{param}}` was almost certainly meant: it is sent as written."""

    field: str
    param: str
    text: str
    location: SourceLocation | None


@attrs.frozen(kw_only=True)
class CompiledTemplate:
    """A registered template with everything resolved: the output class and the input validator."""

    template: Template
    output_cls: type[BaseModel] | None
    output_mode: OutputMode
    inputs: TypeAdapter[dict[str, Any]]
    defaults: Mapping[str, Any]
    system_placeholders: tuple[Placeholder, ...]
    instruction_placeholders: tuple[Placeholder, ...]
    model_settings: Mapping[str, Any] | None = None
    single_braces: tuple[SingleBrace, ...] = ()
    # Parameter name -> type when every parameter is a plain `str`, `int`, `float` or `bool` (None otherwise),
    # and the required names: inputs whose values have exactly those types are valid as they are.
    plain_inputs: Mapping[str, type] | None = None
    required_inputs: frozenset[str] = frozenset()
    # What the model may call (None: no tools, or not resolved: `atomtask check` resolves them elsewhere).
    tools: ResolvedTools | None = None
    # The parameters typed `image`, `document` or `audio` (also in a list or optional), with their kinds: their
    # values go to the model beside the instructions (`system._media`), in this order.
    media_params: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)

    @property
    def name(self) -> str:
        return self.template.name


def compile_template(
    template: Template, models: ModelRegistry, *, tools: bool = True, aliases: Collection[str] = ()
) -> CompiledTemplate:
    """Check `template` against `models`, the providers and the model `aliases`; raise a usage error on any mistake.

    `tools=False` leaves the template's tools unresolved (their modules are not imported).
    """
    where = f"template {template.name!r}"
    if template.model is not None:
        check_model_string(template.model, where=where, location=template.location_of("model"), aliases=aliases)
    for fallback in template.fallbacks:
        where_fallback = f"the `fallbacks` of {where}"
        check_model_string(fallback, where=where_fallback, location=template.location_of("fallbacks"), aliases=aliases)
    annotations = {name: _param_annotation(template, name, spec.type, models) for name, spec in template.params.items()}
    media = _media_params(template)
    defaults = _check_defaults(template, annotations)
    system_ph = _check_placeholders(template, "system", annotations, media) if template.system else []
    instr_ph = _check_placeholders(template, "instructions", annotations, media)
    output_cls = _resolve_output(template, models)
    settings = None
    if template.model_settings is not None:
        settings = check_model_settings(
            template.model_settings,
            where=where,
            error=TemplateError,
            locate=lambda key: (
                _origin_location(template, f"model_settings.{key}") or template.location_of("model_settings")
            ),
        )
    resolved_tools = resolve_tools(template, models.importable) if tools and template.tools else None
    return CompiledTemplate(
        template=template,
        output_cls=output_cls,
        output_mode=template.output_format.mode,
        inputs=_inputs_adapter(template, annotations),
        defaults=defaults,
        system_placeholders=tuple(system_ph),
        instruction_placeholders=tuple(instr_ph),
        model_settings=settings,
        single_braces=tuple(single_braces(template)),
        plain_inputs=dict(annotations) if all(a in _PLAIN_TYPES for a in annotations.values()) else None,
        required_inputs=frozenset(name for name, spec in template.params.items() if spec.required),
        tools=resolved_tools,
        media_params=media,
    )


# Parameter types a value fits exactly when its type is the type itself (no coercion, no constraint).
_PLAIN_TYPES = (str, int, float, bool)


def _origin_location(template: Template, field: str) -> SourceLocation | None:
    origin = template.origin_of(field)
    return origin.location if origin is not None else None


def _text_location(template: Template, field: str, offset: int) -> SourceLocation | None:
    """The source location of character `offset` of a text field, as precisely as its origin tells."""
    origin = template.origin_of(field)
    return origin.locate(offset, getattr(template, field)) if origin is not None else template.location_of(field)


def single_braces(template: Template) -> list[SingleBrace]:
    """Every `{param}` (single braces, a declared parameter) in `system` and `instructions`.

    Valid text, sent to the model as written, but nearly always a `{{param}}` that lost a brace:
    registration logs a warning for it.
    """
    found: list[SingleBrace] = []
    for field in ("system", "instructions"):
        text: str | None = getattr(template, field)
        if not text or "{" not in text:
            continue
        placeholders, malformed = find_placeholders(text)
        masked = list(text)
        spans = [(ph.start, ph.end) for ph in placeholders] + [(at, at + len(raw)) for at, raw in malformed]
        for start, end in spans:
            masked[start:end] = " " * (end - start)
        for match in _SINGLE_BRACE_RE.finditer("".join(masked)):
            if match.group(1) in template.params:
                found.append(
                    SingleBrace(
                        field=field,
                        param=match.group(1),
                        text=match.group(0),
                        location=_text_location(template, field, match.start()),
                    )
                )
    return found


def _param_annotation(template: Template, name: str, type_text: str, models: ModelRegistry) -> Any:
    location = template.location_of(f"params.{name}")
    try:
        expr = type_strings.parse_type(type_text, location=location)
        return type_strings.to_annotation(expr, lambda ref: _resolve_schema_ref(ref, models))
    except UsageError as exc:
        raise _prefixed(exc, f"In parameter {name!r} of template {template.name!r}: ", location) from None


def _resolve_schema_ref(ref: str, models: ModelRegistry) -> Any:
    # `image`, `document` and `audio` are parameter types (sent beside the instructions), before any schema name.
    media = MEDIA_ANNOTATIONS.get(ref)
    if media is not None:
        return media
    try:
        return models.get(ref)
    except SchemaError as exc:
        near = near_names(ref, MEDIA_KINDS, n=1)
        if not near:
            raise
        raise SchemaError(
            f"{exc.message} Did you mean {near[0]!r} (a file sent beside the instructions)?",
            location=exc.location,
            suggestions=[near[0], *exc.suggestions],
        ) from None


def _media_params(template: Template) -> dict[str, tuple[str, ...]]:
    """Each parameter whose type names `image`, `document` or `audio`, with those kinds (types already parsed)."""
    found: dict[str, tuple[str, ...]] = {}
    for name, spec in template.params.items():
        names = type_strings.referenced_names(type_strings.parse_type(spec.type))
        kinds = tuple(kind for kind in MEDIA_KINDS if kind in names)
        if kinds:
            found[name] = kinds
    return found


def _prefixed(exc: UsageError, prefix: str, location: SourceLocation | None) -> UsageError:
    return type(exc)(prefix + exc.message, location=exc.location or location, suggestions=exc.suggestions)


def _check_defaults(template: Template, annotations: Mapping[str, Any]) -> dict[str, Any]:
    defaults: dict[str, Any] = {}
    for name, spec in template.params.items():
        if spec.required:
            continue
        try:
            defaults[name] = _adapter(annotations[name]).validate_python(spec.default)
        except ValidationError as exc:
            raise TemplateError(
                f"Default {spec.default!r} of parameter {name!r} in template {template.name!r} does not "
                f"fit its type {spec.type!r}: {_first_error(exc)}. Fix the default or the type.",
                location=template.location_of(f"params.{name}"),
            ) from None
    return defaults


def _adapter(annotation: Any) -> TypeAdapter[Any]:
    """A validator for `annotation`, shared between templates (building one costs more than validating)."""
    try:
        return _cached_adapter(annotation)
    except TypeError:  # an unhashable annotation
        return TypeAdapter(annotation)


@functools.lru_cache(maxsize=512)
def _cached_adapter(annotation: Any) -> TypeAdapter[Any]:
    return TypeAdapter(annotation)


def _check_placeholders(
    template: Template, field: str, annotations: Mapping[str, Any], media: Mapping[str, tuple[str, ...]]
) -> list[Placeholder]:
    text: str = getattr(template, field)

    def where(offset: int) -> SourceLocation | None:
        return _text_location(template, field, offset)

    placeholders, malformed = find_placeholders(text)
    if malformed:
        offset, raw = malformed[0]
        raise TemplateError(
            f"Malformed placeholder {raw!r} in the {field} of template {template.name!r}; "
            "placeholders are `{{param}}` or `{{param.field}}` with identifier names.",
            location=where(offset),
        )
    for ph in placeholders:
        if ph.param not in annotations:
            declared = ", ".join(sorted(annotations)) or "none"
            raise TemplateError(
                f"Placeholder {ph.text!r} in the {field} of template {template.name!r} is not a declared "
                f"parameter.{did_you_mean(ph.param, annotations)} Declared parameters: {declared}. "
                f"Declare it under `params` or fix the name.",
                location=where(ph.start),
            )
        if ph.param in media:
            kinds = " or ".join(media[ph.param])
            raise TemplateError(
                f"Placeholder {ph.text!r} in the {field} of template {template.name!r} names parameter "
                f"{ph.param!r}, which is {kinds}: the model receives it beside the instructions, not inside "
                "them. Remove the placeholder and refer to it in words (media parameters are sent in the order "
                "they are declared).",
                location=where(ph.start),
            )
        _check_field_path(template, ph, annotations[ph.param], where(ph.start))
    return placeholders


def _check_field_path(template: Template, ph: Placeholder, annotation: Any, location: SourceLocation | None) -> None:
    """`{{p.a.b}}` must walk fields that exist, as far as the declared types tell."""
    current = annotation
    for depth, field in enumerate(ph.path):
        current = type_strings.strip_optional(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            fields = current.model_fields
            if field not in fields:
                raise TemplateError(
                    f"Placeholder {ph.text!r} in template {template.name!r}: {current.__name__} has no field "
                    f"{field!r}.{did_you_mean(field, fields)} Fields: {', '.join(fields)}.",
                    location=location,
                )
            current = fields[field].annotation
            continue
        origin = typing.get_origin(current)
        if current is Any or current is dict or origin is dict or _is_union(current):
            return  # a mapping or an open type: the field is looked up at render time
        owner = ".".join((ph.param, *ph.path[:depth]))
        type_name = getattr(current, "__name__", str(current))
        raise TemplateError(
            f"Placeholder {ph.text!r} in template {template.name!r}: {owner!r} is a {type_name}, which has "
            f"no fields. Use `{{{{{owner}}}}}` or declare the parameter with a schema type.",
            location=location,
        )


def _is_union(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType)


def _resolve_output(template: Template, models: ModelRegistry) -> type[BaseModel] | None:
    fmt = template.output_format
    schema = fmt.schema_
    location = template.location_of("output_format.schema") or template.location_of("output_format")
    if fmt.type == "text" or schema is None:
        return None
    if isinstance(schema, type):
        return schema
    if isinstance(schema, str):
        try:
            return models.get(schema)
        except SchemaError as exc:
            raise SchemaError(
                f"Unknown schema {schema!r} in template {template.name!r}.{did_you_mean(schema, models.names())} "
                f"Registered schemas: {', '.join(models.names()) or 'none'}. Register the class with "
                "`system.models.register(...)` or declare it in a schema file.",
                location=location,
                suggestions=exc.suggestions,
            ) from None
    if "json_schema" in schema or "python" in schema:
        from atomtask.schemas._sources import inline_output_class

        return inline_output_class(template.name, schema, models, location)
    return _inline_schema(template, schema, models, location)


def _inline_schema(
    template: Template, schema: dict[str, Any], models: ModelRegistry, location: SourceLocation | None
) -> type[BaseModel]:
    from atomtask.schemas._declarations import SchemaDef
    from atomtask.schemas._fields import build_models

    definition = dict(schema)
    definition.setdefault("name", _class_name(template.name) + "Output")
    try:
        schema_def = SchemaDef.model_validate(definition)
    except ValidationError as exc:
        raise SchemaError(
            f"Inline schema of template {template.name!r} is invalid: {_first_error(exc)}. An inline schema "
            "is `{fields: [{name, type, description}]}`, `{json_schema: {...}}` or `{python: 'pkg.module:Class'}`.",
            location=location,
        ) from None
    if location is not None:
        schema_def.location = location
    known = {name: models.get(name) for name in models.names()}
    return build_models([schema_def], known=known)[schema_def.name]


def _class_name(template_name: str) -> str:
    return "".join(part.capitalize() for part in template_name.replace("-", "_").split("_") if part)


def _inputs_adapter(template: Template, annotations: Mapping[str, Any]) -> TypeAdapter[dict[str, Any]]:
    # Templates with the same parameters (names, types, required) share one validator: building
    # it costs far more than the rest of the checks, and many templates take the same inputs.
    signature = tuple((name, annotations[name], spec.required) for name, spec in template.params.items())
    try:
        return _cached_inputs_adapter(signature)
    except TypeError:  # an unhashable annotation
        return _build_inputs_adapter(signature)


@functools.lru_cache(maxsize=1024)
def _cached_inputs_adapter(signature: tuple[tuple[str, Any, bool], ...]) -> TypeAdapter[dict[str, Any]]:
    return _build_inputs_adapter(signature)


def _build_inputs_adapter(signature: tuple[tuple[str, Any, bool], ...]) -> TypeAdapter[dict[str, Any]]:
    # A TypedDict rather than a model: parameter names such as `json` or `schema` would shadow
    # BaseModel attributes. Unknown names are rejected (`extra="forbid"`).
    fields = {
        name: (Required[annotation] if required else NotRequired[annotation])
        for name, annotation, required in signature
    }
    # The functional form with a computed field map, which type checkers cannot follow.
    make_typed_dict: Any = TypedDict
    typed_dict: Any = make_typed_dict("TemplateInputs", fields)
    typed_dict.__pydantic_config__ = ConfigDict(extra="forbid")
    adapter: TypeAdapter[dict[str, Any]] = TypeAdapter(typed_dict)
    return adapter


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    return f"{loc + ': ' if loc else ''}{err['msg']}"


log = get_logger(__name__)


class TemplateRegistry(Registry[CompiledTemplate]):
    """Templates by name, each checked against the `ModelRegistry` when it is registered.

    Registration raises a usage error (with the template's file and line when it came from a file)
    for an undeclared placeholder, an unknown schema or provider, a bad type string, or a name
    already taken by a different template. Nothing is accepted now and fixed later.
    """

    kind = "template"
    unknown = TemplateNotFoundError

    def __init__(
        self,
        models: ModelRegistry,
        *,
        resolve_tools: bool = True,
        model_aliases: ModelAliases | None = None,
        log_warnings: bool = True,
    ) -> None:
        super().__init__()
        self._models = models
        #: The names templates may give their `model` and `fallbacks` (`TaskSystem.model_aliases`).
        self.model_aliases = model_aliases if model_aliases is not None else ModelAliases()
        #: Import and check each template's function tools (`atomtask check` does that in a helper process).
        self.resolve_tools = resolve_tools
        #: Log what is suspicious but valid (`single_brace_placeholder`); `atomtask check` reports it as W206.
        self.log_warnings = log_warnings

    def register(self, template: Template, *, replace: bool = False) -> Template:
        """Check and register `template`; returns it. Re-registering an identical template is a no-op."""
        compiled = compile_template(template, self._models, tools=self.resolve_tools, aliases=self.model_aliases)
        with self._lock:
            existing = self._entries.get(template.name)
            if existing is not None and not replace:
                if _declared(existing.template) == _declared(template):
                    return existing.template
                where = existing.template.location
                at = f" at {where}" if where is not None else ""
                raise DuplicateNameError(
                    f"Template name {template.name!r} is already registered{at}. Rename one of them, or pass "
                    "`replace=True` to overwrite.",
                    location=template.location,
                )
            self._entries[template.name] = compiled
        if compiled.single_braces and self.log_warnings:
            _warn_single_braces(compiled)
        return template

    def get(self, name: str) -> Template:
        """The template registered under `name`; raises `TemplateNotFoundError` with near names."""
        return self.compiled(name).template

    def compiled(self, name: str) -> CompiledTemplate:
        """The checked, resolved form of template `name` that the executor runs."""
        return self._entry(name)


def _warn_single_braces(compiled: CompiledTemplate) -> None:
    """One warning per registered template, naming every `{param}` and where the first one is."""
    found = compiled.single_braces
    first = found[0]
    log.warning(
        "single_brace_placeholder",
        template=compiled.name,
        params=sorted({b.param for b in found}),
        location=str(first.location) if first.location is not None else None,
        fix=f"{first.text!r} in the {first.field} of template {compiled.name!r} is sent to the model as written; "
        f"write `{{{{{first.param}}}}}` to insert the parameter"
        + (f" ({len(found) - 1} more like it)" if len(found) > 1 else "")
        + ".",
    )


def _declared(template: Template) -> dict[str, object]:
    """What a template declares, ignoring where it was declared."""
    return template.model_dump()
