"""Local repair of malformed structured output, before it costs a retry.

`repair_output` reads a model's raw answer leniently (json-repair does the syntactic part) and adds
two schema-aware steps where the intended value is unambiguous: a bare list where the schema wraps
a single list field, and a single object where a list of such objects is expected. It refuses,
with a reason the model can act on, whenever the repair would have to guess: the answer was cut off
inside a value, text inside the JSON would be dropped, or it holds more than one JSON value.

`OutputRepair` is the pydantic-ai capability that applies it: it wraps output validation, so the
happy path costs one `await`, and a repaired value still goes through pydantic-ai's full
validation. It works in every output mode (tool-call arguments, native JSON, prompted text) and can
be passed to any pydantic-ai `Agent` (`capabilities=[OutputRepair()]`).
"""

from __future__ import annotations

import json
import re
import typing
from collections import Counter
from collections.abc import Iterator
from typing import Any

import attrs
import json_repair
from atomtask.handlers.ledger import RunState, run_state
from pydantic import BaseModel, ValidationError
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelResponse
from pydantic_ai.output import OutputContext

__all__ = ["OutputRepair", "RepairOutcome", "repair_output"]

_WORD_RE = re.compile(r"\w+")
_LITERALS = {"true", "false", "null", "none"}
_SAME_TOKEN = {"none": "null"}


@attrs.frozen(kw_only=True)
class RepairOutcome:
    """What a lenient reading of one answer gave: a value and the changes made, or why not.

    `syntax_error` says what was wrong with the JSON as sent (None when it parsed); `problem` says
    why no value could be recovered safely (None when `value` is usable).
    """

    value: Any = None
    changes: tuple[str, ...] = ()
    syntax_error: str | None = None
    problem: str | None = None

    @property
    def usable(self) -> bool:
        return self.problem is None


def repair_output(raw: str | dict[str, Any], output_cls: type[Any] | None = None) -> RepairOutcome:
    """Recover the JSON value `raw` was meant to be, shaped for `output_cls` where unambiguous."""
    if isinstance(raw, dict):
        value: Any = raw
        changes: list[str] = []
        syntax_error = None
    else:
        syntactic = _syntactic(raw)
        if not syntactic.usable:
            return syntactic
        value, changes, syntax_error = syntactic.value, list(syntactic.changes), syntactic.syntax_error
    if output_cls is not None and isinstance(output_cls, type) and issubclass(output_cls, BaseModel):
        value = _shape(value, output_cls, changes)
    return RepairOutcome(value=value, changes=tuple(changes), syntax_error=syntax_error)


def _syntactic(raw: str) -> RepairOutcome:
    text = raw.strip()
    try:
        return RepairOutcome(value=json.loads(text))
    except ValueError as exc:
        syntax_error = _describe_json_error(exc)
    changes: list[str] = []
    embedded = _embedded_values(raw)
    if len(embedded) > 1:
        return RepairOutcome(
            syntax_error=syntax_error,
            problem=f"the answer holds {len(embedded)} separate JSON values and it is not clear which one is meant",
        )
    if embedded:
        value, begin, finish = embedded[0]
        changes.append(_around_change(raw, begin, finish))
        return RepairOutcome(value=value, changes=tuple(changes), syntax_error=syntax_error)
    start = _first_opener(raw)
    if start is None:
        return RepairOutcome(syntax_error=syntax_error, problem="no JSON object or array was found in the answer")
    end = _scan(raw, start, stop_at_end=True).end
    region = raw[start:end]
    scan = _scan(region)
    if scan.open_stack:
        cut = _truncation_problem(region, scan)
        if cut is not None:
            return RepairOutcome(syntax_error=syntax_error, problem=cut)
        closers = "".join(_CLOSER[c] for c in reversed(scan.open_stack))
        changes.append(f"closed the truncated JSON with {closers!r}")
        # Closed here rather than by json-repair, which drops a trailing empty `{` or `[`.
        readable = scan.without_comments.rstrip().removesuffix(",") + closers
    else:
        readable = scan.without_comments
    if raw[:start].strip() or raw[end:].strip():
        changes.append(_around_change(raw, start, end))
    try:
        value = json_repair.loads(readable)  # strict JSON first: our own fixes may be all it needed
    except Exception as exc:  # json-repair gives up on some inputs; that is a refusal, not a crash
        return RepairOutcome(syntax_error=syntax_error, problem=f"the JSON could not be read leniently ({exc})")
    if not isinstance(value, dict | list):
        return RepairOutcome(syntax_error=syntax_error, problem="no JSON object or array could be recovered")
    problem = _content_problem(scan, value)
    if problem is not None:
        return RepairOutcome(syntax_error=syntax_error, problem=problem)
    if scan.comments:
        changes.append(f"removed {scan.comments} comment(s)")
    changes.append(f"fixed JSON syntax ({syntax_error})")
    return RepairOutcome(value=value, changes=tuple(changes), syntax_error=syntax_error)


def _describe_json_error(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} (line {exc.lineno}, column {exc.colno})"
    return str(exc)


def _around_change(raw: str, start: int, end: int) -> str:
    before, after = raw[:start].strip(), raw[end:].strip()
    if before.startswith("```") or after.endswith("```"):
        return "removed the markdown fence around the JSON"
    return f"removed text around the JSON ({len(before)} chars before, {len(after)} after)"


def _embedded_values(raw: str) -> list[tuple[Any, int, int]]:
    """Strict JSON objects/arrays found in `raw`, outermost only (prose or fences around them)."""
    decoder = json.JSONDecoder()
    found: list[tuple[Any, int, int]] = []
    index = 0
    while True:
        start = _first_opener(raw, index)
        if start is None:
            return found
        try:
            value, end = decoder.raw_decode(raw, start)
        except ValueError:
            if found:
                # Something JSON-like follows the first value: a second candidate, so ambiguous.
                return [*found, (None, start, start)]
            # Not strict JSON from the first opener: leave it to the lenient reader.
            return []
        found.append((value, start, end))
        index = end


def _first_opener(raw: str, index: int = 0) -> int | None:
    positions = [p for p in (raw.find("{", index), raw.find("[", index)) if p >= 0]
    return min(positions) if positions else None


_CLOSER = {"{": "}", "[": "]"}


@attrs.frozen(kw_only=True)
class _Scan:
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


_NUMBER_RE = re.compile(r"^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$")
_BARE_LITERALS = {"true", "false", "null", "True", "False", "None"}


def _scan(text: str, start: int = 0, *, stop_at_end: bool = False) -> _Scan:
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
        elif ch in "}]" and stack and _CLOSER[stack[-1]] == ch:
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
    return _Scan(
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


def _content_problem(scan: _Scan, value: Any) -> str | None:
    """Why `value` is not a faithful reading of the scanned text, or None when it is."""
    for word, is_key in scan.bare:
        if is_key or word in _BARE_LITERALS or _NUMBER_RE.match(word):
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


def _truncation_problem(region: str, scan: _Scan) -> str | None:
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


def _shape(value: Any, cls: type[BaseModel], changes: list[str]) -> Any:
    """The schema-aware steps: only where exactly one reading fits."""
    fields = cls.model_fields
    if isinstance(value, list):
        list_fields = [name for name, f in fields.items() if _list_item(f.annotation) is not None]
        if len(fields) == 1 and len(list_fields) == 1:
            name = list_fields[0]
            changes.append(f"wrapped the bare list in the schema's only field {name!r}")
            return {_key(cls, name): value}
        return value
    if not isinstance(value, dict):
        return value
    if len(fields) == 1:
        name, field = next(iter(fields.items()))
        item = _list_item(field.annotation)
        key = _key(cls, name)
        if key not in value and _is_model(item) and _fits(item, value):
            changes.append(f"wrapped the single object in a list for the schema's only field {name!r}")
            return {key: [value]}
    shaped = dict(value)
    for name, field in fields.items():
        key = _key(cls, name)
        if key not in shaped:
            continue
        item = _list_item(field.annotation)
        inner = shaped[key]
        if isinstance(inner, dict) and _is_model(item) and _fits(item, inner):
            changes.append(f"wrapped the single object in a list for field {name!r}")
            shaped[key] = [inner]
        elif _is_model(_strip_optional(field.annotation)) and isinstance(inner, dict | list):
            shaped[key] = _shape(inner, _strip_optional(field.annotation), changes)
    return shaped


def _key(cls: type[BaseModel], name: str) -> str:
    alias = cls.model_fields[name].validation_alias or cls.model_fields[name].alias
    return alias if isinstance(alias, str) else name


def _strip_optional(annotation: Any) -> Any:
    args = typing.get_args(annotation)
    if args and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return annotation


def _list_item(annotation: Any) -> Any:
    annotation = _strip_optional(annotation)
    if typing.get_origin(annotation) is list:
        args = typing.get_args(annotation)
        return args[0] if args else Any
    return None


def _is_model(tp: Any) -> typing.TypeGuard[type[BaseModel]]:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _fits(cls: type[BaseModel], value: dict[str, Any]) -> bool:
    try:
        cls.model_validate(value)
    except ValidationError:
        return False
    return True


class OutputRepair(AbstractCapability[Any]):
    """A pydantic-ai capability: repair malformed structured output locally before it costs a retry.

    Only an answer that fails validation is touched. A repaired value goes through pydantic-ai's
    full validation again; when no safe repair exists, the model is re-asked with what was wrong
    with its JSON. Repairs are kept in `repairs` (response number -> changes); inside atomtask they
    go to the run's `RunState` and from there into each `Attempt`.

    Example:
        ```python
        agent = Agent(model, output_type=PromptedOutput(Contact))
        agent.run_sync("...", capabilities=[OutputRepair()])
        ```
    """

    def __init__(self) -> None:
        self.state = RunState()

    @property
    def repairs(self) -> dict[int, list[str]]:
        """Response number (1-based) -> the changes that made it valid, when used outside atomtask."""
        return self.state.repairs

    async def wrap_output_validate(
        self,
        ctx: RunContext[Any],
        *,
        output_context: OutputContext,
        output: str | dict[str, Any],
        handler: Any,
    ) -> Any:
        try:
            return await handler(output)
        except (ValidationError, ModelRetry) as error:
            if ctx.partial_output or isinstance(error, ModelRetry):
                raise
            original = error
        state = run_state(ctx, self.state)
        if not state.repair:
            raise original
        response = sum(isinstance(m, ModelResponse) for m in ctx.messages)
        outcome = repair_output(output, output_context.output_type)
        if outcome.syntax_error is not None:
            state.syntax_errors[response] = outcome.syntax_error
        if not outcome.usable:
            raise ModelRetry(_refusal(outcome))
        if not outcome.changes:
            raise original  # valid JSON that no schema-aware step fits: pydantic-ai's own feedback
        try:
            validated = await handler(json.dumps(outcome.value))
        except ValidationError as exc:
            raise ModelRetry(_rejected(outcome, exc)) from exc
        state.repairs[response] = [*outcome.changes, *_coercions(outcome.value, validated)]
        return validated


def _coercions(sent: Any, validated: Any, limit: int = 10) -> list[str]:
    """What validation changed in a repaired value: lax coercions and fields the schema ignored."""
    if not isinstance(validated, BaseModel):
        return []
    found: list[str] = []
    _diff(sent, validated.model_dump(mode="json", by_alias=True), "", found)
    return found[:limit]


def _diff(sent: Any, kept: Any, path: str, found: list[str]) -> None:
    if isinstance(sent, dict) and isinstance(kept, dict):
        for key, value in sent.items():
            where = f"{path}.{key}" if path else str(key)
            if key not in kept:
                found.append(f"ignored {where!r}, which is not in the schema")
            else:
                _diff(value, kept[key], where, found)
    elif isinstance(sent, list) and isinstance(kept, list) and len(sent) == len(kept):
        for index, (a, b) in enumerate(zip(sent, kept, strict=True)):
            _diff(a, b, f"{path}[{index}]", found)
    elif type(sent) is not type(kept) or sent != kept:
        found.append(f"coerced {path or 'the value'!r} from {sent!r} to {kept!r}")


def _refusal(outcome: RepairOutcome) -> str:
    head = f"Your answer is not valid JSON ({outcome.syntax_error})" if outcome.syntax_error else "Your answer"
    return (
        f"{head}, and it could not be repaired safely: {outcome.problem}. Answer again with only the "
        "complete JSON value that matches the schema, without comments or surrounding text."
    )


def _rejected(outcome: RepairOutcome, exc: ValidationError) -> str:
    problems = "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors(include_url=False)[:5]
    )
    head = f"Your answer is not valid JSON ({outcome.syntax_error}). " if outcome.syntax_error else ""
    return (
        f"{head}Read leniently, it still does not match the schema: {problems}. Answer again with only "
        "the JSON value that matches the schema."
    )
