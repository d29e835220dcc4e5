"""Reading a broken JSON text without parsing it: brackets, strings, bare words, comments.

`scan` walks text the way a JSON reader would, but never fails: it records the open brackets, the
string literals, the unquoted runs (keys, literals, numbers, bare text) and the comments, and builds
the text json-repair should read, with the two fixes that have one reading (a missing `:` after a key,
a missing `,` between items). `content_problem` and `truncation_problem` say when a lenient reading
of it would not be faithful. Output repair (`atomtask.handlers._repair`) decides with them.
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
    # Items of each object (its keys) and array (its values), in the order the containers open.
    items: tuple[int, ...] | None = None  # None when a closer did not match: sizes unknown
    # Quotes whose reading is not certain: a string followed at once by text or by another string,
    # a quote character outside a string, a comment that holds a quote or a bracket.
    doubts: tuple[str, ...] = ()


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
    tally = _Tally()
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
                tally.string_closed(text, i + 1, stack, key=last_string_is_key)
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
            tally.string_opened(text, i, stack)
        elif text.startswith("//", i) or (ch == "#" and not text[text.rfind("\n", 0, i) + 1 : i].strip()):
            comments += 1
            newline = text.find("\n", i)
            end = n if newline < 0 else newline
            tally.comment(text[i:end])
            i = end
            continue
        elif text.startswith("/*", i):
            comments += 1
            close = text.find("*/", i + 2)
            end = n if close < 0 else close + 2
            tally.comment(text[i:end])
            i = end
            continue
        elif ch in "{[":
            if stack and stack[-1] == "[" and prev_significant in ("}", "]"):
                # `[{} {}]`: two items with the comma missing. Put right after the first item: json-repair
                # drops an item after `{}` followed by whitespace and a comma.
                kept.insert(last_closer + 1, ",")
            tally.opened(stack, ch)
            stack.append(ch)
            containers += 1
        elif ch in "}]" and stack and CLOSER[stack[-1]] == ch:
            # A closer that does not match is stray text for json-repair to judge, not the end.
            stack.pop()
            tally.closed()
            last_closer = len(kept)
            if stop_at_end and not stack:
                kept.append(ch)
                i += 1
                break
        elif ch in "}]":
            tally.mismatched = True
        elif not ch.isspace() and ch not in ":,":
            end = _bare_end(text, i)
            word = text[i:end].strip()
            is_key = text[end:].lstrip().startswith(":")
            tally.bare(text, i, word, stack, key=is_key or prev_significant in ("{", ","))
            bare.append((word, is_key))
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
        items=None if tally.mismatched else tuple(tally.items),
        doubts=tuple(tally.doubts(open_at_end=bool(stack))),
    )


_QUOTE_CHARS = "\"'\u201c\u201d\u2018\u2019`"


class _Tally:
    """How many items each container holds, and where the quotes of the text cannot be read with certainty.

    An object counts its keys (a token in key position or followed by `:`), an array its values. A
    quote character is in doubt when two strings touch (a Python triple-quoted string, `'it''s'`), when text follows a
    string at once (`'it's fine'` reads as `'it'` then `s fine'`), when two single-quoted strings
    stand side by side in an array (one string in Python, two items in JSON), and when a comment
    that holds a quote or a closer leaves the JSON open (it may have swallowed part of it).
    """

    def __init__(self) -> None:
        self.items: list[int] = []  # per container, in the order they open
        self.frames: list[int] = []  # index into `items` of each open container
        self.mismatched = False  # a closer that does not match: the item counts are json-repair's to judge
        self._doubts: list[str] = []
        self._string_end = -1  # where the last string closed
        self._value_end = -1  # where the last string that is not a key closed
        self._last_quote = ""
        self._touching = False
        self._comment_closers = False

    def opened(self, stack: list[str], bracket: str) -> None:
        if stack and stack[-1] == "[":
            self.items[self.frames[-1]] += 1
        self.frames.append(len(self.items))
        self.items.append(0)

    def closed(self) -> None:
        self.frames.pop()

    def string_opened(self, text: str, at: int, stack: list[str]) -> None:
        quote = text[at]
        between = text[self._string_end : at] if self._string_end >= 0 else "x"
        self._touching = self._string_end == at
        if self._touching:
            pass  # decided when it closes: `"a""b": 1` is a key after a missing comma
        elif quote == "'" == self._last_quote and stack and stack[-1] == "[" and between.strip(" \t") == "":
            self._doubt(text, at, "two single-quoted strings side by side (one string in Python, two in JSON)")
        self._last_quote = quote
        if stack and stack[-1] == "[":
            self.items[self.frames[-1]] += 1

    def string_closed(self, text: str, end: int, stack: list[str], *, key: bool) -> None:
        key = key or text[end:].lstrip().startswith(":")
        if self._touching and not key:
            self._doubt(text, end - 1, "two strings touch")
        self._string_end = end
        self._value_end = -1 if key else end
        if key and stack and stack[-1] == "{":
            self.items[self.frames[-1]] += 1

    def bare(self, text: str, at: int, word: str, stack: list[str], *, key: bool) -> None:
        if self._value_end == at:
            self._doubt(text, at, "text follows a string at once")
        if any(q in word for q in _QUOTE_CHARS):
            self._doubt(text, at, "a quote character outside a string")
        if stack and (key if stack[-1] == "{" else True):
            self.items[self.frames[-1]] += 1

    def comment(self, comment: str) -> None:
        body = comment.lstrip("/#*").rstrip("*/")
        self._comment_closers = self._comment_closers or any(c in body for c in _QUOTE_CHARS + "}]")

    def doubts(self, *, open_at_end: bool) -> list[str]:
        if open_at_end and self._comment_closers:
            return [*self._doubts, "a comment holds a quote or a closing bracket and the JSON is left open"]
        return self._doubts

    def _doubt(self, text: str, at: int, what: str) -> None:
        self._doubts.append(f"{what} ({text[max(at - 15, 0) : at + 15]!r}): is a quote meant inside a string?")


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


def _sizes(value: Any) -> Iterator[int]:
    """The number of items of each object and array of `value`, in the order they open in its text."""
    if isinstance(value, dict):
        yield len(value)
        for item in value.values():
            yield from _sizes(item)
    elif isinstance(value, list):
        yield len(value)
        for item in value:
            yield from _sizes(item)


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
    if scan.doubts:
        return f"where its strings begin and end is not certain: {scan.doubts[0]}"
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
    if scan.items is not None and list(_sizes(value)) != list(scan.items):
        return "a lenient reading would add or drop items of a list or keys of an object"
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
