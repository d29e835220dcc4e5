"""Local repair of malformed structured output, before it costs a retry.

`repair_output` reads a model's raw answer leniently (json-repair does the syntactic part) and adds
two schema-aware steps where the intended value is unambiguous: a bare list where the schema wraps
a single list field, and a single object where a list of such objects is expected. A repair may
change syntax, never content: it refuses, with a reason the model can act on, whenever it would
have to guess: the answer was cut off inside a value, text inside the JSON would be dropped, it
holds more than one JSON value, a list or object would gain or lose items, or where a string begins
and ends is not certain (a quote inside a single-quoted string, triple quotes, text right after a
string; `_json_scan` finds these).

`OutputRepair` is the pydantic-ai capability that applies it: it wraps output validation, so the
happy path costs one `await`, and a repaired value still goes through pydantic-ai's full
validation; a repaired value with a key the schema ignores is re-asked (text may have been misread
into it). With `repair: lenient` (`RunState.repair`) it also reads values toward the schema
(`atomtask.handlers._lenient`). It works in every output mode (tool-call arguments, native JSON,
prompted text) and can be passed to any pydantic-ai `Agent` (`capabilities=[OutputRepair()]`).

An answer the output token limit cut off (`finish_reason: length`) is repaired the same way (closing
the truncated JSON may be all it needs; the manager then warns that data may be missing); when it
cannot be, the re-ask says it was cut off and asks for a shorter answer (`cut_off_feedback`), never
sending the cut-off text back as the input of a JSON error. With `repair: off` a cut-off answer in
native or prompted mode is left to pydantic-ai, which ends the run (`OutputTokenLimitExceeded`).
"""

from __future__ import annotations

import json
import typing
from typing import Any

import attrs
import json_repair
from atomtask.handlers._json_scan import CLOSER, content_problem, first_opener, scan, truncation_problem
from atomtask.handlers._ledger import RunState, run_state
from atomtask.handlers._lenient import LenientReading, from_text, toward_schema
from atomtask.schemas._type_strings import strip_optional
from atomtask.system._results import Coercion
from atomtask.system._templates import RepairMode
from pydantic import BaseModel, ValidationError
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelResponse
from pydantic_ai.output import OutputContext

__all__ = ["OutputRepair", "RepairOutcome", "cut_off_feedback", "repair_output"]


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
    start = first_opener(raw)
    if start is None:
        return RepairOutcome(syntax_error=syntax_error, problem="no JSON object or array was found in the answer")
    end = scan(raw, start, stop_at_end=True).end
    region = raw[start:end]
    scanned = scan(region)
    if scanned.open_stack:
        cut = truncation_problem(region, scanned)
        if cut is not None:
            return RepairOutcome(syntax_error=syntax_error, problem=cut)
        closers = "".join(CLOSER[c] for c in reversed(scanned.open_stack))
        changes.append(f"closed the truncated JSON with {closers!r}")
        # Closed here rather than by json-repair, which drops a trailing empty `{` or `[`.
        readable = scanned.without_comments.rstrip().removesuffix(",") + closers
    else:
        readable = scanned.without_comments
    if raw[:start].strip() or raw[end:].strip():
        changes.append(_around_change(raw, start, end))
    try:
        value = json_repair.loads(readable)  # strict JSON first: our own fixes may be all it needed
    except Exception as exc:  # json-repair gives up on some inputs; that is a refusal, not a crash
        return RepairOutcome(syntax_error=syntax_error, problem=f"the JSON could not be read leniently ({exc})")
    if not isinstance(value, dict | list):
        return RepairOutcome(syntax_error=syntax_error, problem="no JSON object or array could be recovered")
    problem = content_problem(scanned, value)
    if problem is not None:
        return RepairOutcome(syntax_error=syntax_error, problem=problem)
    if scanned.comments:
        changes.append(f"removed {scanned.comments} comment(s)")
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
        start = first_opener(raw, index)
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
        elif _is_model(strip_optional(field.annotation)) and isinstance(inner, dict | list):
            shaped[key] = _shape(inner, strip_optional(field.annotation), changes)
    return shaped


def _key(cls: type[BaseModel], name: str) -> str:
    alias = cls.model_fields[name].validation_alias or cls.model_fields[name].alias
    return alias if isinstance(alias, str) else name


def _list_item(annotation: Any) -> Any:
    annotation = strip_optional(annotation)
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
        except ModelRetry:
            raise
        except ValidationError as error:
            if ctx.partial_output:
                raise
            original = error
        state = run_state(ctx, self.state)
        if not _cut_off(ctx):
            return await self._repaired(ctx, state, output_context, output, handler, original)
        if state.repair is RepairMode.OFF and output_context.tool_call is None and _incomplete_json(original):
            raise original  # pydantic-ai itself ends the run (`OutputTokenLimitExceeded`) rather than re-ask
        try:
            return await self._repaired(ctx, state, output_context, output, handler, original)
        except (ValidationError, ModelRetry):
            # Not a JSON syntax error to fix, nor the cut-off answer to send back: a shorter answer.
            raise ModelRetry(cut_off_feedback(state.max_tokens)) from None

    async def _repaired(
        self,
        ctx: RunContext[Any],
        state: RunState,
        output_context: OutputContext,
        output: str | dict[str, Any],
        handler: Any,
        original: ValidationError,
    ) -> Any:
        """The answer repaired and validated, or the `ModelRetry` (or `original`) that re-asks the model."""
        if state.repair is RepairMode.OFF:
            raise original
        response = sum(isinstance(m, ModelResponse) for m in ctx.messages)
        cls = output_context.output_type
        outcome = repair_output(output, cls)
        if outcome.syntax_error is not None:
            state.syntax_errors[response] = outcome.syntax_error
        value: Any = outcome.value
        coercions: tuple[Coercion, ...] = ()
        if state.repair is RepairMode.LENIENT and _is_model(cls):
            reading = toward_schema(value, cls) if outcome.usable else _from_text(output, cls)
            if reading is not None and reading.problem is not None:
                raise ModelRetry(_ambiguous(reading.problem))
            if reading is not None:
                value, coercions = reading.value, reading.coercions
        if not outcome.usable and not coercions:
            raise ModelRetry(_refusal(outcome))
        if not outcome.changes and not coercions:
            raise original  # valid JSON that no schema-aware step fits: pydantic-ai's own feedback
        try:
            validated = await handler(json.dumps(value))
        except ValidationError as exc:
            raise ModelRetry(_rejected(outcome, exc)) from exc
        notes, ignored = _coercions(value, validated)
        if ignored:
            # A key the schema lacks, in a value a repair produced: text may have been misread into it.
            raise ModelRetry(_ignored(outcome, ignored))
        state.repairs[response] = [*outcome.changes, *(str(c) for c in coercions), *notes]
        if coercions:
            state.coercions[response] = list(coercions)
        return validated


def cut_off_feedback(max_tokens: int | None) -> str:
    """The re-ask for an answer the output token limit cut off: a shorter answer, not the same one mended."""
    limit = f" (max_tokens={max_tokens})" if max_tokens else ""
    return (
        f"Your answer was cut off at the token limit{limit}; give a shorter answer that fits: only the complete "
        "JSON value that matches the schema, with shorter values where it allows."
    )


def _cut_off(ctx: RunContext[Any]) -> bool:
    """Whether the answer being validated stopped at the output token limit (`finish_reason: length`)."""
    for message in reversed(ctx.messages):
        if isinstance(message, ModelResponse):
            return message.finish_reason == "length"
    return False


def _incomplete_json(error: ValidationError) -> bool:
    return any(detail["type"] == "json_invalid" for detail in error.errors(include_url=False))


def _from_text(output: str | dict[str, Any], cls: type[BaseModel]) -> LenientReading | None:
    return from_text(output, cls) if isinstance(output, str) else None


def _coercions(sent: Any, validated: Any, limit: int = 10) -> tuple[list[str], list[str]]:
    """What validation changed in a repaired value: its lax coercions, and the keys the schema ignored."""
    if not isinstance(validated, BaseModel):
        return [], []
    found: list[str] = []
    ignored: list[str] = []
    _diff(sent, validated.model_dump(mode="json", by_alias=True), "", found, ignored)
    return found[:limit], ignored


def _diff(sent: Any, kept: Any, path: str, found: list[str], ignored: list[str]) -> None:
    if isinstance(sent, dict) and isinstance(kept, dict):
        for key, value in sent.items():
            where = f"{path}.{key}" if path else str(key)
            if key not in kept:
                ignored.append(where)
            else:
                _diff(value, kept[key], where, found, ignored)
    elif isinstance(sent, list) and isinstance(kept, list) and len(sent) == len(kept):
        for index, (a, b) in enumerate(zip(sent, kept, strict=True)):
            _diff(a, b, f"{path}[{index}]", found, ignored)
    elif type(sent) is not type(kept) or sent != kept:
        found.append(f"coerced {path or 'the value'!r} from {sent!r} to {kept!r}")


def _ignored(outcome: RepairOutcome, keys: list[str]) -> str:
    head = f"Your answer is not valid JSON ({outcome.syntax_error}). " if outcome.syntax_error else ""
    named = ", ".join(repr(k) for k in keys[:5])
    return (
        f"{head}Read leniently, it has keys the schema does not have ({named}), so part of its text may "
        "have been misread. Answer again with only the JSON value that matches the schema."
    )


def _ambiguous(problem: str) -> str:
    return (
        f"Your answer can be read in more than one way: {problem}. Answer again with only the JSON value "
        "that matches the schema."
    )


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
