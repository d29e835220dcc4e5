"""A call's tools at run time: function toolsets and MCP servers connected for the call, and their failures.

The function tools of a template are pydantic-ai `Tool`s made once at registration (`loading._tools`),
given to the template's Agent (`_llm`) as a bare Agent's `tools=` would be. Each MCP server of the
template is a new pydantic-ai `MCPToolset` for every call (stdio: `StdioTransport`, a URL: streamable
HTTP), connected before the call's first model run and closed after its last (`connect_tools`): a
stdio server is started and stopped with the task, and fallback models reuse the same connection. A
server that cannot be started or reached fails the task as `tool_error` before any model is asked.

A tool that raises `ModelRetry` (or whose arguments do not validate, or an MCP tool that reports an
error) sends the message back to the model, as pydantic-ai does; any other exception ends the run,
and the task fails as `tool_error` naming the tool (`tool_error`). The `tool_calls` bound holds across
all attempts and models: each run gets what is left of it as pydantic-ai's `tool_calls_limit`.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from atomtask._logs import get_logger
from atomtask.handlers._ledger import redact
from atomtask.system._results import Attempt, FailureReason, TaskError
from atomtask.system._templates import McpToolSpec
from pydantic_ai.usage import UsageLimits

if TYPE_CHECKING:
    from atomtask.loading._tools import ResolvedTools

__all__ = ["connect_tools", "mcp_toolset", "tool_error", "tool_limit"]

log = get_logger(__name__)


def mcp_toolset(spec: McpToolSpec) -> Any:
    """A new pydantic-ai `MCPToolset` for the server `spec` declares (prefixed when it has a `prefix`)."""
    try:
        from fastmcp.client.transports import StdioTransport
        from pydantic_ai.mcp import MCPToolset
    except ImportError as exc:
        raise ImportError(
            f"MCP tools need the `mcp` extra ({exc.name or exc}); install it with `pip install 'atomtask[mcp]'`."
        ) from exc

    server = spec.mcp
    client: Any = server.url
    if server.command is not None:
        client = StdioTransport(command=server.command, args=list(server.args), env=server.env, cwd=server.cwd)
    toolset: Any = (
        MCPToolset(client, headers=server.headers, init_timeout=spec.timeout)
        if spec.timeout is not None
        else MCPToolset(client, headers=server.headers)  # pydantic-ai's own default
    )
    return toolset.prefixed(spec.prefix) if spec.prefix is not None else toolset


@contextlib.asynccontextmanager
async def connect_tools(tools: ResolvedTools, template: str) -> AsyncIterator[list[Any] | TaskError]:
    """The call's MCP toolsets, connected until the block ends; a `TaskError` if one cannot be."""
    toolsets: list[Any] = []  # the MCP servers' (the functions are on the Agent)
    connected: list[Any] | TaskError = toolsets
    stack = contextlib.AsyncExitStack()
    try:
        for spec in tools.mcp:
            try:
                toolset = mcp_toolset(spec)
                await stack.enter_async_context(toolset)
            except Exception as exc:  # a server that will not start or answer: nothing was asked of a model
                connected = _server_error(template, spec, exc)
                break
            toolsets.append(toolset)
        yield connected
    finally:
        try:
            await stack.aclose()
        except Exception as exc:  # the answer is in: a server that does not stop cleanly only gets a warning
            log.warning("mcp_server_close_failed", template=template, error=redact(str(exc)))


def _server_error(template: str, spec: McpToolSpec, exc: BaseException) -> TaskError:
    label = spec.mcp.label
    if isinstance(exc, ImportError):
        return TaskError(reason=FailureReason.CONFIGURATION_ERROR, message=str(exc), details={"tool": label})
    cause = _innermost(exc)
    return TaskError(
        reason=FailureReason.TOOL_ERROR,
        message=f"The MCP server `{label}` of template {template!r} could not be started or reached: "
        f"{type(cause).__name__}: {redact(str(cause)) or 'no message'}. Check its command (or URL), that it "
        "runs on its own, and its `timeout`.",
        details={"tool": label, "error_type": type(cause).__name__},
    )


def _innermost(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (anyio wraps a failed connection in one), else `exc`."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def tool_error(template: str, failure: BaseException, attempts: Sequence[Attempt]) -> TaskError:
    """The task's failure when a tool raised: which tool, with which arguments, what it raised."""
    call = next((c for a in reversed(attempts) for c in reversed(a.tool_calls) if c.error and not c.retried), None)
    name = call.name if call is not None else "a tool"
    message = (
        f"Tool {name!r} raised {type(failure).__name__}: {redact(str(failure)) or 'no message'} (template "
        f"{template!r}). Fix the tool, or raise `pydantic_ai.ModelRetry` in it to send the model a message and let "
        "it call again; every tool call is in `notes.attempts[].tool_calls`."
    )
    details: dict[str, Any] = {"tool": name, "error_type": type(failure).__name__}
    if call is not None:
        details["args"] = call.args
    return TaskError(reason=FailureReason.TOOL_ERROR, message=message, details=details)


def tool_limit(budget: UsageLimits | None, limit: int, attempts: Sequence[Attempt]) -> UsageLimits:
    """The run's usage limits with what is left of the template's `tool_calls` (made in earlier attempts)."""
    made = sum(1 for attempt in attempts for call in attempt.tool_calls if call.duration_ms is not None)
    left = max(limit - made, 0)
    if budget is None:
        return UsageLimits(tool_calls_limit=left)
    return dataclasses.replace(budget, tool_calls_limit=left)
