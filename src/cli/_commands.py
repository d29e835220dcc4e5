"""The `run`, `eval`, `list`, `show` and `workflow` commands: what each does, what it prints, its exit status.

Exit status, one rule for every command: 0 success; 1 the task ran and FAILED (the model or the
provider); 2 the command could not run (bad arguments, unknown template, missing or mistyped input,
bad model string, unreadable file). A FAILED result whose task never reached a model (template not
found, invalid inputs, a configuration that cannot be used) is therefore 2, not 1. For a workflow:
an unknown workflow or run inputs that do not fit its state are 2; a run that FAILED is 1, unless it
stopped at its first step's task before any model request for one of those same usage reasons.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from atomtask.cli._args import model_settings, parse_inputs
from atomtask.cli._model_flag import check_model_flags
from atomtask.cli._stream import is_terminal, run_streamed
from atomtask.loading._providers import check_options

if TYPE_CHECKING:
    from atomtask._task_system import TaskSystem
    from atomtask.estimate._figures import Estimate
    from atomtask.system._results import TaskResult, UsageNotes, WorkflowResult

__all__ = [
    "EXIT_OK",
    "EXIT_TASK_FAILED",
    "EXIT_USAGE",
    "batch",
    "cache",
    "dry_run",
    "eval_script",
    "exit_status",
    "list_templates",
    "run",
    "show",
    "worker",
    "workflow",
    "workflow_exit_status",
]

EXIT_OK = 0
EXIT_TASK_FAILED = 1
EXIT_USAGE = 2

DURATION_DIGITS = 1
"""Durations in printed JSON are rounded to 0.1 ms: the float noise below that is no information."""


def exit_status(result: TaskResult[Any]) -> int:
    """0 for a COMPLETE result; 2 when the task never reached a model (a usage mistake); else 1."""
    from atomtask.system._results import FailureReason

    if result.ok or result.error is None:
        return EXIT_OK
    reason = result.error.reason
    if reason in (FailureReason.TEMPLATE_NOT_FOUND, FailureReason.INPUT_VALIDATION_FAILURE):
        return EXIT_USAGE
    if reason == FailureReason.CONFIGURATION_ERROR and not result.notes.attempts:
        return EXIT_USAGE
    return EXIT_TASK_FAILED


def workflow_exit_status(result: WorkflowResult[Any]) -> int:
    """0 for a COMPLETE run; 2 when it could not start (inputs) or its task never reached a model; else 1."""
    from atomtask.system._results import FailureReason

    if result.ok or result.error is None:
        return EXIT_OK
    if result.error.reason is FailureReason.INPUT_VALIDATION_FAILURE:
        return EXIT_USAGE
    failed = [v for v in result.steps if v.error is not None]
    task = failed[0].result if result.usage.requests == 0 and len(failed) == 1 else None
    return EXIT_USAGE if task is not None and exit_status(task) == EXIT_USAGE else EXIT_TASK_FAILED


def _limits(args: argparse.Namespace) -> dict[str, Any]:
    """`--max-requests`, `--max-total-tokens`, `--max-cost`, as `limits=`."""
    pairs = (("requests", args.max_requests), ("total_tokens", args.max_total_tokens), ("cost", args.max_cost))
    return {name: value for name, value in pairs if value is not None}


def _system(args: argparse.Namespace) -> TaskSystem:
    """The task system of a command: its templates and endpoint; the model is chosen per call."""
    from atomtask._task_system import TaskSystem, bundled_templates_path

    paths: list[str | Path] = list(args.templates or [])
    if not paths:
        local = Path("templates")
        paths = [local if local.is_dir() else bundled_templates_path()]
    return TaskSystem(
        templates=paths,
        base_url=getattr(args, "base_url", None),
        server=getattr(args, "server", None),
        cache=getattr(args, "cache", None),
        instrument=getattr(args, "instrument", None),  # `ATOMTASK_OTEL=1`: the command's exporter (`_otel`)
    )


def _check_output_path(args: argparse.Namespace) -> None:
    """Refuse `--output` into a missing folder before any model is paid for."""
    from atomtask.errors import UsageError

    if args.output is not None and not Path(args.output).parent.is_dir():
        raise UsageError(f"Cannot write {args.output!r}: its folder does not exist; create it or fix `--output`.")


def _emit(text: str, args: argparse.Namespace, out: TextIO) -> None:
    """The command's JSON output: to `--output FILE` when given, else stdout."""
    if args.output is None:
        print(text, file=out)
        return
    from atomtask.errors import UsageError

    try:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"Cannot write {args.output!r} ({exc.strerror}); fix `--output`.") from None


def run(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO | None = None) -> int:
    """`atomtask run NAME`: the validated output (or `--result`, the whole result) as JSON."""
    check_model_flags(args.model)
    _check_output_path(args)
    inputs = parse_inputs(args.input, stdin)
    settings = model_settings(args)
    system = _system(args)
    check_model_flags(args.model, system.model_aliases)
    limits = _limits(args) or None
    if getattr(args, "dry_run", False):
        return dry_run(
            lambda: system.estimate(
                args.name, inputs, model=args.model, model_settings=settings, retries=args.retries, repair=args.repair
            ),
            args,
            out,
            err,
        )
    if getattr(args, "stream", False):
        stream = system.execute_stream(
            args.name,
            inputs,
            model=args.model,
            model_settings=settings,
            retries=args.retries,
            limits=limits,
            repair=args.repair,
        )
        result = run_streamed(stream, err, live=is_terminal(err) and not args.quiet)
    else:
        result = system.execute(
            args.name,
            inputs,
            model=args.model,
            model_settings=settings,
            retries=args.retries,
            limits=limits,
            repair=args.repair,
        )
    status = exit_status(result)
    if status != EXIT_USAGE and not args.quiet:
        _report(result, err)
        for warning in _run_warnings(system, args, result):
            print(f"atomtask: warning: {warning}", file=err)
    if args.result:
        _emit(result_json(result), args, out)
    elif result.ok:
        _emit(_output_json(result.parsedContent), args, out)
    if result.error is not None:
        print(f"atomtask: error: {result.error.reason.value}: {result.error.message}", file=err)
    return status


def dry_run(estimate: Callable[[], Estimate], args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """`--dry-run`: the estimate as a table (`--json`: as JSON); inputs a run would refuse fail as the run would."""
    from atomtask.errors import TaskFailedError, WorkflowFailedError

    try:
        found = estimate()
    except TaskFailedError as exc:
        error = exc.result.error
        if error is not None:
            print(f"atomtask: error: {error.reason.value}: {error.message}", file=err)
        return exit_status(exc.result)
    except WorkflowFailedError as exc:
        if exc.result.error is not None:
            print(f"atomtask: error: {exc.result.error.reason.value}: {exc.result.error.message}", file=err)
        return workflow_exit_status(exc.result)
    text = json.dumps(found.to_dict(), indent=2, ensure_ascii=False) if args.json else found.render()
    _emit(text, args, out)
    return EXIT_OK


def _report(result: TaskResult[Any], err: TextIO) -> None:
    """The default-model notice and the status line (left out with `-q`, and when the task never ran)."""
    if result.notes.default_model_notice:
        print(result.notes.default_model_notice, file=err)
    print(_status_line(result), file=err)


def _run_warnings(system: TaskSystem, args: argparse.Namespace, result: TaskResult[Any]) -> list[str]:
    """What the user must know about a run that went through, in the command's words (log records are for `-v`):
    the result's own warnings (`TaskNotes.warnings`: a tool the synthetic model does not call, a large prompt),
    a `{param}` of the template sent as written, a `--max-cost` that could not be enforced."""
    found = _brace_warnings(system, [args.name])
    found.extend(result.notes.warnings)  # the run's own (a large prompt, tools the synthetic model never calls)
    found.extend(_max_cost_warnings(args, result.notes.usage))
    return found


def _workflow_warnings(system: TaskSystem, args: argparse.Namespace, result: WorkflowResult[Any]) -> list[str]:
    """`_run_warnings` for a workflow run: each step's task warnings once (naming the step), sub-workflows too."""
    found: list[str] = []
    tasks: list[str] = []
    visits = list(result.steps)
    while visits:
        visit = visits.pop(0)
        if visit.subworkflow is not None:
            visits[:0] = visit.subworkflow.steps
        if visit.task is not None and visit.task not in tasks:
            tasks.append(visit.task)
        for warning in visit.result.notes.warnings if visit.result is not None else ():
            line = f"step {visit.step!r}: {warning}"
            if line not in found:  # a step visited in a loop warns once
                found.append(line)
    return [*_brace_warnings(system, tasks), *found, *_max_cost_warnings(args, result.usage)]


def _brace_warnings(system: TaskSystem, names: Sequence[str]) -> list[str]:
    """A `{param}` sent to the model as written, for each of these templates that has one."""
    found: list[str] = []
    for name in names:
        braces = system.templates.compiled(name).single_braces if name in system.templates else ()
        if braces:
            first = braces[0]
            where = f" ({first.location})" if first.location is not None else ""
            more = f" ({len(braces) - 1} more like it)" if len(braces) > 1 else ""
            found.append(
                f"template {name!r}{where}: {first.text!r} in its {first.field} was sent to the model as "
                f"written{more}; write `{{{{{first.param}}}}}` to insert the parameter (`atomtask check` lists them)"
            )
    return found


def _max_cost_warnings(args: argparse.Namespace, usage: UsageNotes) -> list[str]:
    if getattr(args, "max_cost", None) is not None and usage.total_tokens and usage.cost is None:
        return [
            "`--max-cost` was not enforced: the model's prices are unknown, so its answers have no cost; "
            "limit tokens instead (`--max-total-tokens N`)"
        ]
    return []


def _output_json(value: Any) -> str:
    import pydantic_core

    return pydantic_core.to_json(value, indent=2).decode()


def _status_line(result: TaskResult[Any]) -> str:
    notes = result.notes
    if notes.cached:
        return f"atomtask: {notes.template} {result.status.value} from the cache ({notes.model or '-'}, 0 tokens)"
    attempts = len(notes.attempts)
    tokens = notes.usage.total_tokens
    repaired = sum(1 for a in notes.attempts if a.repairs)
    extra = f", {repaired} repaired" if repaired else ""
    return (
        f"atomtask: {notes.template} {result.status.value} on {notes.model or '-'} "
        f"({attempts} attempt{'s' if attempts != 1 else ''}{extra}, {tokens} tokens, {notes.duration_ms / 1000:.2f}s)"
    )


def _rounded(value: Any) -> Any:
    """A JSON document with every `duration_ms` rounded to `DURATION_DIGITS`."""
    if isinstance(value, dict):
        return {
            key: round(item, DURATION_DIGITS) if key == "duration_ms" and isinstance(item, float) else _rounded(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_rounded(item) for item in value]
    return value


def result_json(result: TaskResult[Any]) -> str:
    """A `TaskResult` as printed by the CLI: its JSON form, durations rounded."""
    return json.dumps(_rounded(result.model_dump(mode="json")), indent=2, ensure_ascii=False)


def eval_script(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO | None = None) -> int:
    """`atomtask eval FILE.sexp`: the script's final value as JSON; `--model` applies to every call in it."""
    from atomtask.errors import SexpEvalError, SexpTaskFailedError, SexpWorkflowFailedError, UsageError
    from atomtask.system._results import TaskResult, WorkflowResult

    check_model_flags(args.model)
    _check_output_path(args)
    path = Path(args.file)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"Cannot read script {str(path)!r} ({exc.strerror}); pass a .sexp file.") from None
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"Script {str(path)!r} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "save it as UTF-8."
        ) from None
    variables = parse_inputs(args.input, stdin)
    settings = model_settings(args)
    system = _system(args)
    check_model_flags(args.model, system.model_aliases)
    try:
        value = system.defatom(source, file=str(path), variables=variables, model=args.model, model_settings=settings)
    except SexpTaskFailedError as exc:
        _emit(result_json(exc.result), args, out)
        print(f"atomtask: error: {exc}", file=err)
        return exit_status(exc.result)
    except SexpWorkflowFailedError as exc:
        _emit(_value_json(exc.result), args, out)
        print(f"atomtask: error: {exc}", file=err)
        return workflow_exit_status(exc.result)
    except SexpEvalError as exc:
        print(f"atomtask: error: {exc}", file=err)
        return EXIT_USAGE
    _emit(_value_json(value), args, out)
    if isinstance(value, WorkflowResult):
        if value.error is not None:
            print(f"atomtask: error: {value.error.reason.value}: {value.error.message}", file=err)
        return workflow_exit_status(value)
    if isinstance(value, TaskResult):
        status = exit_status(value)
        if status != EXIT_USAGE and not args.quiet:
            _report(value, err)
        if value.error is not None:
            print(f"atomtask: error: {value.error.reason.value}: {value.error.message}", file=err)
        return status
    return EXIT_OK


def _value_json(value: Any) -> str:
    """A script's value as JSON: results (durations rounded) and models in their JSON form, tasks by name.

    A function (`lambda`, `define`) prints as `"<function square (n)>"`, or `"<function (y)>"` unnamed.
    """
    import pydantic_core
    from atomtask.sexp._builtins import Closure
    from atomtask.system._results import TaskResult, WorkflowResult

    def fallback(obj: Any) -> Any:
        if isinstance(obj, Closure):
            return obj.signature()
        return getattr(obj, "name", None) or repr(obj)

    def results_rounded(obj: Any) -> Any:
        if isinstance(obj, TaskResult | WorkflowResult):
            return _rounded(obj.model_dump(mode="json"))
        if isinstance(obj, list | tuple):
            return [results_rounded(item) for item in obj]
        if isinstance(obj, dict):
            return {key: results_rounded(item) for key, item in obj.items()}
        return obj

    return pydantic_core.to_json(results_rounded(value), indent=2, fallback=fallback).decode()


def list_templates(args: argparse.Namespace, out: TextIO) -> int:
    """`atomtask list`: every template's name and description, one per line.

    `--models`: each model alias and the model it stands for; `--providers`: every provider prefix.
    """
    if getattr(args, "providers", False):
        from atomtask.loading._providers import known_providers

        for provider in sorted(known_providers()):
            print(provider, file=out)
        return EXIT_OK
    system = _system(args)
    if getattr(args, "models", False):
        from atomtask.handlers._base import model_label

        aliases = system.model_aliases
        for name in aliases:
            target, resolved = aliases[name], aliases.resolve(name)
            through = f"\t({model_label(resolved)})" if resolved is not target else ""
            print(f"{name}\t{model_label(target)}{through}", file=out)
        return EXIT_OK
    for name in system.templates.names():
        template = system.templates.get(name)
        print(f"{name}\t{template.description or ''}".rstrip(), file=out)
    return EXIT_OK


def show(args: argparse.Namespace, out: TextIO) -> int:
    """`atomtask show NAME`: the template and its output JSON Schema as the chosen model receives it."""
    check_model_flags(args.model)
    system = _system(args)
    check_model_flags(args.model, system.model_aliases)
    compiled = system.templates.compiled(args.name)
    template = compiled.template
    document = template.model_dump(mode="json", by_alias=True, exclude_none=True)
    if compiled.output_cls is not None:
        from atomtask.handlers._llm import model_output_schema

        document["output_format"]["schema"] = compiled.output_cls.__name__
        choice = system.handler.choose_model(call=args.model, template=template.model)
        sent = model_output_schema(compiled.output_cls, compiled.output_mode, choice)
        # Exactly what pydantic-ai sends the model (after the model profile's schema transformer).
        document["output_json_schema"] = sent.pop("json_schema")
        document["output_delivery"] = {"model": choice.label, **sent}
    print(json.dumps(document, indent=2), file=out)
    return EXIT_OK


def workflow(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO | None = None) -> int:
    """`atomtask workflow run|resume|runs|show|graph|list` (the actions are `atomtask.cli._workflow`)."""
    from atomtask.cli import _workflow as actions

    if args.workflow_command not in ("run", "resume"):
        system = _system(args)
        if args.workflow_command == "list":
            actions.list_workflows(system, out)
        elif args.workflow_command == "runs":
            actions.list_runs(system, out, db=args.db)
        elif args.workflow_command == "approve":
            actions.approve(
                system, args.run_id, reject=args.reject, note=args.note, db=args.db, out=out, step=args.step
            )
        elif args.workflow_command == "show":
            actions.show(system, args.name, out, db=args.db, as_json=args.json)
        else:
            actions.graph(system, args.name, out)
        return EXIT_OK
    check_model_flags(args.model)
    _check_output_path(args)
    inputs = parse_inputs(args.input, stdin)
    if args.workflow_command == "resume":  # the endpoint the run was started with, unless told another
        actions.use_recorded_endpoint(args, err)
    system = _system(args)
    check_model_flags(args.model, system.model_aliases)
    if args.workflow_command == "run" and args.dry_run:
        return dry_run(
            lambda: actions.estimate(system, args.name, inputs, model=args.model, model_settings=model_settings(args)),
            args,
            out,
            err,
        )
    if args.workflow_command == "resume":  # its inputs: the `redact: true` fields, given again
        result = actions.resume(
            system, args.run_id, inputs=inputs, model=args.model, err=err, quiet=args.quiet, db=args.db
        )
    else:
        result = actions.run(
            system,
            args.name,
            inputs,
            model=args.model,
            model_settings=model_settings(args),
            limits=_limits(args),
            err=err,
            quiet=args.quiet,
            run_id=args.run_id,
            db=args.db,
            durable=args.durable,
        )
    status = workflow_exit_status(result)
    if status != EXIT_USAGE and not args.quiet:
        print(actions.status_line(result), file=err)
        for warning in _workflow_warnings(system, args, result):
            print(f"atomtask: warning: {warning}", file=err)
    if args.result:
        _emit(json.dumps(_rounded(result.model_dump(mode="json")), indent=2, ensure_ascii=False), args, out)
    elif result.state is not None:
        _emit(actions.state_json(result), args, out)
    if result.error is not None and (args.quiet or not _told_by_a_step(result)):
        print(f"atomtask: error: {result.error.reason.value}: {result.error.message}", file=err)
    actions.resume_hint(result, err, args.quiet)
    return status


def _told_by_a_step(result: WorkflowResult[Any]) -> bool:
    """Whether a step's status line (printed as it ran) already gave the run's error, so it is not said twice."""
    error = result.error
    return error is not None and any(
        visit.error is not None and visit.error.reason is error.reason and visit.error.message == error.message
        for visit in result.steps
    )


def batch(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO | None = None) -> int:
    """`atomtask batch NAME --input FILE|-`: one JSON line per item (the command is `atomtask.cli._batch`)."""
    from atomtask.cli._batch import prepare, run_command

    args = prepare(args)  # `--resume BATCH_ID` fills in the recorded arguments, templates included
    check_model_flags(args.model)
    settings = model_settings(args)
    system = _system(args)
    check_model_flags(args.model, system.model_aliases)
    options = check_options(
        model=args.model,
        retries=args.retries,
        repair=args.repair,
        model_settings=settings,
        where="this batch",
        aliases=system.model_aliases,
    )
    return run_command(system, args, out, err, stdin, options=options)


def worker(args: argparse.Namespace, err: TextIO) -> int:
    """`atomtask worker --db URL`: run the items `atomtask batch --engine dbos` queues (see `batch._worker`)."""
    from atomtask.batch._worker import run_worker
    from atomtask.runs._store import store_url

    def make_host(base_url: str | None) -> TaskSystem:
        args.base_url = base_url  # the submitter's endpoint, over the worker's templates
        return _system(args)

    options = {"queue": args.queue or "atomtask-batch", "lease": args.lease, "err": err, "quiet": args.quiet}
    return run_worker(make_host, store_url(args.db), concurrency=args.concurrency, **options)


def cache(args: argparse.Namespace, out: TextIO) -> int:
    """`atomtask cache stats|clear [--template NAME] [--db FILE]`: the response cache's figures, or emptying it."""
    from atomtask.executors._cache_store import ResponseCache, default_cache_path

    path = Path(args.db) if args.db else default_cache_path()
    if not path.exists():  # never create a cache file only to report that it is empty
        print(f"atomtask: no response cache at {str(path)!r}", file=out)
        return EXIT_OK
    # `clear` of the whole cache starts a damaged file afresh; `stats` says it is damaged, and how to fix it.
    store = ResponseCache(path, reset_damaged=args.cache_command == "clear" and not args.template)
    try:
        if args.cache_command == "clear":
            removed = store.clear(args.template)
            scope = f" of template {args.template!r}" if args.template else ""
            print(f"atomtask: removed {removed} cached answer{'s' if removed != 1 else ''}{scope}", file=out)
            return EXIT_OK
        stats = store.stats(args.template)
    finally:
        store.close()
    if args.json:
        import attrs

        print(json.dumps(attrs.asdict(stats), indent=2), file=out)
        return EXIT_OK
    print(f"{stats.path} ({stats.size_bytes / 1024:.1f} KiB)", file=out)
    rows = [("", stats.entries, stats.hits, stats.saved_tokens)]
    rows += [(f"  {t.template}\t", t.entries, t.hits, t.saved_tokens) for t in stats.templates]
    for label, entries, hits, saved in rows:
        plural = ("y" if entries == 1 else "ies", "" if hits == 1 else "s")
        print(f"{label}{entries} entr{plural[0]}, {hits} hit{plural[1]}, {saved} tokens saved", file=out)
    return EXIT_OK
