"""The errors of durable runs: why a recorded run cannot be resumed, found, read or approved as asked.

Each is raised before anything of the run is executed or written, so the stored run stays exactly as
it was. They are usage errors (the command line prints them as one line, exit status 2): the fix is
the developer's or the operator's (add a migration, pick an existing run id, say where to resume).
Each carries the `run_id` and its own structured attributes, and its message says the fix.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from atomtask.system.errors import SourceLocation, UsageError

__all__ = [
    "ApprovalError",
    "CorruptCheckpointError",
    "MigrationError",
    "ResumeStepMissingError",
    "RunError",
    "RunNotFoundError",
]


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
    """A decision cannot be given: the run is not waiting for one (it finished, failed, or runs a task).

    Attributes:
        status: the run's status now (`COMPLETE`, `FAILED`, `RUNNING`, ...).
        step: the step the run is at, when known.
    """

    def __init__(self, run_id: str, *, status: str, step: str | None = None) -> None:
        self.status = status
        self.step = step
        at = f" at step {step!r}" if step is not None else ""
        fix = "`atomtask workflow runs` shows which runs are WAITING"
        super().__init__(
            f"Run {run_id!r} is {status}{at}, not waiting for an approval; nothing was decided. {fix[0].upper()}"
            f"{fix[1:]}.",
            run_id=run_id,
            fix=fix,
        )
