"""The errors of durable runs: those of `atomtask.system.run_errors`, and the few only the engine raises.

Each names the run and says what to do. They are raised before anything is run or written, so the
stored run is left exactly as it was.
"""

from __future__ import annotations

from atomtask.system.errors import ConfigurationError
from atomtask.system.run_errors import (
    ApprovalError,
    CorruptCheckpointError,
    MigrationError,
    ResumeStepMissingError,
    RunError,
    RunNotFoundError,
)

__all__ = [
    "ApprovalError",
    "CorruptCheckpointError",
    "DurableRunsUnavailableError",
    "MigrationError",
    "RedactedInputsError",
    "ResumeStepMissingError",
    "RunError",
    "RunExistsError",
    "RunNotFoundError",
    "RunStateError",
    "RunStoreError",
]


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
