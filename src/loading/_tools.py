"""A template's tools, resolved at registration: functions imported and checked, MCP servers as declared.

`resolve_tools` runs inside `compile_template`, so a template whose tools cannot work is never
registered: a reference that does not import (or names a module outside the `importable` packages)
is E130, a function whose parameters have no type hints or do not make a JSON Schema is E131, and
two tools with one name (or an MCP prefix used twice) is E132 — each a `ToolDeclarationError` with
the entry's location. The JSON Schema the model receives is pydantic-ai's own (`Tool(function)`
reads the hints and the docstring), made here once per template.

`tool_problems` is the same checks, collecting every problem instead of raising the first; `atomtask
check` runs it in its helper process (`lint._compat`) so that user code never runs in the checking
process. The built-in tools of `atomtask.tools` are importable from any template.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs
from atomtask.errors import SchemaError, SourceLocation, ToolDeclarationError
from atomtask.system._templates import FunctionToolSpec, McpToolSpec, Template

if TYPE_CHECKING:
    from pydantic_ai import Tool

__all__ = ["BUILTIN_TOOLS_PACKAGE", "TOOL_FACTORY", "ResolvedTools", "resolve_tools", "tool_problems"]

#: Always importable: the built-in tools.
BUILTIN_TOOLS_PACKAGE = "atomtask.tools"
#: The attribute that marks a tool factory: called with the entry's options, it returns the tool.
TOOL_FACTORY = "__atomtask_tool_factory__"
# pydantic-ai's output tool: a function tool may not take its name.
_OUTPUT_TOOL = "final_result"


@attrs.frozen(kw_only=True)
class ResolvedTools:
    """What a template's model may call: pydantic-ai `Tool`s for its functions, and its MCP servers."""

    functions: tuple[Tool[Any], ...] = ()
    mcp: tuple[McpToolSpec, ...] = ()
    limit: int | None = None  # `tool_calls`

    @property
    def names(self) -> tuple[str, ...]:
        """The function tools' names, as the model sees them."""
        return tuple(tool.name for tool in self.functions)


def resolve_tools(template: Template, importable: Sequence[str]) -> ResolvedTools | None:
    """The template's tools, ready for a run; raises the first `ToolDeclarationError`. None without tools."""
    if not template.tools:
        return None
    functions: list[tuple[int, Tool[Any]]] = []
    mcp: list[McpToolSpec] = []
    for index, entry in enumerate(template.tools):
        if isinstance(entry, McpToolSpec):
            mcp.append(entry)
        else:
            functions.append((index, _function_tool(template, index, entry, importable)))
    clash = _name_clash(template, functions)
    if clash is not None:
        raise clash[1]
    tools = tuple(tool for _, tool in functions)
    return ResolvedTools(functions=tools, mcp=tuple(mcp), limit=template.tool_calls)


def tool_problems(template: Template, importable: Sequence[str]) -> list[tuple[int | None, ToolDeclarationError]]:
    """Every problem of the template's tools, with the index of the entry at fault (None: across entries)."""
    problems: list[tuple[int | None, ToolDeclarationError]] = []
    functions: list[tuple[int, Tool[Any]]] = []
    for index, entry in enumerate(template.tools):
        if isinstance(entry, FunctionToolSpec):
            try:
                functions.append((index, _function_tool(template, index, entry, importable)))
            except ToolDeclarationError as exc:
                problems.append((index, exc))
    clash = _name_clash(template, functions)
    if clash is not None:
        problems.append(clash)
    return problems


def _where(template: Template) -> str:
    return f"the tools of template {template.name!r}"


def _location(template: Template, index: int) -> SourceLocation | None:
    return template.location_of(f"tools.{index}") or template.location_of("tools")


def _function_tool(template: Template, index: int, entry: FunctionToolSpec, importable: Sequence[str]) -> Tool[Any]:
    from pydantic_ai import Tool

    location = _location(template, index)
    reference = entry.reference
    found: Any = entry.function
    if isinstance(found, str):
        found = _import(template, found, importable, location)
    factory = getattr(found, TOOL_FACTORY, False)
    if entry.options and not factory:
        raise ToolDeclarationError(
            f"Tool {reference!r} in template {template.name!r} takes no options "
            f"({', '.join(sorted(entry.options))}): only a tool factory such as `atomtask.tools:http_get` does. "
            "Remove them, or write a factory that returns the tool.",
            code="E131",
            tool=reference,
            location=location,
        )
    if factory:
        try:
            found = found(**entry.options)
        except (TypeError, ValueError) as exc:
            raise ToolDeclarationError(
                f"Tool {reference!r} in template {template.name!r} cannot be made from its options: {exc}.",
                code="E131",
                tool=reference,
                location=location,
            ) from None
    if isinstance(found, Tool):
        if entry.name is not None and entry.name != found.name:
            raise ToolDeclarationError(
                f"Tool {reference!r} in template {template.name!r} is a pydantic-ai `Tool` named {found.name!r}; "
                "give it its name where it is made, not with `name:`.",
                code="E131",
                tool=reference,
                location=location,
            )
        return found
    _check_hints(template, reference, found, location)
    try:
        tool: Tool[Any] = Tool(found, name=entry.name)
        tool.tool_def  # noqa: B018  # the JSON Schema is made here, so a type pydantic cannot describe fails now
    except Exception as exc:  # pydantic's schema errors, pydantic-ai's UserError for a bad signature
        raise ToolDeclarationError(
            f"Tool {reference!r} in template {template.name!r} does not make a JSON Schema from its type hints: "
            f"{exc}. Use types pydantic can describe (str, int, float, bool, lists, dicts, Pydantic models).",
            code="E131",
            tool=reference,
            location=location,
        ) from None
    return tool


def _import(template: Template, reference: str, importable: Sequence[str], location: SourceLocation | None) -> Any:
    from atomtask.schemas._sources import import_callable

    try:
        return import_callable(
            reference,
            importable=(*importable, BUILTIN_TOOLS_PACKAGE),
            location=location,
            where=_where(template),
        )
    except SchemaError as exc:
        raise ToolDeclarationError(
            exc.message, code="E130", tool=reference, location=location, suggestions=exc.suggestions
        ) from None


def _check_hints(
    template: Template, reference: str, function: Callable[..., Any], location: SourceLocation | None
) -> None:
    """Every parameter the model fills has a type hint (the JSON Schema is made from them); no `*args`."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as exc:
        raise ToolDeclarationError(
            f"Tool {reference!r} in template {template.name!r} has no readable signature ({exc}); "
            "wrap it in a Python function with typed parameters.",
            code="E131",
            tool=reference,
            location=location,
        ) from None
    parameters = list(signature.parameters.values())
    if parameters and _is_run_context(parameters[0].annotation):
        parameters = parameters[1:]
    for parameter in parameters:
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            stars = "*" if parameter.kind is inspect.Parameter.VAR_POSITIONAL else "**"
            raise ToolDeclarationError(
                f"Tool {reference!r} in template {template.name!r} takes `{stars}{parameter.name}`; a tool's "
                "parameters are named and typed (the model fills them by name). Declare each one.",
                code="E131",
                tool=reference,
                location=location,
            )
        if parameter.annotation is inspect.Parameter.empty:
            raise ToolDeclarationError(
                f"Parameter {parameter.name!r} of tool {reference!r} in template {template.name!r} has no type "
                f"hint; the model is sent a JSON Schema made from the hints. Write `{parameter.name}: str` "
                "(or the type it takes).",
                code="E131",
                tool=reference,
                location=location,
            )


def _is_run_context(annotation: Any) -> bool:
    if isinstance(annotation, str):
        return annotation.startswith("RunContext")
    return getattr(annotation, "__name__", None) == "RunContext" or "RunContext" in str(annotation)


def _name_clash(
    template: Template, functions: Iterable[tuple[int, Tool[Any]]]
) -> tuple[int, ToolDeclarationError] | None:
    """The first entry whose name clashes with an earlier one's (E132), with its index; None when all differ."""
    seen: dict[str, str] = {}
    for index, entry in enumerate(template.tools):
        if isinstance(entry, McpToolSpec) and entry.prefix is not None:
            key = f"{entry.prefix}_"
            if key in seen:
                return index, _duplicate(template, f"MCP prefix {entry.prefix!r}", seen[key], index)
            seen[key] = entry.mcp.label
    unprefixed = [e for e in template.tools if isinstance(e, McpToolSpec) and e.prefix is None]
    if len(unprefixed) > 1:
        index = template.tools.index(unprefixed[1])
        return index, ToolDeclarationError(
            f"Template {template.name!r} has {len(unprefixed)} MCP servers without a `prefix`; their tool names "
            "may clash. Give each server but one a `prefix:`.",
            code="E132",
            tool=unprefixed[1].mcp.label,
            location=_location(template, index),
        )
    names: dict[str, int] = {}
    for index, tool in functions:
        if tool.name == _OUTPUT_TOOL:
            return index, ToolDeclarationError(
                f"Tool name {_OUTPUT_TOOL!r} in template {template.name!r} is the name of pydantic-ai's output tool; "
                "rename the function or give it `name:`.",
                code="E132",
                tool=tool.name,
                location=_location(template, index),
            )
        if tool.name in names:
            return index, _duplicate(template, f"tool name {tool.name!r}", f"entry {names[tool.name] + 1}", index)
        names[tool.name] = index
    return None


def _duplicate(template: Template, what: str, first: str, index: int) -> ToolDeclarationError:
    return ToolDeclarationError(
        f"The {what} is used twice in template {template.name!r} (first by {first}); the model calls tools by "
        "name, so each must be unique. Give one a `name:` (a function) or a different `prefix:` (an MCP server).",
        code="E132",
        tool=what,
        location=_location(template, index),
    )
