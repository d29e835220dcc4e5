"""atomtask: atomic LLM tasks with typed, validated structured output, on top of pydantic-ai.

Every public name is importable from here (the errors also from `atomtask.errors`); `__all__` is pinned by
a test. Names load on first use, so `atomtask --help` and `import atomtask` do not import pydantic-ai.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from atomtask._lazy import lazy_exports

if TYPE_CHECKING:
    from atomtask._task_system import TaskSystem, bundled_templates_path
    from atomtask.batch._run import BatchRun
    from atomtask.errors import (
        ApprovalError,
        AtomTaskError,
        BatchInputError,
        BatchNotFoundError,
        CasesFileError,
        ConfigurationError,
        CorruptCheckpointError,
        DuplicateNameError,
        DurableRunsUnavailableError,
        MigrationError,
        RedactedInputsError,
        ResumeStepMissingError,
        RunError,
        RunExistsError,
        RunNotFoundError,
        RunStateError,
        RunStoreError,
        SchemaError,
        SexpEvalError,
        SexpSyntaxError,
        SexpTaskFailedError,
        SexpWorkflowFailedError,
        SourceLocation,
        TaskFailedError,
        TemplateError,
        TemplateNotFoundError,
        UsageError,
        WorkflowBindingError,
        WorkflowControlError,
        WorkflowCycleError,
        WorkflowDataFlowError,
        WorkflowDeclarationError,
        WorkflowError,
        WorkflowExpressionError,
        WorkflowFailedError,
        WorkflowMigrationError,
        WorkflowNameError,
        WorkflowNotFoundError,
        WorkflowParallelError,
        WorkflowPathError,
        WorkflowTypeError,
    )
    from atomtask.executors._cache_store import ResponseCache
    from atomtask.executors._streaming import PartialOutput, TaskStream
    from atomtask.memory._memory import MemoryContext, MemorySystem
    from atomtask.runs._records import RunInfo
    from atomtask.schemas._model_registry import AssociativeMatchResult, MatchItem
    from atomtask.system._options import ProviderRetries, SubtaskRequest, TraceSettings
    from atomtask.system._results import (
        Attempt,
        BatchItemResult,
        Coercion,
        FailureReason,
        StepStatus,
        StepVisit,
        TaskError,
        TaskNotes,
        TaskResult,
        TaskStatus,
        UsageNotes,
        WorkflowResult,
    )
    from atomtask.system._templates import (
        CachePolicy,
        OutputFormat,
        OutputMode,
        ParamSpec,
        RepairMode,
        Template,
        TemplateLimits,
    )
    from atomtask.system._workflows import ApprovalDecision, Migration, Step, Workflow

__version__ = "0.1.0"

__all__ = [
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
    "DuplicateNameError",
    "DurableRunsUnavailableError",
    "FailureReason",
    "MatchItem",
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
    "ResponseCache",
    "ResumeStepMissingError",
    "RunError",
    "RunExistsError",
    "RunInfo",
    "RunNotFoundError",
    "RunStateError",
    "RunStoreError",
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
    "TraceSettings",
    "UsageError",
    "UsageNotes",
    "Workflow",
    "WorkflowBindingError",
    "WorkflowControlError",
    "WorkflowCycleError",
    "WorkflowDataFlowError",
    "WorkflowDeclarationError",
    "WorkflowError",
    "WorkflowExpressionError",
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
]

__getattr__, __dir__ = lazy_exports(__name__, __file__, __all__)
