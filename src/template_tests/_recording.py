"""`atomtask test --record`: ask a real model for each case's answers and write them into the cases file.

Only the `answers` of the recorded cases change (and, for a case with no expectation at all, an
`output:` is added, or `expect_failure: <reason>` when the run failed): a hand-written `output`,
`expect`, `expect_subset` or `expect_failure` is never rewritten, so the replay after recording says
honestly whether the new answers still meet it. A failed run is written only when replaying its answers
fails for the same reason (the model's answers were rejected, a tool raised, ...); a failure the answers
cannot reproduce (a provider error, a missing key, a limit) is refused, with the reason, and the case
is left as it was. The rest of the file, its comments and its layout (flow or block style) stay as they
are, byte for byte. PyYAML keeps no comments, so the file is edited as text at the lines of those keys
(found from the composed YAML nodes), then read back and compared with what was recorded before it is
written. A recording asks the model: the response cache is off for it.

**Redacted values.** A template that a workflow's step runs to fill a `redact: true` state field (or
whose parameter a step fills from one) records what would be redacted as `"[redacted]"`, the run
store's marker: the value at each such answer path (in the recorded answers and in the `output:`
written), and any text of a redacted parameter's value (or of such an answer value) that an answer
quotes. The case then replays with the marker in place of the value. When it cannot (a redacted field
that is not a string: the marker does not validate), the case is refused with the reason, and its
answers are to be written by hand with a stand-in value.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import yaml
from atomtask.errors import CasesFileError
from atomtask.system._templates import OutputMode
from atomtask.template_tests._cases import Answer, read_case_text

if TYPE_CHECKING:
    from atomtask._task_system import TaskSystem
    from atomtask.system._results import TaskResult
    from atomtask.template_tests._replay import PreparedCase
    from atomtask.workflows._compiled import CompiledStep

__all__ = ["Recording", "Redaction", "record_case", "redaction_of", "rewrite_cases"]


@attrs.frozen(kw_only=True)
class Recording:
    """What one case's real run gave: the answers to write, the output (when it is to be written), the result."""

    index: int
    answers: tuple[Any, ...]
    output: Any  # `attrs.NOTHING`: the case's `output` is left as it is
    result: TaskResult[Any]
    expect_failure: str | None = None
    """The failure reason to write as `expect_failure` (a failed run of a case that expected nothing)."""
    refused: str | None = None
    """Why nothing of this case is written: its run failed in a way its answers do not reproduce."""
    redacted: tuple[str, ...] = ()
    """The `redact: true` fields (`workflow.field`) whose values were written as `"[redacted]"`."""

    def updates(self) -> dict[str, Any]:
        keys: dict[str, Any] = {"answers": list(self.answers)}
        if self.output is not attrs.NOTHING:
            keys["output"] = self.output
        if self.expect_failure is not None:
            keys["expect_failure"] = self.expect_failure
        return keys


def record_case(
    prepared: PreparedCase, system: TaskSystem, model: str, model_settings: Mapping[str, Any] | None
) -> Recording:
    """Run the case's inputs on `model` and note every answer it gave, as the model sent it."""
    import pydantic_core

    case = prepared.case
    # Never from the cache (a hit has no answers to record), and nothing recorded goes into it.
    result = system.execute(case.template, case.inputs, model=model, model_settings=model_settings, cache=False)
    compiled = prepared.compiled
    tool_mode = compiled.output_cls is not None and compiled.output_mode is OutputMode.TOOL
    answers: list[Any] = []
    for attempt in result.notes.attempts:
        if attempt.raw_output is None:  # a provider fault: no answer to replay
            continue
        called = attempt.tool_name is not None
        if called == tool_mode:
            answers.append(attempt.raw_output)
        else:
            answers.append({"tool_call": attempt.raw_output} if called else {"text": attempt.raw_output})
    no_expectation = not (case.has_output or case.expect or case.has_subset or case.expect_failure)
    output: Any = attrs.NOTHING
    if result.ok and no_expectation:  # a hand-written expectation is never rewritten
        output = pydantic_core.to_jsonable_python(result.parsedContent)
    recording = Recording(index=case.index, answers=tuple(answers), output=output, result=result)
    hidden = redaction_of(system, case.template)
    if hidden:
        recording = _redacted(recording, hidden, case.inputs)
        if recording.redacted and result.error is None:
            unreplayed = _unreplayed(prepared, system, recording)
            if unreplayed is not None:
                return attrs.evolve(recording, refused=unreplayed)
    if result.error is None:
        return recording
    reason = result.error.reason.value
    unreproduced = _unreproduced(prepared, system, recording.answers, reason)
    if unreproduced is not None:
        message = result.error.message.rstrip(".")
        return attrs.evolve(recording, refused=f"the run failed with `{reason}` ({message}), and {unreproduced}")
    return attrs.evolve(recording, expect_failure=reason) if no_expectation else recording


def _unreproduced(prepared: PreparedCase, system: TaskSystem, answers: Sequence[Any], reason: str) -> str | None:
    """Why a run that failed with `reason` cannot be written: its answers, replayed, do not fail so; else None."""
    from atomtask.template_tests._replay import replay

    if not answers:
        return "the model gave no answer to record"
    case = attrs.evolve(
        prepared.case,
        answers=tuple(_answer(a) for a in answers),
        output=attrs.NOTHING,
        expect=(),
        expect_subset=attrs.NOTHING,
        expect_failure=reason,
    )
    outcome = replay(attrs.evolve(prepared, case=case, predicates=()), system)
    if outcome.passed:
        return None
    replayed = outcome.result.error if outcome.result is not None else None
    now = "complete" if replayed is None else f"fail with `{replayed.reason.value}`"
    return f"its {len(answers)} answer(s), replayed, {now}: the failure did not come from the model's answers"


@attrs.frozen(kw_only=True)
class Redaction:
    """What of one template's runs workflows keep secret (`redact: true` fields), as `redaction_of` finds it."""

    params: frozenset[str] = frozenset()
    """The template's parameters some step fills from a redacted field."""
    outputs: tuple[tuple[str, ...], ...] = ()
    """The paths in the template's answer some step writes to a redacted field (`()`: the whole answer)."""
    fields: tuple[str, ...] = ()
    """Those redacted fields, as `workflow.field`."""

    def __bool__(self) -> bool:
        return bool(self.params or self.outputs)


def redaction_of(system: TaskSystem, template: str) -> Redaction:
    """What the workflows of `system` keep secret of `template`'s runs: the parameters their steps fill from a
    `redact: true` field, and the answer paths they write to one."""
    params: set[str] = set()
    outputs: dict[tuple[str, ...], None] = {}
    fields: dict[str, None] = {}
    for name in system.workflows.names():
        compiled = system.workflows.compiled(name)
        hidden = compiled.redacted_fields
        if not hidden:
            continue
        for step in _steps(compiled.steps):
            if step.step.task != template:
                continue
            for field, parts in step.output_map:
                if field in hidden:
                    outputs[parts] = None
                    fields[f"{name}.{field}"] = None
            for param, value in step.inputs.items():
                read = {ref.parts[0] for ref in value.all_refs() if ref.root == "state" and ref.parts} & hidden
                if read:
                    params.add(param)
                    fields.update(dict.fromkeys(f"{name}.{field}" for field in sorted(map(str, read))))
    return Redaction(params=frozenset(params), outputs=tuple(outputs), fields=tuple(fields))


def _steps(steps: Sequence[CompiledStep]) -> Iterator[CompiledStep]:
    for step in steps:
        yield step
        yield from _steps(step.members)


def _redacted(recording: Recording, hidden: Redaction, inputs: Mapping[str, Any]) -> Recording:
    """`recording` with the values `hidden` names replaced by the run store's marker, in its answers and output."""
    import pydantic_core
    from atomtask.runs._checkpoints import secret_texts

    result = recording.result
    values: list[Any] = [inputs[p] for p in sorted(hidden.params) if p in inputs]
    found = pydantic_core.to_jsonable_python(result.parsedContent) if result.ok else None
    for raw in (found, *(_parsed(a) for a in recording.answers)):
        for path in hidden.outputs:
            value = _at(raw, path)
            if value is not attrs.NOTHING:
                values.append(value)
    if result.ok and found is None and () in hidden.outputs and result.content:
        values.append(result.content)  # a text answer that fills a redacted field
    texts = secret_texts(values, numbers=True)

    def scrub(value: Any) -> Any:
        return _scrub(value, texts, hidden.outputs)

    answers = tuple(_scrub_answer(a, scrub) for a in recording.answers)
    output = recording.output if recording.output is attrs.NOTHING else scrub(recording.output)
    if answers == recording.answers and output == recording.output:
        return recording
    return attrs.evolve(recording, answers=answers, output=output, redacted=hidden.fields)


def _unreplayed(prepared: PreparedCase, system: TaskSystem, recording: Recording) -> str | None:
    """Why answers with the marker in place of a redacted value cannot be written: they no longer replay; else None."""
    from atomtask.template_tests._replay import replay

    case = attrs.evolve(
        prepared.case,
        answers=tuple(_answer(a) for a in recording.answers),
        output=recording.output,
        expect=(),
        expect_subset=attrs.NOTHING,
        expect_failure=None,
    )
    outcome = replay(attrs.evolve(prepared, case=case, predicates=()), system)
    if outcome.passed:
        return None
    why = outcome.problems[0] if outcome.problems else "it fails"
    return (
        f"its answers fill redacted field(s) {', '.join(recording.redacted)}, and with `[redacted]` in place of the "
        f"value they no longer replay ({why}); write this case's answers by hand, with a stand-in value"
    )


def _parsed(answer: Any) -> Any:
    """A recorded answer's JSON value (its tool-call arguments or text, parsed), or None when it is not JSON."""
    raw = next(iter(answer.values())) if isinstance(answer, dict) else answer
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _at(value: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(value, dict) or part not in value:
            return attrs.NOTHING
        value = value[part]
    return value


def _scrub(value: Any, texts: Sequence[str], paths: Sequence[tuple[str, ...]]) -> Any:
    """`value` (a JSON value) with each of `paths` set to the marker and each of `texts` replaced by it in strings
    (a leaf that is not a string, a number, when its JSON text is one of them)."""
    from atomtask.runs._checkpoints import REDACTED, cut_out

    if () in paths:
        return REDACTED
    if isinstance(value, dict):
        return {key: _scrub(item, texts, [p[1:] for p in paths if p[:1] == (key,)]) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrub(item, texts, []) for item in value]
    if isinstance(value, str):
        return cut_out(value, texts)
    if value is not None and not isinstance(value, bool) and json.dumps(value) in texts:
        return REDACTED
    return value


def _scrub_answer(answer: Any, scrub: Callable[[Any], Any]) -> Any:
    """A recorded answer with redacted values replaced: as JSON where it is JSON (its other bytes kept when nothing
    changed), as text otherwise."""
    if isinstance(answer, dict):
        [(kind, inner)] = answer.items()
        return {kind: _scrub_answer(inner, scrub)}
    if not isinstance(answer, str):
        return scrub(answer)
    try:
        parsed = json.loads(answer)
    except ValueError:
        return scrub(answer)
    if not isinstance(parsed, dict | list):
        return scrub(answer)
    cleaned = scrub(parsed)
    return answer if cleaned == parsed else json.dumps(cleaned, ensure_ascii=False)


def _answer(raw: Any) -> Answer:
    """A recorded answer (as `Recording.answers` holds it) as the cases file reads it back."""
    if isinstance(raw, dict):
        [(kind, value)] = raw.items()
        return Answer(kind=kind, value=value)
    return Answer(kind=None, value=raw)


class _Dumper(yaml.SafeDumper):
    """Indents a list inside a mapping (`answers:` then `  - ...`), as people write it."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _render(key: str, value: Any) -> list[str]:
    text = yaml.dump(
        {key: value}, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=10**6
    )
    return text.rstrip("\n").split("\n")


def _end_line(lines: Sequence[str], mark: yaml.Mark) -> int:
    """The first line after a value that ends at `mark` (a block value ends where the next token starts)."""
    if mark.line >= len(lines) or not lines[mark.line][: mark.column].strip():
        return mark.line
    return mark.line + 1


def _kept_after(lines: Sequence[str], start: int, end: int, column: int) -> int:
    """`end`, moved up over the blank lines and the comments at the key's indentation that precede it.

    A block value ends where the next key starts; the comments and blank lines before that key belong
    to it (or to the next case), not to the value being replaced.
    """
    while end > start:
        line = lines[end - 1]
        stripped = line.lstrip()
        if stripped and not (stripped.startswith("#") and len(line) - len(stripped) <= column):
            break
        end -= 1
    return end


def _case_nodes(text: str) -> list[yaml.MappingNode]:
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if isinstance(root, yaml.MappingNode):
        for key, value in root.value:
            if key.value == "cases" and isinstance(value, yaml.SequenceNode):
                return [item for item in value.value if isinstance(item, yaml.MappingNode)]
    raise CasesFileError("The cases file changed while recording; run again.", location=None)


def rewrite_cases(text: str, path: Path, recordings: Sequence[Recording]) -> str:
    """`text` with each recorded case's `answers` (and `output` or `expect_failure`) replaced or added; checked by
    reading it back. A refused recording (`Recording.refused`) is not given here: it writes nothing."""
    lines = text.split("\n")
    nodes = _case_nodes(text)
    edits: list[tuple[int, int, list[str]]] = []  # (first line, line after, new lines), 0-based
    written: list[Recording] = []
    for recording in recordings:
        node = nodes[recording.index]
        if any(k.value == "output" for k, _ in node.value):  # a hand-written expectation is never rewritten
            recording = attrs.evolve(recording, output=attrs.NOTHING)
        written.append(recording)
        if node.flow_style:
            raise CasesFileError(
                "This case is written in flow style (`{...}`); write it as a block mapping (one key per line) "
                "so `--record` can write its answers.",
                location=_location(path, node.start_mark),
            )
        present = {k.value: (k, v) for k, v in node.value}
        column = node.value[0][0].start_mark.column
        for key, value in recording.updates().items():
            rendered = _render(key, value)
            if key in present:
                key_node, value_node = present[key]
                first = key_node.start_mark.line
                prefix = lines[first][: key_node.start_mark.column]
                end = _kept_after(lines, first + 1, _end_line(lines, value_node.end_mark), key_node.start_mark.column)
            else:  # `answers` right after `inputs` (where people write it), `output` / `expect_failure` at the end
                after_key, after = present["inputs"] if key == "answers" and "inputs" in present else node.value[-1]
                at = after_key.start_mark.line + 1
                first = end = _kept_after(lines, at, _end_line(lines, after.end_mark), column)
                prefix = " " * column
            new = [prefix + rendered[0]] + [" " * column + line for line in rendered[1:]]
            edits.append((first, end, new))
    # Bottom up, so the lines of the edits still to make do not move; of two insertions at one line,
    # the later (`output`) goes in first and ends up after `answers`.
    for _, (first, end, new) in sorted(enumerate(edits), key=lambda e: (e[1][0], e[0]), reverse=True):
        lines[first:end] = new
    updated = "\n".join(lines)
    _check_written(updated, path, written)
    return updated


def _location(path: Path, mark: yaml.Mark) -> Any:
    from atomtask.errors import SourceLocation

    return SourceLocation(file=str(path), line=mark.line + 1, column=mark.column + 1)


def _check_written(text: str, path: Path, recordings: Sequence[Recording]) -> None:
    """Read the edited text back: each recorded case must hold exactly what was recorded."""
    try:
        cases = read_case_text(text, path).cases
    except CasesFileError as exc:
        raise CasesFileError(
            f"Writing the recorded answers would break the file ({exc.message}); it was left unchanged. "
            "Write the case as a plain block mapping and record again.",
            location=exc.location,
        ) from None
    for recording in recordings:
        case = cases[recording.index]
        read = [a.value if a.kind is None else {a.kind: a.value} for a in case.answers]
        if (
            json.dumps(read) != json.dumps(list(recording.answers))
            or (recording.output is not attrs.NOTHING and json.dumps(case.output) != json.dumps(recording.output))
            or (recording.expect_failure is not None and case.expect_failure != recording.expect_failure)
        ):
            raise CasesFileError(
                f"Writing the recorded answers of case {case.name!r} would not read back as recorded; the file "
                "was left unchanged. Write the case as a plain block mapping and record again.",
                location=case.location,
            )
