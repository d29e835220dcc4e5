"""`atomtask:synthetic`, the embedded offline model: answers that satisfy the declared schema, without an LLM.

It is the default when no model is configured. For a structured output it reads the JSON Schema
pydantic-ai sends (the output tool's parameters in tool mode, the output object in native and
prompted modes) and answers with an instance of it from `atomtask.handlers.instances`: valid by
construction (formats, patterns, bounds, enums, nested and recursive schemas, combinators) and
plausible where it can be (names, e-mails, dates, sentences). A text output gets two short
sentences. The answer depends only on the schema and the conversation's text (never on
timestamps or ids), so the same inputs give the same answer; a retry, whose feedback changes the
conversation, gets a different one.

```python
system = TaskSystem(model="atomtask:synthetic")   # what an unconfigured TaskSystem uses
event = system.execute("extract_event", {"message": "Team sync tomorrow"}).unwrap()
```
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Sequence
from random import Random
from typing import Any, Final

from atomtask.handlers.instances import synthetic_instance
from atomtask.handlers.plausible import plausible_text
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.profiles import ModelProfile
from pydantic_ai.settings import ModelSettings

__all__ = ["SYNTHETIC_SYSTEM", "SyntheticModel", "synthetic_model", "synthetic_profile"]

SYNTHETIC_SYSTEM: Final = "atomtask"


def synthetic_profile() -> ModelProfile:
    """What the synthetic model supports: tool, native (JSON Schema) and prompted output, and text."""
    return ModelProfile(supports_json_schema_output=True, supports_json_object_output=True)


class SyntheticModel(FunctionModel):
    """A pydantic-ai model that answers every request with a schema-valid, plausible, deterministic value.

    Function tools are never called: the answer is the final output at once. Labelled `atomtask:synthetic`.
    """

    def __init__(self, *, settings: ModelSettings | None = None) -> None:
        super().__init__(
            self._respond,
            stream_function=self._stream,
            model_name="synthetic",
            profile=synthetic_profile(),
            settings=settings,
        )

    @property
    def system(self) -> str:
        return SYNTHETIC_SYSTEM

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[answer(messages, info)])

    async def _stream(self, messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        part = answer(messages, info)
        if isinstance(part, ToolCallPart):
            yield {
                0: DeltaToolCall(name=part.tool_name, json_args=part.args_as_json_str(), tool_call_id=part.tool_call_id)
            }
        else:
            yield part.content


def synthetic_model(name: str) -> SyntheticModel:
    """The embedded model `atomtask:<name>` (only `synthetic` exists; model strings are checked before this)."""
    if name != "synthetic":
        raise ValueError(f"No embedded model {name!r}; the only one is 'synthetic'.")
    return SyntheticModel()


def answer(messages: Sequence[ModelMessage], info: AgentInfo) -> TextPart | ToolCallPart:
    """The synthetic answer to a request: a call of the output tool, JSON text, or plain text."""
    conversation = _digest(messages, info.instructions)
    if info.output_tools:
        tool = info.output_tools[0]
        value = synthetic_instance(tool.parameters_json_schema, _seed(tool.parameters_json_schema, conversation))
        return ToolCallPart(tool.name, args=value, tool_call_id=f"synthetic-{conversation[:16]}")
    output_object = info.model_request_parameters.output_object
    if output_object is not None:  # native or prompted output: the JSON as the text of the answer
        schema = output_object.json_schema
        return TextPart(json.dumps(synthetic_instance(schema, _seed(schema, conversation)), ensure_ascii=False))
    return TextPart(plausible_text(Random(_seed(None, conversation))))


def _seed(schema: Any, conversation: str) -> int:
    text = json.dumps(schema, sort_keys=True) + conversation
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def _digest(messages: Sequence[ModelMessage], instructions: str | None) -> str:
    """A hash of what was said: each part's kind and content, without timestamps, ids or usage."""
    digest = hashlib.sha256((instructions or "").encode())
    for message in messages:
        digest.update(b"\x00request" if isinstance(message, ModelRequest) else b"\x00response")
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                content: Any = part.args_as_json_str()
            elif hasattr(part, "model_response"):  # retry feedback: the text the model would read
                content = part.model_response()
            else:
                content = getattr(part, "content", None)
            digest.update(f"\x00{part.part_kind}\x00".encode())
            digest.update(json.dumps(content, sort_keys=True, default=str).encode())
    return digest.hexdigest()
