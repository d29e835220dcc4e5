"""The Anthropic messages wire format: a message as JSON or as server-sent events, error types by status."""

from __future__ import annotations

import json
from typing import Any, Final

from atomtask.testing.answers import Answer, pieces

__all__ = ["ANTHROPIC_ERRORS", "anthropic_events", "anthropic_message"]

ANTHROPIC_ERRORS: Final[dict[int, str]] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def _anthropic_arguments(answer: Answer) -> object:
    """Anthropic's JSON `input` is an object, so a raw argument string that isn't one goes in verbatim."""
    assert answer.arguments is not None
    try:
        return json.loads(answer.arguments)
    except ValueError:
        return answer.arguments


def anthropic_message(answer: Answer, model: str, *, empty: bool = False) -> dict[str, Any]:
    """A message carrying `answer`; `empty` sends `content: []`."""
    if answer.tool_name is None:
        content: dict[str, Any] = {"type": "text", "text": answer.text}
    else:
        content = {
            "type": "tool_use",
            "id": f"toolu_{answer.reply_id}",
            "name": answer.tool_name,
            "input": _anthropic_arguments(answer),
        }
    return {
        "id": f"msg_{answer.reply_id}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [] if empty else [content],
        "stop_reason": "end_turn" if answer.tool_name is None else "tool_use",
        "stop_sequence": None,
        "usage": _anthropic_usage(answer.usage.input_tokens, answer.usage.output_tokens),
    }


def _anthropic_usage(input_tokens: int, output_tokens: int) -> dict[str, int]:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def anthropic_events(answer: Answer, model: str, *, empty: bool = False) -> list[str]:
    """The events of a streamed message; `empty` sends no content block at all."""

    def event(data: dict[str, Any]) -> str:
        return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"

    start = {**anthropic_message(answer, model), "content": [], "stop_reason": None}
    start["usage"] = _anthropic_usage(answer.usage.input_tokens, 1)
    if answer.tool_name is None:
        block: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": piece} for piece in pieces(answer.text or "")]
    else:
        block = {"type": "tool_use", "id": f"toolu_{answer.reply_id}", "name": answer.tool_name, "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in pieces(answer.arguments or "")]
    stop_reason = "end_turn" if answer.tool_name is None else "tool_use"
    content = [
        event({"type": "content_block_start", "index": 0, "content_block": block}),
        *(event({"type": "content_block_delta", "index": 0, "delta": delta}) for delta in deltas),
        event({"type": "content_block_stop", "index": 0}),
    ]
    return [
        event({"type": "message_start", "message": start}),
        *([] if empty else content),
        event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": _anthropic_usage(answer.usage.input_tokens, answer.usage.output_tokens),
            }
        ),
        event({"type": "message_stop"}),
    ]
