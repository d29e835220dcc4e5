"""What a batch gives back: one `BatchItemResult` per item, and the errors of a batch that cannot run.

A `BatchItemResult` is the JSON line `atomtask batch` writes per item (`id`, `status`, `output`,
`error`, `usage`, `attempts`) and what `TaskSystem.batch` yields. `output` is the validated value in
its JSON form (a template's output, a workflow's final state), so it is the same whether the item ran
now or was read back from the durable record. Bad input (a line that is not a JSON object, a CSV row
of the wrong width, a missing `--id-field`) is a `BatchInputError` naming the line and the fix.
"""

from __future__ import annotations

from typing import Any

from atomtask.system.errors import SourceLocation, UsageError
from atomtask.system.results import TaskStatus, UsageNotes
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["BatchInputError", "BatchItemError", "BatchItemResult", "BatchNotFoundError"]


class BatchItemError(BaseModel):
    """Why one item failed: the reason (a `FailureReason` or `WorkflowFailureReason` value) and the message."""

    model_config = ConfigDict(frozen=True)

    reason: str
    message: str


class BatchItemResult(BaseModel):
    """One item of a batch, finished: COMPLETE with its `output`, or FAILED with an `error`.

    Attributes:
        id: the item's id (its `id` field, `--id-field`, else `item-<hash of its inputs>`).
        status: COMPLETE or FAILED.
        output: the validated value in JSON form (None when FAILED).
        error: the reason and message (None when COMPLETE).
        usage: tokens, requests and cost the item spent when it ran (kept by the record).
        attempts: how many model answers and provider faults the item went through.
        index: the item's 0-based position in the input (not written to the JSON line).
        resumed: True when the result was read from the durable record, not run now (not written either).
    """

    id: str
    status: TaskStatus
    output: Any = None
    error: BatchItemError | None = None
    usage: UsageNotes = Field(default_factory=UsageNotes)
    attempts: int = 0
    index: int = Field(default=0, exclude=True)
    resumed: bool = Field(default=False, exclude=True)

    @property
    def ok(self) -> bool:
        """True when the item is COMPLETE."""
        return self.status == TaskStatus.COMPLETE

    def json_line(self) -> str:
        """The item's line of a results file (no newline): `id`, `status`, `output`, `error`, `usage`, `attempts`."""
        return self.model_dump_json()


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
        from atomtask.system.errors import did_you_mean

        listed = f" Recent batches: {', '.join(known[:5])}." if known else " The record holds no batches yet."
        super().__init__(
            f"No batch {batch_id!r} in {db!r}.{did_you_mean(batch_id, known)}{listed} "
            "Run `atomtask batch NAME --input FILE` to start one (its id is printed in the summary)."
        )
