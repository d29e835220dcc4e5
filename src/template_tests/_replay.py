"""Replaying one case: its recorded answers through the real validation, repair and retry path, then its expectations.

The answers are given by a scripted pydantic-ai `FunctionModel` (`atomtask.testing.scripted_model`)
passed to `TaskSystem.execute`, so the template, the inputs, the output class, local repair and the
re-asking with validation feedback are exactly those of a real run. The template's retries are capped
at the recorded answers (a replay never asks for an answer nobody recorded).

What a failing case says comes from the attempts: the recorded answer the run ended on that the
current schema rejects (`answer 2 now rejected: ...`), an answer re-asked when recorded that is now
accepted, and the fields the current schema reads differently from the recorded `output` (values
compared in their JSON form: `field email was 'a', now null`).

`write_text` prints PASS/FAIL per case with why; `write_junit` writes JUnit XML (stdlib
`xml.etree`): one `<testsuite>` per cases file and one `<testcase>` per case (`classname` the
template, `file` and `line` where the case is), a failing case holding a `<failure>` whose message is
the first problem and whose text is the whole report of the case.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import attrs
from atomtask.errors import CasesFileError
from atomtask.system._results import Attempt, TaskResult
from atomtask.system._templates import OutputMode
from atomtask.template_tests._cases import Answer, Case, CaseFile, check_expectations

if TYPE_CHECKING:
    from atomtask._task_system import TaskSystem
    from atomtask.loading._template_registry import CompiledTemplate
    from atomtask.testing._replies import TextReply, ToolCallReply
    from atomtask.workflows._expressions import Expression

__all__ = [
    "CaseOutcome",
    "Difference",
    "PreparedCase",
    "case_lines",
    "differences",
    "prepare",
    "replay",
    "replay_retries",
    "shown",
    "subset_misses",
    "summary_line",
    "write_junit",
    "write_text",
]

_ABSENT: Any = attrs.NOTHING


@attrs.frozen(kw_only=True)
class Difference:
    """One place where two values differ: the dotted path, the value before and after (`NOTHING`: absent)."""

    path: str
    before: Any
    after: Any

    def __str__(self) -> str:
        where = f"field `{self.path}`" if self.path else "the output"
        if self.before is _ABSENT:
            return f"{where} is new: {shown(self.after)}"
        if self.after is _ABSENT:
            return f"{where} was {shown(self.before)}, now absent"
        return f"{where} was {shown(self.before)}, now {shown(self.after)}"


def shown(value: Any, limit: int = 80) -> str:
    """A value as JSON, cut to `limit` characters."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _same(a: Any, b: Any) -> bool:
    # `True == 1` in Python, but not in JSON; a float that equals an int is the same number.
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) else bool(a == b)


def differences(before: Any, after: Any, path: str = "") -> list[Difference]:
    """Where `after` differs from `before`, deepest places first-come (keys of `before`, then new keys)."""
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        out: list[Difference] = []
        for key in before:
            sub = f"{path}.{key}" if path else str(key)
            if key not in after:
                out.append(Difference(path=sub, before=before[key], after=_ABSENT))
            else:
                out.extend(differences(before[key], after[key], sub))
        for key in after:
            if key not in before:
                out.append(Difference(path=f"{path}.{key}" if path else str(key), before=_ABSENT, after=after[key]))
        return out
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [
            d for i, (b, a) in enumerate(zip(before, after, strict=True)) for d in differences(b, a, f"{path}[{i}]")
        ]
    return [] if _same(before, after) else [Difference(path=path, before=before, after=after)]


def subset_misses(expected: Any, actual: Any, path: str = "") -> list[str]:
    """What of `expected` `actual` does not hold: mappings by the keys given, lists item by item, scalars equal."""
    where = f"`{path}`" if path else "the output"
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return [f"{where} is {shown(actual)}, not a mapping"]
        misses: list[str] = []
        for key, value in expected.items():
            sub = f"{path}.{key}" if path else str(key)
            if key not in actual:
                misses.append(f"`{sub}` is absent (expected {shown(value)})")
            else:
                misses.extend(subset_misses(value, actual[key], sub))
        return misses
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{where} is {shown(actual)}, expected {len(expected)} item(s) like {shown(expected)}"]
        return [
            m
            for i, (e, a) in enumerate(zip(expected, actual, strict=True))
            for m in subset_misses(e, a, f"{path}[{i}]")
        ]
    return [] if _same(expected, actual) else [f"{where} is {shown(actual)}, expected {shown(expected)}"]


PYDANTIC_AI_DEFAULT_RETRIES = 1
"""The output retries of a template that sets none (pydantic-ai's default, which atomtask keeps)."""


@attrs.frozen(kw_only=True)
class PreparedCase:
    """A case checked against its template: the compiled template and the parsed predicates."""

    case: Case
    file: CaseFile
    compiled: CompiledTemplate
    predicates: tuple[Expression, ...]


@attrs.frozen(kw_only=True)
class CaseOutcome:
    """How one case went: passed or not, why (`problems`), what changed since recording (`changes`), `notes`."""

    prepared: PreparedCase
    passed: bool
    problems: tuple[str, ...] = ()
    changes: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    result: TaskResult[Any] | None = None

    @property
    def case(self) -> Case:
        return self.prepared.case

    @property
    def label(self) -> str:
        return f"{self.prepared.file.path}::{self.case.name}"


def prepare(file: CaseFile, system: TaskSystem) -> list[PreparedCase]:
    """Check each case of `file` against `system`'s templates: the template exists, the inputs fit, predicates parse."""
    from atomtask.errors import did_you_mean

    prepared: list[PreparedCase] = []
    for case in file.cases:
        if case.template not in system.templates:
            where = case.keys.get("template") or file.template_location or case.location
            names = system.templates.names()
            hint = did_you_mean(case.template, names) or f" Templates in {str(file.templates)!r}: {', '.join(names)}."
            raise CasesFileError(
                f"Case {case.name!r} names template {case.template!r}, which is not in {str(file.templates)!r}.{hint}",
                location=where,
            )
        compiled = system.templates.compiled(case.template)
        _check_inputs(case, compiled)
        predicates = _predicates(case)
        check_expectations(case, compiled, predicates)
        prepared.append(PreparedCase(case=case, file=file, compiled=compiled, predicates=predicates))
    return prepared


def _check_inputs(case: Case, compiled: CompiledTemplate) -> None:
    from pydantic import ValidationError

    try:
        compiled.inputs.validate_python(dict(case.inputs))
    except ValidationError as exc:
        declared = ", ".join(f"{n} ({s.type})" for n, s in compiled.template.params.items()) or "none"
        problems = []
        for err in exc.errors():
            param = ".".join(str(p) for p in err["loc"]) or "?"
            if err["type"] == "missing":
                problems.append(f"{param!r} is missing")
            elif err["type"] == "extra_forbidden":
                problems.append(f"{param!r} is not a parameter")
            else:
                problems.append(f"{param!r}: {err['msg']} (got {shown(err.get('input'), 40)})")
        raise CasesFileError(
            f"The inputs of case {case.name!r} do not fit template {compiled.name!r}: {'; '.join(problems)}. "
            f"Its parameters: {declared}.",
            location=case.where("inputs"),
        ) from None


def _predicates(case: Case) -> tuple[Expression, ...]:
    from atomtask.errors import WorkflowError
    from atomtask.workflows._expressions import parse_expression

    parsed = []
    for text in case.expect:
        try:
            parsed.append(parse_expression(text, roots=("output",)))
        except WorkflowError as exc:
            raise CasesFileError(
                f"`expect` of case {case.name!r}: {exc.message} A predicate reads `output` "
                "(`output.score >= 3 and len(output.items) > 0`).",
                location=case.where("expect"),
            ) from None
    return tuple(parsed)


def replay_retries(prepared: PreparedCase) -> int:
    """The template's output retries, capped so the replay asks for at most the recorded answers."""
    own = prepared.compiled.template.retries
    return max(0, min(PYDANTIC_AI_DEFAULT_RETRIES if own is None else own, len(prepared.case.answers) - 1))


def _reply(answer: Answer, compiled: CompiledTemplate) -> TextReply | ToolCallReply:
    from atomtask.testing._replies import TextReply, ToolCallReply

    kind = answer.kind
    if kind is None:
        kind = "tool_call" if compiled.output_cls is not None and compiled.output_mode is OutputMode.TOOL else "text"
    if kind == "tool_call":
        return ToolCallReply(answer.value, name=answer.tool)
    value = answer.value
    return TextReply(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


def replay(prepared: PreparedCase, system: TaskSystem) -> CaseOutcome:
    """Run the case's recorded answers through `system` and check what came out against its expectations."""
    from atomtask.testing._scripted import scripted_model

    case = prepared.case
    if not case.answers:
        problem = "no recorded answers: record them with `atomtask test --record --model MODEL`, or write `answers:`"
        return CaseOutcome(prepared=prepared, passed=False, problems=(problem,))
    model = scripted_model(*(_reply(a, prepared.compiled) for a in case.answers), model_name="recorded")
    result = system.execute(case.template, case.inputs, model=model, retries=replay_retries(prepared))
    return _judge(prepared, result)


def _judge(prepared: PreparedCase, result: TaskResult[Any]) -> CaseOutcome:
    case = prepared.case
    attempts = [a for a in result.notes.attempts if a.fault is None]
    recorded = len(case.answers)
    problems: list[str] = []
    changes: list[str] = []
    notes: list[str] = []
    if result.ok and len(attempts) < recorded:
        used = len(attempts)
        later = f"answer {recorded}" if recorded == used + 1 else f"answers {used + 1}-{recorded}"
        message = f"answer {used} now accepted (when recorded it was re-asked); {later} went unused"
        (changes if case.expect_failure else notes).append(message)
    if case.expect_failure is not None:
        if result.ok:
            problems.append(
                f"completed, but the case expects failure `{case.expect_failure}`; output: {shown(_json(result))}"
            )
        elif result.error is not None and result.error.reason.value != case.expect_failure:
            problems.append(
                f"failed with `{result.error.reason.value}`, expected `{case.expect_failure}`: {result.error.message}"
            )
        return _outcome(prepared, result, problems, changes, notes)
    if not result.ok:
        error = result.error
        problems.append(f"failed: {error.reason.value}: {error.message}" if error is not None else "failed")
        rejected = [a for a in attempts if _rejected(a)]
        if rejected:
            last = rejected[-1]
            if last.index == recorded:
                changes.append(f"answer {last.index} now rejected: {why_rejected(last)}")
            else:
                unused = (
                    f"answer {recorded} is"
                    if last.index + 1 == recorded
                    else f"answers {last.index + 1}-{recorded} are"
                )
                changes.append(
                    f"answer {last.index} now rejected: {why_rejected(last)}; the template re-asks at most "
                    f"{replay_retries(prepared)} time(s), so {unused} never reached"
                )
        return _outcome(prepared, result, problems, changes, notes)
    output = _json(result)
    if case.has_output:
        found = differences(case.output, output)
        if found:
            problems.append("the output differs from the recorded `output`")
            changes.extend(f"now read differently: {d}" for d in found)
    if case.has_subset:
        problems.extend(f"`expect_subset`: {m}" for m in subset_misses(case.expect_subset, output))
    problems.extend(_predicate_problems(prepared, output))
    return _outcome(prepared, result, problems, changes, notes)


def _outcome(
    prepared: PreparedCase, result: TaskResult[Any], problems: list[str], changes: list[str], notes: list[str]
) -> CaseOutcome:
    return CaseOutcome(
        prepared=prepared,
        passed=not problems,
        problems=tuple(problems),
        changes=tuple(changes),
        notes=tuple(notes),
        result=result,
    )


def _predicate_problems(prepared: PreparedCase, output: Any) -> list[str]:
    from atomtask.errors import ExpressionRuntimeError

    problems: list[str] = []
    for predicate in prepared.predicates:
        try:
            held = predicate.evaluate({"output": output})
        except ExpressionRuntimeError as exc:
            problems.append(f"`expect: {predicate.text}` could not be evaluated: {exc}")
            continue
        if not held:
            read = "; ".join(f"{p.text} is {shown(_read(p.root, p.parts, output))}" for p in predicate.paths)
            problems.append(f"`expect: {predicate.text}` is false" + (f" ({read})" if read else ""))
    return problems


def _read(root: str, parts: tuple[str | int, ...], output: Any) -> Any:
    from atomtask.errors import ExpressionRuntimeError
    from atomtask.workflows._expressions import read_path

    try:
        return read_path(output, parts, root)
    except ExpressionRuntimeError:
        return None


def _json(result: TaskResult[Any]) -> Any:
    import pydantic_core

    return pydantic_core.to_jsonable_python(result.parsedContent)


def _rejected(attempt: Attempt) -> bool:
    # An answer whose JSON could not be read nor repaired is rejected even when no validation error was noted.
    return bool(attempt.errors) or (attempt.parse_error is not None and not attempt.repairs)


def why_rejected(attempt: Attempt) -> str:
    """Why an answer was not accepted, in one line: its validation errors, or what was wrong with its JSON."""
    errors = attempt.errors
    if isinstance(errors, str):
        return errors
    if errors:
        parts = []
        for err in errors[:5]:
            loc = ".".join(str(p) for p in err.get("loc", ()))
            parts.append(f"`{loc}`: {err.get('msg')}" if loc else str(err.get("msg")))
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        return "; ".join(parts) + more
    return attempt.parse_error or "not accepted"


def case_lines(outcome: CaseOutcome) -> list[str]:
    """The report of one case: its status line, then its problems, changes since recording and notes."""
    case = outcome.case
    status = "PASS" if outcome.passed else "FAIL"
    lines = [f"{status} {outcome.label} [{case.template}] (line {case.location.line})"]
    lines.extend(f"    {problem}" for problem in outcome.problems)
    if outcome.changes:
        lines.append("    changed since recording:")
        lines.extend(f"      {change}" for change in outcome.changes)
    lines.extend(f"    note: {note}" for note in outcome.notes)
    return lines


def summary_line(outcomes: Sequence[CaseOutcome], files: int) -> str:
    passed = sum(1 for o in outcomes if o.passed)
    cases = f"{len(outcomes)} case{'s' if len(outcomes) != 1 else ''}"
    return f"{passed} passed, {len(outcomes) - passed} failed ({cases} in {files} file{'s' if files != 1 else ''})"


def write_text(outcomes: Sequence[CaseOutcome], files: int, out: TextIO, *, quiet: bool = False) -> None:
    """Every case's report (with `quiet`, the failing ones only), then the summary line."""
    for outcome in outcomes:
        if outcome.passed and quiet:
            continue
        print("\n".join(case_lines(outcome)), file=out)
    print(summary_line(outcomes, files), file=out)


def write_junit(outcomes: Sequence[CaseOutcome], path: Path) -> None:
    """Write the JUnit XML report of `outcomes` to `path`."""
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites", name="atomtask test")
    by_file: dict[str, list[CaseOutcome]] = {}
    for outcome in outcomes:
        by_file.setdefault(str(outcome.prepared.file.path), []).append(outcome)
    total = failures = 0
    for file, items in by_file.items():
        failed = sum(1 for o in items if not o.passed)
        total += len(items)
        failures += failed
        suite = ET.SubElement(
            root, "testsuite", name=file, tests=str(len(items)), failures=str(failed), errors="0", skipped="0"
        )
        for outcome in items:
            case = outcome.case
            duration = outcome.result.notes.duration_ms / 1000 if outcome.result is not None else 0.0
            testcase = ET.SubElement(
                suite,
                "testcase",
                classname=case.template,
                name=case.name,
                file=file,
                line=str(case.location.line or 0),
                time=f"{duration:.3f}",
            )
            if not outcome.passed:
                failure = ET.SubElement(
                    testcase,
                    "failure",
                    message=outcome.problems[0] if outcome.problems else "failed",
                    type="CaseFailed",
                )
                failure.text = "\n".join(case_lines(outcome))
    root.set("tests", str(total))
    root.set("failures", str(failures))
    root.set("errors", "0")
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
