"""`atomtask workflow`: run (durably) and resume a workflow, approve it, list and show runs, show, draw, list workflows.

The arguments of the durable-run actions (`--run-id`/`--db`, `resume`, `approve`, `runs`) are built
here with argparse only, so building the parser stays free. Each action takes a loaded `TaskSystem`
and writes to the streams it is given; `_commands.workflow` parses the arguments, builds the system and
decides the exit status. `show`, `graph` and `list` never import pydantic-ai: they read the checked
workflows only. A run is durable (a run id, a checkpoint per step, `resume`) when DBOS is installed
(`atomtask[durable]`) or `--run-id`/`--db` ask for it; `runs` and `show RUN_ID` read the run store
without running anything.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from atomtask._task_system import TaskSystem
    from atomtask.estimate._figures import Estimate
    from atomtask.runs._records import RunInfo
    from atomtask.system._results import StepVisit, WorkflowResult

__all__ = [
    "add_db",
    "add_durable_arguments",
    "approve",
    "durable_wanted",
    "estimate",
    "graph",
    "list_runs",
    "list_workflows",
    "resume",
    "resume_hint",
    "run",
    "run_text",
    "show",
    "state_json",
    "status_line",
    "use_recorded_endpoint",
]


def add_db(p: argparse.ArgumentParser) -> None:
    """`--db PATH|URL`: the run store."""
    p.add_argument(
        "--db",
        metavar="PATH|URL",
        help="the run store: a SQLite file or a postgresql:// URL (default: $ATOMTASK_HOME/runs.sqlite, "
        "$ATOMTASK_HOME defaulting to ~/.local/share/atomtask)",
    )


def add_durable_arguments(
    actions: Any,
    common: argparse.ArgumentParser,
    run: argparse.ArgumentParser,
    *,
    epilog: str,
    with_output: Callable[[argparse.ArgumentParser], None],
    with_templates: Callable[[argparse.ArgumentParser], None],
) -> None:
    """`--run-id` and `--db` on `run`; the `resume RUN_ID`, `approve RUN_ID` and `runs` actions."""
    run.add_argument("--run-id", metavar="ID", help="the durable run's id (default: a new one, printed)")
    add_db(run)
    durable = run.add_mutually_exclusive_group()
    durable.add_argument(
        "--durable",
        action="store_true",
        default=None,
        help="checkpoint each step in the run store, to resume it (default when `atomtask[durable]` is installed, "
        "unless $ATOMTASK_DURABLE=0)",
    )
    durable.add_argument(
        "--no-durable", dest="durable", action="store_false", help="a plain run: no run id, no checkpoints, no DBOS"
    )
    resume = actions.add_parser(
        "resume",
        parents=[common],
        help="resume an interrupted or FAILED run from its last completed step",
        epilog=epilog,
    )
    resume.add_argument("run_id", metavar="RUN_ID", help="the run's id (see `atomtask workflow runs`)")
    resume.add_argument(
        "-i",
        "--input",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a `redact: true` field's value again (never stored): key=text, key=@file, key=@-, key:=json",
    )
    resume.add_argument("--model", help="the model for every step still to run (default: the run's own)")
    resume.add_argument("--base-url", help="the provider's endpoint, as for `run`")
    resume.add_argument("--result", action="store_true", help="print the whole WorkflowResult (every step) as JSON")
    with_output(resume)
    with_templates(resume)
    add_db(resume)
    approve = actions.add_parser("approve", parents=[common], help="approve (or reject) a run WAITING at an approval")
    approve.add_argument("run_id", metavar="RUN_ID", help="the waiting run's id (see `atomtask workflow runs`)")
    approve.add_argument("--reject", action="store_true", help="reject instead of approving")
    approve.add_argument("--note", metavar="TEXT", help="a note kept with the decision")
    approve.add_argument(
        "--step", metavar="STEP", help="decide only if the run waits at this approval step (never the next gate)"
    )
    with_templates(approve)
    add_db(approve)
    runs = actions.add_parser("runs", parents=[common], help="list the durable runs: id, workflow, status, step")
    with_templates(runs)
    add_db(runs)


def run(
    system: TaskSystem,
    name: str,
    inputs: Mapping[str, Any],
    *,
    model: str | None,
    model_settings: Mapping[str, Any] | None,
    limits: Mapping[str, Any] | None,
    err: TextIO,
    quiet: bool,
    run_id: str | None = None,
    db: str | None = None,
    durable: bool | None = None,
) -> WorkflowResult[Any]:
    """Run workflow `name`, printing one line per top-level step visit on `err` as it ends (none with `quiet`).

    Durable (its run id printed first) as `durable_wanted` decides. Run inputs that do not fit the state
    are a FAILED result before any run id exists: nothing is stored. Raises what `TaskSystem.run_workflow`
    raises before a run (unknown workflow, bad model or settings, a used run id), and
    `DurableRunsUnavailableError` when durability is asked for without the `durable` extra. Ctrl-C in a
    durable run raises `KeyboardInterrupt` naming the command that resumes it.
    """
    compiled = system.workflows.compiled(name)  # an unknown name raises before the executor is built
    from atomtask.system._results import TaskError
    from atomtask.workflows._state import initial_state

    wanted = durable_wanted(durable, run_id=run_id, db=db)
    on_visit = _visit_printer(compiled.name, err, quiet)
    if not wanted or isinstance(initial_state(compiled, inputs), TaskError):
        # Not durable, or inputs that cannot start a run: the runner's FAILED result, no run id, nothing stored.
        return system.run_workflow(
            name, inputs, model=model, model_settings=model_settings, limits=limits or None, on_visit=on_visit
        )
    if run_id is None:
        from atomtask.runs._durable import new_run_id

        run_id = new_run_id()
    else:  # refused before its line is printed: `q~2` would be a segment of run `q`
        from atomtask.runs._records import check_run_id

        check_run_id(run_id)
    if not quiet:
        print(f"atomtask: run {run_id} of {compiled.name}", file=err)
    try:
        result = system.run_workflow(
            name,
            inputs,
            model=model,
            model_settings=model_settings,
            limits=limits or None,
            on_visit=on_visit,
            run_id=run_id,
            db=db,
            on_waiting=_waiting_printer(err),
        )
    except KeyboardInterrupt:
        raise KeyboardInterrupt(_interrupted(run_id)) from None
    return result


def estimate(
    system: TaskSystem,
    name: str,
    inputs: Mapping[str, Any],
    *,
    model: str | None,
    model_settings: Mapping[str, Any] | None,
) -> Estimate:
    """`workflow run --dry-run`: what a run of workflow `name` would cost; no model is called, nothing is stored.

    Raises `WorkflowNotFoundError` for an unknown name (before anything is built) and `WorkflowFailedError`
    for run inputs that do not fit the state, as a run reports them.
    """
    system.workflows.compiled(name)  # an unknown name raises before the executor is built
    return system.estimate(name, inputs, model=model, model_settings=model_settings)


#: `ATOMTASK_DURABLE`'s values that turn durable runs off, and on.
_OFF = frozenset({"0", "false", "no", "off"})
_ON = frozenset({"1", "true", "yes", "on"})


def durable_wanted(durable: bool | None, *, run_id: str | None = None, db: str | None = None) -> bool:
    """Whether `workflow run` is durable: `--durable`/`--no-durable`, else `--run-id`/`--db`, else `ATOMTASK_DURABLE`,
    else whether the `durable` extra (DBOS) is installed.

    Raises `ConfigurationError` for `--no-durable` with `--run-id`/`--db` or a value of `ATOMTASK_DURABLE` it
    does not know, and `DurableRunsUnavailableError` when durability is asked for without DBOS.
    """
    import os

    from atomtask.errors import ConfigurationError, DurableRunsUnavailableError

    installed = importlib.util.find_spec("dbos") is not None
    if durable is False:
        if run_id is not None or db is not None:
            flag = "--run-id" if run_id is not None else "--db"
            raise ConfigurationError(f"`--no-durable` and `{flag}` contradict each other; drop one of them.")
        return False
    setting = os.environ.get("ATOMTASK_DURABLE", "").strip().lower()
    if setting and setting not in _OFF | _ON:
        raise ConfigurationError(
            f"ATOMTASK_DURABLE={setting!r} is neither on nor off; set it to 1 (durable runs) or 0 (plain runs)."
        )
    if durable is None and run_id is None and db is None:
        if setting in _OFF:
            return False
        if not installed and setting not in _ON:
            return False
    if not installed:
        raise DurableRunsUnavailableError()
    return True


def _interrupted(run_id: str) -> str:
    return f"interrupted: resume with `atomtask workflow resume {run_id}`"


def resume_hint(result: WorkflowResult[Any], err: TextIO, quiet: bool) -> None:
    """After a durable run that FAILED where resuming can help, its last line: the command that goes on from there.

    None for a run a `fail:` step ended on purpose: resuming it would end it the same way.
    """
    from atomtask.system._results import FailureReason

    if quiet or result.error is None or result.run_id is None:
        return
    if result.error.reason in (FailureReason.FAILED_BY_STEP, FailureReason.INPUT_VALIDATION_FAILURE):
        return
    at = f" from step {result.error.step!r}" if result.error.step else ""
    print(f"atomtask: resume with `atomtask workflow resume {result.run_id}` to go on{at}", file=err)


def resume(
    system: TaskSystem,
    run_id: str,
    *,
    db: str | None,
    model: str | None,
    err: TextIO,
    quiet: bool,
    inputs: Mapping[str, Any] | None = None,
) -> WorkflowResult[Any]:
    """Resume run `run_id` from its last checkpoint, printing a line per step visit (the replayed ones too).

    `inputs` are the values of its `redact: true` fields, given again (they are never stored).
    """
    if not quiet:
        print(f"atomtask: resuming run {run_id}", file=err)
    on_visit = _visit_printer(None, err, quiet)
    on_waiting = _waiting_printer(err)
    try:
        result = system.resume_workflow(
            run_id, db=db, model=model, on_visit=on_visit, inputs=inputs, on_waiting=on_waiting
        )
    except KeyboardInterrupt:
        raise KeyboardInterrupt(_interrupted(run_id)) from None
    return result


def use_recorded_endpoint(args: argparse.Namespace, err: TextIO) -> None:
    """`resume`: send the run's steps where the run was started (`--base-url` as recorded with it).

    A `--base-url` or `--model` other than the run's own wins, and one line on `err` says so (even with -q):
    the resumed steps go elsewhere than the finished ones did. Raises `RunNotFoundError` for an unknown run.
    """
    from atomtask.handlers._blocking import run_blocking
    from atomtask.runs import _durable as durable

    info = run_blocking(durable.show(args.run_id, db=args.db))
    if args.base_url is None:
        args.base_url = info.base_url
    elif args.base_url != info.base_url:
        was = f"--base-url {info.base_url}" if info.base_url else "the provider's own endpoint"
        print(
            f"atomtask: run {args.run_id} was started with {was}; its remaining steps go to --base-url {args.base_url}",
            file=err,
        )
    if args.model is not None and args.model != info.model:
        was = f"--model {info.model}" if info.model else "no --model (each step's own model)"
        print(
            f"atomtask: run {args.run_id} was started with {was}; its remaining steps use --model {args.model}",
            file=err,
        )


def _waiting_printer(err: TextIO) -> Callable[[str, dict[str, Any]], None]:
    """Says on `err` that the run waits for an approval, how to decide, and how to leave it waiting (even with -q)."""

    def on_waiting(run_id: str, waiting: dict[str, Any]) -> None:
        from atomtask.errors import join_sentences

        if waiting.get("resumed"):  # it was WAITING when resumed: a decision sent since then goes on now
            print(
                f"atomtask: run {run_id} was WAITING at step {waiting.get('step')!r} when it stopped "
                f"({waiting.get('message')}): it goes on now if a decision was sent since; if not, it waits for one: "
                f"`atomtask workflow approve {run_id}` (or --reject).",
                file=err,
                flush=True,
            )
            return
        print(
            join_sentences(
                f"atomtask: run {run_id} WAITING at step {waiting.get('step')!r}: {waiting.get('message')}",
                f"Approve from anywhere with `atomtask workflow approve {run_id}` (or --reject); Ctrl-C leaves it "
                f"waiting: `atomtask workflow resume {run_id}` continues it.",
            ),
            file=err,
            flush=True,
        )

    return on_waiting


def _visit_printer(name: str | None, err: TextIO, quiet: bool) -> Callable[[StepVisit], None]:
    notice_shown = False

    from atomtask.workflows._graph import visit_line

    def on_visit(visit: StepVisit) -> None:
        nonlocal notice_shown
        if quiet:
            return
        notice = visit.result.notes.default_model_notice if visit.result is not None else None
        if notice and not notice_shown:
            notice_shown = True
            print(notice, file=err)
        print(f"atomtask: {name + ' ' if name else ''}{visit_line(visit)}", file=err, flush=True)

    return on_visit


def status_line(result: WorkflowResult[Any]) -> str:
    """The final line of a run: status, where it stopped, steps, requests, tokens and time."""
    steps = len(result.steps)
    requests = result.usage.requests
    at = f" at step {result.error.step!r}" if result.error is not None and result.error.step else ""
    return (
        f"atomtask: {result.workflow} {result.status.value}{at} ({steps} step visit{'s' if steps != 1 else ''}, "
        f"{requests} request{'s' if requests != 1 else ''}, {result.usage.total_tokens} tokens, "
        f"{result.duration_ms / 1000:.2f}s)"
    )


def state_json(result: WorkflowResult[Any]) -> str:
    """The run's final state (as it was when a failed run stopped) as JSON."""
    state = result.state
    document = state.model_dump(mode="json") if state is not None else None
    return json.dumps(document, indent=2, ensure_ascii=False)


def show(system: TaskSystem, name: str, out: TextIO, *, db: str | None = None, as_json: bool = False) -> None:
    """The workflow's state fields (run inputs marked), steps, what each reads and writes, and where each goes.

    When `name` is no registered workflow but a run id in the run store: that run in the same readable form
    (`run_text`); with `as_json`, as JSON: the state after each completed step and each step's visits with
    their ledgers.
    """
    from atomtask.errors import WorkflowNotFoundError

    try:
        compiled = system.workflows.compiled(name)
    except WorkflowNotFoundError:
        if db is None and importlib.util.find_spec("dbos") is None:
            raise
        from atomtask.errors import RunNotFoundError
        from atomtask.handlers._blocking import run_blocking
        from atomtask.runs import _durable as durable

        try:
            info = run_blocking(durable.show(name, db=db))
        except RunNotFoundError as unknown:  # neither a workflow nor a run: say both, with the close names of each
            runs = [r.run_id for r in run_blocking(durable.list_runs(db=db))]
            raise _neither(name, system.workflows.names(), runs, unknown.store) from None
        if as_json:
            print(json.dumps(info.as_json(checkpoints=True), indent=2, ensure_ascii=False), file=out)
        else:
            out.write(run_text(info))
        return
    from atomtask.workflows._graph import dataflow_summary

    out.write(dataflow_summary(compiled))


#: The widest a state value is shown in `run_text` before it is cut.
_VALUE_WIDTH = 70


def run_text(info: RunInfo) -> str:
    """A stored run as `workflow show RUN_ID` prints it: status, workflow, what it waits for or why it failed,
    its steps with their status, its state after its last completed step, and the command that goes on."""
    from atomtask.workflows._graph import visit_line

    version = f" (version {info.version})" if info.version else ""
    lines = [f"run {info.run_id}: workflow {info.workflow}{version}", f"  status: {info.status}"]
    if info.waiting is not None:
        lines.append(f"  waiting: step {info.waiting.get('step')!r}: {info.waiting.get('message')}")
    if info.error:
        lines.append(f"  failure: {info.reason + ': ' if info.reason else ''}{info.error}")
    if info.model or info.base_url:
        lines.append(f"  model: {info.model or '-'}" + (f" at {info.base_url}" if info.base_url else ""))
    cost = f", ${info.usage.cost:.4f}" if info.usage.cost is not None else ""
    lines.append(f"  usage: {info.usage.requests} requests, {info.usage.total_tokens} tokens{cost}")
    stamps = [(label, ms) for label, ms in (("started", info.created_ms), ("updated", info.updated_ms)) if ms]
    if stamps:
        lines.append("  " + ", ".join(f"{label} {_when(ms)}" for label, ms in stamps))
    lines.append("steps:" if info.checkpoints else "steps: none completed")
    lines.extend(f"  {visit_line(visit)}" for c in info.checkpoints for visit in c.visits)
    if info.checkpoints:
        last = info.checkpoints[-1]
        lines.append(f"state after {last.step!r}:")
        for field, value in last.state.items():
            shown = json.dumps(value, ensure_ascii=False, default=str)
            cut = shown if len(shown) <= _VALUE_WIDTH else shown[: _VALUE_WIDTH - 3] + "..."
            lines.append(f"  {field}: {cut}")
    if info.status == "WAITING":
        lines.append(f"next: `atomtask workflow approve {info.run_id}` (or --reject)")
    elif info.status in ("PENDING", "FAILED", "ERROR") and info.reason != "failed_by_step":
        lines.append(f"next: `atomtask workflow resume {info.run_id}`")
    lines.append(f"(the whole record: `atomtask workflow show {info.run_id} --json`)")
    return "\n".join(lines) + "\n"


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _neither(name: str, workflows: list[str], runs: list[str], store: str) -> Exception:
    """The error for a `show` argument that is neither a registered workflow nor a run in `store`."""
    from atomtask.errors import WorkflowNotFoundError, near_names

    near = [*(f"workflow {w!r}" for w in near_names(name, workflows)), *(f"run {r!r}" for r in near_names(name, runs))]
    hint = f" Did you mean {' or '.join(near)}?" if near else ""
    return WorkflowNotFoundError(
        f"{name!r} is neither a workflow nor a run in {store}.{hint} List them with `atomtask workflow list` and "
        "`atomtask workflow runs` (with the same `--db`)."
    )


def approve(
    system: TaskSystem,
    run_id: str,
    *,
    reject: bool,
    note: str | None,
    db: str | None,
    out: TextIO,
    step: str | None = None,
) -> None:
    """Send the decision to run `run_id`, WAITING at an approval step; one line says what was decided, and what next.

    When the process that ran it has gone (Ctrl-C), the run goes on only once resumed: the line says so.
    """
    import getpass

    from atomtask.runs._checkpoints import waiter_alive

    info = system.approve_workflow(run_id, approved=not reject, note=note, by=getpass.getuser(), db=db, step=step)
    decided = "rejected" if reject else "approved"
    alive = waiter_alive(info.waiting or {})
    if alive:
        after = "; its process goes on with it"
    elif alive is None:
        after = f"; if its process has gone, continue it with `atomtask workflow resume {run_id}`"
    else:
        after = f"; no process runs it now: continue it with `atomtask workflow resume {run_id}`"
    print(f"atomtask: run {run_id}: {decided} step {info.current_step!r} of {info.workflow}{after}", file=out)


def list_runs(system: TaskSystem, out: TextIO, *, db: str | None = None) -> None:
    """The runs in the store, the most recent first: id, workflow, version, status, current step, cost, updated."""
    rows = [("RUN", "WORKFLOW", "VERSION", "STATUS", "STEP", "COST", "UPDATED")]
    for info in system.workflow_runs(db=db):
        cost = f"{info.usage.cost:.4f}" if info.usage.cost is not None else "-"
        updated = (
            datetime.fromtimestamp(info.updated_ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
            if info.updated_ms is not None
            else "-"
        )
        step = info.current_step or "-"
        rows.append((info.run_id, info.workflow, info.version or "-", info.status, step, cost, updated))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip(), file=out)


def graph(system: TaskSystem, name: str, out: TextIO) -> None:
    """The workflow as a Mermaid `flowchart` (paste it into a ```mermaid block)."""
    from atomtask.workflows._graph import mermaid

    out.write(mermaid(system.workflows.compiled(name)))


def list_workflows(system: TaskSystem, out: TextIO) -> None:
    """Every registered workflow's name and description, one per line (tab-separated)."""
    for name in system.workflows.names():
        workflow = system.workflows.get(name)
        description = " ".join((workflow.description or "").split())
        print(f"{name}\t{description}".rstrip(), file=out)
