"""What users declare: a `Template` (also the YAML file format), its `OutputFormat`, limits and cache policy.

These are plain declarations. Checking them against the registered schemas and providers happens
in `TemplateRegistry.register`; rendering and running them happens in `atomtask.executors`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import timedelta
from enum import StrEnum
from typing import Annotated, Any, Literal

import attrs
from atomtask.errors import ConfigurationError, SourceLocation, join_sentences, near_names
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

__all__ = [
    "TOOL_TAGS",
    "CacheChoice",
    "CachePolicy",
    "FunctionToolSpec",
    "McpServerSpec",
    "McpToolSpec",
    "OutputFormat",
    "OutputMode",
    "ParamSpec",
    "Placeholder",
    "RepairMode",
    "RepairSetting",
    "Template",
    "TemplateLimits",
    "TextOrigin",
    "ToolSpec",
    "cache_choice",
    "find_placeholders",
    "format_duration",
    "parse_duration",
    "repair_mode",
]

_CACHE_FORMS = "True, False, None, a `CachePolicy`, or a mapping like `{'ttl': '1h'}`"

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_DURATION = re.compile(r"^\s*(?:\d+(?:\.\d+)?\s*[smhdw]\s*)+$")
_DURATION_HELP = "a duration like `90s`, `30m`, `1h`, `1h30m`, `7d`, `2w`, or a number of seconds"


def parse_duration(value: Any) -> timedelta:
    """`"1h30m"`, `"7d"`, `90` (seconds) or a `timedelta` as a positive `timedelta`; raises `ValueError`."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str) and _DURATION.match(value.lower()):
        seconds = sum(float(n) * _UNITS[unit] for n, unit in _PART.findall(value.lower()))
    else:
        raise ValueError(f"{value!r} is not a duration; write {_DURATION_HELP}")
    if seconds <= 0:
        raise ValueError(f"{value!r} is not a positive duration; write {_DURATION_HELP}")
    return timedelta(seconds=seconds)


def format_duration(value: timedelta) -> str:
    """A duration as `parse_duration` reads it back: `1h30m`, `7d`, `90s` (`1.5s` below whole seconds)."""
    seconds = value.total_seconds()
    if seconds != int(seconds):
        return f"{seconds:g}s"
    rest, parts = int(seconds), []
    for unit in ("w", "d", "h", "m", "s"):
        count, rest = divmod(rest, _UNITS[unit])
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"


class CachePolicy(BaseModel):
    """Whether answers are served from the response cache, and for how long a stored answer stays good.

    `CachePolicy.model_validate(True)` is `CachePolicy(enabled=True)`; `{"ttl": "1h"}` is on with a TTL of
    an hour. Without a `ttl` a stored answer never expires (clear it with `atomtask cache clear`).

    Example:
        ```python
        Template(name="summarise", instructions="...", cache={"ttl": "1d"})
        system.execute("summarise", {"text": "..."}, cache=False)  # this call asks the model
        ```
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    ttl: timedelta | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_bool(cls, data: Any) -> Any:
        if isinstance(data, bool):
            return {"enabled": data}
        if not isinstance(data, dict | CachePolicy):
            raise ValueError(f"{data!r} is not a cache setting; write `true`, `false` or `{{ttl: 1h}}`")
        if isinstance(data, dict):
            for key in data:
                if key not in cls.model_fields:
                    near = near_names(str(key), cls.model_fields, n=1)
                    hint = f"did you mean {near[0]!r}" if near else "write `ttl` (and `enabled`)"
                    raise ValueError(f"unknown cache setting {key!r}; {hint}")
        return data

    @field_validator("ttl", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return None if value is None else parse_duration(value)

    @field_serializer("ttl")
    def _ttl_text(self, value: timedelta | None) -> str | None:
        return None if value is None else format_duration(value)

    @property
    def ttl_seconds(self) -> float | None:
        """The TTL in seconds, or None when stored answers never expire."""
        return None if self.ttl is None else self.ttl.total_seconds()


#: What a call (or the CLI) may pass as `cache=`: on, off, a policy, or None (the template decides).
CacheChoice = bool | CachePolicy | Mapping[str, Any] | None


def cache_choice(value: Any, *, what: str = "`cache=`") -> bool | CachePolicy | None:
    """A `cache=` argument checked: a bool, None, or a `CachePolicy` (from a policy or a mapping).

    Anything else (`"yes"`, `1`, a list, a mapping with a bad `ttl` or an unknown key) raises
    `ConfigurationError` naming the value and the accepted forms.
    """
    if value is None or isinstance(value, bool | CachePolicy):
        return value
    if not isinstance(value, Mapping):
        raise ConfigurationError(f"Invalid {what}: {value!r} is not a cache setting. Pass {_CACHE_FORMS}.")
    try:
        return CachePolicy.model_validate(dict(value))
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"]) or "cache"
        problem = err["msg"].removeprefix("Value error, ")
        raise ConfigurationError(
            join_sentences(f"Invalid {what}: `{where}`: {problem}", f"Pass {_CACHE_FORMS}")
        ) from None


# A module-level alias: inside `OutputFormat` the name `type` is a field, not the builtin.
ModelClass = type[BaseModel]

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
# Anything between double braces is a placeholder attempt; the strict pattern says which are valid.
_BRACES_RE = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_PLACEHOLDER_RE = re.compile(rf"^\s*({_IDENT})((?:\.{_IDENT})*)\s*$")
#: pydantic-ai `ModelSettings` keys a template author may write at the top level by mistake; they get a
#: message pointing at `model_settings:` (the full list is checked at registration, in the loading layer).
MODEL_SETTING_HINTS = frozenset(
    {
        "temperature",
        "max_tokens",
        "top_p",
        "top_k",
        "seed",
        "timeout",
        "stop_sequences",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "max_retries",
        "parallel_tool_calls",
        "request_timeout",
        "thinking",
        "service_tier",
    }
)


class OutputMode(StrEnum):
    """How the model is asked for structured output (pydantic-ai's output markers)."""

    TOOL = "tool"
    NATIVE = "native"
    PROMPTED = "prompted"


class RepairMode(StrEnum):
    """What atomtask does with an answer that fails validation before it costs a re-ask.

    `safe` fixes syntax only (quotes, commas, fences, comments, a closable truncation), never content;
    `lenient` also coerces values toward the declared schema where exactly one reading fits (an enum
    in another case, `12,111` for an integer, a bare scalar for a one-field schema), and records each
    coercion on its attempt; `off` leaves every invalid answer to pydantic-ai's re-ask.
    """

    SAFE = "safe"
    LENIENT = "lenient"
    OFF = "off"


_REPAIR_WORDS = {"true": RepairMode.SAFE, "false": RepairMode.OFF, "none": RepairMode.OFF, "no": RepairMode.OFF}


def repair_mode(value: RepairMode | str | bool) -> RepairMode:
    """The `RepairMode` for a template's or a call's `repair` (`True` is `safe`, `False` is `off`)."""
    if isinstance(value, bool):
        return RepairMode.SAFE if value else RepairMode.OFF
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _REPAIR_WORDS:
            return _REPAIR_WORDS[word]
        try:
            return RepairMode(word)
        except ValueError:
            pass
    raise ValueError(f"`repair` is one of `safe`, `lenient` or `false` (also `off`, `true`), not {value!r}")


def _repair_setting(value: Any) -> Any:
    return repair_mode(value) if isinstance(value, bool | str) else value


#: A `repair:` as files write it (`true`, `false`, `safe`, `lenient`, `off`), read as a `RepairMode`.
RepairSetting = Annotated[RepairMode, BeforeValidator(_repair_setting)]


class ParamSpec(BaseModel):
    """One declared parameter: a type string, an optional default, a description.

    In YAML a parameter may be written in full (`text: {type: str, description: ...}`) or as a bare
    type string (`text: str`). A parameter without a `default` is required.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str = "any"
    description: str | None = None
    default: Any = None

    @property
    def required(self) -> bool:
        """True unless a default was given (an explicit `default: null` counts as a default)."""
        return "default" not in self.model_fields_set


#: Keys that make an inline `output_format.schema` mapping without `fields` a JSON Schema.
_JSON_SCHEMA_KEYWORDS = frozenset(
    {"$schema", "type", "properties", "$ref", "$defs", "items", "anyOf", "oneOf", "allOf", "enum", "const", "required"}
)


class OutputFormat(BaseModel):
    """What the answer must be: free `text`, or `json` matching a schema.

    `schema` is a Pydantic class, the name of a registered model, or an inline definition
    (`{fields: [...]}`, `{json_schema: {...}}`, `{python: "pkg.module:Class"}`, or a JSON Schema written
    directly: a mapping with JSON Schema keywords such as `type`, `properties` or `$ref` and no `fields`);
    `mode` picks pydantic-ai's `ToolOutput`, `NativeOutput` or `PromptedOutput`. A `schema` means
    `type: json`, which need not be written (as in `.sexp` files).

    Example:
        ```python
        OutputFormat(schema=Contact)  # the class itself: the answer is a `Contact`
        ```
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, arbitrary_types_allowed=True)

    type: Literal["text", "json"] = "text"
    schema_: str | ModelClass | dict[str, Any] | None = Field(default=None, alias="schema")
    mode: OutputMode = OutputMode.TOOL

    @model_validator(mode="before")
    @classmethod
    def _json_when_a_schema(cls, data: Any) -> Any:
        # `{schema: Contact}` is `{type: json, schema: Contact}`; a `type` that is written is kept (and checked).
        if isinstance(data, dict) and "type" not in data:
            schema = data.get("schema", data.get("schema_"))
            if schema is not None:
                return {**data, "type": "json"}
        return data

    @field_validator("schema_", mode="before")
    @classmethod
    def _inline_json_schema(cls, value: Any) -> Any:
        # A JSON Schema written directly under `schema:` (`{type: object, properties: ...}`) is read as
        # `{json_schema: ...}`; a mapping with `fields` (or `json_schema`, `python`) is one of the other forms.
        keys = set(value) if isinstance(value, dict) else set()
        if _JSON_SCHEMA_KEYWORDS & keys and not {"fields", "json_schema", "python"} & keys:
            return {"json_schema": value}
        return value

    @field_serializer("schema_", when_used="json")
    def _schema_text(self, value: str | ModelClass | dict[str, Any] | None) -> str | dict[str, Any] | None:
        # A class is written as the inline form that names it (`{python: "pkg.module:Class"}`).
        if isinstance(value, type):
            return {"python": f"{value.__module__}:{value.__qualname__}"}
        return value

    @model_validator(mode="after")
    def _schema_matches_type(self) -> OutputFormat:
        if self.type == "json" and self.schema_ is None:
            raise ValueError(
                "`output_format` has `type: json` but no `schema`; name a registered model "
                "(`schema: Contact`) or use `type: text`"
            )
        if self.type == "text" and self.schema_ is not None:
            raise ValueError("`output_format` has a `schema` but `type: text`; set `type: json`")
        return self


class TemplateLimits(BaseModel):
    """Usage limits for one task run, across all of its attempts and fallback models.

    `cost` is in USD and is enforced where the provider's prices are known (pydantic-ai's
    genai-prices data); a model without known prices reports no cost and is not stopped by it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    requests: int | None = Field(default=None, ge=1)
    input_tokens: int | None = Field(default=None, ge=1)
    output_tokens: int | None = Field(default=None, ge=1)
    total_tokens: int | None = Field(default=None, ge=1)
    cost: float | None = Field(default=None, gt=0)

    def tightest(self, other: TemplateLimits | None) -> TemplateLimits:
        """Each limit the stricter of `self` and `other` (a template's limits and a call's)."""
        if other is None:
            return self
        merged = {
            name: min(values)
            if (values := [v for v in (getattr(self, name), getattr(other, name)) if v is not None])
            else None
            for name in type(self).model_fields
        }
        return TemplateLimits(**merged)


@attrs.frozen(kw_only=True)
class TextOrigin:
    """Where a text field's value starts in its source, to point at a line inside it."""

    location: SourceLocation
    # A YAML block scalar (`|`) starts on the line after its indicator, at a fixed indent.
    block: bool = False

    def locate(self, offset: int, text: str) -> SourceLocation:
        """The source location of character `offset` of `text`."""
        line_index = text.count("\n", 0, offset)
        column = offset - (text.rfind("\n", 0, offset) + 1)
        base = self.location
        if base.line is None:
            return base
        if self.block:
            return SourceLocation(file=base.file, line=base.line + 1 + line_index, column=None)
        if line_index == 0 and base.column is not None:
            return SourceLocation(file=base.file, line=base.line, column=base.column + column)
        return SourceLocation(file=base.file, line=base.line + line_index, column=None)


@attrs.frozen(kw_only=True)
class Placeholder:
    """One `{{param}}` or `{{param.field.sub}}` occurrence in a text."""

    param: str
    path: tuple[str, ...]
    start: int
    end: int

    @property
    def text(self) -> str:
        return "{{" + ".".join((self.param, *self.path)) + "}}"


def find_placeholders(text: str) -> tuple[list[Placeholder], list[tuple[int, str]]]:
    """Split out the placeholders of `text`: the valid ones, and (offset, raw) for malformed ones."""
    found: list[Placeholder] = []
    malformed: list[tuple[int, str]] = []
    for match in _BRACES_RE.finditer(text):
        inner = _PLACEHOLDER_RE.match(match.group(1))
        if inner is None:
            malformed.append((match.start(), match.group(0)))
            continue
        path = tuple(p for p in inner.group(2).split(".") if p)
        found.append(Placeholder(param=inner.group(1), path=path, start=match.start(), end=match.end()))
    return found, malformed


_TOOL_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
_TOOL_FORMS = (
    "`module:function`, a Python function, `{function: module:function, name: ...}`, or "
    "`{mcp: {command: ..., args: [...]} | {url: ...}, prefix: ...}`"
)


class FunctionToolSpec(BaseModel):
    """A Python function the model may call: `"module:function"` or the function itself.

    `name` replaces the function's own name as the model sees it. Any other key of a declared entry
    is an option of a *tool factory* (`atomtask.tools:http_get` with `allow_hosts: [...]`): the
    reference is called with the options and returns the tool.
    """

    model_config = ConfigDict(extra="allow", frozen=True, arbitrary_types_allowed=True)

    function: Any
    """`"package.module:function"`, a callable, or a pydantic-ai `Tool`."""
    name: str | None = None

    @field_validator("function")
    @classmethod
    def _reference(cls, value: Any) -> Any:
        if isinstance(value, str):
            module, sep, attribute = value.partition(":")
            if not sep or not module or not attribute:
                raise ValueError(f"tool reference {value!r} is malformed; write it as `package.module:function`")
            return value
        if not (callable(value) or _is_pydantic_ai_tool(value)):
            raise ValueError(f"a tool is {_TOOL_FORMS}; got {type(value).__name__}")
        return value

    @field_validator("name")
    @classmethod
    def _tool_name(cls, value: str | None) -> str | None:
        if value is not None and not _TOOL_NAME_RE.match(value):
            raise ValueError(f"tool name {value!r} must be 1-64 letters, digits, `_` or `-`, starting with a letter")
        return value

    @property
    def options(self) -> dict[str, Any]:
        """The options passed to a tool factory (every key but `function` and `name`)."""
        return dict(self.__pydantic_extra__ or {})

    @property
    def reference(self) -> str:
        """`module:function` as declared, or the function's own `module:qualname`."""
        if isinstance(self.function, str):
            return self.function
        target = getattr(self.function, "function", self.function)  # a pydantic-ai `Tool` wraps its function
        return f"{getattr(target, '__module__', '?')}:{getattr(target, '__qualname__', repr(target))}"


class McpServerSpec(BaseModel):
    """How to reach an MCP server: a command over stdio, or a URL (streamable HTTP)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = None

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSpec:
        if (self.command is None) == (self.url is None):
            raise ValueError(
                "an MCP server is either `{command: ..., args: [...]}` (stdio) or `{url: http://...}` "
                "(streamable HTTP), not both or neither"
            )
        if self.url is not None:
            if not re.match(r"^https?://", self.url):
                raise ValueError(f"MCP url {self.url!r} must start with http:// or https://")
            if self.args or self.env or self.cwd:
                raise ValueError("`args`, `env` and `cwd` apply to a `command` (stdio) server, not to a `url`")
        elif self.headers:
            raise ValueError("`headers` apply to a `url` server, not to a `command` (stdio) one")
        return self

    @property
    def label(self) -> str:
        return self.url if self.url is not None else " ".join([str(self.command), *self.args])


class McpToolSpec(BaseModel):
    """The tools of an MCP server; `prefix` puts `prefix_` before each of their names."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mcp: McpServerSpec
    prefix: str | None = None
    timeout: float | None = Field(default=None, gt=0)
    """Seconds to wait for the server to start and answer its handshake (pydantic-ai's default otherwise)."""

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,31}", value):
            raise ValueError(f"MCP prefix {value!r} must be 1-32 letters, digits or `_`, starting with a letter")
        return value


def _is_pydantic_ai_tool(value: Any) -> bool:
    """A pydantic-ai `Tool` (told apart without importing pydantic-ai)."""
    return type(value).__name__ == "Tool" and type(value).__module__.startswith("pydantic_ai")


#: The tags of the `tools:` union in pydantic's error locations; they are not keys of the document.
TOOL_TAGS = frozenset({"tool:function", "tool:mcp"})


def _tool_kind(value: Any) -> str | None:
    if isinstance(value, FunctionToolSpec):
        return "tool:function"
    if isinstance(value, McpToolSpec):
        return "tool:mcp"
    if isinstance(value, Mapping):
        return "tool:mcp" if "mcp" in value else "tool:function" if "function" in value else None
    return None


ToolSpec = Annotated[
    Annotated[FunctionToolSpec, Tag("tool:function")] | Annotated[McpToolSpec, Tag("tool:mcp")],
    Discriminator(
        _tool_kind,
        custom_error_type="tool_entry",
        custom_error_message=f"a tool entry is {_TOOL_FORMS}",
    ),
]
"""One `tools:` entry: a `FunctionToolSpec` or an `McpToolSpec`."""


def _tool_entries(value: Any) -> Any:
    """The `tools:` list with each bare reference, function or pydantic-ai `Tool` written as `{function: ...}`."""
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        value = [value]
    return [
        {"function": entry}
        if isinstance(entry, str) or _is_pydantic_ai_tool(entry) or (callable(entry) and not isinstance(entry, type))
        else entry
        for entry in value
    ]


class Template(BaseModel):
    """An atomic task: a named prompt with typed parameters and a declared answer format.

    Example:
        ```python
        Template(
            name="greet",
            params={"who": ParamSpec(type="str")},
            instructions="Say hello to {{who}}.",
        )
        ```
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    name: str
    description: str | None = None
    params: dict[str, ParamSpec] = Field(default_factory=dict)
    system: str | None = None
    instructions: str
    output_format: OutputFormat = Field(default_factory=OutputFormat)
    model: str | None = None
    fallbacks: list[str] = Field(default_factory=list)
    retries: int | None = Field(default=None, ge=0, le=20)
    limits: TemplateLimits | None = None
    repair: RepairSetting = RepairMode.SAFE
    """`safe` (the default; `true`), `lenient`, or `off` (`false`): see `RepairMode`."""
    model_settings: dict[str, Any] | None = None
    """pydantic-ai `ModelSettings` for this template's calls (`temperature`, `max_tokens`, `seed`, ...)."""
    cache: CachePolicy | None = None
    """Serve repeated calls from the response cache: `true`, `false` or `{ttl: 1h}`; off when absent."""
    tools: Annotated[list[ToolSpec], BeforeValidator(_tool_entries)] = Field(default_factory=list)
    """What the model may call before its final answer: Python functions and MCP servers (see `ToolSpec`)."""
    tool_calls: int | None = Field(default=None, ge=1)
    """At most this many tool calls across all of the task's attempts (unbounded when absent)."""
    # Left out of a dump when unset, so the batch records and cache keys of templates without it stay as they were.
    expected_output_tokens: int | None = Field(default=None, gt=0, exclude_if=lambda tokens: tokens is None)
    """The tokens of a typical answer, for `--dry-run` estimates (else estimated from the output schema)."""

    _location: SourceLocation | None = PrivateAttr(default=None)
    _origins: dict[str, TextOrigin] = PrivateAttr(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _no_model_setting_keys(cls, data: Any) -> Any:
        # `temperature: 0` beside `instructions` would only be "unknown key": say where it belongs.
        if isinstance(data, dict):
            misplaced = [key for key in data if key in MODEL_SETTING_HINTS]
            if misplaced:
                raise ValidationError.from_exception_data(
                    cls.__name__,
                    [
                        InitErrorDetails(
                            type=PydanticCustomError(
                                "model_setting_key",
                                "a model setting, not a template key; write it under `model_settings`: "
                                f"`model_settings: {{{key}: {_yaml_scalar(data[key])}}}`",
                            ),
                            loc=(key,),
                            input=data[key],
                        )
                        for key in misplaced
                    ],
                )
        return data

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        if not _NAME_RE.match(value):
            raise ValueError(
                f"template name {value!r} must start with a letter or `_` and contain only letters, digits, `_` and `-`"
            )
        return value

    @field_validator("params", mode="before")
    @classmethod
    def _shorthand_params(cls, value: Any) -> Any:
        # `text: str` is shorthand for `text: {type: str}`; `params: [a, b]` declares untyped params.
        if isinstance(value, list):
            return {str(name): {"type": "any"} for name in value}
        if isinstance(value, dict):
            return {k: ({"type": v} if isinstance(v, str) else v) for k, v in value.items()}
        return value

    @field_validator("params")
    @classmethod
    def _param_names(cls, value: dict[str, ParamSpec]) -> dict[str, ParamSpec]:
        for name in value:
            if not re.fullmatch(_IDENT, name):
                fixed = re.sub(r"\W", "_", name)
                fix = f"; write {fixed!r} (and `{{{{{fixed}}}}}` in the text)" if re.fullmatch(_IDENT, fixed) else ""
                raise ValueError(f"parameter name {name!r} is not an identifier (letters, digits and `_`){fix}")
        return value

    @property
    def location(self) -> SourceLocation | None:
        """Where this template was declared, when it came from a file or source text."""
        return self._location

    def located(self, location: SourceLocation | None, origins: dict[str, TextOrigin] | None = None) -> Template:
        """Attach its source location (and where its text fields start); returns `self`."""
        self._location = location
        if origins:
            self._origins = dict(origins)
        return self

    def location_of(self, field: str) -> SourceLocation | None:
        """The location of one field (`instructions`, `output_format.schema`, ...), else the template's."""
        origin = self._origins.get(field)
        return origin.location if origin is not None else self._location

    def origin_of(self, field: str) -> TextOrigin | None:
        """Where a text field starts in its source, if known."""
        return self._origins.get(field)


def _yaml_scalar(value: Any) -> str:
    """How a value is written in YAML flow style, for a message that shows the fix."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)
