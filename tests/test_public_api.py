"""The public API is exported from one place and does not change by accident."""

from __future__ import annotations

import atomtask

EXPECTED = [
    "ApprovalDecision",
    "ApprovalError",
    "AssociativeMatchResult",
    "AtomTaskError",
    "Attempt",
    "BatchInputError",
    "BatchItemResult",
    "BatchNotFoundError",
    "BatchRun",
    "CachePolicy",
    "CasesFileError",
    "Coercion",
    "ConfigurationError",
    "CorruptCheckpointError",
    "DefaultModelWarning",
    "DuplicateNameError",
    "DurableRunsUnavailableError",
    "Estimate",
    "FailureReason",
    "MatchItem",
    "MediaNote",
    "MemoryContext",
    "MemorySystem",
    "Migration",
    "MigrationError",
    "OutputFormat",
    "OutputMode",
    "ParamSpec",
    "PartialOutput",
    "ProviderRetries",
    "RedactedInputsError",
    "RepairMode",
    "RepliesFileError",
    "ResponseCache",
    "ResumeStepMissingError",
    "RunError",
    "RunExistsError",
    "RunIdError",
    "RunInfo",
    "RunNotFoundError",
    "RunStateError",
    "RunStoreError",
    "ScaffoldConflictError",
    "SchemaError",
    "SexpEvalError",
    "SexpSyntaxError",
    "SexpTaskFailedError",
    "SexpWorkflowFailedError",
    "SourceLocation",
    "Step",
    "StepStatus",
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
    "ToolCall",
    "ToolDeclarationError",
    "TraceSettings",
    "UsageError",
    "UsageNotes",
    "Workflow",
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
    "WorkflowResult",
    "WorkflowTypeError",
    "__version__",
    "bundled_templates_path",
    "extract",
    "extract_async",
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
    """The fixed set of failure reasons callers branch on: a task's, a workflow run's, a batch item's."""
    assert {
        "template_not_found",
        "input_validation_failure",
        "output_validation_failure",
        "provider_error",
        "usage_limit_exceeded",
        "configuration_error",
        "unexpected_error",
        "step_failed",
        "state_validation_failure",
        "expression_error",
        "max_visits_exceeded",
        "cancelled",
        "code_error",
        "tool_error",
        "failed_by_step",
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


def test_one_failure_record_for_tasks_workflow_runs_and_batch_items() -> None:
    """`TaskResult.error`, `WorkflowResult.error`, `StepVisit.error` and `BatchItemResult.error` are one `TaskError`."""
    for model in (atomtask.TaskResult, atomtask.WorkflowResult, atomtask.StepVisit, atomtask.BatchItemResult):
        assert "TaskError | None" == str(model.model_fields["error"].annotation).replace(
            "atomtask.system._results.", ""
        )


def test_machinery_users_never_build_is_importable_from_its_package_only() -> None:
    """The manager, the handler, the executor and the registries come from their packages, not `atomtask`."""
    from atomtask.executors import AtomicTaskExecutor
    from atomtask.handlers import BaseHandler, LLMInteractionManager
    from atomtask.loading import TemplateRegistry
    from atomtask.schemas import ModelRegistry
    from atomtask.workflows import WorkflowRegistry

    for cls in (
        AtomicTaskExecutor,
        BaseHandler,
        LLMInteractionManager,
        TemplateRegistry,
        ModelRegistry,
        WorkflowRegistry,
    ):
        assert cls.__name__ not in atomtask.__all__
        assert cls.__module__.rsplit(".", 1)[-1].startswith("_")


def test_the_errors_module_is_public_and_holds_what_atomtask_exports() -> None:
    """`atomtask.errors` is where every error lives; `atomtask` exports the same classes, not copies."""
    from atomtask import errors

    for name in ("TaskFailedError", "WorkflowNotFoundError", "RunStoreError", "RedactedInputsError"):
        assert getattr(errors, name) is getattr(atomtask, name)
