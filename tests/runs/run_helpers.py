"""What the durable-run tests share: a model that "dies" on a given call, and the environment of a child process."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel


class Killed(BaseException):
    """Stands for kill -9 in this process: nothing of the run's code sees it, nothing is recorded for the step."""


def crashing_model(*answers: str, crash_at: int | None = None) -> tuple[FunctionModel, list[str]]:
    """A model answering `answers` in turn (raising `Killed` on call `crash_at`); and the prompts it was asked."""
    asked: list[str] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        asked.append(str(messages[-1].parts[-1].content))  # type: ignore[union-attr]
        if crash_at is not None and len(asked) == crash_at:
            raise Killed()
        return ModelResponse(parts=[TextPart(answers[len(asked) - 1])])

    return FunctionModel(answer), asked


def child_env(tmp_path: Path) -> dict[str, str]:
    """A child process's environment: no provider settings of the developer's, a fake key, its own state folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "ATOMTASK_MODEL"))}
    return {**env, "OPENAI_API_KEY": "test-key", "ATOMTASK_HOME": str(tmp_path / "home"), "PYDANTIC_AI_NO_BANNER": "1"}
