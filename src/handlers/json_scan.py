"""Reading a broken JSON text without parsing it: brackets, strings, bare words, comments.

`scan` walks text the way a JSON reader would, but never fails: it records the open brackets, the
string literals, the unquoted runs (keys, literals, numbers, bare text) and the comments, and builds
the text json-repair should read, with the two fixes that have one reading (a missing `:` after a key,
a missing `,` between items). `content_problem` and `truncation_problem` say when a lenient reading
of it would not be faithful. Output repair (`atomtask.handlers.repair`) decides with them.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import attrs

__all__ = ["CLOSER", "NUMBER_RE", "Scan", "content_problem", "first_opener", "scan", "truncation_problem"]

_WORD_RE = re.compile(r"\w+")
_LITERALS = {"true", "false", "null", "none"}
_SAME_TOKEN = {"none": "null"}


def first_opener(raw: str, index: int = 0) -> int | None:
    positions = [p for p in (raw.find("{", index), raw.find("[", index)) if p >= 0]
    return min(positions) if positions else None


CLOSER = {"{": "}", "[": "]"}


@attrs.frozen(kw_only=True)
class Scan:
    open_stack: tuple[str, ...]
    in_string: bool
    without_comments: str
    comments: int
    last_string_is_key: bool
    containers: int
    strings: tuple[str, ...]
    bare: tuple[tuple[str, bool], ...]  # (token, is a key)
    end: int


_QUOTES = {'"': '"', "'": "'", "\u201c": "\u201d"}  # plus the typographic quotes models like
_BARE_STOP = re.compile(r"[,:{}\[\]\"\u201c\n]|//|/\*|#")


def _bare_end(text: str, start: int) -> int:
    """Where an unquoted run (a key, a literal, a number or bare text) that starts at `start` ends."""
    stop = _BARE_STOP.search(text, start + 1)
    return stop.start() if stop is not None else len(text)


NUMBER_RE = re.compile(r"^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$")
_BARE_LITERALS = {"true", "false", "null", "True", "False", "None"}


def scan(text: str, start: int = 0, *, stop_at_end: bool = False) -> Scan:
    """Bracket depth, strings, bare tokens and comments of a (possibly broken) JSON text.

    With `stop_at_end`, scanning stops where the first value closes (the rest is prose).
    """
    stack: list[str] = []
    kept: list[str] = []
    strings: list[str] = []
    bare: list[tuple[str, bool]] = []
    quote: str | None = None
    string_start = 0
    comments = 0
    containers = 0
    last_string_is_key = False
    key_pending = False  # a key was written and its `:` has not come yet
    last_closer = 0  # where in `kept` the last matching `}` or `]` went
    prev_significant = ""
    i = start
    n = len(text)
    while i < n:
        ch = text[i]
        if quote is not None:
            kept.append(ch)
            if ch == "\\" and i + 1 < n:
                kept.append(text[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = None
                strings.append(_unescape(text[string_start:i], ch))
                prev_significant = ch
                key_pending = last_string_is_key
            i += 1
            continue
        if key_pending and (ch in _QUOTES or ch in "{[" or (ch.isalnum() or ch in "-_")):
            # `"key" value`: the one reading is `"key": value` (validation still has the last word).
            kept.append(":")
        if not ch.isspace():
            key_pending = False
        if ch in _QUOTES:
            quote = _QUOTES[ch]
            string_start = i + 1
            last_string_is_key = bool(stack) and stack[-1] == "{" and prev_significant in ("{", ",")
        elif text.startswith("//", i) or (ch == "#" and not text[text.rfind("\n", 0, i) + 1 : i].strip()):
            comments += 1
            newline = text.find("\n", i)
            i = n if newline < 0 else newline
            continue
        elif text.startswith("/*", i):
            comments += 1
            close = text.find("*/", i + 2)
            i = n if close < 0 else close + 2
            continue
        elif ch in "{[":
            if stack and stack[-1] == "[" and prev_significant in ("}", "]"):
                # `[{} {}]`: two items with the comma missing. Put right after the first item: json-repair
                # drops an item after `{}` followed by whitespace and a comma.
                kept.insert(last_closer + 1, ",")
            stack.append(ch)
            containers += 1
        elif ch in "}]" and stack and CLOSER[stack[-1]] == ch:
            # A closer that does not match is stray text for json-repair to judge, not the end.
            stack.pop()
            last_closer = len(kept)
            if stop_at_end and not stack:
                kept.append(ch)
                i += 1
                break
        elif not ch.isspace() and ch not in ":,}]":
            end = _bare_end(text, i)
            word = text[i:end].strip()
            bare.append((word, text[end:].lstrip().startswith(":")))
            kept.append(text[i:end])
            prev_significant = word[-1]
            i = end
            continue
        if not ch.isspace():
            prev_significant = ch
        kept.append(ch)
        i += 1
    if quote is not None:
        strings.append(_unescape(text[string_start:i], quote))
    return Scan(
        open_stack=tuple(stack),
        in_string=quote is not None,
        without_comments="".join(kept),
        comments=comments,
        last_string_is_key=last_string_is_key,
        containers=containers,
        strings=tuple(strings),
        bare=tuple(bare),
        end=i,
    )


def _unescape(body: str, quote: str) -> str:
    """The text a string literal stands for (JSON escapes decoded); the body itself if they do not decode."""
    if "\\" not in body:
        return body
    if quote == "'":
        body = re.sub(r'(?<!\\)"', r'\\"', body.replace("\\'", "'"))
    try:
        return str(json.loads(f'"{body}"'))
    except ValueError:
        return body


def _count_containers(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + sum(_count_containers(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(_count_containers(v) for v in value)
    return 0


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str):
        yield value


def content_problem(scan: Scan, value: Any) -> str | None:
    """Why `value` is not a faithful reading of the scanned text, or None when it is."""
    for word, is_key in scan.bare:
        if is_key or word in _BARE_LITERALS or NUMBER_RE.match(word):
            continue
        if not (word[0].isalpha() or word[0] == "_"):
            # `05`, `0.0.1`, `...`, `-e5`, a date: a number, a string or a placeholder? Not ours to say.
            return f"it holds unquoted text ({word!r}) that is neither a JSON number nor clearly a string"
    if _count_containers(value) != scan.containers:
        return "a lenient reading would drop or add objects or arrays"
    written = set(scan.strings) | {word for word, _ in scan.bare}
    changed = [text for text in _strings(value) if text not in written]
    if changed:
        return f"a lenient reading would change the text of a string ({changed[0]!r})"
    dropped = _dropped_tokens(scan.without_comments, value)
    if dropped:
        shown = ", ".join(repr(t) for t in dropped[:5])
        return f"a lenient reading would drop text from inside the JSON ({shown})"
    return None


def truncation_problem(region: str, scan: Scan) -> str | None:
    """Why closing this truncated JSON would guess at a value, or None when only closers are missing."""
    if scan.in_string:
        return "the answer was cut off inside a string, so the value is incomplete"
    tail = scan.without_comments.rstrip()
    if not tail:
        return "the answer was cut off"
    last = tail[-1]
    if last in "{[,}]":
        return None
    if last == ":":
        return "the answer was cut off after a key, before its value"
    if last in "\"'":
        return "the answer was cut off after a key, before its value" if scan.last_string_is_key else None
    token = re.search(r"[\w.+\-]+$", tail)
    word = token.group(0) if token else ""
    if word.lower() in _LITERALS:
        return None
    ended = len(scan.without_comments) > len(tail)  # whitespace after the token: it was complete
    if ended and word and word[-1].isdigit():
        return None
    return f"the answer was cut off inside the value {word!r}, so it may be incomplete"


def _tokens(text: str) -> Counter[str]:
    words = (w.lower() for w in _WORD_RE.findall(text))
    return Counter(_SAME_TOKEN.get(w, w) for w in words)


def _dropped_tokens(source: str, value: Any) -> list[str]:
    """Words of `source` that the recovered `value` does not contain (content a repair would lose)."""
    kept = _tokens(json.dumps(value, ensure_ascii=False)) | _tokens(json.dumps(value))
    missing = _tokens(source) - kept
    return sorted(missing)
