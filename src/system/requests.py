"""A request to run a task, as passed between subsystems."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SubtaskRequest"]


class SubtaskRequest(BaseModel):
    """Run template `name` with `inputs`, optionally on a specific `model`.

    Example:
        ```python
        system.execute(SubtaskRequest(name="classify_ticket", inputs={"text": "..."}))
        ```
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    inputs: dict[str, Any] = Field(default_factory=dict)
    model: str | None = None
