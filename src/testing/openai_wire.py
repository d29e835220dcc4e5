"""The OpenAI chat-completions wire format: a completion as JSON or as server-sent chunks, error types by status."""

from __future__ import annotations

import json
from typing import Any, Final

from atomtask.testing.answers import Answer, pieces
from atomtask.testing.replies import TokenUsage

__all__ = ["OPENAI_ERRORS", "openai_completion", "openai_events"]

_CREATED: Final = 1_700_000_000  # A fixed timestamp keeps recorded responses deterministic.

OPENAI_ERRORS: Final[dict[int, tuple[str, str | None]]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_error", None),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


def openai_completion(answer: Answer, model: str, *, empty: bool = False) -> dict[str, Any]:
    """A chat completion carrying `answer`; `empty` sends `choices: []` (a fault some providers and proxies show)."""
    message: dict[str, Any] = {"role": "assistant", "content": answer.text, "refusal": None}
    if answer.tool_name is not None:
        message["tool_calls"] = [
            {
                "id": f"call_{answer.reply_id}",
                "type": "function",
                "function": {"name": answer.tool_name, "arguments": answer.arguments},
            }
        ]
    return {
        "id": f"chatcmpl-{answer.reply_id}",
        "object": "chat.completion",
        "created": _CREATED,
        "model": model,
        "choices": []
        if empty
        else [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "stop" if answer.tool_name is None else "tool_calls",
            }
        ],
        "usage": _openai_usage(answer.usage),
    }


def _openai_usage(usage: TokenUsage) -> dict[str, int]:
    total = usage.input_tokens + usage.output_tokens
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": total,
    }


def openai_events(answer: Answer, model: str, *, empty: bool = False) -> list[str]:
    """The chunks of a streamed completion; `empty` sends only the final usage chunk (no choice ever)."""

    def chunk(delta: dict[str, Any] | None, finish_reason: str | None = None) -> str:
        choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
        data: dict[str, Any] = {
            "id": f"chatcmpl-{answer.reply_id}",
            "object": "chat.completion.chunk",
            "created": _CREATED,
            "model": model,
            "choices": choices,
        }
        if delta is None:
            data["usage"] = _openai_usage(answer.usage)
        return f"data: {json.dumps(data)}\n\n"

    if empty:
        return [chunk(None), "data: [DONE]\n\n"]
    events = [chunk({"role": "assistant", "content": ""})]
    if answer.tool_name is None:
        events += [chunk({"content": piece}) for piece in pieces(answer.text or "")]
        events.append(chunk({}, "stop"))
    else:
        call = {"index": 0, "id": f"call_{answer.reply_id}", "type": "function"}
        events.append(chunk({"tool_calls": [{**call, "function": {"name": answer.tool_name, "arguments": ""}}]}))
        events += [
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            for piece in pieces(answer.arguments or "")
        ]
        events.append(chunk({}, "tool_calls"))
    return [*events, chunk(None), "data: [DONE]\n\n"]
