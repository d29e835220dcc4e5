"""What a batch runs: a template or a workflow by name, its fingerprint and model, and one item's run.

The fingerprint is a SHA-256 of everything besides the model and the inputs that decides an item's
answer: the declaration as registered (a template with its output schema; a workflow with the
templates it names), the model settings as sent (the TaskSystem's under the batch's), the batch's
repair mode (`--repair`, which decides how an answer is read) and the endpoint (`base_url`). Editing
the template, `--setting temperature=0.9`, `--max-tokens 50`, `--repair lenient` or `--base-url` makes a
re-run run every item again; the model is the record's other key. The batch's `retries` are not in it:
they decide only whether an item fails, never what a finished item's answer is (`--retry-failed` runs
the failed ones again with new retries). `check_inputs` validates an
item's inputs as the run would, so a bad line is refused before anything is paid.
`BatchHost` is what the batch needs of `TaskSystem`, kept as a protocol so this layer sits below it.

A workflow's `redact: true` fields are never written in clear outside the run store: `run` replaces
their values with `[redacted]` in the item's output, and cuts them out of every text of the result that
quotes one (tool arguments and results, the error, other state fields), as the run store's checkpoints
leave them out (`runs._checkpoints.REDACTED`). `run_in_clear` returns the result as it ran too, for
the local engine's `--include-redacted`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import pydantic
import pydantic_core
from atomtask.errors import BatchInputError, did_you_mean, near_names
from atomtask.system._options import CallOptions
from atomtask.system._results import (
    BatchItemResult,
    FailureReason,
    TaskError,
    TaskResult,
    TaskStatus,
    ToolCall,
    UsageNotes,
    WorkflowResult,
)

if TYPE_CHECKING:
    from atomtask.executors._atomic import AtomicTaskExecutor
    from atomtask.handlers._base import BaseHandler
    from atomtask.loading._template_registry import TemplateRegistry
    from atomtask.workflows._registry import WorkflowRegistry
    from atomtask.workflows._runner import WorkflowRunner

__all__ = ["SECRET_MIN_LENGTH", "BatchHost", "BatchTarget", "check_items", "resolve_target"]


class BatchHost(Protocol):
    """The parts of `TaskSystem` a batch uses."""

    templates: TemplateRegistry
    workflows: WorkflowRegistry
    handler: BaseHandler

    @property
    def executor(self) -> AtomicTaskExecutor:
        """`TaskSystem.executor`, which runs a template's items."""

    @property
    def runner(self) -> WorkflowRunner:
        """`TaskSystem.runner`, which runs a workflow's items."""


@attrs.frozen(kw_only=True)
class BatchTarget:
    """The template or workflow a batch runs, and what keys its record: `fingerprint` and `model`."""

    name: str
    kind: str  # "template" or "workflow"
    fingerprint: str
    model: str
    accepted: frozenset[str]
    #: A workflow's `redact: true` state fields (none for a template).
    redacted: frozenset[str] = frozenset()
    #: The templates its items run: the template itself, or those the workflow's steps name.
    templates: tuple[str, ...] = ()

    async def run(
        self,
        host: BatchHost,
        item_id: str,
        inputs: Mapping[str, Any],
        options: CallOptions,
        *,
        id_field: str = "id",
    ) -> BatchItemResult:
        """Run one item; a failure (even an unexpected exception) is a FAILED result with a reason.

        The `id_field` names the item; it is an input only when the template or workflow declares it.
        The values of a workflow's `redact: true` fields are `[redacted]` (`run_in_clear` has them too).
        """
        _, kept = await self.run_in_clear(host, item_id, inputs, options, id_field=id_field)
        return kept

    async def run_in_clear(
        self,
        host: BatchHost,
        item_id: str,
        inputs: Mapping[str, Any],
        options: CallOptions,
        *,
        id_field: str = "id",
    ) -> tuple[BatchItemResult, BatchItemResult]:
        """Run one item: its result as it ran, and as it may be kept (`run`'s, the redacted values cut out)."""
        if id_field in inputs and id_field not in self.accepted:
            inputs = {key: value for key, value in inputs.items() if key != id_field}
        secrets = [inputs[name] for name in self.redacted if name in inputs]
        try:
            if self.kind == "workflow":
                compiled = host.workflows.compiled(self.name)
                ran = await host.runner.run_async(compiled, inputs, options)
                if ran.state is not None:  # the values its steps wrote, a failed run's included
                    written = pydantic_core.to_jsonable_python(ran.state)
                    if isinstance(written, dict):
                        secrets += [written[name] for name in self.redacted if name in written]
                result = from_workflow(item_id, ran)
            else:
                result = from_task(item_id, await host.executor.execute_async(self.name, inputs, options))
        except Exception as exc:
            error = TaskError(reason=FailureReason.UNEXPECTED_ERROR, message=f"{type(exc).__name__}: {exc}")
            result = BatchItemResult(id=item_id, status=TaskStatus.FAILED, error=error)
        return result, self.without_redacted(result, secrets)

    def without_redacted(self, result: BatchItemResult, secrets: Sequence[Any] = ()) -> BatchItemResult:
        """`result` with the values of the workflow's `redact: true` fields replaced by `[redacted]`.

        The fields themselves in the output (the final state); and wherever one of their values (the
        output's, or one of `secrets`: given as inputs, written by a step) of at least `SECRET_MIN_LENGTH`
        characters appears inside a text of the output, the error or the tool calls, it is cut out of
        that text. `result` itself is left as it is.
        """
        if not self.redacted:
            return result
        from atomtask.runs._checkpoints import REDACTED, cut_out, secret_texts

        output = result.output
        found = list(secrets)
        if isinstance(output, dict):
            found += [output[name] for name in self.redacted if name in output]
            output = {key: REDACTED if key in self.redacted else value for key, value in output.items()}
        texts = secret_texts(found, shortest=SECRET_MIN_LENGTH)

        def cut(value: Any) -> Any:
            return cut_out(value, texts)

        error = result.error
        if error is not None:
            error = error.model_copy(update={"message": cut(error.message), "details": cut(error.details)})
        calls = [
            call.model_copy(update={"args": cut(call.args), "result": cut(call.result), "error": cut(call.error)})
            for call in result.tool_calls
        ]
        return result.model_copy(update={"output": cut(output), "error": error, "tool_calls": calls})

    def input_problem(self, host: BatchHost, inputs: Mapping[str, Any], *, id_field: str = "id") -> str | None:
        """What is wrong with an item's inputs (missing, unknown, mistyped) as the run would find it; None: nothing."""
        if id_field in inputs and id_field not in self.accepted:
            inputs = {key: value for key, value in inputs.items() if key != id_field}
        if self.kind == "workflow":
            from atomtask.system._results import TaskError
            from atomtask.workflows._state import initial_state

            found = initial_state(host.workflows.compiled(self.name), inputs)
            if not isinstance(found, TaskError):
                return None
            return "; ".join(str(e) for e in (found.details or {}).get("errors", ())) or found.message
        compiled = host.templates.compiled(self.name)
        try:
            compiled.inputs.validate_python(dict(inputs))
        except pydantic.ValidationError as exc:
            return _input_problems(exc, compiled.template.params)
        return None

    def inputs_listing(self, host: BatchHost) -> str:
        """The inputs an item takes, `name (type)`, for a fix: a template's parameters, a workflow's run inputs."""
        if self.kind == "workflow":
            flow = host.workflows.compiled(self.name)
            required = set(flow.required_inputs)
            return ", ".join(f"{n}{'' if n in required else ' (optional)'}" for n in flow.run_inputs) or "none"
        params = host.templates.compiled(self.name).template.params
        return ", ".join(f"{n} ({p.type}{'' if p.required else ', optional'})" for n, p in params.items()) or "none"


def check_items(
    host: BatchHost,
    target: BatchTarget,
    items: Iterable[tuple[int, Mapping[str, Any]]],
    *,
    file: str,
    id_field: str,
    what: str = "Line",
) -> None:
    """Refuse the first item (line, inputs) whose inputs would fail validation: a `BatchInputError`, nothing run."""
    listing: str | None = None
    for line, inputs in items:
        problem = target.input_problem(host, inputs, id_field=id_field)
        if problem is None:
            continue
        listing = listing or target.inputs_listing(host)
        stop = "" if problem.endswith((".", "?", "!")) else "."
        raise BatchInputError(
            f"{what} {line}: {problem}{stop}",
            file=file,
            line=line,
            fix=f"Give every item the inputs of {target.kind} {target.name!r}: {listing}.",
        )


def _input_problems(exc: pydantic.ValidationError, params: Mapping[str, Any]) -> str:
    problems: list[str] = []
    for err in exc.errors(include_url=False):
        loc = [str(part) for part in err["loc"]]
        field = loc[0] if loc else "?"
        if err["type"] == "missing":
            spec = params.get(field)
            problems.append(f"missing input {field!r}" + (f" ({spec.type})" if spec is not None else ""))
        elif err["type"] == "extra_forbidden":
            problems.append(f"unknown input {field!r}.{did_you_mean(field, list(params))}".rstrip("."))
        else:
            problems.append(f"input {'.'.join(loc)!r}: {err['msg']} (got {_short(err.get('input'))})")
    return "; ".join(problems)


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def from_task(item_id: str, result: TaskResult[Any]) -> BatchItemResult:
    """A task's result as a batch item: the output in JSON form, its error whole, the attempts counted."""
    return BatchItemResult(
        id=item_id,
        status=result.status,
        output=pydantic_core.to_jsonable_python(result.parsedContent) if result.ok else None,
        error=result.error,
        usage=result.notes.usage,
        attempts=len(result.notes.attempts),
        tool_calls=[call for attempt in result.notes.attempts for call in attempt.tool_calls],
        media=result.notes.media,
        raw_answers=[]
        if result.ok
        else [a.raw_output for a in result.notes.attempts if a.fault is None and a.raw_output is not None],
    )


def from_workflow(item_id: str, result: WorkflowResult[Any]) -> BatchItemResult:
    """A workflow run as a batch item: its final state as the output, its error whole, its requests as the attempts."""
    return BatchItemResult(
        id=item_id,
        status=result.status,
        output=pydantic_core.to_jsonable_python(result.state) if result.ok else None,
        error=result.error,
        usage=result.usage if isinstance(result.usage, UsageNotes) else UsageNotes(),
        attempts=result.usage.requests,
        tool_calls=_workflow_tool_calls(result),
    )


def _workflow_tool_calls(result: WorkflowResult[Any]) -> list[ToolCall]:
    """The tool calls of every task a workflow run made, its sub-workflows' included, in order."""
    calls: list[ToolCall] = []
    for visit in result.steps:
        if visit.result is not None:
            calls.extend(call for attempt in visit.result.notes.attempts for call in attempt.tool_calls)
        if visit.subworkflow is not None:
            calls.extend(_workflow_tool_calls(visit.subworkflow))
    return calls


def resolve_target(host: BatchHost, name: str, options: CallOptions) -> BatchTarget:
    """The template (first) or workflow `name`; a usage error with near names when it is neither.

    The batch's `options` choose each template's model as a call's would (`resolve_options`); their model
    settings (over the TaskSystem's), their repair mode and the endpoint go into the fingerprint.
    """
    from atomtask.executors._atomic import resolve_options
    from atomtask.executors._cache import schema_fingerprint  # memoised per class, shared with the cache

    handler = host.handler

    def label(template: str) -> str:
        return resolve_options(options, host.templates.compiled(template), handler, host.executor.cache).model.label

    sending: list[Any] = [{**(handler.model_settings or {}), **(options.model_settings or {})}, handler.base_url]
    if options.repair is not None:  # only when asked, so a batch that asks none keeps its fingerprint
        sending.append({"repair": options.repair.value})
    if name in host.templates:
        compiled = host.templates.compiled(name)
        template = compiled.template
        material: Any = [template.model_dump(mode="json"), schema_fingerprint(compiled.output_cls), sending]
        return BatchTarget(
            name=name,
            kind="template",
            fingerprint=_digest(material),
            model=label(name),
            accepted=frozenset(template.params),
            templates=(name,),
        )
    if name in host.workflows:
        flow = host.workflows.compiled(name)
        dumped = json.dumps(flow.workflow.model_dump(mode="json"), sort_keys=True, default=str)
        used = [host.templates.get(t) for t in host.templates.names() if f'"{t}"' in dumped]
        # each step's template's model, as a call chooses it; with no template, the TaskSystem's (or the default)
        labels = sorted({label(t.name) for t in used} or {handler.choose_model(call=options.model).label})
        return BatchTarget(
            name=name,
            kind="workflow",
            fingerprint=_digest([dumped, [t.model_dump(mode="json") for t in used], sending]),
            model=", ".join(labels),
            accepted=frozenset(flow.run_inputs),
            redacted=flow.redacted_fields,
            templates=tuple(t.name for t in used),
        )
    from atomtask.errors import TemplateNotFoundError

    known = [*host.templates.names(), *host.workflows.names()]
    raise TemplateNotFoundError(
        f"No template or workflow named {name!r}.{did_you_mean(name, known)} "
        f"Registered: {', '.join(sorted(known)) or 'none'}; load yours with `--templates PATH`.",
        suggestions=near_names(name, known),
    )


SECRET_MIN_LENGTH = 4
"""A redacted value this long or longer is also cut out of the texts that quote it (a shorter one, `yes`, would
cut every word it is part of: it is replaced only as its field's value)."""


def _digest(material: Any) -> str:
    text = json.dumps(material, sort_keys=True, default=str, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
