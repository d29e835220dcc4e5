"""The `atomtask` command's arguments: the parser, `-i` inputs and model settings.

Only argparse is imported here at module level, so building the parser (for `--help`, `--version`)
costs nothing; what the values need (a file, stdin, the provider list) is read when they are used.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from atomtask.cli._batch import add_batch_parser, add_worker_parser, at_least_one, positive
from atomtask.cli._stream import with_stream

__all__ = ["build_parser", "log_options", "model_settings", "parse_inputs"]

_EPILOG = (
    "Model: --model, else the template's own, else $ATOMTASK_MODEL, else the embedded synthetic model. "
    "Exit status: 0 success; 1 the task ran and failed; 2 the command could not run (bad arguments, "
    "unknown template or input, bad model string, missing file)."
)


_WORKFLOW_HELP = (
    "Workflows are declared in the template files (a YAML mapping with `steps`, or `defworkflow`) and "
    "checked when loaded: typed state flows through steps that run tasks."
)
_WORKFLOW_EPILOG = (
    "Inputs are the state fields no step writes. Exit status: 0 the run completed; 1 it FAILED (the final "
    "state is still printed); 2 it could not start (unknown workflow, bad inputs, bad model string, missing file)."
)


class _Version(argparse.Action):
    """`--version`: the installed distribution's version, looked up only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any, **__: Any) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("atomtask")
        except PackageNotFoundError:  # run from a source tree that was never installed
            number = "unknown"
        import sys

        print(f"atomtask {number}", file=sys.stdout)  # where argparse prints `--help` too
        parser.exit(0)


def _log_options(parser: argparse.ArgumentParser, *, suffix: str) -> None:
    """-v/-q/--log-format, on the main parser and (with `suffix` dests) after every subcommand."""
    after = bool(suffix)
    group = parser.add_argument_group("output of log events (on stderr; before or after the command)")
    group.add_argument(
        "-v",
        "--verbose",
        dest=f"verbose{suffix}",
        action="count",
        default=argparse.SUPPRESS if after else 0,
        help="more log events: -v info, -vv debug (and tracebacks of unexpected errors)",
    )
    group.add_argument(
        "-q",
        "--quiet",
        dest=f"quiet{suffix}",
        action="store_true",
        default=argparse.SUPPRESS if after else False,
        help="only errors: no notices, status lines or warnings",
    )
    group.add_argument(
        "--log-format",
        dest=f"log_format{suffix}",
        choices=["auto", "console", "json"],
        default=argparse.SUPPRESS if after else "auto",
        help="console or JSON lines (default auto: console on a terminal, JSON otherwise)",
    )


def log_options(args: argparse.Namespace) -> tuple[int, bool, str]:
    """(verbosity, quiet, log format) from the options given before and after the subcommand."""
    verbose = int(args.verbose) + int(getattr(args, "verbose_after", 0))
    quiet = bool(args.quiet or getattr(args, "quiet_after", False))
    return verbose, quiet, str(getattr(args, "log_format_after", args.log_format))


def _with_templates(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--templates",
        action="append",
        metavar="PATH",
        help="template file or folder (repeatable; default: ./templates if present, else the shipped templates)",
    )


def _with_inputs_and_model(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "-i",
        "--input",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"{what}: key=text, key=@file (the file's text, or an image, PDF or audio file for such a "
        "parameter), key=@- (stdin), or key:=json (a JSON value)",
    )
    p.add_argument(
        "--model",
        help="the model for every call, over the template's own (e.g. openai-chat:gpt-4o-mini, or an alias the "
        "files declare under `models:`)",
    )
    p.add_argument(
        "--base-url", help="the provider's endpoint (openai-chat:, ollama:, anthropic:, ...), e.g. a local server"
    )
    p.add_argument(
        "--server",
        metavar="KIND",
        help="the kind of OpenAI-compatible server at --base-url: llama-cpp-python, llama-server, ollama, vllm, "
        "lmstudio, openai or generic (default: asked of the server at the first request)",
    )


def _with_settings(p: argparse.ArgumentParser) -> None:
    """The model settings group (`run`, `eval`, `workflow run`, `batch`): `model_settings` reads it."""
    group = p.add_argument_group("model settings (sent with every model request)")
    group.add_argument("--temperature", type=float, metavar="F", help="sampling temperature")
    group.add_argument(
        "--max-tokens",
        type=at_least_one,
        metavar="N",
        help="at most N tokens in each answer (the model's `max_tokens`; not a total)",
    )
    group.add_argument("--top-p", type=float, metavar="F", help="nucleus sampling probability mass")
    group.add_argument("--seed", type=int, metavar="N", help="random seed, where the provider supports one")
    group.add_argument("--timeout", type=positive, metavar="SECONDS", help="timeout of each model request")
    group.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any other pydantic-ai model setting (repeatable; VALUE is JSON when it parses, else text)",
    )


def _with_dry_run(p: argparse.ArgumentParser) -> None:
    """`--dry-run` (and `--json` for its figures): what the run would cost, no model called (`run`, `workflow run`,
    `batch`)."""
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="call no model: print what the run would cost (requests, input and output tokens, USD; expected and "
        "worst case, per template and in total)",
    )
    p.add_argument("--json", action="store_true", help="with --dry-run: the estimate as JSON")


def _with_cache(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--cache",
        action=argparse.BooleanOptionalAction,
        help="serve repeated calls from the response cache ($ATOMTASK_HOME/cache.sqlite3), or never "
        "(--no-cache), over every template's `cache:` (default: as each template says; off where it is silent)",
    )


def _with_cache_command(sub: Any, common: argparse.ArgumentParser) -> None:
    """`atomtask cache stats|clear [--template NAME]`."""
    cache = sub.add_parser("cache", help="show or clear the response cache of validated answers")
    actions = cache.add_subparsers(dest="cache_command", required=True, metavar="ACTION")
    for action, text in (
        ("stats", "entries, hits and the tokens the hits saved, in all and per template"),
        ("clear", "remove the stored answers (of one template with --template)"),
    ):
        p = actions.add_parser(action, parents=[common], help=text)
        p.add_argument("--template", metavar="NAME", help="only this template's answers")
        p.add_argument("--db", metavar="FILE", help="the cache file (default: $ATOMTASK_HOME/cache.sqlite3)")
        if action == "stats":
            p.add_argument("--json", action="store_true", help="print the figures as JSON")


def _with_retries(group: argparse._ArgumentGroup) -> None:
    """`--retries N` and `--repair MODE` / `--no-repair`: how each answer is re-asked or repaired (`run`, `batch`)."""
    group.add_argument("--retries", type=int, metavar="N", help="re-ask the model up to N times on invalid output")
    group.add_argument(
        "--repair",
        choices=("safe", "lenient", "off"),
        help="repair invalid output locally: `safe` fixes syntax only (the template's default unless it says "
        "otherwise), `lenient` also reads values toward the schema, `off` re-asks",
    )
    group.add_argument("--no-repair", dest="repair", action="store_const", const="off", help="same as `--repair off`")


def _with_limits(group: argparse._ArgumentGroup, scope: str) -> None:
    group.add_argument("--max-requests", type=int, metavar="N", help=f"at most N model requests ({scope})")
    group.add_argument("--max-total-tokens", type=int, metavar="N", help=f"at most N tokens in total ({scope})")
    group.add_argument("--max-cost", type=float, metavar="USD", help="at most this cost where prices are known")


def _with_workflow(sub: Any, common: argparse.ArgumentParser) -> None:
    """`atomtask workflow run|resume|runs|show|graph|list` (the actions are `atomtask.cli._workflow`)."""
    workflow = sub.add_parser(
        "workflow", help="run a workflow, or show its steps and data flow", description=_WORKFLOW_HELP
    )
    actions = workflow.add_subparsers(dest="workflow_command", required=True, metavar="ACTION")
    run = actions.add_parser(
        "run",
        parents=[common],
        help="run a workflow; its final state as JSON on stdout, one status line per step on stderr",
        epilog=_WORKFLOW_EPILOG,
    )
    run.add_argument("name", help="workflow name")
    _with_inputs_and_model(run, "a run input (a state field)")
    run.add_argument("--result", action="store_true", help="print the whole WorkflowResult (every step) as JSON")
    _with_output(run)
    _with_settings(run)
    _with_limits(run.add_argument_group("limits (tighten the workflow's own)"), "across every step")
    _with_cache(run)
    _with_dry_run(run)
    _with_templates(run)
    from atomtask.cli._workflow import add_db, add_durable_arguments  # argparse only: light

    add_durable_arguments(
        actions, common, run, epilog=_WORKFLOW_EPILOG, with_output=_with_output, with_templates=_with_templates
    )
    for action, text in (
        ("show", "print a workflow's steps and data flow; given a run id, the run's state after each step"),
        ("graph", "print a workflow as a Mermaid flowchart (GitHub renders it in a ```mermaid block)"),
    ):
        shown = actions.add_parser(action, parents=[common], help=text)
        shown.add_argument("name", help="workflow name (for `show`, or a run id)")
        if action == "show":
            shown.add_argument("--json", action="store_true", help="a run as JSON: each step's state and ledger")
        _with_templates(shown)
        add_db(shown)
    _with_templates(actions.add_parser("list", parents=[common], help="list the registered workflows"))


def _with_output(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", metavar="FILE", help="write the JSON output to FILE instead of stdout")


def build_parser() -> argparse.ArgumentParser:
    """The command line: global options, then `run`, `eval`, `list`, `show`, `workflow`, `cache`, `memory`, `check`."""
    parser = argparse.ArgumentParser(
        prog="atomtask",
        description="Run atomic LLM tasks with typed, validated output.",
        epilog=_EPILOG,
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    _log_options(parser, suffix="")
    common = argparse.ArgumentParser(add_help=False)
    _log_options(common, suffix="_after")
    common.add_argument(
        "--allow-import",
        action="append",
        default=[],
        metavar="PACKAGE",
        help="let declarations import code (tools, `call:` steps, `python:` schemas) from PACKAGE, found from the "
        "working directory as with `python -m` (repeatable; also $ATOMTASK_IMPORTABLE, comma-separated)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser(
        "run", parents=[common], help="execute a template and print its validated output as JSON", epilog=_EPILOG
    )
    run.add_argument("name", help="template name")
    _with_inputs_and_model(run, "an input")
    run.add_argument("--result", action="store_true", help="print the whole TaskResult as JSON")
    _with_output(run)
    _with_settings(run)
    limits = run.add_argument_group("retries and limits")
    _with_retries(limits)
    _with_limits(limits, "all attempts")
    _with_cache(run)
    _with_dry_run(run)
    with_stream(run)
    _with_templates(run)

    ev = sub.add_parser(
        "eval",
        parents=[common],
        help="evaluate an S-expression script and print its final value as JSON",
        description="Evaluate FILE.sexp (defatom, defschema, task calls) and print its final value as JSON. "
        "Each -i input is bound as a variable of that name in the script; --model and the model settings "
        "apply to every task call in it.",
        epilog=_EPILOG,
    )
    ev.add_argument("file", metavar="FILE.sexp", help="the script to evaluate")
    _with_inputs_and_model(ev, "bind a variable")
    _with_output(ev)
    _with_settings(ev)
    _with_cache(ev)
    _with_templates(ev)

    lst = sub.add_parser("list", parents=[common], help="list the registered templates")
    _with_templates(lst)
    listed = lst.add_mutually_exclusive_group()
    listed.add_argument(
        "--models", action="store_true", help="list the model aliases instead (`models:`), each with its model"
    )
    listed.add_argument(
        "--providers", action="store_true", help="list every provider prefix a model string may use instead"
    )

    show = sub.add_parser(
        "show", parents=[common], help="print a template and its output JSON Schema as the model receives it"
    )
    show.add_argument("name")
    show.add_argument("--model", help="the model whose schema rules apply (default: as `run` would choose)")
    _with_templates(show)

    _with_workflow(sub, common)
    _with_cache_command(sub, common)
    add_batch_parser(
        sub,
        common,
        with_templates=_with_templates,
        with_settings=_with_settings,
        with_retries=_with_retries,
        with_dry_run=_with_dry_run,
    )
    add_worker_parser(sub, common, with_templates=_with_templates)

    from atomtask.cli._memory import add_memory_parser

    add_memory_parser(sub, parents=[common])

    from atomtask.cli._check import add_arguments as check_arguments  # argparse only: light

    check_arguments(
        sub.add_parser("check", parents=[common], help="check templates and schemas without calling any model")
    )
    from atomtask.cli import _init as init_cli  # argparse only: light

    init_cli.add_arguments(
        sub.add_parser(
            "init",
            parents=[common],
            help="write a small runnable project (templates, a workflow, test cases) to start from",
            description=init_cli.DESCRIPTION,
        )
    )
    from atomtask.cli import _test as test_cli  # argparse only: light

    test_cli.add_arguments(
        sub.add_parser(
            "test",
            parents=[common],
            help="replay the recorded answers of template cases (NAME.cases.yaml) offline and check them",
            description=test_cli.DESCRIPTION,
            epilog=test_cli.EPILOG,
        )
    )
    return parser


def parse_inputs(pairs: Sequence[str], stdin: TextIO | None = None) -> dict[str, Any]:
    """`-i` values: `key=text`, `key=@file` (UTF-8 text; an image, audio or PDF as its path), `key=@-` (stdin,
    once), `key:=json`."""
    from atomtask.errors import UsageError

    values: dict[str, Any] = {}
    stdin_key: str | None = None
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.rstrip(":"):
            raise UsageError(f"Input {pair!r} is not KEY=VALUE; write it as `-i name=value`.")
        if key.endswith(":"):
            key = key[:-1]
            try:
                values[key] = json.loads(value)
            except json.JSONDecodeError as exc:
                raise UsageError(
                    f"Input {key!r}: `{value}` is not valid JSON ({exc.msg}); use `{key}=text` for text."
                ) from None
            continue
        if value == "@-":
            if stdin_key is not None:
                raise UsageError(f"Inputs {stdin_key!r} and {key!r} both read stdin (`@-`); only one can.")
            stdin_key = key
            value = _read_stdin(key, stdin)
        elif value.startswith("@"):
            values[key] = _read_file(key, Path(value[1:]))
            continue
        values[key] = value
    return values


def _read_file(key: str, path: Path) -> Any:
    """A `key=@file` value: its text (a `TextFile`, which a `document` parameter reads as the file), or, for an
    image, audio, PDF or office file (by its suffix), its `Path`, which an `image`, `document` or `audio`
    parameter reads when the task runs."""
    from atomtask.errors import UsageError
    from atomtask.system._media import TextFile, binary_media_type

    try:
        if binary_media_type(path) is not None:
            with path.open("rb"):  # it can be read (the task reads it when it runs)
                return path
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"Input {key!r}: cannot read {str(path)!r} ({exc.strerror}).") from None
    return TextFile(_decode(data, f"Input {key!r}: {str(path)!r}"), path)


def _read_stdin(key: str, stdin: TextIO | None) -> str:
    import sys

    stream = stdin if stdin is not None else sys.stdin
    if stream is None:
        from atomtask.errors import UsageError

        raise UsageError(f"Input {key!r} reads stdin (`@-`), but there is no stdin.")
    buffer = getattr(stream, "buffer", None)
    if buffer is None:  # a text stream without bytes underneath (a StringIO in tests)
        return stream.read()
    return _decode(buffer.read(), f"Input {key!r}: stdin")


def _decode(data: bytes, what: str) -> str:
    from atomtask.errors import UsageError

    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"{what} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "convert it to UTF-8 (e.g. `iconv -t utf-8`)."
        ) from None


_SETTING_FLAGS = ("temperature", "max_tokens", "top_p", "seed", "timeout")


def model_settings(args: argparse.Namespace) -> dict[str, Any] | None:
    """The model settings of `--setting KEY=VALUE` and the named flags (which win), or None when none."""
    from atomtask.errors import UsageError

    settings: dict[str, Any] = {}
    for pair in getattr(args, "setting", []):
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"Setting {pair!r} is not KEY=VALUE; write it as `--setting temperature=0`.")
        try:
            settings[key] = json.loads(raw)
        except json.JSONDecodeError:
            settings[key] = raw
    for name in _SETTING_FLAGS:
        value = getattr(args, name, None)
        if value is not None:
            settings[name] = value
    if not settings:
        return None
    from atomtask.loading._providers import check_model_settings

    return check_model_settings(settings, where="the command line (`--setting`, `--temperature`, ...)")
