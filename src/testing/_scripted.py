"""Scripted replies for pydantic-ai's `FunctionModel`: test templates offline, see what the model got.

Each model request takes the next reply in the script, streamed or not, and is recorded with the
messages and the `AgentInfo` the model received.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import TypeAlias

import attrs
from atomtask.errors import ScriptError, ScriptExhaustedError
from atomtask.testing._replies import TextReply, ToolCallReply, ToolCallsReply
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, SystemPromptPart, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.usage import RequestUsage

ReplyFunction: TypeAlias = Callable[[list[ModelMessage], AgentInfo], ModelResponse]
"""Builds the reply itself from the messages and the `AgentInfo` the model received."""

ScriptedReply: TypeAlias = str | TextReply | ToolCallReply | ToolCallsReply | Mapping[str, object] | ReplyFunction
"""A text answer (`str`, `TextReply`), a tool call (`ToolCallReply`, a dict of arguments), several tool calls
in one answer (`ToolCallsReply`, from `Reply.tool_calls`), or a function."""


@attrs.frozen(kw_only=True)
class ScriptedCall:
    """One request the scripted model received."""

    messages: list[ModelMessage]
    info: AgentInfo

    @property
    def instructions(self) -> str | None:
        """The instructions the model received, as pydantic-ai joined them."""
        return self.info.instructions

    @property
    def system_prompts(self) -> list[str]:
        """The system prompt parts in the messages, in order."""
        return [
            part.content
            for message in self.messages
            if isinstance(message, ModelRequest)
            for part in message.parts
            if isinstance(part, SystemPromptPart)
        ]


class ScriptedModel(FunctionModel):
    """A `FunctionModel` that gives `replies` in order and records each request in `calls`.

    A tool call without a name calls the first output tool offered, else the first function tool.

    Example:
        ```python
        model = scripted_model({'name': 'Ada'})
        result = Agent(model, output_type=Person, instructions='Extract.').run_sync('Ada')
        assert Person(name='Ada') == result.output
        assert 'Extract.' == model.calls[0].instructions
        ```
    """

    def __init__(self, *replies: ScriptedReply, model_name: str = "scripted") -> None:
        super().__init__(self._respond, stream_function=self._stream, model_name=model_name)
        self.replies = replies
        self.calls: list[ScriptedCall] = []

    @property
    def pending(self) -> int:
        """How many scripted replies are still unused."""
        return len(self.replies) - len(self.calls)

    async def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not self.pending:
            raise ScriptExhaustedError(scripted=len(self.replies))
        reply = self.replies[len(self.calls)]
        self.calls.append(ScriptedCall(messages=list(messages), info=info))
        return _response(reply, messages, info)

    async def _stream(self, messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        response = await self._respond(messages, info)
        for index, part in enumerate(response.parts):
            if isinstance(part, TextPart):
                for start in range(0, len(part.content), 8):
                    yield part.content[start : start + 8]
            elif isinstance(part, ToolCallPart):
                delta = DeltaToolCall(part.tool_name, part.args_as_json_str(), tool_call_id=part.tool_call_id)
                yield {index: delta}
            else:
                raise ScriptError(f"A scripted stream can hold text and tool calls only, not {type(part).__name__!r}.")


def scripted_model(*replies: ScriptedReply, model_name: str = "scripted") -> ScriptedModel:
    """A model giving `replies` in order, e.g. `scripted_model('Hello.', ToolCallReply({'x': 1}))`."""
    return ScriptedModel(*replies, model_name=model_name)


def _response(reply: ScriptedReply, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    match reply:
        case str():
            return ModelResponse(parts=[TextPart(reply)])
        case TextReply(text=text, usage=usage):
            response = ModelResponse(parts=[TextPart(text)])
        case ToolCallReply(args=args, name=name, usage=usage):
            tool_name = name or _first_tool(info)
            response = ModelResponse(parts=[ToolCallPart(tool_name, args if isinstance(args, str) else dict(args))])
        case ToolCallsReply(calls=calls, usage=usage):
            response = ModelResponse(
                parts=[
                    ToolCallPart(
                        call.name or _first_tool(info), call.args if isinstance(call.args, str) else dict(call.args)
                    )
                    for call in calls
                ]
            )
        case Mapping():
            return ModelResponse(parts=[ToolCallPart(_first_tool(info), dict(reply))])
        case _:
            return reply(messages, info)
    if usage is not None:
        response.usage = RequestUsage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)
    return response


def _first_tool(info: AgentInfo) -> str:
    tools = info.output_tools or info.function_tools
    if not tools:
        raise ScriptError(
            "A scripted tool call without a name calls the first output or function tool, but the agent "
            "offered none. Give the tool name: `ToolCallReply(args, name=...)`."
        )
    return tools[0].name
