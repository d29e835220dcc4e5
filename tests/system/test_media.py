"""Media values: what an `image`, `document` or `audio` parameter takes, and what is kept of it (never the bytes)."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest
from atomtask.system._media import MEDIA_ANNOTATIONS, Media, TextFile, binary_media_type, media_refusal, media_value
from pydantic import TypeAdapter, ValidationError
from pydantic_ai.messages import AudioUrl, BinaryContent, DocumentUrl, ImageUrl

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(40))
JPEG = b"\xff\xd8\xff\xe0" + bytes(20)
PDF = b"%PDF-1.7\n" + bytes(30)
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(20)


def refused(value: object, kind: str) -> str:
    with pytest.raises(ValueError) as raised:
        media_value(value, kind)
    return str(raised.value)


def test_a_path_is_read_with_the_media_type_of_its_suffix(tmp_path: Path) -> None:
    """A `Path` or a path string is read once: its bytes, the suffix's media type, its size and SHA-256."""
    photo = tmp_path / "cat.png"
    photo.write_bytes(PNG)
    for given in (photo, str(photo)):
        media = media_value(given, "image")
        assert (PNG, "image/png", len(PNG), "cat.png") == (media.data, media.media_type, media.size, media.source)
        assert hashlib.sha256(PNG).hexdigest() == media.sha256
        content = media.content()
        assert isinstance(content, BinaryContent)
        assert (PNG, "image/png") == (content.data, content.media_type)


def test_a_file_without_a_known_suffix_is_read_by_its_first_bytes(tmp_path: Path) -> None:
    """No suffix: the first bytes tell a PNG; bytes nothing tells are refused with the fix."""
    (tmp_path / "scan").write_bytes(PNG)
    assert "image/png" == media_value(tmp_path / "scan", "image").media_type
    (tmp_path / "blob").write_bytes(b"\x00\x01\x02")
    assert "cannot tell the media type of" in refused(tmp_path / "blob", "image")
    assert "give it a suffix such as `.png`" in refused(tmp_path / "blob", "image")


def test_bytes_are_sniffed_for_the_common_formats() -> None:
    """PNG, JPEG, PDF and WAV bytes get their media type; unknown bytes name `BinaryContent` as the fix."""
    assert "image/png" == media_value(PNG, "image").media_type
    assert "image/jpeg" == media_value(bytearray(JPEG), "image").media_type
    assert "application/pdf" == media_value(PDF, "document").media_type
    assert "audio/wav" == media_value(WAV, "audio").media_type
    assert "pass `BinaryContent(data, media_type=...)`" in refused(b"plain text", "document")


def test_a_missing_file_names_the_path_and_the_fix(tmp_path: Path) -> None:
    """A path that is not there: the message names it and what else the parameter takes."""
    message = refused(str(tmp_path / "nope.png"), "image")
    assert f"no file {str(tmp_path / 'nope.png')!r}" in message
    assert "pass the path of an existing file, an http(s) URL, or the bytes" in message
    assert "relative to" in refused("missing/cat.png", "image")
    assert "is a folder" in refused(tmp_path, "image")


def test_a_value_of_another_kind_is_refused_naming_both(tmp_path: Path) -> None:
    """A PDF for an image parameter, an image for an audio one: the kinds and the declaration fix."""
    contract = tmp_path / "contract.pdf"
    contract.write_bytes(PDF)
    message = refused(contract, "image")
    assert "takes an image, but 'contract.pdf' is a document (application/pdf)" in message
    assert "declare the parameter `document`" in message
    assert "takes audio, but the value is an image (image/png)" in refused(PNG, "audio")
    assert "is a file path, an http(s) URL" in refused(42, "image")


def test_an_http_url_is_kept_as_a_url_not_downloaded() -> None:
    """An http(s) URL becomes pydantic-ai's URL part; its query (a signed token, say) is not kept as the source."""
    media = media_value("https://example.com/cats/tabby.jpg?sig=secret", "image")
    assert (None, None, "image/jpeg") == (media.data, media.size, media.media_type)
    assert "https://example.com/cats/tabby.jpg" == media.source
    assert ImageUrl(url="https://example.com/cats/tabby.jpg?sig=secret") == media.content()
    assert isinstance(media_value("https://example.com/report", "document").content(), DocumentUrl)
    assert isinstance(media_value("http://example.com/a.mp3", "audio").content(), AudioUrl)
    assert "is a document (application/pdf)" in refused("https://example.com/a.pdf", "image")
    assert "s3:// URLs are not sent" in refused("s3://bucket/cat.png", "image")


def test_a_data_url_is_decoded() -> None:
    """`data:<type>;base64,<data>` gives the bytes; a malformed one says what the form is."""
    media = media_value("data:image/png;base64," + base64.b64encode(PNG).decode(), "image")
    assert (PNG, "image/png") == (media.data, media.media_type)
    assert "does not read as one" in refused("data:image/png;base64,***", "image")


def test_pydantic_ai_content_passes_through() -> None:
    """A `BinaryContent` or an `ImageUrl` given is what the model receives, checked for its kind."""
    given = BinaryContent(data=PNG, media_type="image/png", vendor_metadata={"detail": "low"})
    media = media_value(given, "image")
    assert given is media.content()
    assert hashlib.sha256(PNG).hexdigest() == media.sha256
    url = ImageUrl(url="https://example.com/x.png")
    assert url is media_value(url, "image").content()
    assert "is a document" in refused(DocumentUrl(url="https://example.com/x.pdf"), "image")


def test_the_repr_never_shows_the_bytes() -> None:
    """A `Media` in a log line or a message is its kind, type, size and hash prefix."""
    media = media_value(PNG, "image")
    text = repr(media)
    assert "image/png" in text and f"{len(PNG)} bytes" in text
    assert repr(PNG)[2:20] not in text


def test_the_annotation_validates_into_media_and_dumps_json_without_bytes(tmp_path: Path) -> None:
    """The parameter annotation gives a `Media`; its JSON form is a description; a refusal names why."""
    adapter: TypeAdapter[Media] = TypeAdapter(MEDIA_ANNOTATIONS["image"])
    media = adapter.validate_python(PNG)
    assert isinstance(media, Media)
    dumped = adapter.dump_json(media).decode()
    assert hashlib.sha256(PNG).hexdigest() in dumped
    assert base64.b64encode(PNG).decode() not in dumped
    with pytest.raises(ValidationError) as raised:
        adapter.validate_python(str(tmp_path / "gone.png"))
    assert "media_input" == raised.value.errors()[0]["type"]


def test_a_text_file_from_the_command_line_is_read_as_its_file(tmp_path: Path) -> None:
    """A `TextFile` (`-i notes=@notes.md`) is text for a text parameter, its file for a `document` one."""
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n", encoding="utf-8")
    text = TextFile("# Notes\n", notes)
    assert "# Notes\n" == text
    media = media_value(text, "document")
    assert ("text/markdown", b"# Notes\n", "notes.md") == (media.media_type, media.data, media.source)


def test_binary_media_type_tells_the_files_the_command_line_does_not_read_as_text() -> None:
    """Images, audio, PDFs are binary by their suffix; text, JSON, SVG and unknown suffixes are read as text."""
    assert "image/png" == binary_media_type(Path("cat.png"))
    assert "application/pdf" == binary_media_type(Path("a.pdf"))
    assert "audio/wav" == binary_media_type(Path("a.wav"))
    for name in ("a.txt", "a.md", "a.json", "a.svg", "a.unknownsuffix", "README"):
        assert binary_media_type(Path(name)) is None, name


def test_media_refusal_reads_pydantic_ai_profile_flags() -> None:
    """The profile's file-input flags decide; documents also by `supported_document_media_types`."""
    assert media_refusal({}, "image", "image/png") is None
    assert "images" == media_refusal({"supports_image_input": False}, "image", "image/png")
    assert "audio files" == media_refusal({"supports_audio_file_input": False}, "audio", None)
    assert "documents" == media_refusal({"supports_document_input": False}, "document", "application/pdf")
    narrow = {"supported_document_media_types": frozenset({"application/pdf", "text/plain"})}
    assert media_refusal(narrow, "document", "application/pdf") is None
    assert "application/msword documents" == media_refusal(narrow, "document", "application/msword")
    assert media_refusal(narrow, "document", "application/x-custom") is None  # not a type pydantic-ai names
