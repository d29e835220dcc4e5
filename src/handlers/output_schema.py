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
from atomtask.handlers.llm import output_spec, probe_request
from atomtask.loading.providers import ATOMTASK_PROVIDER, install_command, provider_of
from atomtask.system.errors import ConfigurationError
from atomtask.system.templates import OutputMode
from pydantic import BaseModel
from pydantic_ai.models import Model, infer_model_profile
from pydantic_ai.profiles import ModelProfileSpec

__all__ = ["model_output_schema"]


def _profile(choice: ModelChoice) -> ModelProfileSpec | None:
    spec = choice.spec
    if isinstance(spec, Model):
        return spec.profile
    if spec == "test":
        return None
    if provider_of(spec) == ATOMTASK_PROVIDER:
        from atomtask.handlers.synthetic import synthetic_profile

        return synthetic_profile()
    # `infer_model_profile` asks the provider class for the profile without constructing a client
    # (importing the provider's module, and with it its SDK, which must then be installed).
    try:
        return infer_model_profile(spec)
    except ImportError as exc:
        raise ConfigurationError(
            f"Model {spec!r} needs a provider package that is not installed ({exc.name or exc}) to know how it "
            f"receives schemas; install it with `{install_command(spec)}`, or omit `--model`."
        ) from None


def model_output_schema(output_cls: type[BaseModel], mode: OutputMode, choice: ModelChoice) -> dict[str, Any]:
    """What `choice` receives for `output_cls` in `mode`: the schema, and the tool that carries it in tool mode.

    Returns `{"mode", "json_schema"}` plus `"tool_name"`, `"tool_description"` and `"strict"` for tool mode.
    """
    info = probe_request(_profile(choice), output_spec(output_cls, mode))
    if mode is OutputMode.TOOL:
        tool = info.output_tools[0]
        return {
            "mode": mode.value,
            "tool_name": tool.name,
            "tool_description": tool.description,
            "strict": tool.strict,
            "json_schema": tool.parameters_json_schema,
        }
    output_object = info.model_request_parameters.output_object
    if output_object is None:  # pragma: no cover - pydantic-ai always sets it for native and prompted output
        raise AssertionError(f"pydantic-ai sent no output object in {mode.value} mode")
    return {
        "mode": mode.value,
        "name": output_object.name,
        "description": output_object.description,
        "strict": output_object.strict,
        "json_schema": output_object.json_schema,
    }
