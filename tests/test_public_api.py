"""The public API is exported from one place and does not change by accident."""

from __future__ import annotations

import atomtask

EXPECTED = [
    "ApprovalDecision",
    "ApprovalError",
    "AssociativeMatchResult",
    "AtomTaskError",
    "AtomicTaskExecutor",
    "Attempt",
    "BaseHandler",
    "BatchInputError",
    "BatchItemError",
    "BatchItemResult",
    "BatchNotFoundError",
    "BatchRun",
    "CachePolicy",
    "Coercion",
    "ConfigurationError",
    "CorruptCheckpointError",
    "DuplicateNameError",
    "DurableRunsUnavailableError",
    "FailureReason",
    "LLMInteractionManager",
    "MatchItem",
    "MemoryContext",
    "MemorySystem",
    "Migration",
    "MigrationError",
    "ModelChoice",
    "ModelRegistry",
    "OutputFormat",
    "OutputMode",
    "OutputRepair",
    "ParamSpec",
    "PartialOutput",
    "ProviderRetries",
    "RepairMode",
    "ResponseCache",
    "ResumeStepMissingError",
    "RunError",
    "RunExistsError",
    "RunInfo",
    "RunNotFoundError",
    "RunStateError",
    "SchemaError",
    "SexpEvalError",
    "SexpSyntaxError",
    "SexpTaskFailedError",
    "SexpWorkflowFailedError",
    "SourceLocation",
    "Step",
    "StepVisit",
    "SubtaskRequest",
    "TaskError",
    "TaskFailedError",
    "TaskNotes",
    "TaskResult",
    "TaskStatus",
    "TaskStream",
    "TaskSystem",
    "Template",
    "TemplateError",
    "TemplateLimits",
    "TemplateNotFoundError",
    "TemplateRegistry",
    "TraceSettings",
    "UsageError",
    "UsageNotes",
    "Workflow",
    "WorkflowError",
    "WorkflowFailedError",
    "WorkflowFailureReason",
    "WorkflowRegistry",
    "WorkflowResult",
    "__version__",
]


def test_all_is_pinned_and_sorted() -> None:
    """`atomtask.__all__` is exactly the reviewed list, sorted."""
    assert EXPECTED == atomtask.__all__
    assert sorted(atomtask.__all__) == atomtask.__all__


def test_every_exported_name_exists() -> None:
    """Each name in `__all__` is importable from the package."""
    missing = [name for name in atomtask.__all__ if not hasattr(atomtask, name)]
    assert [] == missing


def test_failure_reasons_are_the_documented_set() -> None:
    """The fixed set of failure reasons callers branch on."""
    assert {
        "template_not_found",
        "input_validation_failure",
        "output_validation_failure",
        "provider_error",
        "usage_limit_exceeded",
        "configuration_error",
        "unexpected_error",
    } == {reason.value for reason in atomtask.FailureReason}


def test_usage_errors_and_run_failures_have_separate_roots() -> None:
    """Usage errors derive from UsageError; TaskFailedError does not; all from AtomTaskError."""
    for cls in (
        atomtask.TemplateError,
        atomtask.SchemaError,
        atomtask.ConfigurationError,
        atomtask.DuplicateNameError,
        atomtask.TemplateNotFoundError,
    ):
        assert issubclass(cls, atomtask.UsageError)
    assert not issubclass(atomtask.TaskFailedError, atomtask.UsageError)
    assert issubclass(atomtask.TaskFailedError, atomtask.AtomTaskError)


def test_workflow_errors_follow_the_same_two_roots() -> None:
    """`WorkflowError` (every E11x check) is a usage error; `WorkflowFailedError` (a failed run) is not."""
    assert issubclass(atomtask.WorkflowError, atomtask.UsageError)
    assert not issubclass(atomtask.WorkflowFailedError, atomtask.UsageError)
    assert issubclass(atomtask.WorkflowFailedError, atomtask.AtomTaskError)


def test_run_errors_are_usage_errors_naming_their_run() -> None:
    """Refusals to resume, find or approve a durable run are usage errors (raised before anything runs)."""
    for cls in (
        atomtask.MigrationError,
        atomtask.RunNotFoundError,
        atomtask.CorruptCheckpointError,
        atomtask.ResumeStepMissingError,
        atomtask.ApprovalError,
    ):
        assert issubclass(cls, atomtask.RunError)
    assert issubclass(atomtask.RunError, atomtask.UsageError)


def test_workflow_failure_reasons_are_the_documented_set() -> None:
    """The fixed set of reasons a workflow run fails for."""
    assert {
        "input_validation_failure",
        "step_failed",
        "state_validation_failure",
        "expression_error",
        "max_visits_exceeded",
        "usage_limit_exceeded",
        "unexpected_error",
    } == {reason.value for reason in atomtask.WorkflowFailureReason}
