"""The errors of durable runs: each names the run, carries its facts as attributes, and says the fix."""

from __future__ import annotations

import pytest
from atomtask import (
    ApprovalError,
    CorruptCheckpointError,
    MigrationError,
    ResumeStepMissingError,
    RunError,
    RunNotFoundError,
    UsageError,
)


def test_migration_error_carries_the_run_the_versions_and_the_fields() -> None:
    """A refused migration keeps the structured facts the message is built from."""
    error = MigrationError(
        "cannot migrate",
        run_id="r1",
        workflow="w",
        from_version="1.0",
        to_version="1.1",
        fields=[("score", "Input should be a valid integer")],
        missing=("1.0", "1.1"),
        applied=["0.9 -> 1.0"],
        fix="add a migration",
    )
    assert ("r1", "w", "1.0", "1.1") == (error.run_id, error.workflow, error.from_version, error.to_version)
    assert ([("score", "Input should be a valid integer")], ("1.0", "1.1")) == (error.fields, error.missing)
    assert (["0.9 -> 1.0"], "add a migration", "cannot migrate") == (error.applied, error.fix, str(error))


def test_run_not_found_names_the_store_and_the_command_that_lists_runs() -> None:
    """The message says where it looked, near ids, and `atomtask workflow runs`."""
    error = RunNotFoundError("run-42", "/tmp/runs.sqlite", suggestions=["run-41"])
    assert ("run-42", "/tmp/runs.sqlite", ["run-41"]) == (error.run_id, error.store, error.suggestions)
    assert "No run 'run-42' in /tmp/runs.sqlite. Did you mean 'run-41'?" in str(error)
    assert "`atomtask workflow runs`" in str(error)
    assert isinstance(error, LookupError)


def test_corrupt_checkpoint_says_which_step_and_what_was_wrong() -> None:
    """The step and the problem are attributes and appear in the message; the run is said to be untouched."""
    error = CorruptCheckpointError("r1", "review", "not JSON")
    assert ("review", "not JSON") == (error.step, error.problem)
    assert "The checkpoint of run 'r1' at step 'review' cannot be read (not JSON); the run was left as it is." in str(
        error
    )


def test_resume_step_missing_suggests_resume_at_with_the_versions() -> None:
    """A step gone in the new version is named, with the steps now and the `resume_at:` to add."""
    error = ResumeStepMissingError(
        "r1", workflow="w", step="revise", from_version="1.0", to_version="1.1", steps=["write", "review"],
        suggestions=["review"],
    )  # fmt: skip
    assert ("revise", ["write", "review"]) == (error.step, error.steps)
    assert "stopped at step 'revise', which version '1.1' no longer has. Did you mean 'review'?" in str(error)
    assert '`migrations: [{from: "1.0", to: "1.1", resume_at: review}]`' in str(error)


def test_approval_error_names_the_status() -> None:
    """Approving a run that is not waiting says what it is doing instead."""
    error = ApprovalError("r1", status="COMPLETE")
    assert "Run 'r1' is COMPLETE, not waiting for an approval; nothing was decided." in str(error)
    assert "WAITING" in (error.fix or "")


@pytest.mark.parametrize(
    "error",
    [
        RunNotFoundError("r", "db"),
        CorruptCheckpointError("r", None, "truncated"),
        ApprovalError("r", status="RUNNING", step="s"),
        MigrationError("m", run_id="r", workflow="w", from_version=None, to_version="1"),
    ],
)
def test_every_run_error_is_a_usage_error_with_its_run_id(error: RunError) -> None:
    """The command line prints them as usage errors; each carries `run_id`."""
    assert isinstance(error, UsageError)
    assert "r" == error.run_id


@pytest.mark.parametrize(
    ("parts", "joined"),
    [
        (("Publish Tides?", "Approve it"), "Publish Tides? Approve it."),
        (("without surrounding text.", "Raise `retries`"), "without surrounding text. Raise `retries`."),
        (("Stop!", "", "Go on."), "Stop! Go on."),
        (("It said 'done.'", "Next"), "It said 'done.' Next."),
        (("Name `x`", "(see `y`.)"), "Name `x`. (see `y`.)"),
    ],
)
def test_join_sentences_ends_each_sentence_once(parts: tuple[str, ...], joined: str) -> None:
    """Quoted text that ends a sentence itself (`?`, `!`, `.`) gets no period of its own: no `?.` or `..`."""
    from atomtask.errors import join_sentences

    assert joined == join_sentences(*parts)
