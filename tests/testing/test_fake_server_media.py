"""Images, documents and audio over real HTTP: what the provider SDKs put on the wire, as the fake server reads it."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from atomtask import FailureReason, TaskSystem, Template
from atomtask.testing import FakeProviderServer, ReceivedFile, RecordedRequest, Reply

pytestmark = pytest.mark.usefixtures("allow_model_requests")

PNG = b"\x89PNG\r\n\x1a\n" + b"a tabby cat" + bytes(64)
PDF = b"%PDF-1.7\n" + b"terms and conditions" + bytes(64)
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(64)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {"photo": tmp_path / "cat.png", "contract": tmp_path / "terms.pdf", "memo": tmp_path / "memo.wav"}
    for name, data in (("photo", PNG), ("contract", PDF), ("memo", WAV)):
        paths[name].write_bytes(data)
    return paths


def system(params: dict[str, str]) -> TaskSystem:
    ts = TaskSystem()
    ts.register(Template.model_validate({"name": "look", "params": params, "instructions": "Look closely."}))
    return ts


def run(server: FakeProviderServer, model: Any, params: dict[str, str], inputs: dict[str, Any]) -> RecordedRequest:
    server.script(Reply.text("Seen."))
    result = system(params).execute("look", inputs, model=model)
    assert result.ok, result.error
    return server.requests[-1]


def test_openai_chat_receives_an_image_and_a_pdf_as_data_urls(
    server: FakeProviderServer, files: dict[str, Path]
) -> None:
    """OpenAI chat: the image as an `image_url` part, the PDF as a `file` part, each decoded to the bytes sent."""
    request = run(
        server,
        server.openai_chat_model(),
        {"photo": "image", "contract": "document"},
        {"photo": files["photo"], "contract": files["contract"]},
    )
    assert [
        ReceivedFile(part="image_url", media_type="image/png", size=len(PNG), sha256=sha(PNG)),
        ReceivedFile(
            part="file", media_type="application/pdf", size=len(PDF), sha256=sha(PDF), filename="filename.pdf"
        ),
    ] == request.files
    assert "Look closely." in str(request.body["messages"])


def test_openai_audio_model_receives_input_audio(server: FakeProviderServer, files: dict[str, Path]) -> None:
    """An OpenAI audio model gets the WAV file as an `input_audio` part."""
    request = run(server, server.openai_chat_model("gpt-4o-audio-preview"), {"memo": "audio"}, {"memo": files["memo"]})
    assert [ReceivedFile(part="input_audio", media_type="audio/wav", size=len(WAV), sha256=sha(WAV))] == request.files


def test_anthropic_receives_image_and_document_blocks(server: FakeProviderServer, files: dict[str, Path]) -> None:
    """Anthropic: an `image` block and a `document` block, base64, with their media types."""
    request = run(
        server,
        server.anthropic_model(),
        {"photo": "image", "contract": "document"},
        {"photo": files["photo"], "contract": files["contract"]},
    )
    assert [
        ReceivedFile(part="image", media_type="image/png", size=len(PNG), sha256=sha(PNG)),
        ReceivedFile(part="document", media_type="application/pdf", size=len(PDF), sha256=sha(PDF)),
    ] == request.files


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_an_image_url_is_sent_as_a_url(server: FakeProviderServer, wire: str) -> None:
    """A URL parameter goes on the wire as the URL: nothing was downloaded on the way."""
    model = server.openai_chat_model() if wire == "openai" else server.anthropic_model()
    request = run(server, model, {"photo": "image"}, {"photo": "https://example.com/cat.png"})
    assert ["https://example.com/cat.png"] == [file.url for file in request.files]
    assert [None] == [file.size for file in request.files]


async def test_a_streamed_call_sends_the_image_too(server: FakeProviderServer, files: dict[str, Path]) -> None:
    """`execute_stream` sends the same user message as `execute`, image included."""
    server.script(Reply.text("Seen."))
    stream = system({"photo": "image"}).execute_stream(
        "look", {"photo": files["photo"]}, model=server.anthropic_model()
    )
    assert (await stream.get_result()).ok
    assert [sha(PNG)] == [file.sha256 for file in server.requests[0].files]


@pytest.mark.parametrize(
    ("model", "kind", "refused"),
    [("anthropic", "audio", "audio files"), ("openai", "audio", "audio files")],
)
def test_a_model_that_cannot_take_the_file_is_never_sent_it(
    server: FakeProviderServer, files: dict[str, Path], model: str, kind: str, refused: str
) -> None:
    """Anthropic's adapter sends no audio, nor does OpenAI's gpt-4o-mini take it: refused before any HTTP request."""
    built = server.anthropic_model() if model == "anthropic" else server.openai_chat_model("gpt-4o-mini")
    result = system({"memo": kind}).execute("look", {"memo": files["memo"]}, model=built)
    assert FailureReason.CONFIGURATION_ERROR == result.error.reason  # type: ignore[union-attr]
    assert f"cannot take {refused}" in result.error.message  # type: ignore[union-attr]
    assert [] == server.requests
