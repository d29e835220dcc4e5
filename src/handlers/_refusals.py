"""A request the endpoint refused to parse: which field, the value sent, and the server's own words.

Some local OpenAI-compatible servers validate the request body with pydantic (FastAPI) and answer a
field they do not accept with a validation error, not always as HTTP 400/422: llama-cpp-python answers
HTTP 500 for `response_format: {"type": "json_schema"}` ("Input should be 'text' or 'json_object'")
and for an assistant message with `content: null` beside its tool calls. Such an answer is not a
provider fault: sending the same request again cannot succeed. `request_refusal` reads one from an
HTTP error, leniently, in the forms servers send it: FastAPI's `{"detail": [...]}`, a list of pydantic
errors printed as Python or JSON inside the error's message, or pydantic's own "N validation error(s)
for X" text. It finds nothing in an error that does not look like a validation error of the body.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from typing import Any

import attrs
from pydantic_ai.exceptions import ModelAPIError

__all__ = ["RequestRefusal", "refusal_in_body", "request_refusal"]

_NOTHING = object()


@attrs.frozen(kw_only=True)
class RequestRefusal:
    """One field of the request body the server refused, as it named it.

    `field` is the path in the request body (`response_format.type`, `messages[2].content`), `sent` the
    value the request held there as the server echoed it (`has_sent` is False when it did not echo
    one), `says` the server's words (`Input should be 'text' or 'json_object'`).
    """

    field: str
    says: str
    sent: Any = None
    has_sent: bool = False

    @property
    def refused(self) -> str:
        """What the server does not accept, as a request would write it: `response_format: json_schema`."""
        if not self.has_sent:
            return self.field
        head, _, last = self.field.rpartition(".")
        # A `type` names the form of its parent object (`response_format`), which is what users know.
        key = head.rpartition(".")[2] if last == "type" and head else last
        key = re.sub(r"\[\d+\]$", "", key)
        value = self.sent if isinstance(self.sent, str) else json.dumps(self.sent, default=repr)
        return f"{key}: {value}"


def request_refusal(error: BaseException) -> RequestRefusal | None:
    """The field a provider's error (its HTTP body) says the request got wrong; None when it is not such an error."""
    if not isinstance(error, ModelAPIError):
        return None
    return refusal_in_body(error.body if error.body is not None else str(error))


def refusal_in_body(body: object) -> RequestRefusal | None:
    """The refused field in an HTTP error body (parsed JSON or text), or None when it is not a validation error."""
    for errors in _error_lists(body):
        refusal = _pick(errors)
        if refusal is not None:
            return refusal
    text = _message(body)
    return _from_pydantic_text(text) if text is not None else None


def _error_lists(body: object) -> list[list[dict[str, Any]]]:
    """Every list of pydantic-style errors (`loc`, `msg`) the body holds, as values or printed in its message."""
    found: list[list[dict[str, Any]]] = []
    if isinstance(body, dict):
        detail = body.get("detail")
        if isinstance(detail, list):
            found.append([e for e in detail if isinstance(e, dict)])
    text = _message(body)
    if text is not None:
        parsed = _literal(text)
        if isinstance(parsed, list):
            found.append([e for e in parsed if isinstance(e, dict)])
        elif parsed is _NOTHING and "'loc'" in text:
            found.append(_scraped(text))
    return [errors for errors in found if any("loc" in e and "msg" in e for e in errors)]


def _message(body: object) -> str | None:
    if isinstance(body, str):
        text = body.strip()
        if text.startswith("{"):  # a JSON error body that was not parsed
            try:
                return _message(json.loads(text)) or text
            except ValueError:
                return text
        return text or None
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            return _message(error.get("message"))
        if isinstance(error, str):
            return error
        message = body.get("message")
        if isinstance(message, str):
            return message
    return None


def _literal(text: str) -> Any:
    """`text` read as a Python or JSON literal (a printed list of errors), or `_NOTHING`."""
    start = text.find("[")
    if start < 0:
        return _NOTHING
    candidate = text[start : text.rfind("]") + 1]
    for read in (json.loads, ast.literal_eval):
        try:
            return read(candidate)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return _NOTHING


_LOC = re.compile(r"""'loc':\s*[(\[]([^)\]]*)[)\]]""")
_MSG = re.compile(r"""'msg':\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')""")
_INPUT = re.compile(r"""'input':\s*(None|True|False|-?\d+(?:\.\d+)?|'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""")


def _scraped(text: str) -> list[dict[str, Any]]:
    """Errors printed as Python whose `ctx` holds something `ast.literal_eval` cannot read (an exception)."""
    errors: list[dict[str, Any]] = []
    for chunk in re.split(r"(?=\{'type':)", text):
        loc, msg = _LOC.search(chunk), _MSG.search(chunk)
        if loc is None or msg is None:
            continue
        error: dict[str, Any] = {
            "loc": [_segment(p.strip()) for p in loc.group(1).split(",") if p.strip()],
            "msg": msg.group(1) if msg.group(1) is not None else msg.group(2),
        }
        sent = _INPUT.search(chunk)
        if sent is not None:
            error["input"] = ast.literal_eval(sent.group(1))
        errors.append(error)
    return errors


def _segment(text: str) -> str | int:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text.strip("'\"")
    return value if isinstance(value, str | int) else str(value)


def _pick(errors: Sequence[dict[str, Any]]) -> RequestRefusal | None:
    """The error that names the refused field: one in the body, not a union member's `role` that did not match."""
    body = [e for e in errors if _in_body(e.get("loc"))]
    if not body:
        return None
    telling = [e for e in body if not _other_member(e)] or body
    error = telling[0]
    return RequestRefusal(
        field=_path(error["loc"]),
        says=str(error.get("msg", "")).strip(),
        sent=error.get("input"),
        has_sent="input" in error,
    )


def _in_body(loc: object) -> bool:
    return isinstance(loc, list | tuple) and len(loc) > 1 and loc[0] == "body"


def _other_member(error: dict[str, Any]) -> bool:
    """An error only saying that a message is not of another kind (a `role` literal that did not match)."""
    loc: Sequence[Any] = error.get("loc") or ()
    return error.get("type") == "literal_error" and bool(loc) and loc[-1] == "role"


def _path(loc: Sequence[Any]) -> str:
    """`('body', 'messages', 2, 'ChatCompletionRequestAssistantMessage', 'content')` as `messages[2].content`."""
    path = ""
    for part in loc[1:]:
        if isinstance(part, int):
            path += f"[{part}]"
        elif _field_name(str(part)):
            path += f".{part}" if path else str(part)
    return path


def _field_name(part: str) -> bool:
    """A key of the request (snake_case), not a union member's label (`typed-dict`, `ChatCompletion...Message`)."""
    return bool(re.fullmatch(r"[a-z_][a-z0-9_]*", part))


_PYDANTIC_TEXT = re.compile(
    r"validation errors? for (?P<model>\S+)\s*\n(?P<loc>[^\n]+)\n\s+(?P<msg>[^\n\[]+?)\s*\[type=(?P<type>[^,\]]+)"
    r"(?:,\s*input_value=(?P<input>.*?),\s*input_type=[^\]]+)?\]"
)


def _from_pydantic_text(text: str) -> RequestRefusal | None:
    """pydantic's own text: `1 validation error for Request\\nresponse_format.type\\n  Input should be ... [type=]`."""
    found = _PYDANTIC_TEXT.search(text)
    if found is None:
        return None
    loc: list[str | int] = [int(p) if p.isdigit() else p for p in found.group("loc").strip().split(".")]
    if loc[0] != "body":
        if "Request" not in found.group("model"):  # the server's own data, not the request it was sent
            return None
        loc.insert(0, "body")
    error: dict[str, Any] = {"loc": loc, "msg": found.group("msg"), "type": found.group("type")}
    if found.group("input") is not None:
        try:
            error["input"] = ast.literal_eval(found.group("input"))
        except (ValueError, SyntaxError):
            error["input"] = found.group("input")
    return _pick([error])
