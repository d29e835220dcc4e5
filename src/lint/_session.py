"""`CheckRun`: one check's registries and findings, each finding kept under the file it was found for.

Errors come from the code that runs at registration (`TemplateRegistry.register` -> `compile_template`,
`ModelRegistry.register`, `build_models`, model-string checks), so `check` and the runtime cannot
disagree; unlike registration, one mistake does not stop the check. Registration stops at a template's
first mistake; here the template is compiled once per concern (each parameter, each model string, the
model settings, the output schema, each text with its placeholders), as a copy holding only that
concern (`template_problems`). A schema is built with just the schemas it references (`closure`), so
one broken schema does not hide another's mistakes. Workflows go through the checks
`TaskSystem.load` runs (`workflow_problems`): every problem of every workflow rather than the first,
a workflow declared twice with different contents is E105, and a step whose task is declared but
invalid says so rather than calling the task unknown.

Each finding is filed under the declaration file whose declaration produced it (`by_file`), which is
what `_cache` stores per file; workflow findings, made across files, are filed under none and found
again on every check. `check --python` imports the modules named (`myapp.tasks`, with the working
directory on `sys.path` as `python -m` has it, or a `.py` file) and locates findings about Python code
in it: the line that raised during the import, the line quoting a template's name, a schema class's line.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import traceback
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
from atomtask.errors import (
    ConfigurationError,
    DuplicateNameError,
    SchemaError,
    SourceLocation,
    TemplateError,
    ToolDeclarationError,
    UsageError,
    WorkflowError,
    WorkflowNameError,
)
from atomtask.lint import _rules as rules
from atomtask.lint._cache import FileFacts, facts_of
from atomtask.lint._compat import Analyses, InlineAnalyses
from atomtask.lint._findings import RULES, Finding
from atomtask.lint._rules import output_json_schema
from atomtask.loading._declarations import Declarations, PartialTemplate, reject_duplicate_schemas
from atomtask.loading._model_aliases import ModelAliasDef, ModelAliases
from atomtask.loading._readers import read_file
from atomtask.loading._servers import Endpoint, mode_support
from atomtask.loading._template_registry import CompiledTemplate, TemplateRegistry, compile_template, single_braces
from atomtask.schemas._declarations import FieldDef, JsonSchemaDef, SchemaDef
from atomtask.schemas._fields import build_models, flatten, schema_problems
from atomtask.schemas._model_registry import ModelRegistry, register_builtin_schemas
from atomtask.schemas._sources import json_schema_warnings, output_schema_warnings
from atomtask.schemas._type_strings import parse_type, referenced_names
from atomtask.system._templates import OutputFormat, ParamSpec, RepairMode, Template
from atomtask.system._workflows import Workflow
from atomtask.workflows._registry import WorkflowRegistry
from pydantic import BaseModel

__all__ = [
    "CheckRun",
    "Salvaged",
    "WorkflowProblem",
    "class_location",
    "closure",
    "find_in_file",
    "import_python",
    "raising_line",
    "template_concerns",
    "template_problems",
    "workflow_problems",
]

_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)
_IMPORTLIB_DIR = str(Path(importlib.__file__).resolve().parent)


def import_python(name: str) -> Any:
    """Import a dotted module name (with the current folder on `sys.path`) or a `.py` file, for `--python`.

    A module that calls `sys.exit` (or raises any other `BaseException` but `KeyboardInterrupt`) while
    being imported raises `RuntimeError` (reported as a finding) instead of ending the check.
    """
    try:
        return _import_python(name)
    except SystemExit as exc:
        raise RuntimeError(
            f"the module called `sys.exit({exc.code!r})` while being imported (exit code {exc.code!r}); put its "
            'script part under `if __name__ == "__main__":`'
        ).with_traceback(exc.__traceback__) from None
    except (KeyboardInterrupt, Exception):
        raise
    except BaseException as exc:  # e.g. `GeneratorExit` or a custom `BaseException`: it must not end the check
        raise RuntimeError(
            f"the module raised {type(exc).__name__}: {exc} while being imported; fix the module"
        ).with_traceback(exc.__traceback__) from None


def _import_python(name: str) -> Any:
    if name.endswith(".py") or os.sep in name or "/" in name:
        path = Path(name).resolve()
        if not path.is_file():
            raise TemplateError(f"No such Python file: {name!r}.")
        module_name = f"_atomtask_check_{path.stem}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise TemplateError(f"Cannot import {name!r} as a Python module.")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
        return module
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` does, so the project's own modules import
    return importlib.import_module(name)


def raising_line(exc: BaseException) -> SourceLocation | None:
    """The innermost frame of the traceback outside atomtask and the import machinery."""
    found: SourceLocation | None = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename.startswith((_PACKAGE_DIR, _IMPORTLIB_DIR, "<frozen")):
            continue
        found = SourceLocation(file=frame.filename, line=frame.lineno)
    return found


def find_in_file(file: str, name: str) -> SourceLocation:
    """The first line of `file` that quotes `name` (where a Python template is declared), else the file."""
    try:
        lines = Path(file).read_text(encoding="utf-8").splitlines()
    except OSError:
        return SourceLocation(file=file)
    for quote in ('"', "'"):
        needle = f"{quote}{name}{quote}"
        for number, line in enumerate(lines, start=1):
            column = line.find(needle)
            if column >= 0:
                return SourceLocation(file=file, line=number, column=column + 1)
    return SourceLocation(file=file)


def class_location(cls: type[BaseModel], field: str | None) -> SourceLocation | None:
    """Where a Python class (and its field, when found) is defined."""
    import inspect

    try:
        file = inspect.getsourcefile(cls)
        lines, start = inspect.getsourcelines(cls)
    except (OSError, TypeError):
        return None
    if file is None:
        return None
    if field is not None:
        for offset, line in enumerate(lines):
            stripped = line.lstrip()
            if stripped.startswith(f"{field}:") or stripped.startswith(f"{field} :"):
                return SourceLocation(file=file, line=start + offset, column=len(line) - len(stripped) + 1)
    return SourceLocation(file=file, line=start)


@attrs.frozen(kw_only=True)
class Salvaged:
    """What of a template with errors the warnings can still read: its concerns that compiled, compiled together.

    `template` is the template as declared; `compiled` holds only the concerns without a mistake (a wrong
    parameter typed `any`, a wrong text empty, a wrong model or output format left out). `usage` says whether
    parameter usage (W201, W202) can be judged (both texts compiled), `models` whether the model and fallbacks
    can (P3xx: a wrong model is not replaced by the default one).
    """

    template: Template
    compiled: CompiledTemplate
    usage: bool
    models: bool


def template_problems(template: Template, models: ModelRegistry, aliases: Collection[str] = ()) -> list[UsageError]:
    """The usage errors `compile_template` raises for each concern of `template`, in declaration order."""
    return template_concerns(template, models, aliases)[0]


def template_concerns(
    template: Template, models: ModelRegistry, aliases: Collection[str] = ()
) -> tuple[list[UsageError], Salvaged | None]:
    """`template_problems`, and what of the template compiles without them (for its warnings), if anything."""
    neutral: dict[str, Any] = {
        "params": {},
        "system": None,
        "instructions": "",
        "output_format": OutputFormat(),
        "model": None,
        "fallbacks": [],
        "model_settings": None,
        "tools": [],  # checked on their own (`lint._tool_checks`), in a helper process
        "tool_calls": None,
    }
    neutral = {key: value for key, value in neutral.items() if key in Template.model_fields}
    problems: list[UsageError] = []

    def attempt(**concern: Any) -> bool:
        variant = template.model_copy(update={**neutral, **concern})
        try:
            compile_template(variant, models, tools=False, aliases=aliases)
        except UsageError as exc:
            problems.append(exc)
            return False
        return True

    kept: dict[str, Any] = {}
    model_ok = template.model is None or attempt(model=template.model)
    if template.model is not None and model_ok:
        kept["model"] = template.model
    fallbacks = [fallback for fallback in template.fallbacks if attempt(fallbacks=[fallback])]
    kept["fallbacks"] = fallbacks
    usable: dict[str, ParamSpec] = {}
    for name, spec in template.params.items():
        usable[name] = spec if attempt(params={name: spec}) else ParamSpec(type="any")
    kept["params"] = usable
    texts_ok = True
    for field in ("system", "instructions"):
        if getattr(template, field):
            if attempt(params=usable, **{field: getattr(template, field)}):
                kept[field] = getattr(template, field)
            else:
                texts_ok = False
    settings = getattr(template, "model_settings", None)
    if settings is not None and attempt(model_settings=settings):
        kept["model_settings"] = settings
    if attempt(output_format=template.output_format):
        kept["output_format"] = template.output_format
    salvaged = None
    if problems:
        try:
            compiled = compile_template(
                template.model_copy(update={**neutral, **kept}), models, tools=False, aliases=aliases
            )
        except UsageError:  # concerns that compile alone but not together: no warnings rather than wrong ones
            compiled = None
        if compiled is not None:
            models_ok = model_ok and len(fallbacks) == len(template.fallbacks)
            salvaged = Salvaged(template=template, compiled=compiled, usage=texts_ok, models=models_ok)
    return problems, salvaged


def _all_fields(fields: Iterable[FieldDef]) -> Iterator[FieldDef]:
    for field in fields:
        yield field
        if field.fields is not None:
            yield from _all_fields(field.fields)


def closure(schema: SchemaDef, batch: dict[str, SchemaDef]) -> list[SchemaDef]:
    """`schema` and the schemas of `batch` it references, directly or not, nested objects included (it first)."""
    out = [schema]
    seen = {schema.name}
    todo = [schema]
    while todo:
        for field in _all_fields(todo.pop().fields):
            try:
                names = referenced_names(parse_type(field.type))
            except UsageError:
                continue
            for name in names - seen:
                if name in batch:
                    seen.add(name)
                    out.append(batch[name])
                    todo.append(batch[name])
    return out


@attrs.frozen(kw_only=True)
class WorkflowProblem:
    """One finding about a workflow: its check code, the message, where."""

    code: str
    message: str
    location: SourceLocation | None


_SCHEMA_NAMED = re.compile(r"[Ss]chema (?:named )?'([^']+)'")


def broken_schema_in(message: str, broken: Mapping[str, SourceLocation | None]) -> str | None:
    """The declared-but-invalid schema a message calls unknown (`No schema named 'X'`, `Unknown schema 'X'`), if any."""
    return next((name for name in _SCHEMA_NAMED.findall(message) if name in broken), None)


def workflow_problems(
    workflows: Iterable[Workflow],
    templates: TemplateRegistry,
    models: ModelRegistry,
    broken_templates: Mapping[str, SourceLocation | None] | None = None,
    broken_schemas: Mapping[str, SourceLocation | None] | None = None,
) -> list[WorkflowProblem]:
    """Every problem of `workflows` against the registered templates and schemas, in the order found.

    `broken_templates` and `broken_schemas` are the templates and schemas declared but not registered
    (their own errors are reported where they are declared), by name, with where they are declared: a
    workflow's problem that only says one of them is unknown says so instead.
    """
    found: list[WorkflowProblem] = []
    unique: dict[str, Workflow] = {}
    for workflow in workflows:
        first = unique.get(workflow.name)
        if first is None:
            unique[workflow.name] = workflow
        elif first.model_dump() != workflow.model_dump():
            at = f" at {first.location}" if first.location is not None else ""
            message = f"Workflow name {workflow.name!r} is already declared{at}; rename one of them."
            found.append(WorkflowProblem(code="E105", message=message, location=workflow.location))
    registry = WorkflowRegistry(templates, models)
    for checked in registry.check_all(unique.values()):
        for error in checked.errors:
            found.append(_problem(checked.workflow, error, broken_templates or {}, broken_schemas or {}))
        found.extend(
            WorkflowProblem(code=w.code, message=w.message, location=w.location or checked.workflow.location)
            for w in checked.warnings
        )
    return found


def _problem(
    workflow: Workflow,
    error: WorkflowError,
    broken_templates: Mapping[str, SourceLocation | None],
    broken_schemas: Mapping[str, SourceLocation | None],
) -> WorkflowProblem:
    message = error.message
    schema = broken_schema_in(message, broken_schemas)
    if schema is not None:
        declared = broken_schemas[schema]
        at = f" at {declared}" if declared is not None else ""
        message = (
            f"Workflow {workflow.name!r} uses schema {schema!r}, which is declared{at} but invalid, so it is not "
            "registered (its errors are reported there). Fix that declaration."
        )
    if isinstance(error, WorkflowNameError) and error.step is not None:
        task = next((step.task for _, step in workflow.all_steps() if step.id == error.step), None)
        if task is not None and task in broken_templates:
            declared = broken_templates[task]
            at = f" at {declared}" if declared is not None else ""
            message = (
                f"Step {error.step!r} runs task {task!r}, which is declared{at} but invalid, so it is not "
                "registered (its errors are reported there). Fix that template."
            )
    return WorkflowProblem(code=error.code, message=message, location=error.location or workflow.location)


_CODES = ((DuplicateNameError, "E105"), (ConfigurationError, "E104"), (SchemaError, "E103"))  # first match


def _code(exc: UsageError) -> str:
    if isinstance(exc, ToolDeclarationError):
        return exc.code
    return next((code for kind, code in _CODES if isinstance(exc, kind)), "E102")


class CheckRun:
    """The registries one check fills, and its findings: all of them, and by the file they were found for."""

    def __init__(
        self, default_models: tuple[str, ...], analyses: Analyses | None = None, endpoint: Endpoint | None = None
    ) -> None:
        self.default_models = default_models
        self.endpoint = endpoint  # `--base-url` / `--server`: the local server's output modes (P308, P309)
        self.analyses: Analyses = analyses or InlineAnalyses()  # P3xx: here, or in a helper process
        self.models = ModelRegistry()
        register_builtin_schemas(self.models)  # what every TaskSystem knows, so shipped templates resolve
        self.model_aliases = ModelAliases()
        # Tools are not resolved here: their modules are imported in a helper process (`check_tools`).
        # Its single-brace warnings are findings (W206), not log records.
        self.templates = TemplateRegistry(
            self.models, resolve_tools=False, model_aliases=self.model_aliases, log_warnings=False
        )
        self.salvaged: list[Salvaged] = []  # what of each template with errors its warnings can read
        self.with_tools: list[Template] = []  # templates that declare tools, checked by `check_tools`
        self.findings: dict[tuple[str, str, str], Finding] = {}
        self.schema_defs: dict[str, SchemaDef] = {}
        self.json_defs: dict[str, JsonSchemaDef] = {}  # by name and by the schema's own `title`
        self.broken_schemas: dict[str, SourceLocation | None] = {}  # declared, but invalid: where
        self.templates_seen = 0
        self.lenient: list[str] = []  # templates that run `repair: lenient`
        self.schemas_seen = 0
        self.python_files: dict[str, str] = {}  # template name -> module file, to locate Python templates
        self.workflows: list[Workflow] = []  # from the files and the `--python` modules' systems
        self.broken_templates: dict[str, SourceLocation | None] = {}  # declared, but invalid: where
        self.facts: dict[str, FileFacts] = {}  # by file, for the files read
        self.declared: dict[str, Declarations] = {}
        self.by_file: dict[str, dict[tuple[str, str, str], Finding]] = {}
        self._file: str | None = None  # the file whose declaration is being checked

    # -- findings -------------------------------------------------------------------------------------------

    def add(self, exc: UsageError, code: str | None = None) -> None:
        self.note(code or _code(exc), exc.message, exc.location)

    def note(self, code: str, message: str, location: SourceLocation | None) -> None:
        key = (code, str(location), message)
        finding = self.findings.get(key)
        if finding is None:
            finding = Finding(code=code, severity=RULES[code].severity, message=message, location=location)
            self.findings[key] = finding
        if self._file is not None:
            self.by_file.setdefault(self._file, {})[key] = finding

    def _for(self, location: SourceLocation | None) -> None:
        """File the next findings under the file of `location` (none when it has no file)."""
        self._file = location.file if location is not None else None

    # -- one check over files ---------------------------------------------------------------------------------

    def read_files(self, files: Iterable[Path]) -> None:
        """Read `files`, keeping what each declares; reading mistakes are findings of the file."""
        for file in files:
            self._file = str(file)
            self.by_file.setdefault(self._file, {})
            read = self.read(file)
            self.declared[self._file] = read
            self.facts[self._file] = facts_of(read)
            for skipped in read.skipped:
                self.note("W101", skipped.message, skipped.location)
        self._file = None

    def check_read(self, order: Sequence[str], wanted: Callable[[str], bool]) -> None:
        """Check everything read, in the files' `order` (with whatever is registered already), then lint."""
        declarations = Declarations()
        for file in order:
            if file in self.declared:
                declarations.extend(self.declared[file])
        self.broken_schemas.update(declarations.invalid_schemas)
        self.declare_model_aliases(declarations.model_aliases)
        self.register_schema_sources(declarations)
        for code, message, location in json_schema_warnings(declarations.json_schemas, self.models):  # W102, W103
            self._for(location)
            self.note(code, message, location)
        self._file = None
        self.register_schemas(declarations.schemas)
        for template in declarations.templates:
            self.register_template(template)
        for partial in declarations.partial_templates:
            self.check_partial(partial)
        self._file = None
        self.check_tools()
        self.workflows.extend(declarations.workflows)
        if self.workflows:  # the workflow checks (and their imports) only for files that declare some
            found = workflow_problems(
                self.workflows, self.templates, self.models, self.broken_templates, self.broken_schemas
            )
            for problem in found:
                self.note(problem.code, problem.message, problem.location)  # across files: filed under none
        self.lint(wanted)

    # -- reading --------------------------------------------------------------------------------------------

    def read(self, file: Path) -> Declarations:
        errors: list[UsageError] = []
        try:
            declarations = read_file(file, errors)
        except UsageError as exc:
            errors.append(exc.with_location(SourceLocation(file=str(file))))
            declarations = Declarations()
        except (OSError, UnicodeDecodeError) as exc:
            self.note("E101", f"Cannot read the file: {exc}.", SourceLocation(file=str(file)))
            declarations = Declarations()
        for error in errors:  # a workflow's shape mistake keeps its own code (E110)
            self.add(error, error.code if isinstance(error, WorkflowError) else "E101")
        return declarations

    def import_module(self, name: str) -> None:
        try:
            module = import_python(name)
        except UsageError as exc:
            self.add(exc.with_location(raising_line(exc) or SourceLocation(file=name)))
            return
        except Exception as exc:
            self.note(
                "E106",
                f"Importing {name!r} failed: {type(exc).__name__}: {exc}. Fix the module or the name "
                "(`--python package.module` or `--python path/to/file.py`).",
                raising_line(exc) or SourceLocation(file=name),
            )
            return
        from atomtask._task_system import TaskSystem

        file = getattr(module, "__file__", None) or name
        found = 0
        for value in list(vars(module).values()):
            if isinstance(value, TaskSystem):
                found += 1
                try:  # the system's model aliases, so its templates' model names resolve
                    self.model_aliases.add(value.model_aliases, where=f"the TaskSystem of {name!r}")
                except UsageError as exc:
                    self.add(exc.with_location(exc.location or SourceLocation(file=file)))
                for schema in value.models.names():
                    if schema in self.models and self.models.get(schema) is value.models.get(schema):
                        continue  # a built-in every system has
                    self.schemas_seen += 1
                    try:
                        self.models.register(
                            value.models.get(schema), schema, location=value.models.location_of(schema)
                        )
                    except UsageError as exc:
                        self.add(exc)
                for template_name in value.templates.names():
                    self.python_files.setdefault(template_name, file)
                    self.register_template(value.templates.get(template_name))
                self.workflows.extend(value.workflows.get(flow) for flow in value.workflows.names())
            elif isinstance(value, Template):
                found += 1
                self.python_files.setdefault(value.name, file)
                self.register_template(value)
        if not found:
            self.note(
                "E106",
                f"Module {name!r} defines no module-level `TaskSystem` or `Template`; expose the system the "
                "application uses (e.g. `system = TaskSystem(...)`) so check can see its templates.",
                SourceLocation(file=file),
            )

    # -- registration, through the library's own code --------------------------------------------------------

    def declare_model_aliases(self, declared: Sequence[ModelAliasDef]) -> None:
        """The files' model aliases, one at a time so every mistake is found (an alias may name a later one)."""
        pending = list(declared)
        while pending:
            failed: list[tuple[ModelAliasDef, UsageError]] = []
            for alias in pending:
                try:
                    self.model_aliases.declare([alias])
                except UsageError as exc:
                    failed.append((alias, exc))
            if len(failed) == len(pending):  # no progress: what is left is wrong
                for alias, problem in failed:
                    self._for(alias.location)
                    self.add(problem)
                break
            pending = [alias for alias, _ in failed]
        self._file = None

    def register_schema_sources(self, declarations: Declarations) -> None:
        """JSON Schema and Python-class schemas, each on its own so every mistake is reported."""
        from atomtask.schemas._sources import register_schema_sources

        self.schemas_seen += len(declarations.json_schemas) + len(declarations.python_schemas)
        for definition in declarations.json_schemas:
            title = definition.json_schema.get("title") if isinstance(definition.json_schema, dict) else None
            for key in (title, definition.name):
                if isinstance(key, str):
                    self.json_defs[key] = definition
        try:  # the fast path, as `TaskSystem.load` does it (JSON files may `$ref` each other)
            register_schema_sources(declarations.json_schemas, declarations.python_schemas, self.models)
            return
        except UsageError:
            pass
        for json_schema in declarations.json_schemas:
            if json_schema.name in self.models:
                continue
            try:
                register_schema_sources([json_schema], [], self.models)
            except UsageError as exc:
                self.broken_schemas[json_schema.name] = json_schema.location
                self._for(json_schema.location)
                self.add(exc)
        for python_schema in declarations.python_schemas:
            if python_schema.name in self.models:
                continue
            try:
                register_schema_sources([], [python_schema], self.models)
            except UsageError as exc:
                self.broken_schemas[python_schema.name] = python_schema.location
                self._for(python_schema.location)
                self.add(exc)
        self._file = None

    def register_schemas(self, schemas: list[SchemaDef]) -> None:
        self.schemas_seen += len(schemas)
        unique: dict[str, SchemaDef] = {}
        for schema in schemas:
            first = unique.get(schema.name)
            if first is None:
                unique[schema.name] = schema
            elif first != schema:
                self.broken_schemas[schema.name] = schema.location
                self._for(schema.location)
                try:
                    reject_duplicate_schemas([first, schema])  # what `TaskSystem.load` raises
                except UsageError as exc:
                    self.add(exc)
        known = {name: self.models.get(name) for name in self.models.names()}
        self.schema_defs.update({spec.name: spec for spec in flatten(unique.values(), known)})
        batch = list(unique.values())
        try:
            built = build_models(batch, known=known)  # the fast path: one call, as `TaskSystem.load` makes
        except UsageError:
            built = {}
            for schema in batch:  # find every mistake: each schema with just what it references
                try:
                    built[schema.name] = build_models(closure(schema, unique), known=known)[schema.name]
                except UsageError as exc:
                    self.broken_schemas[schema.name] = schema.location
                    self._for(schema.location)
                    # Every mistake, each once: the build's own error is one of them (in other words: it
                    # lists only the schemas it was given), unless only building finds it (a default).
                    problems = schema_problems(schema, {*known, *unique})
                    if not any(problem.location == exc.location for problem in problems):
                        self.add(exc)
                    for problem in problems:
                        self.add(problem)
        for name, cls in built.items():
            try:
                self.models.register(cls, name, location=unique[name].location)
            except UsageError as exc:
                self._for(unique[name].location)
                self.add(exc)
        self._file = None

    def register_template(self, template: Template) -> None:
        self.templates_seen += 1
        self._for(template.location)
        if template.repair is RepairMode.LENIENT:
            self.lenient.append(template.name)
        if template.tools:
            self.with_tools.append(template)
        try:
            self.templates.register(template)
        except UsageError as exc:
            self.broken_templates.setdefault(template.name, template.location)
            problems, salvaged = template_concerns(template, self.models, self.model_aliases)
            self.add_template_problems(template, [exc, *problems])
            if salvaged is not None:
                self.salvaged.append(salvaged)

    def check_partial(self, partial: PartialTemplate) -> None:
        """Check what a reader could read of a template with shape mistakes (reported already); never registered.

        Its other mistakes are reported in the same run, and its warnings, as far as they can be judged
        without the keys left out.
        """
        template = partial.template
        self.templates_seen += 1
        self._for(template.location)
        self.broken_templates.setdefault(template.name, template.location)
        if template.tools:
            self.with_tools.append(template)
        problems, salvaged = template_concerns(template, self.models, self.model_aliases)
        self.add_template_problems(template, problems)
        if salvaged is None:
            try:
                compiled = compile_template(template, self.models, tools=False, aliases=self.model_aliases)
            except UsageError:
                compiled = None
            if compiled is not None:
                salvaged = Salvaged(template=template, compiled=compiled, usage=True, models=True)
        if salvaged is not None:
            dropped = partial.dropped
            salvaged = attrs.evolve(
                salvaged,
                usage=salvaged.usage and "system" not in dropped,
                models=salvaged.models and not {"model", "fallbacks"} & dropped,
            )
            self.salvaged.append(salvaged)

    def check_tools(self) -> None:
        """E130-E132 for every template registered since the last call that declares tools (see `_tool_checks`)."""
        templates, self.with_tools = self.with_tools, []
        if not templates:
            return
        from atomtask.lint._tool_checks import check_tools

        for problem in check_tools(templates, self.models.importable):
            template = templates[problem.template]
            self._for(template.location)
            origin = template.origin_of(f"tools.{problem.entry}") or template.origin_of("tools")
            self.note(problem.code, problem.message, origin.location if origin is not None else self._locate(template))
        self._file = None

    def add_template_problems(self, template: Template, problems: Sequence[UsageError]) -> None:
        """Report a template's problems; one that only says a schema it uses is unknown says why, if it is broken.

        That is said once per template and schema (at the first place it is used), however many of the
        template's parameters and output use the schema: it is one mistake, made where the schema is declared.
        """
        told: set[str] = set()
        for problem in problems:
            name = broken_schema_in(problem.message, self.broken_schemas)
            if isinstance(problem, SchemaError) and name is not None:
                if name in told:
                    continue
                told.add(name)
                declared = self.broken_schemas[name]
                at = f" at {declared}" if declared is not None else ""
                message = (
                    f"Template {template.name!r} uses schema {name!r}, which is declared{at} but invalid, so it "
                    "is not registered (its errors are reported there). Fix that declaration."
                )
                problem = SchemaError(message, location=problem.location)
            self.add(problem.with_location(self._locate(template)))

    # -- warnings ---------------------------------------------------------------------------------------------

    def lint(self, wanted: Callable[[str], bool]) -> None:
        """The W2xx and P3xx rules; the output JSON Schemas are built only when a rule needs them.

        A schema's findings are noted for every template using it, but worked out once per class (and
        model and mode). The P3xx analyses are asked for first: a helper process may make them meanwhile."""
        schema_rules = any(wanted(code) for code in RULES if code.startswith(("W203", "W204", "W205", "P")))
        compiled_all = [self.templates.compiled(name) for name in self.templates.names()]
        salvaged = {id(s.compiled): s for s in self.salvaged}  # templates with errors: what they still say
        compiled_all += [s.compiled for s in self.salvaged]
        schemas: dict[type[BaseModel], dict[str, Any]] = {}
        requests: dict[tuple[type[BaseModel], str, str], int] = {}  # -> the index of its analysis
        analysed: list[tuple[CompiledTemplate, int]] = []  # each template's analyses, noted once all are made
        compat_rules = any(wanted(code) for code in RULES if code.startswith("P"))
        for compiled in compiled_all if schema_rules else ():
            cls = compiled.output_cls
            if cls is None:
                continue
            if cls not in schemas:
                schemas[cls] = output_json_schema(cls)
            judged = compat_rules and (id(compiled) not in salvaged or salvaged[id(compiled)].models)
            for model in self._models_of(compiled.template) if judged else ():
                key = (cls, model, compiled.output_mode.value)
                if key not in requests:  # templates sharing a schema, model and mode share the analysis
                    requests[key] = self.analyses.submit(schemas[cls], model, compiled.output_mode.value)
                analysed.append((compiled, requests[key]))
        with_models = [c for c in compiled_all if id(c) not in salvaged or salvaged[id(c)].models]
        media = self._submit_media(with_models) if wanted("P307") else []
        described: dict[type[BaseModel], list[rules.SchemaIssue]] = {}
        for compiled in compiled_all:
            self._for(compiled.template.location)
            self._template_warnings(compiled, salvaged.get(id(compiled)))
            cls = compiled.output_cls
            if cls is None or not schema_rules:
                continue
            if cls not in described:
                described[cls] = list(rules.schema_issues(rules.described_schema(cls, schemas[cls])))
            for code, message, owner, field in described[cls]:
                self.note(code, message, self._field_location(owner, field, compiled))
        answers = self.analyses.results()
        for compiled, index in analysed:
            self._for(compiled.template.location)
            for issue in answers[index]:
                if issue.code == "P301":  # about the template's choice of mode, not its schema
                    template = compiled.template
                    where = template.location_of("output_format.mode") or self._locate(template)
                else:
                    where = self._field_location(issue.owner, issue.field, compiled)
                self.note(issue.code, issue.message, where)
        if self.endpoint is not None and (wanted("P308") or wanted("P309")):
            for compiled in with_models:
                self._server_modes(compiled)
        for compiled, index in media:  # P307, at the parameter
            template = compiled.template
            self._for(template.location)
            for issue in answers[index]:
                self.note(
                    issue.code, issue.message, template.location_of(f"params.{issue.field}") or self._locate(template)
                )
        self._file = None

    def _server_modes(self, compiled: CompiledTemplate) -> None:
        """P308 (refused) and P309 (not enforced) for the template's output mode on each local server it goes to."""
        assert self.endpoint is not None
        template = compiled.template
        if compiled.output_cls is None:
            return
        mode = compiled.output_mode.value
        for model in self._models_of(template):
            profile = self.endpoint.profile_for(model)
            if profile is None:
                continue
            support = mode_support(profile, mode, function_tools=bool(template.tools))
            if support.verdict == "ok":
                continue
            instead = " or ".join(f"`mode: {m}`" for m in support.instead) or "another server"
            at = f" at {self.endpoint.base_url}" if self.endpoint.base_url else ""
            self._for(template.location)
            self.note(
                "P308" if support.verdict == "refused" else "P309",
                f"Template {template.name!r} asks for `mode: {mode}` from model {model!r} on {profile.title}{at}: "
                f"{support.message} Use {instead}.",
                template.location_of("output_format.mode") or self._locate(template),
            )

    def _submit_media(self, compiled_all: list[CompiledTemplate]) -> list[tuple[CompiledTemplate, int]]:
        """Ask, for each template's image, document and audio parameters, whether each of its models takes them."""
        submitted: list[tuple[CompiledTemplate, int]] = []
        for compiled in compiled_all:
            if not compiled.media_params:
                continue
            params = [(name, kind) for name, kinds in compiled.media_params.items() for kind in kinds]
            for model in self._models_of(compiled.template):
                submitted.append((compiled, self.analyses.submit_media(model, params)))
        return submitted

    def _template_warnings(self, compiled: CompiledTemplate, salvaged: Salvaged | None = None) -> None:
        template = compiled.template if salvaged is None else salvaged.template
        if salvaged is None or salvaged.usage:  # a text with a mistake: which parameters it uses is unknown
            for code, message, field in rules.template_issues(compiled):
                self.note(code, message, template.location_of(field) or self._locate(template))
        braces = compiled.single_braces if salvaged is None else tuple(single_braces(template))
        for code, message, where in rules.single_brace_issues(template.name, braces):  # W206
            self.note(code, message, where or self._locate(template))
        for code, message, where in output_schema_warnings(template, compiled.output_cls):  # W102, W103
            self.note(code, message, where or self._locate(template))

    def _models_of(self, template: Template) -> list[str]:
        declared = [template.model] if template.model else list(self.default_models)
        fallbacks = getattr(template, "fallbacks", None) or []
        resolved = [self.model_aliases.resolve(m) for m in [*declared, *fallbacks] if isinstance(m, str)]
        # A `Model` instance (from `--python`) is not analysed, nor a name no alias resolves (refused elsewhere).
        return [m for m in resolved if isinstance(m, str) and (":" in m or m == "test")]

    # -- locations ----------------------------------------------------------------------------------------------

    def _json_location(self, owner: str | None, field: str | None) -> SourceLocation | None:
        """Where a field of a JSON Schema (or of one of its `$defs`) is written, when `owner` is one."""
        if not owner:
            return None
        member = f"/properties/{field}" if field else ""
        definition = self.json_defs.get(owner)
        if definition is not None:
            return definition.location_at(member)
        for definition in self.json_defs.values():
            schema = definition.json_schema
            for defs in ("$defs", "definitions"):
                if isinstance(schema, dict) and owner in (schema.get(defs) or {}):
                    return definition.location_at(f"/{defs}/{owner}{member}")
        return None

    def _locate(self, template: Template) -> SourceLocation | None:
        if template.location is not None:
            return template.location
        file = self.python_files.get(template.name)
        return find_in_file(file, template.name) if file else None

    def _field_location(
        self, owner: str | None, field: str | None, compiled: CompiledTemplate
    ) -> SourceLocation | None:
        where = self._json_location(owner, field)
        if where is not None:
            return where
        schema = self.schema_defs.get(owner) if owner else None
        if schema is not None:
            for field_def in schema.fields:
                if field_def.name == field and field_def.location is not None:
                    return field_def.location
            return schema.location
        if owner and owner in self.models:
            where = self.models.location_of(owner) or class_location(self.models.get(owner), field)
            if where is not None:
                return where
        template = compiled.template
        return template.location_of("output_format.schema") or self._locate(template)
