"""Small builders shared by the tests (FunctionModel replies written by hand, no mocks)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel


class Recorder:
    """A FunctionModel whose replies come from a list, recording what each call received."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.calls: list[tuple[list[ModelMessage], AgentInfo]] = []
        self.model = FunctionModel(self._respond, model_name="recorder")

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.calls.append((list(messages), info))
        if not self.replies:
            raise AssertionError(f"Recorder ran out of replies after {len(self.calls) - 1} call(s)")
        reply = self.replies.pop(0)
        if callable(reply):
            return _as_response(reply(messages, info), info)
        return _as_response(reply, info)


def _as_response(reply: Any, info: AgentInfo) -> ModelResponse:
    if isinstance(reply, ModelResponse):
        return reply
    if isinstance(reply, dict):
        tool = info.output_tools[0].name
        return ModelResponse(parts=[ToolCallPart(tool, json.dumps(reply))])
    if isinstance(reply, tuple) and reply[0] == "args":
        tool = info.output_tools[0].name
        return ModelResponse(parts=[ToolCallPart(tool, reply[1])])
    return ModelResponse(parts=[TextPart(str(reply))])


def user_text(messages: list[ModelMessage]) -> str:
    """All user-prompt text the model received."""
    chunks: list[str] = []
    for message in messages:
        for part in getattr(message, "parts", []):
            if part.part_kind == "user-prompt":
                chunks.append(part.content if isinstance(part.content, str) else str(part.content))
    return "\n".join(chunks)


Reply = Callable[[list[ModelMessage], AgentInfo], Any]
