"""atomtask: atomic LLM tasks with typed, validated structured output, on top of pydantic-ai.

Everything public is importable from here; `__all__` is pinned by a test.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from atomtask._lazy import lazy_exports

if TYPE_CHECKING:
    from atomtask.executors.atomic import AtomicTaskExecutor
    from atomtask.handlers.base import BaseHandler, ModelChoice
    from atomtask.handlers.llm import LLMInteractionManager
    from atomtask.handlers.repair import OutputRepair
    from atomtask.loading.template_registry import TemplateRegistry
    from atomtask.memory.memory_system import MemorySystem
    from atomtask.memory.results import MemoryContext
    from atomtask.schemas.builtins import AssociativeMatchResult, MatchItem
    from atomtask.schemas.model_registry import ModelRegistry
    from atomtask.sexp.errors import SexpEvalError, SexpSyntaxError, SexpTaskFailedError, SexpWorkflowFailedError
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
        FailureReason,
        TaskError,
        TaskFailedError,
        TaskNotes,
        TaskResult,
        TaskStatus,
        UsageNotes,
    )
    from atomtask.system.retry_policy import ProviderRetries
    from atomtask.system.templates import OutputFormat, OutputMode, ParamSpec, Template, TemplateLimits
    from atomtask.system.workflow_errors import WorkflowError
    from atomtask.system.workflow_results import StepVisit, WorkflowFailedError, WorkflowFailureReason, WorkflowResult
    from atomtask.system.workflows import Step, Workflow
    from atomtask.task_system import TaskSystem
    from atomtask.workflows.registry import WorkflowRegistry

# Names load on first use, so `atomtask --help` and `import atomtask.cli` do not import
# pydantic-ai (and through it nothing heavy) until a task is actually run.
_EXPORTS: dict[str, str] = {
    "AssociativeMatchResult": "atomtask.schemas.builtins",
    "AtomTaskError": "atomtask.system.errors",
    "AtomicTaskExecutor": "atomtask.executors.atomic",
    "Attempt": "atomtask.system.results",
    "BaseHandler": "atomtask.handlers.base",
    "ConfigurationError": "atomtask.system.errors",
    "DuplicateNameError": "atomtask.system.errors",
    "FailureReason": "atomtask.system.results",
    "LLMInteractionManager": "atomtask.handlers.llm",
    "MatchItem": "atomtask.schemas.builtins",
    "MemoryContext": "atomtask.memory.results",
    "MemorySystem": "atomtask.memory.memory_system",
    "ModelChoice": "atomtask.handlers.base",
    "ModelRegistry": "atomtask.schemas.model_registry",
    "OutputFormat": "atomtask.system.templates",
    "OutputMode": "atomtask.system.templates",
    "OutputRepair": "atomtask.handlers.repair",
    "ParamSpec": "atomtask.system.templates",
    "ProviderRetries": "atomtask.system.retry_policy",
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
    "TaskSystem": "atomtask.task_system",
    "Template": "atomtask.system.templates",
    "TemplateError": "atomtask.system.errors",
    "TemplateLimits": "atomtask.system.templates",
    "TemplateNotFoundError": "atomtask.system.errors",
    "TemplateRegistry": "atomtask.loading.template_registry",
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
    "AssociativeMatchResult",
    "AtomTaskError",
    "AtomicTaskExecutor",
    "Attempt",
    "BaseHandler",
    "ConfigurationError",
    "DuplicateNameError",
    "FailureReason",
    "LLMInteractionManager",
    "MatchItem",
    "MemoryContext",
    "MemorySystem",
    "ModelChoice",
    "ModelRegistry",
    "OutputFormat",
    "OutputMode",
    "OutputRepair",
    "ParamSpec",
    "ProviderRetries",
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
    "TaskSystem",
    "Template",
    "TemplateError",
    "TemplateLimits",
    "TemplateNotFoundError",
    "TemplateRegistry",
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
