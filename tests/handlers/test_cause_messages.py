"""Messages that name the real cause: a cut-off answer, an endpoint that never calls the tool, a refused request."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from atomtask import FailureReason, OutputFormat, OutputMode, ProviderRetries, TaskSystem, Template
from atomtask.handlers._ledger import is_transient
from atomtask.handlers._refusals import RequestRefusal, refusal_in_body, request_refusal
from atomtask.system._templates import RepairMode
from atomtask.testing import FakeProviderServer, Reply
from pydantic import BaseModel
from pydantic_ai.exceptions import ModelHTTPError, ModelServerError
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

NO_WAIT = ProviderRetries(attempts=2, backoff=0, max_backoff=0)

# What llama-cpp-python 0.3.36 answers (HTTP 500) for `response_format: {"type": "json_schema", ...}`.
JSON_SCHEMA_REFUSED = (
    "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or "
    "'json_object'\", 'input': 'json_schema', 'ctx': {'expected': \"'text' or 'json_object'\"}}]"
)
# ... and for an assistant message with `content: null` beside its tool calls (one error per kind of message).
NULL_CONTENT_REFUSED = (
    "[{'type': 'literal_error', 'loc': ('body', 'messages', 2, 'ChatCompletionRequestSystemMessage', 'role'), "
    "'msg': \"Input should be 'system'\", 'input': 'assistant', 'ctx': {'expected': \"'system'\"}}, "
    "{'type': 'string_type', 'loc': ('body', 'messages', 2, 'ChatCompletionRequestAssistantMessage', 'content'), "
    "'msg': 'Input should be a valid string', 'input': None}]"
)


class Item(BaseModel):
    name: str
    qty: int


class Basket(BaseModel):
    name: str
    items: list[str] = []


def system_for(
    model: Any = None, mode: OutputMode = OutputMode.TOOL, repair: RepairMode = RepairMode.SAFE
) -> TaskSystem:
    system = TaskSystem(model=model, provider_retries=NO_WAIT)
    system.models.register(Item)
    system.models.register(Basket)
    for name, schema in (("item", "Item"), ("basket", "Basket")):
        system.register(
            Template(
                name=name,
                instructions=f"give an {name}",
                output_format=OutputFormat(type="json", schema=schema, mode=mode),
                repair=repair,
            )
        )
    return system


class CutOff:
    """A FunctionModel answering each scripted text cut off at the token limit (the last one as often as asked)."""

    def __init__(self, *answers: str, finish_reason: Any = "length", output_tokens: int = 5) -> None:
        self.answers = list(answers)
        self.finish_reason = finish_reason
        self.output_tokens = output_tokens
        self.requests: list[list[ModelMessage]] = []
        self.model = FunctionModel(self._answer)

    def _answer(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests.append(list(messages))
        text = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        parts: list[Any] = (
            [ToolCallPart(tool_name=info.output_tools[0].name, args=text)] if info.output_tools else [TextPart(text)]
        )
        return ModelResponse(
            parts=parts, finish_reason=self.finish_reason, usage=RequestUsage(output_tokens=self.output_tokens)
        )


def feedback(request: list[ModelMessage]) -> str:
    """The text of the re-ask: every part of the last request."""
    last = request[-1]
    assert isinstance(last, ModelRequest)
    return " ".join(str(getattr(part, "content", "")) for part in last.parts)


# -- finish_reason in every attempt ------------------------------------------------------------------------------


def test_every_attempt_keeps_the_finish_reason() -> None:
    """A cut-off answer is `length`, the complete one after it `stop`, each in its own attempt."""
    reasons = iter(["length", "stop"])
    cut = CutOff('{"name": "Al', '{"name": "apple", "qty": 3}')

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        cut.finish_reason = next(reasons)
        return cut._answer(messages, info)

    result = system_for(FunctionModel(answer), OutputMode.PROMPTED).execute("item")
    assert result.ok, result.error
    assert ["length", "stop"] == [a.finish_reason for a in result.notes.attempts]


@pytest.mark.usefixtures("allow_model_requests")
async def test_a_streamed_call_keeps_the_finish_reason_too() -> None:
    """The streamed path builds its attempts from the same ledger: `tool_call` and `stop` over real HTTP."""
    with FakeProviderServer() as server:
        server.script(Reply.text("no tool here"), Reply.tool_call(args={"name": "apple", "qty": 3}))
        stream = system_for().execute_stream("item", model=server.openai_chat_model(), debounce_by=None)
        _ = [partial async for partial in stream]
        result = await stream.get_result()
    assert result.ok, result.error
    assert ["stop", "tool_call"] == [a.finish_reason for a in result.notes.attempts]


# -- an answer cut off at the token limit ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [OutputMode.PROMPTED, OutputMode.NATIVE])
def test_a_cut_off_answer_names_max_tokens(mode: OutputMode) -> None:
    """pydantic-ai's `OutputTokenLimitExceeded` says the answer was cut off at the run's max_tokens."""
    cut = CutOff('{"name": "apple", "qty": 3')
    result = system_for(cut.model, mode, RepairMode.OFF).execute("item", model_settings={"max_tokens": 5})
    error = result.error
    assert error is not None
    assert FailureReason.OUTPUT_VALIDATION_FAILURE == error.reason
    assert (
        "The answer of model 'function:_answer:' for template 'item' was cut off at max_tokens=5 (finish_reason: "
        "length) after 5 output tokens: raise --max-tokens (`model_settings: {max_tokens: ...}`), or ask for a "
        "shorter answer; the raw answer is in `notes.attempts`."
    ) == error.message
    assert {"model": "function:_answer:", "finish_reason": "length", "max_tokens": 5} == error.details
    (attempt,) = result.notes.attempts
    assert '{"name": "apple", "qty": 3' == attempt.raw_output
    assert "length" == attempt.finish_reason
    assert 1 == len(cut.requests)  # pydantic-ai does not re-ask


def test_without_max_tokens_the_limit_is_the_models_own() -> None:
    """No `max_tokens` in any settings: the message says the model's own output limit."""
    result = system_for(CutOff('{"name": "apple"').model, OutputMode.PROMPTED, RepairMode.OFF).execute("item")
    assert result.error is not None
    assert "was cut off at the model's own output limit (finish_reason: length)" in result.error.message
    assert None is result.error.details["max_tokens"]


def test_the_handlers_settings_give_max_tokens_too() -> None:
    """The TaskSystem's model settings are merged under the call's: their `max_tokens` is the one named."""
    system = system_for(CutOff('{"name": "apple"').model, OutputMode.PROMPTED, RepairMode.OFF)
    system.handler.model_settings = {"max_tokens": 7}
    result = system.execute("item")
    assert result.error is not None
    assert 7 == result.error.details["max_tokens"]
    assert "cut off at max_tokens=7 " in result.error.message


def test_an_empty_answer_cut_off_names_max_tokens() -> None:
    """A response that reached the limit before any output (thinking only, say) is the same cut-off."""
    cut = CutOff("")
    result = system_for(cut.model, OutputMode.PROMPTED).execute("item", model_settings={"max_tokens": 3})
    assert result.error is not None
    assert "cut off at max_tokens=3 (finish_reason: length)" in result.error.message


def test_a_cut_off_tool_call_is_re_asked_for_a_shorter_answer_then_named() -> None:
    """pydantic-ai re-asks after cut tool-call arguments: the re-ask says cut off; exhausted, `IncompleteToolCall`."""
    answer = '{"name": "' + "a" * 500
    cut = CutOff(answer)
    result = system_for(cut.model, OutputMode.TOOL).execute("item", model_settings={"max_tokens": 5})
    assert 2 == len(cut.requests)  # the default one re-ask
    sent = feedback(cut.requests[1])
    assert "Your answer was cut off at the token limit (max_tokens=5); give a shorter answer that fits" in sent
    assert answer not in sent  # the cut-off answer is not sent back as the input of a JSON error
    error = result.error
    assert error is not None
    assert "was cut off at max_tokens=5 (finish_reason: length)" in error.message
    assert "Raise `retries`" not in error.message
    assert [answer, answer] == [a.raw_output for a in result.notes.attempts]


@pytest.mark.parametrize("repair", [RepairMode.SAFE, RepairMode.OFF])
def test_a_cut_off_tool_call_re_ask_never_echoes_the_answer(repair: RepairMode) -> None:
    """Without repair, pydantic-ai's JSON error would send the whole cut-off answer back: the re-ask does not."""
    answer = '{"qty": 3, "name": "' + "apple " * 60
    cut = CutOff(answer, '{"name": "apple", "qty": 3}')
    result = system_for(cut.model, OutputMode.TOOL, repair).execute("item", model_settings={"max_tokens": 9})
    assert result.ok, result.error
    sent = feedback(cut.requests[1])
    assert "cut off at the token limit (max_tokens=9)" in sent
    assert "apple" not in sent


@pytest.mark.parametrize("mode", [OutputMode.PROMPTED, OutputMode.NATIVE])
def test_repair_that_cannot_mend_a_cut_off_answer_re_asks_for_a_shorter_one(mode: OutputMode) -> None:
    """atomtask's repair (not pydantic-ai) re-asks in text modes: it says cut off, not only a JSON syntax error."""
    cut = CutOff('{"name": "Al', '{"name": "Al", "qty": 1}')
    result = system_for(cut.model, mode).execute("item", model_settings={"max_tokens": 4})
    assert result.ok, result.error
    sent = feedback(cut.requests[1])
    assert "Your answer was cut off at the token limit (max_tokens=4); give a shorter answer that fits" in sent
    first = result.notes.attempts[0]
    assert "length" == first.finish_reason and '{"name": "Al' == first.raw_output


@pytest.mark.parametrize("mode", [OutputMode.TOOL, OutputMode.PROMPTED])
def test_a_cut_off_answer_repaired_is_accepted_with_a_warning(mode: OutputMode) -> None:
    """Closing truncated JSON makes it valid: accepted, and `notes.warnings` says data may be missing."""
    cut = CutOff('{"name": "apple", "items": ["a", "b",')
    result = system_for(cut.model, mode).execute("basket", model_settings={"max_tokens": 12})
    assert result.ok, result.error
    assert Basket(name="apple", items=["a", "b"]) == result.parsedContent
    (attempt,) = result.notes.attempts
    assert attempt.repairs and "length" == attempt.finish_reason
    (warning,) = [w for w in result.notes.warnings if "cut off" in w]
    assert "was cut off at max_tokens=12 (finish_reason: length) and repaired, so data may be missing" in warning


def test_a_complete_answer_repaired_draws_no_cut_off_warning() -> None:
    """Only a cut-off answer warns: a fenced answer that stopped on its own is repaired silently."""
    cut = CutOff('```json\n{"name": "apple", "qty": 3}\n```', finish_reason="stop")
    result = system_for(cut.model, OutputMode.PROMPTED).execute("item")
    assert result.ok, result.error
    assert not [w for w in result.notes.warnings if "cut off" in w]


# -- tool mode, and the endpoint never calls the tool ------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


@pytest.mark.usefixtures("allow_model_requests")
def test_prose_in_tool_mode_every_time_says_tool_choice(server: FakeProviderServer) -> None:
    """An endpoint that answers prose although the output tool was required: use prompted or native mode."""
    server.script(Reply.text("Sure! An apple."), Reply.text("An apple, three of them."), Reply.text("Apple."))
    result = system_for().execute("item", model=server.openai_chat_model(), retries=2)
    error = result.error
    assert error is not None
    assert FailureReason.OUTPUT_VALIDATION_FAILURE == error.reason
    assert error.message.startswith(
        f"The endpoint of model {result.notes.model!r} returned no tool calls in 3 attempts although the output "
        "tool `final_result` was required for template 'item' (it may not support `tool_choice`, e.g. "
        "llama-cpp-python ignores `tool_choice: required`): use `mode: prompted` or `mode: native` "
        "(`output_format.mode`), or `--server` to name the server"
    ), error.message
    assert "Raise `retries`" not in error.message
    assert error.details["no_tool_calls"] is True
    assert [None, None, None] == [a.tool_name for a in result.notes.attempts]


@pytest.mark.usefixtures("allow_model_requests")
def test_a_tool_call_that_failed_validation_is_not_no_tool_calls(server: FakeProviderServer) -> None:
    """One answer did call the tool (with bad arguments): the generic validation message stays."""
    bad = Reply.tool_call(args={"name": "apple", "qty": "many"})
    server.script(Reply.text("An apple."), bad, bad)
    result = system_for().execute("item", model=server.openai_chat_model())
    assert result.error is not None
    assert "no_tool_calls" not in result.error.details
    assert "failed validation on" in result.error.message


# -- a 5xx that is a request-validation error --------------------------------------------------------------------


@pytest.mark.usefixtures("allow_model_requests")
def test_a_500_refusing_response_format_is_not_retried_and_names_the_field(server: FakeProviderServer) -> None:
    """llama-cpp-python's HTTP 500 for `json_schema`: one request, no retries, the refused field named."""
    server.script(Reply.error(500, JSON_SCHEMA_REFUSED, error_type="internal_server_error"))
    result = system_for(mode=OutputMode.NATIVE).execute("item", model=server.openai_chat_model())
    assert 1 == len(server.requests)  # not retried, although `ProviderRetries` allow two more
    error = result.error
    assert error is not None
    assert FailureReason.PROVIDER_ERROR == error.reason
    url = f"{server.openai_base_url}/chat/completions"
    assert (
        f"The endpoint at {url} refused the request's `response_format.type` ('json_schema'): Input should be "
        "'text' or 'json_object' — this server does not accept `response_format: json_schema`"
    ) in error.message
    assert "`--server llama-cpp-python`" in error.message and "`TaskSystem(server=...)`" in error.message
    assert {"status": 500, "refused": "response_format.type", "sent": "json_schema"}.items() <= error.details.items()
    assert {"provider", "model", "url"} <= error.details.keys()
    (attempt,) = result.notes.attempts
    assert 500 == attempt.status and attempt.fault is not None


@pytest.mark.usefixtures("allow_model_requests")
def test_a_500_refusing_null_content_names_the_message(server: FakeProviderServer) -> None:
    """An assistant message with `content: null` refused: `messages[2].content`, not the union's other kinds."""
    server.script(Reply.error(500, NULL_CONTENT_REFUSED, error_type="internal_server_error"))
    result = system_for().execute("item", model=server.openai_chat_model())
    assert 1 == len(server.requests)
    error = result.error
    assert error is not None
    assert "refused the request's `messages[2].content` (None): Input should be a valid string" in error.message
    assert "does not accept `content: null`" in error.message
    assert "messages[2].content" == error.details["refused"]


@pytest.mark.usefixtures("allow_model_requests")
def test_a_plain_500_is_still_retried(server: FakeProviderServer) -> None:
    """A server error that is not a validation error stays a transient fault."""
    server.script(Reply.error(500, "boom"), Reply.tool_call(args={"name": "apple", "qty": 3}))
    result = system_for().execute("item", model=server.openai_chat_model())
    assert result.ok, result.error
    assert 2 == len(server.requests)


def server_error(body: object) -> ModelHTTPError:
    """An HTTP 500 as pydantic-ai's OpenAI model raises it."""
    return ModelHTTPError.for_category(ModelServerError, status_code=500, model_name="smollm2", body=body)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            {"message": JSON_SCHEMA_REFUSED, "type": "internal_server_error"},
            RequestRefusal(
                field="response_format.type",
                says="Input should be 'text' or 'json_object'",
                sent="json_schema",
                has_sent=True,
            ),
            id="llama-cpp-python",
        ),
        pytest.param(
            {
                "detail": [
                    {"type": "missing", "loc": ["body", "messages"], "msg": "Field required", "input": {"model": "x"}}
                ]
            },
            RequestRefusal(field="messages", says="Field required", sent={"model": "x"}, has_sent=True),
            id="fastapi-422",
        ),
        pytest.param(
            json.dumps({"error": {"message": JSON_SCHEMA_REFUSED.replace("'ctx'", "'ctx_'")}}),
            RequestRefusal(
                field="response_format.type",
                says="Input should be 'text' or 'json_object'",
                sent="json_schema",
                has_sent=True,
            ),
            id="unparsed-json-body",
        ),
        pytest.param(
            {
                "message": "[{'type': 'value_error', 'loc': ('body', 'tools', 0, 'function', 'name'), 'msg': "
                "'Value error, must be a string', 'input': 3, 'ctx': {'error': ValueError('must be a string')}}]"
            },
            RequestRefusal(field="tools[0].function.name", says="Value error, must be a string", sent=3, has_sent=True),
            id="python-repr-with-an-exception",
        ),
        pytest.param(
            {
                "message": "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n  Input should "
                "be 'text' or 'json_object' [type=literal_error, input_value='json_schema', input_type=str]"
            },
            RequestRefusal(
                field="response_format.type",
                says="Input should be 'text' or 'json_object'",
                sent="json_schema",
                has_sent=True,
            ),
            id="pydantic-text",
        ),
    ],
)
def test_request_refusal_reads_the_forms_servers_send(body: object, expected: RequestRefusal) -> None:
    """The field, the value sent and the server's words, from each way a validation error comes back."""
    assert expected == request_refusal(server_error(body))
    assert not is_transient(server_error(body))


@pytest.mark.parametrize(
    "body",
    [
        {"message": "boom", "type": "internal_server_error"},
        {"message": "CUDA error: out of memory"},
        {"message": "1 validation error for ChatCompletionResponse\nchoices\n  Field required [type=missing]"},
        "Internal Server Error",
        None,
    ],
)
def test_other_server_errors_are_not_refusals(body: object) -> None:
    """A server error without a validation error of the request body stays transient."""
    assert None is request_refusal(server_error(body))
    assert is_transient(server_error(body))


def test_a_refusal_is_read_from_any_http_error() -> None:
    """A 422 (vLLM, FastAPI) is read the same way; a body without `loc` in it is not a refusal."""
    error = ModelHTTPError(status_code=422, model_name="m", body={"detail": [{"loc": ["body", "n"], "msg": "bad"}]})
    assert RequestRefusal(field="n", says="bad") == request_refusal(error)
    assert None is refusal_in_body({"detail": [{"loc": ["query", "n"], "msg": "bad"}]})
