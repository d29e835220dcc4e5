"""Every exception atomtask raises, in one place, and what its usage errors carry.

```
AtomTaskError
 +-- UsageError                 the developer's declaration or call is wrong; raised before any model call
 |    +-- TemplateError             a template: an undeclared placeholder, a bad parameter
 |    |    +-- ToolDeclarationError      a template's `tools`, under its `atomtask check` code (E130-E132)
 |    +-- SchemaError               a schema: an unknown name, a bad type string
 |    +-- ConfigurationError        settings: a model string, a provider package, a store
 |    |    +-- DurableRunsUnavailableError, RunStoreError
 |    +-- DuplicateNameError        a name already taken by another definition
 |    +-- TemplateNotFoundError     (also a LookupError)
 |    +-- WorkflowError             a workflow declaration, under its `atomtask check` code (E110-E125)
 |    |    +-- WorkflowDeclarationError, WorkflowNameError (+ WorkflowNotFoundError), WorkflowExpressionError
 |    |        (+ WorkflowExpressionLimitError),
 |    |        WorkflowPathError, WorkflowTypeError, WorkflowBindingError, WorkflowDataFlowError,
 |    |        WorkflowControlError, WorkflowCycleError, WorkflowParallelError, WorkflowMigrationError,
 |    |        WorkflowCallDeclarationError, WorkflowCallModuleError, WorkflowCallFunctionError,
 |    |        WorkflowCallSignatureError
 |    +-- RunError                  a durable run cannot go on as asked (carries `run_id`)
 |    |    +-- MigrationError, RunNotFoundError, CorruptCheckpointError, ResumeStepMissingError,
 |    |        ApprovalError, RunExistsError, RunIdError, RunStateError, RedactedInputsError
 |    +-- BatchInputError, BatchNotFoundError, CasesFileError, SexpSyntaxError
 |    +-- RepliesFileError          `python -m atomtask.testing serve --replies FILE`: a reply it cannot read
 |    +-- ScaffoldConflictError     `atomtask init` would overwrite files (carries their `paths`)
 +-- TaskFailedError            `TaskResult.unwrap()` on a FAILED result (carries the result)
 +-- WorkflowFailedError        `WorkflowResult.unwrap()` on a FAILED run (carries the result)
 +-- SexpEvalError              a script failed while it ran
      +-- SexpTaskFailedError, SexpWorkflowFailedError
ScriptError (a RuntimeError)    the scripted test model cannot answer
 +-- ScriptExhaustedError
DefaultModelWarning (a UserWarning)   no model is configured: the embedded synthetic model answers
```

Two roots of trouble, as in pydantic-ai: a *usage* error means the developer's template, schema, file
or call is wrong and is raised at load or registration time; a *run* failure (the model or provider
failed) is not raised by `execute` but reported in a FAILED result, and only `unwrap()` turns it into
an exception. Every class carries structured attributes (the location, near names, the run id, the
result), and every message says the fix. Signals that never leave atomtask (an expression that
cannot be evaluated at run time, a state write that does not validate) are private to their modules.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import attrs

if TYPE_CHECKING:
    from atomtask.system._results import TaskResult, WorkflowResult

__all__ = [
    "WORKFLOW_ERROR_CODES",
    "ApprovalError",
    "AtomTaskError",
    "BatchInputError",
    "BatchNotFoundError",
    "CasesFileError",
    "ConfigurationError",
    "CorruptCheckpointError",
    "DefaultModelWarning",
    "DuplicateNameError",
    "DurableRunsUnavailableError",
    "MigrationError",
    "RedactedInputsError",
    "RepliesFileError",
    "ResumeStepMissingError",
    "RunError",
    "RunExistsError",
    "RunIdError",
    "RunNotFoundError",
    "RunStateError",
    "RunStoreError",
    "ScaffoldConflictError",
    "SchemaError",
    "ScriptError",
    "ScriptExhaustedError",
    "SexpEvalError",
    "SexpSyntaxError",
    "SexpTaskFailedError",
    "SexpWorkflowFailedError",
    "SourceLocation",
    "TaskFailedError",
    "TemplateError",
    "TemplateNotFoundError",
    "ToolDeclarationError",
    "UsageError",
    "WorkflowBindingError",
    "WorkflowCallDeclarationError",
    "WorkflowCallFunctionError",
    "WorkflowCallModuleError",
    "WorkflowCallSignatureError",
    "WorkflowControlError",
    "WorkflowCycleError",
    "WorkflowDataFlowError",
    "WorkflowDeclarationError",
    "WorkflowError",
    "WorkflowExpressionError",
    "WorkflowExpressionLimitError",
    "WorkflowFailedError",
    "WorkflowMigrationError",
    "WorkflowNameError",
    "WorkflowNotFoundError",
    "WorkflowParallelError",
    "WorkflowPathError",
    "WorkflowTypeError",
    "did_you_mean",
    "join_sentences",
    "near_names",
    "plural",
]


@attrs.frozen(kw_only=True)
class SourceLocation:
    """Where a declaration came from: a file (or `<string>`), and a 1-based line and column."""

    file: str | None = None
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        parts = [self.file or "<string>"]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)


def near_names(name: str, candidates: Iterable[str], *, n: int = 3, cutoff: float = 0.6) -> list[str]:
    """Known names close to `name`, best first, compared case-insensitively."""
    by_folded: dict[str, str] = {}
    for candidate in candidates:
        by_folded.setdefault(candidate.lower(), candidate)
    matches = difflib.get_close_matches(name.lower(), list(by_folded), n=n, cutoff=cutoff)
    return [by_folded[m] for m in matches]


_E = TypeVar("_E", bound=Exception)


def in_source_order(errors: Iterable[_E]) -> list[_E]:
    """`errors` by where each is (line, then column); those without a `location` first, in their order."""

    def where(error: Exception) -> tuple[int, int]:
        location = getattr(error, "location", None)
        return (location.line or 0, location.column or 0) if location is not None else (0, 0)

    return sorted(errors, key=where)


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """A ` Did you mean 'x'?` suffix, or an empty string when nothing is close."""
    close = near_names(name, candidates)
    if not close:
        return ""
    if len(close) == 1:
        return f" Did you mean {close[0]!r}?"
    return " Did you mean " + " or ".join(repr(c) for c in close) + "?"


# A sentence already ends when its last character (before closing quotes and brackets) is one of these.
_ENDS = (".", "?", "!", "…")


def join_sentences(*parts: str) -> str:
    """Sentences joined by one space, each ending once: `("Publish it?", "Approve it")` is `Publish it? Approve it.`

    A part that already ends with `.`, `?` or `!` (before any closing quote, backtick or bracket) gets no
    period of its own, so quoted text never reads `Tides?.` or `text..`; empty parts are skipped.
    """
    ended = []
    for part in parts:
        text = part.strip()
        if text:
            ended.append(text if text.rstrip("\"'`)]»").endswith(_ENDS) else text + ".")
    return " ".join(ended)


def plural(count: int, noun: str) -> str:
    """`1 attempt`, `3 attempts` (a regular plural)."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


class AtomTaskError(Exception):
    """Base class of every exception atomtask raises."""


class UsageError(AtomTaskError):
    """The developer's declaration or call is wrong; raised before any model is called.

    Attributes:
        message: what is wrong and how to fix it.
        location: where the offending declaration is, when it came from a file or source text.
        suggestions: near names for "did you mean", best first.
    """

    def __init__(
        self,
        message: str,
        *,
        location: SourceLocation | None = None,
        suggestions: Iterable[str] = (),
    ) -> None:
        self.message = message
        self.location = location
        self.suggestions = list(suggestions)
        super().__init__(self._render())

    def _render(self) -> str:
        if self.location is None:
            return self.message
        return f"{self.location}: {self.message}"

    def with_location(self, location: SourceLocation | None) -> UsageError:
        """A copy of this error that points at `location` (kept when it already has one)."""
        if self.location is not None or location is None:
            return self
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.location = location
        Exception.__init__(clone, clone._render())
        return clone


class TemplateError(UsageError):
    """A template is invalid: an undeclared placeholder, a bad parameter, a malformed field."""


class ToolDeclarationError(TemplateError):
    """A template's tool cannot be used: its module or function is missing (E130), its parameters do not
    make a JSON Schema (E131), or two tools share a name (E132).

    Attributes:
        code: the `atomtask check` code.
        tool: the tool's reference as declared (`myshop.prices:lookup_price`, an MCP server's command or URL).
    """

    def __init__(
        self,
        message: str,
        *,
        code: str = "E130",
        tool: str | None = None,
        location: SourceLocation | None = None,
        suggestions: Iterable[str] = (),
    ) -> None:
        self.code = code
        self.tool = tool
        super().__init__(message, location=location, suggestions=suggestions)


class SchemaError(UsageError):
    """A schema is invalid or cannot be resolved: an unknown name, a bad type string."""


class ConfigurationError(UsageError):
    """Settings are wrong: an unknown provider in a model string, a missing provider package."""


class DuplicateNameError(UsageError):
    """A template or schema name is already taken by a different definition."""


class TemplateNotFoundError(UsageError, LookupError):
    """No template is registered under the requested name."""


class TaskFailedError(AtomTaskError):
    """Raised by `TaskResult.unwrap()` on a FAILED result; the whole result rides along.

    Attributes:
        result: the failed `TaskResult`, with its error, raw outputs and usage.
    """

    def __init__(self, result: TaskResult[Any]) -> None:
        self.result = result
        error = result.error
        detail = f"{error.reason.value}: {error.message}" if error is not None else "no error recorded"
        template = result.notes.template if result.notes is not None else "?"
        super().__init__(f"Task {template!r} failed ({detail})")


class WorkflowFailedError(AtomTaskError):
    """Raised by `WorkflowResult.unwrap()` on a FAILED run; the whole result rides along.

    Attributes:
        result: the failed `WorkflowResult`, with its error, state, visits and usage.
    """

    def __init__(self, result: WorkflowResult[Any]) -> None:
        self.result = result
        error = result.error
        at = f" at step {error.step!r}" if error is not None and error.step else ""
        detail = f"{error.reason.value}: {error.message}" if error is not None else "no error recorded"
        super().__init__(f"Workflow {result.workflow!r} failed{at} ({detail})")


class BatchInputError(UsageError):
    """An input item cannot be read: the file, the line, what is wrong and the fix.

    Attributes:
        line: the 1-based line of the input (a CSV file's header is line 1).
        fix: what to change.
    """

    def __init__(self, message: str, *, file: str, line: int | None, fix: str) -> None:
        self.line = line
        self.fix = fix
        super().__init__(f"{message} {fix}", location=SourceLocation(file=file, line=line))


class BatchNotFoundError(UsageError):
    """`--resume BATCH_ID` names no batch in the record.

    Attributes:
        batch_id: the id asked for.
    """

    def __init__(self, batch_id: str, *, known: list[str], db: str) -> None:
        self.batch_id = batch_id
        listed = f" Recent batches: {', '.join(known[:5])}." if known else " The record holds no batches yet."
        super().__init__(
            f"No batch {batch_id!r} in {db!r}.{did_you_mean(batch_id, known)}{listed} "
            "Run `atomtask batch NAME --input FILE` to start one (its id is printed in the summary)."
        )


class CasesFileError(UsageError):
    """A cases file is wrong: malformed YAML, an unknown key, an unknown template, inputs that do not fit."""


class RepliesFileError(UsageError):
    """A replies file of the fake provider (`serve --replies FILE`) is wrong: malformed, an unknown key, a bad value."""


class ScaffoldConflictError(UsageError):
    """`atomtask init` would overwrite files that exist; nothing was written.

    Attributes:
        paths: the existing files, in the order the scaffold writes them.
    """

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = list(paths)
        listed = ", ".join(repr(p) for p in self.paths)
        super().__init__(
            f"`atomtask init` would overwrite {plural(len(self.paths), 'existing file')}: {listed}. Nothing was "
            "written; choose an empty folder (`atomtask init DIR`), or pass `--force` to overwrite them."
        )


class DefaultModelWarning(UserWarning):
    """No model is configured, so the embedded `atomtask:synthetic` model answers (made-up, schema-valid values).

    Issued once per process, on the first task that runs on it; its text says how to configure a real
    model. `warnings.filterwarnings("ignore", category=DefaultModelWarning)` silences it.
    """


class ScriptError(RuntimeError):
    """A scripted reply can't be given; raised out of the agent run that asked for it."""


class ScriptExhaustedError(ScriptError):
    """The model was asked for more replies than were scripted."""

    def __init__(self, *, scripted: int) -> None:
        self.scripted = scripted
        super().__init__(
            f"The scripted model was asked for reply #{scripted + 1}, but only {scripted} were scripted. "
            "Add replies to `scripted_model(...)`."
        )


class RunError(UsageError):
    """A durable run cannot go on as asked.

    Attributes:
        run_id: the run concerned.
        fix: what to do about it (also at the end of the message), when there is one thing to do.
    """

    def __init__(
        self,
        message: str,
        *,
        run_id: str,
        fix: str | None = None,
        location: SourceLocation | None = None,
        suggestions: Iterable[str] = (),
    ) -> None:
        self.run_id = run_id
        self.fix = fix
        super().__init__(message, location=location, suggestions=suggestions)


class MigrationError(RunError):
    """A run's recorded state cannot become the current version's: no migration path, or it does not validate.

    Attributes:
        workflow: the workflow's name.
        from_version: the version the run was recorded under (None: recorded without one).
        to_version: the workflow's current version.
        fields: the state fields at fault, each with pydantic's (or the migration's) message.
        missing: the migration that is missing, as `(from, to)`, when a step of the chain is absent.
        applied: the migrations applied before the state was found invalid (`1.0 -> 1.1`, ...).
    """

    def __init__(
        self,
        message: str,
        *,
        run_id: str,
        workflow: str,
        from_version: str | None,
        to_version: str | None,
        fields: Sequence[tuple[str, str]] = (),
        missing: tuple[str | None, str | None] | None = None,
        applied: Sequence[str] = (),
        fix: str | None = None,
        location: SourceLocation | None = None,
    ) -> None:
        self.workflow = workflow
        self.from_version = from_version
        self.to_version = to_version
        self.fields = list(fields)
        self.missing = missing
        self.applied = list(applied)
        super().__init__(message, run_id=run_id, fix=fix, location=location)


class RunNotFoundError(RunError, LookupError):
    """No run is recorded under this id.

    Attributes:
        store: where it was looked for (a file path, or a database URL without its password).
    """

    def __init__(self, run_id: str, store: str, *, suggestions: Iterable[str] = ()) -> None:
        self.store = store
        near = list(suggestions)
        hint = f" Did you mean {' or '.join(repr(s) for s in near)}?" if near else ""
        fix = "list the runs with `atomtask workflow runs` (and the same `--db`)"
        super().__init__(
            f"No run {run_id!r} in {store}.{hint} {fix[0].upper() + fix[1:]}, or start one with "
            "`atomtask workflow run NAME --run-id ID`.",
            run_id=run_id,
            fix=fix,
            suggestions=near,
        )


class CorruptCheckpointError(RunError):
    """A run's recorded checkpoint cannot be read back (truncated, not JSON, a missing part).

    Attributes:
        step: the step whose checkpoint is broken, when known.
        problem: what was wrong with it.
    """

    def __init__(self, run_id: str, step: str | None, problem: str) -> None:
        self.step = step
        self.problem = problem
        at = f" at step {step!r}" if step else ""
        fix = "restore the run store from a backup, or start the run again under a new `--run-id`"
        super().__init__(
            f"The checkpoint of run {run_id!r}{at} cannot be read ({problem}); the run was left as it is. "
            f"{fix[0].upper() + fix[1:]}.",
            run_id=run_id,
            fix=fix,
        )


class ResumeStepMissingError(RunError):
    """The step a run stopped at no longer exists in the workflow's current version.

    Attributes:
        workflow: the workflow's name.
        step: the step id recorded in the run, gone now.
        from_version, to_version: the recorded and the current versions.
        steps: the current version's step ids.
    """

    def __init__(
        self,
        run_id: str,
        *,
        workflow: str,
        step: str,
        from_version: str | None,
        to_version: str | None,
        steps: Sequence[str],
        suggestions: Iterable[str] = (),
    ) -> None:
        self.workflow = workflow
        self.step = step
        self.from_version = from_version
        self.to_version = to_version
        self.steps = list(steps)
        near = list(suggestions)
        hint = f" Did you mean {' or '.join(repr(s) for s in near)}?" if near else ""
        fix = (
            f'say where to continue in the migration: `migrations: [{{from: "{from_version}", to: "{to_version}", '
            f"resume_at: {near[0] if near else 'STEP'}}}]`"
        )
        super().__init__(
            f"Run {run_id!r} of workflow {workflow!r} stopped at step {step!r}, which version {to_version!r} no "
            f"longer has.{hint} Steps now: {', '.join(steps)}. To resume it, {fix}.",
            run_id=run_id,
            fix=fix,
            suggestions=near,
        )


class ApprovalError(RunError):
    """A decision cannot be given: the run is not waiting for one (it finished, failed, or runs a task), or the
    approval it waits at was decided already (each visit of an approval step is decided once).

    Attributes:
        status: the run's status now (`COMPLETE`, `FAILED`, `RUNNING`, ...).
        step: the step the run is at, when known.
        decided: the decision that stands for that step visit (`approved`, `by`, `at`, `note`), when one does.
        expected: the step the decision was meant for (`approve --step`), when the run waits at another.
    """

    def __init__(
        self,
        run_id: str,
        *,
        status: str,
        step: str | None = None,
        decided: dict[str, Any] | None = None,
        expected: str | None = None,
    ) -> None:
        self.status = status
        self.step = step
        self.decided = decided
        self.expected = expected
        at = f" at step {step!r}" if step is not None else ""
        if expected is not None:
            fix = f"see the run with `atomtask workflow show {run_id}`, and decide for the step it waits at"
            super().__init__(
                f"Run {run_id!r} waits{at}, not at step {expected!r}: the decision for {expected!r} was not sent "
                f"(it was decided already, or the run has not reached it). To decide{at}, {fix[0].lower()}{fix[1:]}.",
                run_id=run_id,
                fix=fix,
            )
            return
        if decided is not None:
            approved = decided.get("approved")
            verdict = "decided" if approved is None else "approved" if approved else "rejected"
            by = f" by {decided['by']}" if decided.get("by") else ""
            when = f" at {decided['at']}" if decided.get("at") else ""
            fix = f"see the run with `atomtask workflow show {run_id}` (resume it if no process runs it)"
            super().__init__(
                f"Run {run_id!r}{at} was already {verdict}{by}{when}: that decision stands, and nothing more was "
                f"sent. Each visit of an approval step is decided once; {fix}.",
                run_id=run_id,
                fix=fix,
            )
            return
        fix = "`atomtask workflow runs` shows which runs are WAITING"
        super().__init__(
            f"Run {run_id!r} is {status}{at}, not waiting for an approval; nothing was decided. {fix[0].upper()}"
            f"{fix[1:]}.",
            run_id=run_id,
            fix=fix,
        )


class WorkflowError(UsageError):
    """A workflow declaration is wrong; `code` is its `atomtask check` code.

    Attributes:
        workflow: the workflow's name, when known.
        step: the id of the step at fault, when the mistake is in one step.
    """

    code: ClassVar[str] = "E110"
    #: The rule's short name, for `atomtask check --explain`.
    rule: ClassVar[str] = "workflow-invalid"

    def __init__(
        self,
        message: str,
        *,
        location: SourceLocation | None = None,
        suggestions: Iterable[str] = (),
        workflow: str | None = None,
        step: str | None = None,
    ) -> None:
        self.workflow = workflow
        self.step = step
        super().__init__(message, location=location, suggestions=suggestions)


class WorkflowDeclarationError(WorkflowError):
    """E110: the workflow's shape is wrong (unknown key, duplicate step id, bad state, bad model string)."""

    code = "E110"
    rule = "workflow-invalid"


class WorkflowNameError(WorkflowError):
    """E111: a step names a task or a sub-workflow that is not registered."""

    code = "E111"
    rule = "workflow-unknown-name"


class WorkflowNotFoundError(WorkflowNameError, LookupError):
    """E111: no workflow is registered under the requested name."""


class WorkflowExpressionError(WorkflowError):
    """E112: an expression or placeholder is outside the language (syntax, function, `{{item}}` out of a loop).

    Attributes:
        offset: the 0-based offset in the expression text where the problem starts, when known.
    """

    code = "E112"
    rule = "workflow-expression"
    offset: int | None = None


class WorkflowPathError(WorkflowError):
    """E113: a `state.x.y` path (in a placeholder or an expression) names no field of the state."""

    code = "E113"
    rule = "workflow-state-path"


class WorkflowTypeError(WorkflowError):
    """E114: types do not fit: an input against a parameter, an output against a state field, an operator."""

    code = "E114"
    rule = "workflow-type"


class WorkflowBindingError(WorkflowError):
    """E115: a required parameter is unbound, an input or output names nothing, `collect` is misused."""

    code = "E115"
    rule = "workflow-binding"


class WorkflowDataFlowError(WorkflowError):
    """E116: a step reads a field that no earlier step has written on some path, and it has no default."""

    code = "E116"
    rule = "workflow-data-flow"


class WorkflowControlError(WorkflowError):
    """E117: a route or `on_failure` target does not exist, a step is unreachable, a route entry is dead."""

    code = "E117"
    rule = "workflow-control"


class WorkflowCycleError(WorkflowError):
    """E118: a cycle of steps has no `max_visits` bound, or a workflow runs itself as a sub-workflow."""

    code = "E118"
    rule = "workflow-unbounded-cycle"


class WorkflowParallelError(WorkflowError):
    """E119: two steps of one `parallel` group write the same state field."""

    code = "E119"
    rule = "workflow-parallel-conflict"


class WorkflowMigrationError(WorkflowError):
    """E120: a `migrations:` entry is wrong: a broken version chain, a field or step it names, a value, a `call`."""

    code = "E120"
    rule = "workflow-migration"


class WorkflowCallDeclarationError(WorkflowError):
    """E121: a code step (`call:`) is declared wrong: beside `task`/`workflow`/`parallel`, with a key only a model
    task takes (`model`, `repair`, ...), or a reference not written `package.module:function`."""

    code = "E121"
    rule = "workflow-call-declaration"


class WorkflowCallModuleError(WorkflowError):
    """E122: a code step's module cannot be imported: it is outside the `importable` packages, or missing, or raised."""

    code = "E122"
    rule = "workflow-call-module"


class WorkflowCallFunctionError(WorkflowError):
    """E123: a code step's module has no function of that name (or the name is not callable)."""

    code = "E123"
    rule = "workflow-call-function"


class WorkflowCallSignatureError(WorkflowError):
    """E124: a code step's function cannot be checked: a parameter without a type, no return annotation,
    `*args`/`**kwargs` or positional-only parameters, or a type that cannot be validated."""

    code = "E124"
    rule = "workflow-call-signature"


class WorkflowExpressionLimitError(WorkflowExpressionError):
    """E125: an expression is too long or nests too deep to be read safely (refused before Python parses it).

    A `WorkflowExpressionError` too, so code catching that one still catches this; `offset` is where the
    expression goes too deep (the opener, or the first node past the limit), None for its whole length.
    """

    code = "E125"
    rule = "workflow-expression-too-large"


#: Every workflow error class by its check code (the first class of each code).
WORKFLOW_ERROR_CODES: dict[str, type[WorkflowError]] = {
    cls.code: cls
    for cls in (
        WorkflowDeclarationError,
        WorkflowNameError,
        WorkflowExpressionError,
        WorkflowPathError,
        WorkflowTypeError,
        WorkflowBindingError,
        WorkflowDataFlowError,
        WorkflowControlError,
        WorkflowCycleError,
        WorkflowParallelError,
        WorkflowMigrationError,
        WorkflowCallDeclarationError,
        WorkflowCallModuleError,
        WorkflowCallFunctionError,
        WorkflowCallSignatureError,
        WorkflowExpressionLimitError,
    )
}


class RunExistsError(RunError):
    """`run` was given the id of a run that already exists; carries its `status`."""

    def __init__(self, run_id: str, status: str) -> None:
        self.status = status
        fix = "give the new run another `--run-id`"
        if status in ("PENDING", "WAITING", "FAILED"):
            fix = f"resume it with `atomtask workflow resume {run_id}`, or {fix}"
        super().__init__(
            f"Run {run_id!r} already exists ({status}). {fix[0].upper()}{fix[1:]}.", run_id=run_id, fix=fix
        )


class RunIdError(RunError):
    """A run id that cannot name a run: empty, too long, with whitespace or control characters, or with `~` (the
    separator of a run's later segments, `RUN_ID~2`). Raised before anything is stored.

    Attributes:
        rule: the rule the id breaks, in a few words.
    """

    def __init__(self, run_id: str, rule: str, fix: str) -> None:
        self.rule = rule
        shown = run_id if len(run_id) <= 60 else run_id[:40] + "..."
        super().__init__(f"Run id {shown!r} cannot be used: {rule}. {fix[0].upper()}{fix[1:]}.", run_id=run_id, fix=fix)


class RunStateError(RunError):
    """The run cannot do what was asked in its current status (resume a run that has ended, ...)."""

    def __init__(self, run_id: str, status: str, message: str) -> None:
        self.status = status
        super().__init__(message, run_id=run_id)


class DurableRunsUnavailableError(ConfigurationError):
    """Durable runs need the `durable` extra (DBOS), which is not installed."""

    def __init__(self) -> None:
        super().__init__(
            "Durable runs (run ids, resume) need DBOS: install the extra with `pip install 'atomtask[durable]'`."
        )


class RedactedInputsError(RunError):
    """A run to resume needs the values of its `redact: true` fields again (they were never stored)."""

    def __init__(self, run_id: str, missing: list[str]) -> None:
        self.missing = list(missing)
        given = " ".join(f"-i {name}=..." for name in self.missing)
        fix = f"give them again: `atomtask workflow resume {run_id} {given}` (Python: `inputs=`)"
        super().__init__(
            f"Run {run_id!r} needs its redacted field(s) {', '.join(map(repr, self.missing))} again, which are "
            f"never stored; {fix}.",
            run_id=run_id,
            fix=fix,
        )


class RunStoreError(ConfigurationError):
    """The run store cannot be opened: a missing folder, a file that is no database, a server that does not answer.

    Attributes:
        store: the store's address (a file path, or a database URL without its password).
        problem: what went wrong, in one line.
        fix: what to do about it.
    """

    def __init__(self, store: str, problem: str, fix: str) -> None:
        self.store = store
        self.problem = problem
        self.fix = fix
        super().__init__(f"The run store {store} cannot be opened: {problem}. Fix: {fix}.")


class SexpSyntaxError(UsageError):
    """S-expression source that cannot be read: an unclosed `(`, a stray `)`, a bad string or escape."""


class SexpEvalError(AtomTaskError):
    """A script failed while being evaluated: an unbound symbol, a bad special form, a missing field.

    Attributes:
        message: what is wrong and how to fix it.
        location: the file, line and column of the form being evaluated.
    """

    def __init__(self, message: str, *, location: SourceLocation | None = None) -> None:
        self.message = message
        self.location = location
        super().__init__(f"{location}: {message}" if location is not None else message)


class SexpTaskFailedError(SexpEvalError):
    """`(unwrap r)` met a FAILED `TaskResult`; the whole result (error, raw outputs, usage) rides along.

    Attributes:
        result: the failed `TaskResult`.
    """

    def __init__(self, message: str, *, result: TaskResult[Any], location: SourceLocation | None = None) -> None:
        self.result = result
        super().__init__(message, location=location)


class SexpWorkflowFailedError(SexpEvalError):
    """`(unwrap r)` met a FAILED `WorkflowResult`; the whole run (error, state, step visits, usage) rides along.

    Attributes:
        result: the failed `WorkflowResult`.
    """

    def __init__(self, message: str, *, result: WorkflowResult[Any], location: SourceLocation | None = None) -> None:
        self.result = result
        super().__init__(message, location=location)


# -- Signals inside atomtask ------------------------------------------------------------------------------
# Raised and caught inside atomtask, never out of it: each becomes a usage error, a finding or a FAILED
# result that says what happened. One more lives beside the code it signals through, because it must
# subclass what it goes through: the ledger's `EmptyAnswerError` (pydantic-ai's `ModelAPIError`, so its
# retry machinery takes an empty answer as a provider fault).


class Suspended(BaseException):
    """A provider batch's run ended while its request waits in a provider batch (`system.Batching.suspend`).

    Carries the run's messages (pydantic-ai `ModelMessage`s), which end in the suspended response naming
    the batch: a run given them back (`Batching.history`) waits for the same batch instead of sending the
    request again; and the model that runs it, with the attempts of the models tried before it. Raised by
    the handler, caught by the batch engine (`batch._provider`). A `BaseException`, so that no layer on its
    way (the executor, a workflow step) takes it for a failed task.
    """

    def __init__(self, template: str, messages: list[Any], *, model: str, attempts: list[Any]) -> None:
        super().__init__(f"template {template!r}: its request waits in a provider batch")
        self.template = template
        self.messages = messages
        self.model = model  # the model (label) whose run suspended
        self.attempts = attempts  # the ledger of the models tried before it (`Attempt`s)


class ExpressionRuntimeError(Exception):
    """An expression could not be evaluated on this state (a null in arithmetic, a division by zero).

    `missing` is True when what failed is a value not there yet (a null, a field no step has written):
    the fix is to give it a value, not to change the expression.
    """

    def __init__(self, message: str, *, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing


class ExpressionTypeError(Exception):
    """An expression's operands do not fit its operator; `offset` is where, in the expression text."""

    def __init__(self, message: str, offset: int) -> None:
        self.message = message
        self.offset = offset
        super().__init__(message)


class StateWriteError(Exception):
    """A value did not fit its state field; carries the field, the value and pydantic's first message."""

    def __init__(self, field: str, value: Any, problem: str) -> None:
        self.field = field
        self.value = value
        self.problem = problem
        text = repr(value)
        shown = text if len(text) <= 120 else text[:117] + "..."
        super().__init__(f"`state.{field}` cannot be {shown}: {problem}")


class ProblemReported(Exception):
    """A workflow check noted a problem (to be reported with the others); the check that met it stops there."""


class RenderError(Exception):
    """A `{{param.field}}` path does not exist in the value given (reported as an input failure).

    Attributes:
        placeholder: the placeholder as written (`{{contact.emial}}`).
        param: the parameter it reads.
        missing: the field the value does not have.
        available: the fields it has.
    """

    def __init__(self, placeholder: str, param: str, missing: str, available: Sequence[str]) -> None:
        self.placeholder = placeholder
        self.param = param
        self.missing = missing
        self.available = list(available)
        listing = ", ".join(self.available) or "none"
        super().__init__(
            f"Placeholder {placeholder!r}: the value of {param!r} has no field {missing!r} (available: {listing})"
        )
