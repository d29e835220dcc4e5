"""A content reply settled for the wire: the tool it calls, its arguments as text, its token usage.

`Answer` is what both wire formats (`openai_wire`, `anthropic_wire`) write; the helpers here settle
it from the request the same way for either format, and cut its text into the deltas a stream carries.
"""

from __future__ import annotations

from typing import Any

import attrs
from atomtask.testing.replies import TokenUsage, Wire

__all__ = ["Answer", "estimated_usage", "offered_tool", "pieces"]


@attrs.frozen(kw_only=True)
class Answer:
    reply_id: int
    text: str | None
    tool_name: str | None
    arguments: str | None
    usage: TokenUsage


def offered_tool(wire: Wire, body: dict[str, Any]) -> str | None:
    """The tool `tool_choice` forces or allows first, else the first tool offered."""
    choice = body.get("tool_choice")
    tools: object = body.get("tools")
    if isinstance(choice, dict):
        if choice.get("type") in ("function", "tool"):  # OpenAI and Anthropic forcing one tool
            tools = [choice]
        elif choice.get("type") == "allowed_tools":  # OpenAI restricting the choice to some tools
            tools = (choice.get("allowed_tools") or {}).get("tools")
    for tool in tools if isinstance(tools, list) else []:
        spec = tool.get("function", tool) if isinstance(tool, dict) else None
        if isinstance(spec, dict) and isinstance(name := spec.get("name"), str):
            return name
    return None


def estimated_usage(request_size: int, output: str) -> TokenUsage:
    return TokenUsage(input_tokens=max(1, request_size // 4), output_tokens=max(1, len(output.encode()) // 4))


def pieces(text: str, count: int = 3) -> list[str]:
    """`text` in up to `count` pieces, so streams carry several deltas."""
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]
