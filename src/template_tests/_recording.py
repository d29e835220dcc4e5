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
written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
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

__all__ = ["Recording", "record_case", "rewrite_cases"]


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
    result = system.execute(case.template, case.inputs, model=model, model_settings=model_settings)
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
