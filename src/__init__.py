"""atomtask: atomic LLM tasks with typed, validated structured output, on top of pydantic-ai.

Everything public is importable from here; `__all__` is pinned by a test.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from atomtask._lazy import lazy_exports

if TYPE_CHECKING:
    from atomtask.batch.engine import BatchRun
    from atomtask.executors.atomic import AtomicTaskExecutor
    from atomtask.executors.cache_store import ResponseCache
    from atomtask.executors.streaming import PartialOutput, TaskStream
    from atomtask.handlers.base import BaseHandler, ModelChoice
    from atomtask.handlers.llm import LLMInteractionManager
    from atomtask.handlers.repair import OutputRepair
    from atomtask.loading.template_registry import TemplateRegistry
    from atomtask.memory.memory_system import MemorySystem
    from atomtask.memory.results import MemoryContext
    from atomtask.runs.errors import DurableRunsUnavailableError, RunExistsError, RunStateError
    from atomtask.runs.records import RunInfo
    from atomtask.schemas.builtins import AssociativeMatchResult, MatchItem
    from atomtask.schemas.model_registry import ModelRegistry
    from atomtask.sexp.errors import SexpEvalError, SexpSyntaxError, SexpTaskFailedError, SexpWorkflowFailedError
    from atomtask.system.batch_results import BatchInputError, BatchItemError, BatchItemResult, BatchNotFoundError
    from atomtask.system.cache_policy import CachePolicy
    from atomtask.system.errors import (
        AtomTaskError,
        ConfigurationError,
        DuplicateNameError,
        SchemaError,
        SourceLocation,
        TemplateError,
        TemplateNotFoundError,
        UsageError,
    )
    from atomtask.system.requests import SubtaskRequest
    from atomtask.system.results import (
        Attempt,
        Coercion,
        FailureReason,
        TaskError,
        TaskFailedError,
        TaskNotes,
        TaskResult,
        TaskStatus,
        UsageNotes,
    )
    from atomtask.system.retry_policy import ProviderRetries
    from atomtask.system.run_errors import (
        ApprovalError,
        CorruptCheckpointError,
        MigrationError,
        ResumeStepMissingError,
        RunError,
        RunNotFoundError,
    )
    from atomtask.system.templates import OutputFormat, OutputMode, ParamSpec, RepairMode, Template, TemplateLimits
    from atomtask.system.tracing import TraceSettings
    from atomtask.system.workflow_errors import WorkflowError
    from atomtask.system.workflow_results import StepVisit, WorkflowFailedError, WorkflowFailureReason, WorkflowResult
    from atomtask.system.workflow_steps import ApprovalDecision
    from atomtask.system.workflows import Migration, Step, Workflow
    from atomtask.task_system import TaskSystem
    from atomtask.workflows.registry import WorkflowRegistry

# Names load on first use, so `atomtask --help` and `import atomtask.cli` do not import
# pydantic-ai (and through it nothing heavy) until a task is actually run.
_EXPORTS: dict[str, str] = {
    "ApprovalDecision": "atomtask.system.workflow_steps",
    "ApprovalError": "atomtask.system.run_errors",
    "AssociativeMatchResult": "atomtask.schemas.builtins",
    "AtomTaskError": "atomtask.system.errors",
    "AtomicTaskExecutor": "atomtask.executors.atomic",
    "Attempt": "atomtask.system.results",
    "BaseHandler": "atomtask.handlers.base",
    "BatchInputError": "atomtask.system.batch_results",
    "BatchItemError": "atomtask.system.batch_results",
    "BatchItemResult": "atomtask.system.batch_results",
    "BatchNotFoundError": "atomtask.system.batch_results",
    "BatchRun": "atomtask.batch.engine",
    "CachePolicy": "atomtask.system.cache_policy",
    "Coercion": "atomtask.system.results",
    "ConfigurationError": "atomtask.system.errors",
    "CorruptCheckpointError": "atomtask.system.run_errors",
    "DuplicateNameError": "atomtask.system.errors",
    "DurableRunsUnavailableError": "atomtask.runs.errors",
    "FailureReason": "atomtask.system.results",
    "LLMInteractionManager": "atomtask.handlers.llm",
    "MatchItem": "atomtask.schemas.builtins",
    "MemoryContext": "atomtask.memory.results",
    "MemorySystem": "atomtask.memory.memory_system",
    "Migration": "atomtask.system.workflows",
    "MigrationError": "atomtask.system.run_errors",
    "ModelChoice": "atomtask.handlers.base",
    "ModelRegistry": "atomtask.schemas.model_registry",
    "OutputFormat": "atomtask.system.templates",
    "OutputMode": "atomtask.system.templates",
    "OutputRepair": "atomtask.handlers.repair",
    "ParamSpec": "atomtask.system.templates",
    "PartialOutput": "atomtask.executors.streaming",
    "ProviderRetries": "atomtask.system.retry_policy",
    "RepairMode": "atomtask.system.templates",
    "ResponseCache": "atomtask.executors.cache_store",
    "ResumeStepMissingError": "atomtask.system.run_errors",
    "RunError": "atomtask.system.run_errors",
    "RunExistsError": "atomtask.runs.errors",
    "RunInfo": "atomtask.runs.records",
    "RunNotFoundError": "atomtask.system.run_errors",
    "RunStateError": "atomtask.runs.errors",
    "SchemaError": "atomtask.system.errors",
    "SexpEvalError": "atomtask.sexp.errors",
    "SexpSyntaxError": "atomtask.sexp.errors",
    "SexpTaskFailedError": "atomtask.sexp.errors",
    "SexpWorkflowFailedError": "atomtask.sexp.errors",
    "SourceLocation": "atomtask.system.errors",
    "Step": "atomtask.system.workflows",
    "StepVisit": "atomtask.system.workflow_results",
    "SubtaskRequest": "atomtask.system.requests",
    "TaskError": "atomtask.system.results",
    "TaskFailedError": "atomtask.system.results",
    "TaskNotes": "atomtask.system.results",
    "TaskResult": "atomtask.system.results",
    "TaskStatus": "atomtask.system.results",
    "TaskStream": "atomtask.executors.streaming",
    "TaskSystem": "atomtask.task_system",
    "Template": "atomtask.system.templates",
    "TemplateError": "atomtask.system.errors",
    "TemplateLimits": "atomtask.system.templates",
    "TemplateNotFoundError": "atomtask.system.errors",
    "TemplateRegistry": "atomtask.loading.template_registry",
    "TraceSettings": "atomtask.system.tracing",
    "UsageError": "atomtask.system.errors",
    "UsageNotes": "atomtask.system.results",
    "Workflow": "atomtask.system.workflows",
    "WorkflowError": "atomtask.system.workflow_errors",
    "WorkflowFailedError": "atomtask.system.workflow_results",
    "WorkflowFailureReason": "atomtask.system.workflow_results",
    "WorkflowRegistry": "atomtask.workflows.registry",
    "WorkflowResult": "atomtask.system.workflow_results",
}


__version__ = "0.1.0"

__all__ = [
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

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
