"""The output JSON Schema exactly as a model receives it, asked of pydantic-ai itself.

pydantic-ai turns an output type into an output tool (tool mode) or an output object (native and
prompted modes) and then lets the model's profile transform the schema (OpenAI's strict mode, for
instance, rewrites it). Rather than re-deriving that, this module runs one request against a
`FunctionModel` that carries the chosen model's profile and reads what the model would have been
sent; the request is stopped there, nothing leaves the process, and no provider SDK is imported.
"""

from __future__ import annotations

from typing import Any

from atomtask.handlers.base import ModelChoice
from atomtask.handlers.llm import output_spec
from atomtask.system.errors import ConfigurationError
from atomtask.system.templates import OutputMode
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, infer_model_profile
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.profiles import ModelProfileSpec

__all__ = ["model_output_schema"]


class _Seen(Exception):
    """Stops the run once the request parameters have been read."""

    def __init__(self, info: AgentInfo) -> None:
        super().__init__("output schema captured")
        self.info = info


def _capture(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    raise _Seen(info)


def _profile(choice: ModelChoice) -> ModelProfileSpec | None:
    spec = choice.spec
    if isinstance(spec, Model):
        return spec.profile
    if spec == "test":
        return None
    # `infer_model_profile` asks the provider class for the profile without constructing a client
    # (importing the provider's module, and with it its SDK, which must then be installed).
    try:
        return infer_model_profile(spec)
    except ImportError as exc:
        raise ConfigurationError(
            f"Model {spec!r} needs a provider package that is not installed ({exc.name or exc}) to know how it "
            "receives schemas; install its extra (e.g. `pip install 'atomtask[openai]'`) or omit `--model`."
        ) from None


def model_output_schema(output_cls: type[BaseModel], mode: OutputMode, choice: ModelChoice) -> dict[str, Any]:
    """What `choice` receives for `output_cls` in `mode`: the schema, and the tool that carries it in tool mode.

    Returns `{"mode", "json_schema"}` plus `"tool_name"`, `"tool_description"` and `"strict"` for tool mode.
    """
    agent: Agent[None, Any] = Agent(
        FunctionModel(_capture, model_name="atomtask-schema-probe", profile=_profile(choice)),
        output_type=output_spec(output_cls, mode),
    )
    try:
        agent.run_sync("")
    except _Seen as seen:
        parameters = seen.info.model_request_parameters
        if mode is OutputMode.TOOL:
            tool = seen.info.output_tools[0]
            return {
                "mode": mode.value,
                "tool_name": tool.name,
                "tool_description": tool.description,
                "strict": tool.strict,
                "json_schema": tool.parameters_json_schema,
            }
        output_object = parameters.output_object
        if output_object is None:  # pragma: no cover - pydantic-ai always sets it for native and prompted output
            raise AssertionError(f"pydantic-ai sent no output object in {mode.value} mode") from None
        return {
            "mode": mode.value,
            "name": output_object.name,
            "description": output_object.description,
            "strict": output_object.strict,
            "json_schema": output_object.json_schema,
        }
    raise AssertionError("the schema probe was not called")  # pragma: no cover - the model always runs once
