"""`python -m atomtask.testing serve`: the fake provider from the shell, and what it answers (`_serve`, `_served`)."""

from __future__ import annotations

import io
import json
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from atomtask import RepliesFileError
from atomtask.cli._main import main as atomtask_main
from atomtask.testing import DelayedReply, FakeProviderServer, RecordedRequest
from atomtask.testing._serve import main as serve_main
from atomtask.testing._served import ServedAnswers, read_replies
from pydantic import BaseModel, Field
from pydantic_ai import Agent, NativeOutput, PromptedOutput
from pydantic_ai.exceptions import ModelConnectionError, ModelHTTPError
from pydantic_ai.models import Model, override_allow_model_requests

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


class Person(BaseModel):
    name: str
    age: int


class Review(BaseModel):
    stars: Annotated[int, Field(ge=1, le=5)]
    verdict: Literal["keep", "return"]
    sku: Annotated[str, Field(pattern=r"^[A-Z]{3}-\d{4}$")]
    tags: Annotated[list[str], Field(min_length=2, max_length=3)]


@pytest.fixture
def served() -> Iterator[tuple[FakeProviderServer, list[str]]]:
    """A fake provider answering as `serve` does by default (synthetic data), and its log lines."""
    lines: list[str] = []
    with FakeProviderServer() as server, override_allow_model_requests(True):
        server.respond_with(ServedAnswers(log=lines.append))
        yield server, lines


def model_of(server: FakeProviderServer, wire: str) -> Model:
    return server.openai_chat_model() if wire == "openai" else server.anthropic_model()


# From the shell: a real process, its printed URL, `atomtask run` and an Agent against it, then Ctrl-C


def start_serving(*arguments: str) -> tuple[subprocess.Popen[str], str, str, str]:
    """`python -m atomtask.testing serve --port 0 ...` as a process; its OpenAI and Anthropic base URLs and the
    first line, as printed."""
    process = subprocess.Popen(
        [sys.executable, "-m", "atomtask.testing", "serve", "--port", "0", *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    printed = [process.stdout.readline() for _ in range(4)]
    openai = re.search(r"--model openai-chat:\S+ --base-url (http://127\.0\.0\.1:\d+/v1)\n", printed[1])
    anthropic = re.search(r"--model anthropic:\S+ --base-url (http://127\.0\.0\.1:\d+) ", printed[2])
    assert openai and anthropic, printed
    return process, openai.group(1), anthropic.group(1), printed[0]


def stop(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    return process.returncode, out, err


def test_serve_answers_atomtask_run_and_an_agent_until_ctrl_c(allow_model_requests: None) -> None:
    """The printed `--base-url` serves `atomtask run` and pydantic-ai Agents on both wires; Ctrl-C exits 0 cleanly."""
    process, openai_url, anthropic_url, _ = start_serving()
    try:
        out, err = io.StringIO(), io.StringIO()
        argv = ["run", "extract_contact", "-i", "text=Ada, ada@example.com", "--templates", str(TEMPLATES)]
        code = atomtask_main([*argv, "--model", "openai-chat:x", "--base-url", openai_url], stdout=out, stderr=err)
        assert 0 == code, err.getvalue()
        assert {"name", "email", "phone", "company"} == set(json.loads(out.getvalue()))

        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.anthropic import AnthropicProvider
        from pydantic_ai.providers.openai import OpenAIProvider

        openai = OpenAIChatModel("x", provider=OpenAIProvider(base_url=openai_url, api_key="any"))
        anthropic = AnthropicModel("claude-x", provider=AnthropicProvider(base_url=anthropic_url, api_key="any"))
        for model in (openai, anthropic):
            assert isinstance(Agent(model, output_type=Person).run_sync("Who?").output, Person)
    finally:
        code, printed, err = stop(process)
    assert (0, "") == (code, err)
    lines = printed.splitlines()
    assert lines[0].startswith("#1 /v1/chat/completions -> tool call final_result {"), printed
    assert lines[1].startswith("#2 /v1/chat/completions -> tool call final_result {")
    assert lines[2].startswith("#3 /v1/messages -> tool call final_result {")
    assert "Stopped after 3 requests." == lines[-1]


def test_serve_replays_a_replies_file_with_injected_failures(tmp_path: Path, allow_model_requests: None) -> None:
    """`--replies FILE --fail-first 1 --fail-status 429`: one 429, then the file's replies in order, then HTTP 500."""
    replies = tmp_path / "replies.jsonl"
    replies.write_text('{"output": {"name": "Ada", "age": 36}}\n\n"{\\"name\\": \\"Grace\\", \\"age\\": 85}"\n')
    process, openai_url, _, first = start_serving(
        "--replies", str(replies), "--fail-first", "1", "--fail-status", "429"
    )
    try:
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        model = OpenAIChatModel("x", provider=OpenAIProvider(base_url=openai_url, api_key="any"))
        agent = Agent(model, output_type=Person, model_settings={"max_retries": 0})  # no SDK retries
        with pytest.raises(ModelHTTPError) as failed:
            agent.run_sync("Who?")
        assert 429 == failed.value.status_code
        assert [Person(name="Ada", age=36), Person(name="Grace", age=85)] == [
            agent.run_sync("Who?").output for _ in range(2)
        ]
        with pytest.raises(ModelHTTPError) as exhausted:
            agent.run_sync("Who?")
        assert 500 == exhausted.value.status_code
        assert f"No reply left in {str(replies)!r} (2 replies, all used)" in str(exhausted.value.body)
    finally:
        code, printed, _ = stop(process)
    assert 0 == code
    assert f"replaying 2 replies from {replies}; the first request fails with HTTP 429. Ctrl-C stops it." in first
    assert "#4 /v1/chat/completions -> HTTP 500 No reply left in" in printed


def test_sigterm_stops_the_server_cleanly_too() -> None:
    """SIGTERM (a process manager, `kill`) ends the command as Ctrl-C does: exit 0, the count printed."""
    process, *_ = start_serving("-q")
    process.terminate()
    out, err = process.communicate(timeout=30)
    assert (0, "") == (process.returncode, err)
    assert "Stopped after 0 requests.\n" == out


# Could not start: exit 2, one line


def run_serve(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = serve_main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_a_port_in_use_exits_2_suggesting_another() -> None:
    """A port another process holds is one line and exit 2, suggesting `--port 0`."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = run_serve(["serve", "--port", str(port)])
    assert (2, "") == (code, out)
    assert err.startswith(f"atomtask.testing: error: cannot listen on 127.0.0.1:{port} (")
    assert err.endswith("pick another `--port`, or `--port 0` for a free one.\n")


def test_a_bad_replies_file_exits_2_at_its_line(tmp_path: Path) -> None:
    """A mistake in the replies file is reported with file:line:col before the server starts."""
    replies = tmp_path / "replies.yaml"
    replies.write_text("- output: {name: Ada}\n- outptu: {name: Bob}\n", encoding="utf-8")
    code, out, err = run_serve(["serve", "--replies", str(replies)])
    assert (2, "") == (code, out)
    assert f"atomtask.testing: error: {replies}:2:3: Unknown key 'outptu' in a reply. Did you mean 'output'?\n" == err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--cycle"], "`--cycle` replays a replies file again: give it with `--replies FILE`."),
        (["--fail-status", "200"], "`--fail-status 200` is not an HTTP error status; give 400-599 (e.g. 503)."),
        (["--delay", "-1"], "`--delay -1` is negative; give the seconds to wait before each answer."),
        (["--port", "70000"], "`--port 70000` is not a port; give 1-65535, or 0 for a free one."),
    ],
)
def test_bad_options_exit_2(argv: list[str], message: str) -> None:
    """Options that cannot work are refused before anything listens."""
    assert (2, "", f"atomtask.testing: error: {message}\n") == run_serve(["serve", *argv])


def test_the_server_listens_on_the_port_asked_for() -> None:
    """`FakeProviderServer(port=N)` binds N (what `serve --port N` uses), and says so in its `base_url`."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with FakeProviderServer(port=port) as server:
        assert f"http://127.0.0.1:{port}" == server.base_url


# Synthetic answers: schema-valid, the way each request asks


@pytest.mark.parametrize(
    ("wire", "output", "answered"),
    [
        ("openai", Review, "tool call final_result"),
        ("openai", NativeOutput(Review), "text"),
        ("openai", PromptedOutput(Review), "text"),
        ("anthropic", Review, "tool call final_result"),
        # Anthropic's native output takes no bounds or patterns: pydantic-ai moves them into descriptions,
        # so the wire schema (all the server sees, like the real provider) is Person's shape only.
        ("anthropic", NativeOutput(Person), "text"),
        ("anthropic", PromptedOutput(Review), "text"),
    ],
)
def test_synthetic_answers_fit_the_schema_in_every_output_mode(
    served: tuple[FakeProviderServer, list[str]], wire: str, output: Any, answered: str
) -> None:
    """Tool, native and prompted output all get a value the schema accepts (bounds, enum, pattern, lengths)."""
    server, lines = served
    answer = Agent(model_of(server, wire), output_type=output).run_sync("Review it.").output
    assert isinstance(answer, Review | Person)
    assert 1 == len(lines)  # valid at once: no re-ask
    assert lines[0].startswith(f"#1 {'/v1/chat/completions' if wire == 'openai' else '/v1/messages'} -> {answered}")


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_synthetic_answers_are_the_same_for_the_same_request(
    served: tuple[FakeProviderServer, list[str]], wire: str
) -> None:
    """The same prompt gets the same answer; another prompt another one; plain text for a text output."""
    server, lines = served
    agent = Agent(model_of(server, wire), output_type=Person)
    first, again, other = (agent.run_sync(prompt).output for prompt in ("Who?", "Who?", "Who else?"))
    assert first == again != other
    text = Agent(model_of(server, wire)).run_sync("Say something.").output
    assert isinstance(text, str) and text.endswith(".")
    assert "-> text " in lines[-1]


def test_a_tool_call_is_made_to_the_output_tool_when_function_tools_are_offered(
    served: tuple[FakeProviderServer, list[str]],
) -> None:
    """With function tools beside the output tool, the answer is final at once (as `atomtask:synthetic` does)."""
    server, lines = served

    def lookup(name: str) -> str:
        raise AssertionError("the synthetic answer calls no function tool")

    agent = Agent(server.openai_chat_model(), output_type=Person, tools=[lookup])
    assert isinstance(agent.run_sync("Who?").output, Person)
    assert 1 == len(lines) and "tool call final_result " in lines[0]


# A replies file, faults and delays


def replies_file(tmp_path: Path, text: str, name: str = "replies.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_replies_are_used_in_order_each_as_the_request_asks(tmp_path: Path) -> None:
    """`output` is a tool call or JSON text as asked, a bare string the raw answer, `text` plain text."""
    path = replies_file(
        tmp_path,
        """\
- output: {name: Ada, age: 36}
- output: {name: Ada, age: 36}
- '{"name": "Grace", "age": 85}'
- text: Hello there.
- tool_call: {name: Alan, age: 41}
  tool: final_result
""",
    )
    with FakeProviderServer() as server, override_allow_model_requests(True):
        server.respond_with(ServedAnswers(replies=read_replies(path), source=str(path)))
        ada = Person(name="Ada", age=36)
        assert ada == Agent(server.openai_chat_model(), output_type=Person).run_sync("Who?").output
        assert ada == Agent(server.anthropic_model(), output_type=NativeOutput(Person)).run_sync("Who?").output
        grace = Agent(server.openai_chat_model(), output_type=Person).run_sync("Who?").output
        assert Person(name="Grace", age=85) == grace
        assert "Hello there." == Agent(server.openai_chat_model()).run_sync("Hi").output
        alan = Agent(server.anthropic_model(), output_type=Person).run_sync("Who?").output
        assert Person(name="Alan", age=41) == alan
        assert ["tools", None] == [next(iter({"tools"} & set(r.body)), None) for r in server.requests[:2]]


def test_errors_disconnects_and_the_end_of_the_replies(tmp_path: Path) -> None:
    """`error: 429` is that HTTP error with its message, `disconnect` drops the connection, past the end: HTTP 500."""
    path = replies_file(tmp_path, '{"error": 429, "message": "slow down"}\n{"disconnect": true}\n', "r.jsonl")
    with FakeProviderServer() as server, override_allow_model_requests(True):
        server.respond_with(ServedAnswers(replies=read_replies(path), source=str(path)))
        agent = Agent(server.openai_chat_model(), output_type=Person)
        with pytest.raises(ModelHTTPError) as limited:
            agent.run_sync("Who?")
        assert (429, "slow down") == (limited.value.status_code, limited.value.body["message"])  # type: ignore[index]
        with pytest.raises(ModelConnectionError):
            agent.run_sync("Who?")
        with pytest.raises(ModelHTTPError) as exhausted:
            agent.run_sync("Who?")
        assert 500 == exhausted.value.status_code
        assert "pass `--cycle` to start again from the first" in str(exhausted.value.body)


def test_cycle_starts_again_from_the_first_reply(tmp_path: Path) -> None:
    """With `cycle`, the reply after the last is the first again."""
    path = replies_file(tmp_path, "- output: {name: Ada, age: 36}\n- output: {name: Bob, age: 7}\n")
    with FakeProviderServer() as server, override_allow_model_requests(True):
        server.respond_with(ServedAnswers(replies=read_replies(path), cycle=True))
        agent = Agent(server.openai_chat_model(), output_type=Person)
        assert ["Ada", "Bob", "Ada", "Bob"] == [agent.run_sync("Who?").output.name for _ in range(4)]


def test_fail_first_then_answers(served: tuple[FakeProviderServer, list[str]]) -> None:
    """The first N requests get the fault's status; the next ones are answered."""
    server, _ = served
    lines: list[str] = []
    server.respond_with(ServedAnswers(fail_first=2, fail_status=503, log=lines.append))
    agent = Agent(server.openai_chat_model(), output_type=Person)
    for _ in range(2):
        with pytest.raises(ModelHTTPError) as failed:
            agent.run_sync("Who?")
        assert 503 == failed.value.status_code
    assert isinstance(agent.run_sync("Who?").output, Person)
    assert "#2 /v1/chat/completions -> HTTP 503 Injected failure 2 of 2 (`--fail-first 2`)." == lines[1]


def test_delays_wrap_every_answer_and_add_to_an_entrys_own(tmp_path: Path) -> None:
    """`delay` (the option) wraps each answer; an entry's `delay:` is inside it."""
    path = replies_file(tmp_path, "- text: later\n  delay: 2.5\n")
    request = RecordedRequest(path="/v1/chat/completions", headers={}, body={"messages": []})
    reply = ServedAnswers(replies=read_replies(path), delay=1.5)(request)
    assert isinstance(reply, DelayedReply) and isinstance(reply.reply, DelayedReply)
    assert (1.5, 2.5) == (reply.seconds, reply.reply.seconds)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("r.yaml", "output: {}\n", "1:1: A replies file is a list of replies"),
        ("r.yaml", "- [1, 2]\n", "1:3: A reply is a string (the raw answer) or a mapping such as `{output: ...}`"),
        (
            "r.yaml",
            "- text: a\n  output: {}\n",
            "2:3: A reply has exactly one of `output`, `text`, `tool_call`, `error`, `disconnect`; "
            "this one has both `text` and `output`.",
        ),
        ("r.yaml", "- delay: 1\n", "1:3: A reply has exactly one of `output`, `text`, `tool_call`, `error`, "),
        ("r.yaml", "- error: 200\n", "1:3: `error` is an HTTP status from 400 to 599 (e.g. 429), not 200."),
        ("r.yaml", "- text: a\n  tool: t\n", "2:3: `tool` goes with `tool_call`, not `text`."),
        ("r.yaml", "- text: 3\n", "1:3: `text` is the answer's text; write a string (quote it)."),
        ("r.yaml", "- text: a\n  delay: soon\n", "2:3: `delay` is seconds to wait (0 or more), not 'soon'."),
        ("r.yaml", "- disconnect: yes please\n", "1:3: Write `disconnect: true`"),
        ("r.yaml", "- text: [a\n", "2:1: Malformed YAML:"),
        ("r.yaml", "", "1: The replies file holds no replies"),
        ("r.jsonl", '{"text": "a"}\n{"text": }\n', "2:10: Line 2 is not JSON (Expecting value)"),
        ("r.jsonl", '{"error": 429, "mesage": "x"}\n', "1:1: Unknown key 'mesage' in a reply. Did you mean 'message'?"),
    ],
)
def test_replies_file_mistakes_are_located(tmp_path: Path, name: str, text: str, message: str) -> None:
    """Each mistake is a `RepliesFileError` at the entry's (or key's) file:line:col, saying the fix."""
    path = replies_file(tmp_path, text, name)
    with pytest.raises(RepliesFileError) as caught:
        read_replies(path)
    assert str(caught.value).startswith(f"{path}:{message}"), str(caught.value)


def test_a_missing_replies_file_is_a_usage_error(tmp_path: Path) -> None:
    """A replies file that cannot be read says which and why."""
    with pytest.raises(RepliesFileError, match=r"Cannot read the replies file '.*nope\.yaml' \(No such file"):
        read_replies(tmp_path / "nope.yaml")


def test_the_documented_replies_file_reads(tmp_path: Path) -> None:
    """The replies file shown in `_served`'s docstring (the format's reference) is read as it says."""
    from atomtask.testing import _served

    example = re.search(r"```yaml\n(.*?)```", _served.__doc__ or "", re.S)
    assert example is not None
    entries = read_replies(replies_file(tmp_path, example.group(1)))
    kinds = [entry.kind for entry in entries]
    assert ["output", "raw", "text", "tool_call", "error", "disconnect", "output"] == kinds
    assert ("lookup_price", "slow down", 2.5) == (entries[3].tool, entries[4].message, entries[6].delay)
