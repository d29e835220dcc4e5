"""Media inputs: the images, documents and audio a template parameter takes, read once and described without bytes.

A parameter typed `image`, `document` or `audio` takes a path (a `pathlib.Path` or a string), an
`http(s)://` URL, a `data:` URL, bytes, or a pydantic-ai `BinaryContent`, `ImageUrl`, `DocumentUrl` or
`AudioUrl`. Input validation (`MEDIA_ANNOTATIONS`, the parameter's annotation) turns each into a
`Media`: the file's bytes (read here, once) with their media type (from the file's suffix, else from
the first bytes), or the URL (never downloaded here). The model receives `Media.content()`, pydantic-ai's
own content part, beside the rendered instructions. Everything atomtask keeps about a media value (a
result's `MediaNote`, the response cache key, a log line, a trace attribute, a message) holds the media
type, the size and a SHA-256, never the bytes: `Media`'s repr shows none either.

Which models can take which media is pydantic-ai's to say (its model profiles' file-input flags):
`media_refusal` reads them for a profile, for the run-time check and for `atomtask check` (P307).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import mimetypes
import os
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Final
from urllib.parse import unquote_to_bytes, urlsplit, urlunsplit

import attrs
from atomtask.system._results import MediaNote
from pydantic import PlainSerializer, PlainValidator
from pydantic_core import PydanticCustomError

__all__ = [
    "MEDIA_ANNOTATIONS",
    "MEDIA_KINDS",
    "Media",
    "TextFile",
    "binary_media_type",
    "media_inputs",
    "media_refusal",
    "media_value",
]

#: The parameter types that reach the model as content beside the instructions, not as text.
MEDIA_KINDS: Final = ("image", "document", "audio")

_ARTICLE = {"image": "an image", "document": "a document", "audio": "audio"}
_FORMS = "a file path, an http(s) URL, a `data:` URL, bytes, or a pydantic-ai `BinaryContent`"
# `mimetypes` and some clients spell these differently from the names pydantic-ai's adapters look up.
_SPELLINGS = {
    "audio/x-wav": "audio/wav",
    "audio/wave": "audio/wav",
    "audio/vnd.wave": "audio/wav",
    "audio/mp3": "audio/mpeg",
    "audio/x-flac": "audio/flac",
    "audio/x-aiff": "audio/aiff",
    "image/jpg": "image/jpeg",
}
# The first bytes of the common formats, for bytes passed without a media type (and files without a suffix).
_MAGIC: Final[tuple[tuple[bytes, str], ...]] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"ID3", "audio/mpeg"),
    (b"\xff\xfb", "audio/mpeg"),
    (b"\xff\xf3", "audio/mpeg"),
    (b"\xff\xf2", "audio/mpeg"),
    (b"fLaC", "audio/flac"),
    (b"OggS", "audio/ogg"),
)
_RIFF: Final = {b"WEBP": "image/webp", b"WAVE": "audio/wav"}


def _kind_of(media_type: str) -> str:
    """`image`, `audio`, `video` or `document` (anything else: PDFs, office files, text)."""
    head = media_type.split("/", 1)[0]
    return head if head in ("image", "audio", "video") else "document"


def _normal(media_type: str) -> str:
    media_type = media_type.split(";", 1)[0].strip().lower()
    return _SPELLINGS.get(media_type, media_type)


def _sniff(data: bytes) -> str | None:
    """The media type the first bytes of `data` show, for the common formats; None when they show none."""
    if data[:4] == b"RIFF" and data[8:12] in _RIFF:
        return _RIFF[data[8:12]]
    if data[:4] == b"FORM" and data[8:12] in (b"AIFF", b"AIFC"):
        return "audio/aiff"
    for magic, media_type in _MAGIC:
        if data.startswith(magic):
            return media_type
    return None


def _guess(name: str) -> str | None:
    """The media type of a file name or URL path by its suffix (None for none, or `application/octet-stream`)."""
    guessed, _ = mimetypes.guess_type(name, strict=False)
    return None if guessed in (None, "application/octet-stream") else _normal(guessed)


def binary_media_type(path: Path) -> str | None:
    """The media type of a file whose suffix says it is not text (an image, audio, video, a PDF, an office file).

    None for text files and unknown suffixes: the command line reads those as text (`-i key=@file`).
    """
    media_type = _guess(path.name)
    if media_type is None or media_type.startswith("text/"):
        return None
    if media_type.endswith(("+xml", "+json", "/xml", "/json", "/yaml", "/x-yaml", "/javascript", "/x-sh")):
        return None
    return media_type


class TextFile(str):
    """The text of a `-i key=@file` that reads as UTF-8, with the file it came from.

    A text parameter takes it as the text; a media parameter (a `document` such as `notes.md`) reads the file.
    """

    path: Path

    def __new__(cls, text: str, path: Path) -> TextFile:
        made = super().__new__(cls, text)
        made.path = path
        return made


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@attrs.frozen(kw_only=True, repr=False)
class Media:
    """One validated image, document or audio value: its bytes and media type, or its URL.

    `given` is the pydantic-ai content it was passed as (sent as it is); the repr never shows the bytes.
    """

    kind: str
    media_type: str | None
    data: bytes | None = None
    url: str | None = None
    source: str | None = None
    """Where it came from, for the notes: the file's name, or the URL without its query (None for bytes)."""
    sha256: str | None = None
    given: Any = attrs.field(default=None, eq=False, hash=False)

    @property
    def size(self) -> int | None:
        """The size in bytes, None for a URL."""
        return None if self.data is None else len(self.data)

    def __repr__(self) -> str:
        parts = [self.kind, self.media_type or "media type unknown"]
        if self.data is not None:
            parts.append(f"{len(self.data):,} bytes, sha256 {self.sha256 and self.sha256[:12]}…")
        if self.source is not None:
            parts.append(repr(self.source))
        return f"Media({', '.join(parts)})"

    def content(self) -> Any:
        """The pydantic-ai content the model receives: `BinaryContent`, an `ImageUrl`, `DocumentUrl` or `AudioUrl`."""
        if self.given is not None:
            return self.given
        from pydantic_ai.messages import AudioUrl, BinaryContent, DocumentUrl, ImageUrl

        if self.data is not None:
            return BinaryContent(data=self.data, media_type=self.media_type or "application/octet-stream")
        url_class = {"image": ImageUrl, "document": DocumentUrl, "audio": AudioUrl}[self.kind]
        assert self.url is not None  # a Media is bytes or a URL
        if self.media_type is None:
            return url_class(url=self.url)
        return url_class(url=self.url, media_type=self.media_type)

    def note(self, param: str) -> MediaNote:
        """What a result keeps of it: the parameter, kind, media type, size and hash (never the bytes)."""
        return MediaNote(
            param=param,
            kind=self.kind,
            media_type=self.media_type,
            size=self.size,
            sha256=self.sha256,
            source=self.source,
        )

    def fingerprint(self) -> list[str | None]:
        """What identifies it in a cache key: the kind, the media type, and the bytes' hash or the URL."""
        return [self.kind, self.media_type, self.sha256 if self.data is not None else self.url]


class _Refused(ValueError):
    """A value a media parameter does not take; the message says why and what to pass."""


def media_value(value: Any, kind: str) -> Media:
    """`value` as a `Media` of `kind` (`image`, `document`, `audio`); raises `ValueError` saying why not and the fix.

    A path is read now; a URL is kept as it is (pydantic-ai, or the provider, fetches it).
    """
    if isinstance(value, Media):
        _check_kind(value.kind, value.media_type, kind, value.source)
        return value
    if isinstance(value, TextFile):
        return _from_file(value.path, kind)
    if isinstance(value, str):
        return _from_text(value, kind)
    if isinstance(value, os.PathLike):
        return _from_file(Path(value), kind)
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        media_type = _sniff(data)
        if media_type is None:
            raise _Refused(
                f"cannot tell the media type of these {len(data):,} bytes from their first bytes; pass "
                "`BinaryContent(data, media_type=...)` (from `pydantic_ai`), or the path of a file with a suffix"
            )
        return _checked(Media(kind=kind, media_type=media_type, data=data, sha256=_digest(data)), kind)
    if type(value).__module__.startswith("pydantic_ai"):
        return _from_pydantic_ai(value, kind)
    raise _Refused(f"{_ARTICLE[kind]} is {_FORMS}; got {type(value).__name__}")


def _checked(media: Media, kind: str) -> Media:
    assert media.media_type is not None
    _check_kind(_kind_of(media.media_type), media.media_type, kind, media.source)
    return media


def _check_kind(found: str, media_type: str | None, kind: str, source: str | None) -> None:
    """Refuse a value of kind `found` (`video` included) for a parameter of `kind`."""
    if found == kind:
        return
    what = f"{source!r} is" if source else "the value is"
    fix = f"declare the parameter `{found}`" if found in MEDIA_KINDS else "convert it"
    raise _Refused(
        f"the parameter takes {_ARTICLE[kind]}, but {what} {_ARTICLE.get(found, found)}"
        f"{f' ({media_type})' if media_type else ''}; pass {_ARTICLE[kind]}, or {fix}"
    )


def _from_text(text: str, kind: str) -> Media:
    scheme = urlsplit(text).scheme.lower() if "://" in text or text.startswith("data:") else ""
    if scheme in ("http", "https"):
        parts = urlsplit(text)
        media_type = _guess(parts.path)
        source = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))  # a query may hold a signed token
        if media_type is not None:
            _check_kind(_kind_of(media_type), media_type, kind, source)
        return Media(kind=kind, media_type=media_type, url=text, source=source)
    if scheme == "data":
        return _from_data_url(text, kind)
    if scheme:
        raise _Refused(
            f"{scheme}:// URLs are not sent; pass an http(s) URL, a `data:` URL, or the path of a local file"
        )
    if "\n" in text or len(text) > 4096:
        raise _Refused(f"{_ARTICLE[kind]} is {_FORMS}, not text")
    return _from_file(Path(text), kind)


def _from_data_url(text: str, kind: str) -> Media:
    header, comma, payload = text[5:].partition(",")
    media_type = _normal(header.split(";", 1)[0]) if header else ""
    try:
        if not comma or not media_type:
            raise ValueError
        data = base64.b64decode(payload, validate=True) if header.endswith(";base64") else unquote_to_bytes(payload)
    except (ValueError, binascii.Error):
        raise _Refused("a `data:` URL is `data:<media type>;base64,<data>`; this one does not read as one") from None
    return _checked(Media(kind=kind, media_type=media_type, data=data, sha256=_digest(data)), kind)


def _from_file(path: Path, kind: str) -> Media:
    path = path.expanduser()
    shown = str(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        where = "" if path.is_absolute() else f" (relative to {os.getcwd()})"
        raise _Refused(
            f"no file {shown!r}{where}; pass the path of an existing file, an http(s) URL, or the bytes"
        ) from None
    except IsADirectoryError:
        raise _Refused(f"{shown!r} is a folder; pass the path of a file") from None
    except OSError as exc:
        raise _Refused(f"cannot read {shown!r} ({exc.strerror or exc}); fix its permissions or the path") from None
    media_type = _guess(path.name) or _sniff(data)
    if media_type is None:
        raise _Refused(
            f"cannot tell the media type of {shown!r} from its suffix or its first bytes; give it a suffix such "
            "as `.png`, `.pdf` or `.wav`, or pass `BinaryContent(data, media_type=...)` (from `pydantic_ai`)"
        )
    return _checked(Media(kind=kind, media_type=media_type, data=data, source=path.name, sha256=_digest(data)), kind)


def _from_pydantic_ai(value: Any, kind: str) -> Media:
    from pydantic_ai.messages import AudioUrl, BinaryContent, DocumentUrl, ImageUrl, VideoUrl

    if isinstance(value, BinaryContent):
        data = value.data
        binary = Media(kind=kind, media_type=_normal(value.media_type), data=data, sha256=_digest(data), given=value)
        return _checked(binary, kind)
    url_kinds = {ImageUrl: "image", DocumentUrl: "document", AudioUrl: "audio", VideoUrl: "video"}
    found = next((k for cls, k in url_kinds.items() if isinstance(value, cls)), None)
    if found is None:
        raise _Refused(f"{_ARTICLE[kind]} is {_FORMS}; got {type(value).__name__}")
    url: str = value.url
    parts = urlsplit(url)
    source = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
    try:
        media_type: str | None = value.media_type
    except ValueError:  # a URL whose suffix names no media type, and none given
        media_type = None
    _check_kind(found, media_type, kind, source)
    return Media(kind=kind, media_type=media_type, url=url, source=source, given=value)


def _validator(kind: str) -> Callable[[Any], Media]:
    def validate(value: Any) -> Media:
        try:
            return media_value(value, kind)
        except _Refused as exc:
            raise PydanticCustomError("media_input", "{reason}", {"reason": str(exc)}) from None

    validate.__name__ = f"validate_{kind}"
    return validate


def _described(media: Media) -> dict[str, Any]:
    """A `Media` in JSON: what it is, never its bytes."""
    return {"kind": media.kind, "media_type": media.media_type, "size": media.size, "sha256": media.sha256,
            "source": media.source}  # fmt: skip


#: The annotation of each media type in a template's parameters: the value validated into a `Media`.
MEDIA_ANNOTATIONS: Final[Mapping[str, Any]] = {
    kind: Annotated[
        Media,
        PlainValidator(_validator(kind), json_schema_input_type=str),
        PlainSerializer(_described, when_used="json"),
    ]
    for kind in MEDIA_KINDS
}


def media_inputs(values: Mapping[str, Any], params: Sequence[str]) -> tuple[tuple[str, Media], ...]:
    """Every `Media` among the values of `params`, in their order, each with its parameter (`photos[1]` in a list)."""
    found: list[tuple[str, Media]] = []
    for param in params:
        found.extend(_walk(values.get(param), param))
    return tuple(found)


def _walk(value: Any, label: str) -> Iterator[tuple[str, Media]]:
    if isinstance(value, Media):
        yield label, value
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _walk(item, f"{label}[{index}]")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _walk(item, f"{label}[{key!r}]")


def media_refusal(profile: Mapping[str, Any], kind: str, media_type: str | None = None) -> str | None:
    """What a model with pydantic-ai `profile` cannot take of a `kind` value (`'images'`, `'audio files'`,
    `'application/msword documents'`), or None when its file-input flags allow it.

    The flags are pydantic-ai's (`supports_image_input`, `supports_document_input`,
    `supported_document_media_types`, `supports_audio_file_input`), each True unless the profile says otherwise.
    """
    found = _kind_of(media_type) if media_type is not None else kind
    if found == "image":
        return None if profile.get("supports_image_input", True) else "images"
    if found == "audio":
        return None if profile.get("supports_audio_file_input", True) else "audio files"
    if found == "video":
        return None if profile.get("supports_video_input", True) else "video"
    if not profile.get("supports_document_input", True):
        return "documents"
    supported = profile.get("supported_document_media_types")
    if media_type is not None and supported is not None and media_type not in supported and _known(media_type):
        return f"{media_type} documents"
    return None


def _known(media_type: str) -> bool:
    """A media type pydantic-ai names as a document type (it leaves the others to its adapters)."""
    from pydantic_ai.messages import DocumentMediaType

    return media_type in typing.get_args(DocumentMediaType)
