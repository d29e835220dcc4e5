"""`python -m atomtask.testing serve`: the fake provider from the shell, until Ctrl-C.

It runs a `FakeProviderServer` on a port of your choosing (`--port 0`: a free one) whose answers come
from `_served.ServedAnswers`: schema-valid synthetic data by default, a replies file with `--replies`,
slowed by `--delay` and failing with `--fail-first`; `--server NAME` answers as that kind of local
server does (`_servers`). It prints the endpoints to use (`--base-url` for
`openai-chat:` models and for `anthropic:` ones), then one line per request, and stops cleanly on
Ctrl-C or SIGTERM (exit 0). Exit status 2: the command could not start (a bad replies file, a port
in use).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from atomtask.testing._server import FakeProviderServer

__all__ = ["build_parser", "main"]

EXIT_OK = 0
EXIT_USAGE = 2

_DESCRIPTION = """\
Run atomtask's fake LLM provider on localhost, so the `--base-url` flow can be tried without a key
or a network. It speaks OpenAI chat completions (`openai-chat:` models, any OpenAI-compatible
client) and Anthropic messages (`anthropic:` models), and answers each request as it asks: a call
of its output tool, JSON for a JSON Schema response format, else text."""

_SERVE_EPILOG = """\
answers:
  By default, schema-valid synthetic data (what the `atomtask:synthetic` model gives), the same
  for the same request. With --replies FILE, the file's replies instead, in order, one a request:

    - output: {name: Ada Lovelace, email: ada@example.com}   # sent as the request asks
    - '{"name": "Grace Hopper", "email": null,}'              # a raw answer, even malformed
    - text: Sorry, I cannot help with that.                   # plain text
    - tool_call: {product: grinder}                           # a call of a tool
      tool: lookup_price
    - error: 429                                              # an HTTP error
      message: slow down
    - disconnect: true                                        # no answer at all

  Any entry may add `delay: SECONDS`. A .jsonl file holds one entry a line, as JSON.
  The provider SDKs retry 429 and 5xx answers (twice by default): a client sees fewer failures.

servers:
  --server NAME answers /v1/chat/completions as that local server does: its owner in /v1/models,
  what it refuses (llama-cpp-python: a json_schema response format or an assistant `content: null`,
  HTTP 500; lmstudio: a json_object response format, HTTP 400), the token limit it reads (vllm and
  openai: max_completion_tokens or max_tokens; the others max_tokens only; a longer answer is cut,
  finish_reason "length") and, without --replies, a small model's answers: schema-valid only where
  the server constrains decoding, else prose.
    llama-cpp-python  response_format json_object with a schema; a named tool_choice
    llama-server      json_schema; json_object with a schema; tool_choice required (or named)
    vllm              json_schema; structured_outputs {json: ...}; tool_choice named or required
    ollama            json_schema; any offered tools (the output tool, else the first)
    lmstudio          json_schema; tool_choice required
    openai            everything, as without --server (a hosted model follows the prompt)

example:
  python -m atomtask.testing serve --port 8765
  atomtask run extract_contact -i text="Ada, ada@example.com" \\
      --model openai-chat:any --base-url http://127.0.0.1:8765/v1

Exit status: 0 stopped by Ctrl-C or SIGTERM; 2 could not start (a bad option or replies file, a port in use)."""


def build_parser() -> argparse.ArgumentParser:
    """`python -m atomtask.testing serve [--port N] [--replies FILE [--cycle]] [--server NAME] [--delay S] ...`."""
    from atomtask.testing._servers import SERVER_MODES

    parser = argparse.ArgumentParser(prog="python -m atomtask.testing", description=_DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = sub.add_parser(
        "serve",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="run the fake provider until Ctrl-C, printing the --base-url to use",
        description=_DESCRIPTION,
        epilog=_SERVE_EPILOG,
    )
    serve.add_argument("--port", type=int, default=8765, help="the port to listen on (default 8765; 0: a free one)")
    serve.add_argument("--host", default="127.0.0.1", help="the IPv4 address to listen on (default 127.0.0.1)")
    answers = serve.add_argument_group("answers")
    answers.add_argument(
        "--replies", metavar="FILE", help="replay these replies in order instead of synthetic data (see below)"
    )
    answers.add_argument(
        "--cycle", action="store_true", help="with --replies: start again from the first reply after the last"
    )
    answers.add_argument(
        "--server",
        choices=SERVER_MODES,
        metavar="NAME",
        help=f"answer as this local server does (see below): {', '.join(SERVER_MODES)}",
    )
    faults = serve.add_argument_group("delays and faults")
    faults.add_argument(
        "--delay", type=float, default=0.0, metavar="SECONDS", help="wait this long before every answer"
    )
    faults.add_argument(
        "--fail-first", type=int, default=0, metavar="N", help="answer the first N requests with an HTTP error"
    )
    faults.add_argument(
        "--fail-status",
        type=int,
        default=500,
        metavar="STATUS",
        help="the status of those errors (default 500; e.g. 429, 503)",
    )
    serve.add_argument("-q", "--quiet", action="store_true", help="print the endpoints only, not a line per request")
    return parser


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run the command; returns its exit status (0 stopped by Ctrl-C or SIGTERM, 2 could not start)."""
    from atomtask.errors import UsageError, plural

    out = stdout or sys.stdout
    err = stderr or sys.stderr
    parser = build_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        server, mode = _server(args, out)
    except UsageError as exc:
        print(f"atomtask.testing: error: {exc}", file=err)
        return EXIT_USAGE
    stop = threading.Event()
    previous = _on_sigterm(stop.set)  # before the URL is printed: whoever reads it may stop the server at once
    try:
        server.start()
    except OSError as exc:
        _restore_sigterm(previous)
        print(
            f"atomtask.testing: error: cannot listen on {args.host}:{args.port} ({exc.strerror or exc}); "
            "pick another `--port`, or `--port 0` for a free one.",
            file=err,
        )
        return EXIT_USAGE
    if args.replies is None:  # the synthetic answers import pydantic-ai: before the first request, not during it
        threading.Thread(target=_import_synthetic, name="fake-provider-warm-up", daemon=True).start()
    try:
        _announce(server.base_url, mode, out)
        while not stop.wait(0.5):  # Ctrl-C raises KeyboardInterrupt here; SIGTERM sets `stop`
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
        _restore_sigterm(previous)
    print(f"Stopped after {plural(len(server.requests), 'request')}.", file=out, flush=True)
    return EXIT_OK


def _server(args: argparse.Namespace, out: TextIO) -> tuple[FakeProviderServer, str]:
    """The server the arguments describe and a phrase for what it answers; usage errors raise."""
    from atomtask.errors import UsageError
    from atomtask.testing._served import ServedAnswers, read_replies
    from atomtask.testing._server import FakeProviderServer
    from atomtask.testing._servers import local_server

    if not 0 <= args.port <= 65535:
        raise UsageError(f"`--port {args.port}` is not a port; give 1-65535, or 0 for a free one.")
    if args.delay < 0:
        raise UsageError(f"`--delay {args.delay:g}` is negative; give the seconds to wait before each answer.")
    if args.fail_first < 0:
        raise UsageError(f"`--fail-first {args.fail_first}` is negative; give how many requests fail.")
    if not 400 <= args.fail_status <= 599:
        raise UsageError(f"`--fail-status {args.fail_status}` is not an HTTP error status; give 400-599 (e.g. 503).")
    if args.cycle and not args.replies:
        raise UsageError("`--cycle` replays a replies file again: give it with `--replies FILE`.")
    replies = read_replies(Path(args.replies)) if args.replies else None
    lock = threading.Lock()

    def log(line: str) -> None:
        with lock:
            print(line, file=out, flush=True)

    answers = ServedAnswers(
        replies=replies,
        source=args.replies,
        cycle=args.cycle,
        delay=args.delay,
        fail_first=args.fail_first,
        fail_status=args.fail_status,
        default=None if args.server is None else local_server(args.server).default_reply,
        log=None if args.quiet else log,
    )
    server = FakeProviderServer(host=args.host, port=args.port, keep_alive=False, server=args.server)
    server.respond_with(answers)
    mode = (
        f"replaying {len(replies)} {'reply' if len(replies) == 1 else 'replies'} from {args.replies}"
        f"{' (cycling)' if args.cycle else ''}"
        if replies is not None
        else "answering with schema-valid synthetic data"
        if args.server is None
        else "schema-valid synthetic data where it constrains decoding, else prose"
    )
    if args.server is not None:
        mode = f"emulating {args.server}: {mode}"
    faults = [
        *([f"{_first(args.fail_first)} with HTTP {args.fail_status}"] if args.fail_first else []),
        *([f"every answer waits {args.delay:g} s"] if args.delay else []),
    ]
    return server, mode + (f"; {'; '.join(faults)}" if faults else "")


def _announce(base_url: str, mode: str, out: TextIO) -> None:
    print(
        f"Fake provider on {base_url}, {mode}. Ctrl-C stops it.\n"
        f"  OpenAI chat completions:  --model openai-chat:any-name --base-url {base_url}/v1\n"
        f"  Anthropic messages:       --model anthropic:any-name --base-url {base_url}  (ANTHROPIC_API_KEY=any)\n"
        f"  Any OpenAI SDK client:    OPENAI_BASE_URL={base_url}/v1 OPENAI_API_KEY=any",
        file=out,
        flush=True,
    )


def _first(count: int) -> str:
    return "the first request fails" if count == 1 else f"the first {count} requests fail"


def _import_synthetic() -> None:
    import atomtask.handlers._synthetic  # noqa: F401


def _on_sigterm(callback: Callable[[], None]) -> Any:
    """Call `callback` on SIGTERM (in the main thread only, where Python delivers signals); the previous handler."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def on_term(signum: int, frame: FrameType | None) -> None:
        callback()

    return signal.signal(signal.SIGTERM, on_term)


def _restore_sigterm(previous: Any) -> None:
    if previous is not None:
        signal.signal(signal.SIGTERM, previous)
