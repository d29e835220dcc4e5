"""Templates with `image`, `document` and `audio` parameters: what the model receives, and what is kept (no bytes)."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from atomtask import (
    FailureReason,
    MediaNote,
    SchemaError,
    TaskStatus,
    TaskSystem,
    Template,
    TemplateError,
    TraceSettings,
    Workflow,
)
from atomtask.batch._target import from_task
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai.messages import BinaryContent, ImageUrl, ModelMessage, ModelRequest, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.profiles import ModelProfile
from structlog.testing import capture_logs

PNG = b"\x89PNG\r\n\x1a\n" + b"first image" + bytes(32)
OTHER_PNG = b"\x89PNG\r\n\x1a\n" + b"second image" + bytes(32)
PDF = b"%PDF-1.7\n" + bytes(40)


class Seen:
    """A `FunctionModel` answering `answer`, keeping the user prompt of each request it received."""

    def __init__(self, answer: str = "A cat on a mat.", profile: ModelProfile | None = None) -> None:
        self.prompts: list[Any] = []
        self.answer = answer
        self.model = FunctionModel(self._respond, model_name="seen", profile=profile)

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        request = messages[-1]
        assert isinstance(request, ModelRequest)
        self.prompts.append(next(p.content for p in request.parts if p.part_kind == "user-prompt"))
        return ModelResponse(parts=[TextPart(self.answer)])


@pytest.fixture
def photo(tmp_path: Path) -> Path:
    path = tmp_path / "cat.png"
    path.write_bytes(PNG)
    return path


def system_with(model: Any, params: dict[str, str], instructions: str = "Describe the image.", **kw: Any) -> TaskSystem:
    system = TaskSystem(model=model, **kw)
    system.register(Template.model_validate({"name": "describe", "params": params, "instructions": instructions}))
    return system


def test_an_image_path_reaches_the_model_as_binary_content_beside_the_prompt(photo: Path) -> None:
    """The user prompt is the rendered text, then the image as pydantic-ai `BinaryContent` (bytes and media type)."""
    seen = Seen()
    result = system_with(seen.model, {"photo": "image", "style": "str"}, "Describe it, {{style}}.").execute(
        "describe", {"photo": photo, "style": "briefly"}
    )
    assert TaskStatus.COMPLETE == result.status, result.error
    text, image = seen.prompts[0]
    assert "Describe it, briefly." == text
    assert isinstance(image, BinaryContent)
    assert (PNG, "image/png") == (image.data, image.media_type)
    sha = hashlib.sha256(PNG).hexdigest()
    note = MediaNote(param="photo", kind="image", media_type="image/png", size=len(PNG), sha256=sha, source="cat.png")
    assert [note] == result.notes.media


def test_a_url_is_sent_as_a_url_part_and_bytes_as_given() -> None:
    """An http(s) URL reaches the model as `ImageUrl` (nothing downloaded); raw bytes as sniffed `BinaryContent`."""
    seen = Seen()
    system = system_with(seen.model, {"photo": "image"})
    system.execute("describe", {"photo": "https://example.com/cat.jpg"})
    system.execute("describe", {"photo": PNG})
    assert [ImageUrl(url="https://example.com/cat.jpg")] == seen.prompts[0][1:]
    assert "image/png" == seen.prompts[1][1].media_type


def test_several_images_go_in_declaration_order_and_a_missing_optional_sends_nothing(tmp_path: Path) -> None:
    """`list[image]` sends each item, then the next parameter's; `image?` given None sends nothing."""
    seen = Seen()
    system = system_with(
        seen.model, {"pages": "list[image]", "contract": "document", "logo": "image?"}, "Compare them."
    )
    result = system.execute("describe", {"pages": [PNG, OTHER_PNG], "contract": PDF, "logo": None})
    assert result.ok, result.error
    assert [PNG, OTHER_PNG, PDF] == [part.data for part in seen.prompts[0][1:]]
    assert ["pages[0]", "pages[1]", "contract"] == [note.param for note in result.notes.media]
    assert ["image", "image", "document"] == [note.kind for note in result.notes.media]


def test_a_missing_file_fails_the_task_naming_the_parameter_and_the_fix(tmp_path: Path) -> None:
    """No model call: an `input_validation_failure` naming the parameter, the path and what to pass."""
    seen = Seen()
    missing = tmp_path / "gone.png"
    result = system_with(seen.model, {"photo": "image"}).execute("describe", {"photo": str(missing)})
    assert FailureReason.INPUT_VALIDATION_FAILURE == result.error.reason  # type: ignore[union-attr]
    message = result.error.message  # type: ignore[union-attr]
    assert f"parameter 'photo': no file {str(missing)!r}" in message
    assert "pass the path of an existing file, an http(s) URL, or the bytes" in message
    assert [] == seen.prompts


def test_bytes_that_fail_validation_are_quoted_by_their_size_only() -> None:
    """A refused value that is bytes appears in the failure as a size, never as its content."""
    secret = b"\x00\x01" + b"not an image at all" * 50
    result = system_with(Seen().model, {"photo": "image"}).execute("describe", {"photo": secret})
    message = result.error.message  # type: ignore[union-attr]
    assert f"(got {len(secret):,} bytes)" in message
    assert "not an image at all" not in message


def test_a_placeholder_for_a_media_parameter_is_a_template_error() -> None:
    """`{{photo}}` in the instructions is refused at registration, saying the image goes beside the text."""
    template = Template.model_validate(
        {"name": "describe", "params": {"photo": "image"}, "instructions": "Describe {{photo}}."}
    )
    with pytest.raises(TemplateError) as raised:
        TaskSystem().register(template)
    assert "names parameter 'photo', which is image: the model receives it beside the instructions" in str(raised.value)
    assert "Remove the placeholder" in str(raised.value)


def test_a_misspelt_media_type_suggests_it() -> None:
    """`imgae` is no schema and no parameter type: the error suggests `image`."""
    template = Template.model_validate({"name": "describe", "params": {"photo": "list[imgae]"}, "instructions": "x"})
    with pytest.raises(SchemaError) as raised:
        TaskSystem().register(template)
    assert "Did you mean 'image' (a file sent beside the instructions)?" in str(raised.value)
    assert "image" == raised.value.suggestions[0]


def test_a_model_whose_profile_takes_no_images_fails_before_any_request(photo: Path) -> None:
    """The run-time check: pydantic-ai's profile says no images, so the call is a `configuration_error`."""
    seen = Seen(profile=ModelProfile(supports_image_input=False))
    result = system_with(seen.model, {"photo": "image"}).execute("describe", {"photo": photo})
    assert FailureReason.CONFIGURATION_ERROR == result.error.reason  # type: ignore[union-attr]
    error = result.error
    assert error is not None
    assert "Model 'function:seen' cannot take images, according to pydantic-ai's profile" in error.message
    assert "parameter 'photo' (image/png, cat.png) of template 'describe' was not sent" in error.message
    assert {"param": "photo", "media_type": "image/png", "kind": "image"}.items() <= error.details.items()
    assert [] == seen.prompts
    narrow = Seen(profile=ModelProfile(supported_document_media_types=frozenset({"application/pdf"})))
    word = photo.with_name("memo.docx")
    word.write_bytes(b"PK\x03\x04" + bytes(20))
    failed = system_with(narrow.model, {"memo": "document"}).execute("describe", {"memo": word})
    assert "cannot take application/vnd.openxmlformats-officedocument" in failed.error.message  # type: ignore[union-attr]


def test_results_logs_and_batch_records_keep_the_hash_never_the_bytes(photo: Path) -> None:
    """The result's JSON, every log event and a batch item's record hold the media type, size and hash only."""
    with capture_logs() as logs:
        result = system_with(Seen().model, {"photo": "image"}).execute("describe", {"photo": photo})
    encoded = base64.b64encode(PNG).decode()
    dumped = result.model_dump_json()
    assert hashlib.sha256(PNG).hexdigest() in dumped
    assert encoded not in dumped and "first image" not in dumped
    assert all("first image" not in repr(event) and encoded not in repr(event) for event in logs)
    record = json.loads(from_task("item-1", result).json_line())
    assert [{"param": "photo", "kind": "image", "media_type": "image/png", "size": len(PNG)}] == [
        {key: note[key] for key in ("param", "kind", "media_type", "size")} for note in record["media"]
    ]
    assert encoded not in json.dumps(record)


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    yield memory
    memory.clear()


def test_traces_name_the_media_without_its_bytes_even_with_content(photo: Path, exporter: InMemorySpanExporter) -> None:
    """With `include_content`, the prompt text is traced but the image only as its media type (and atomtask's note)."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    settings = TraceSettings(tracer_provider=provider, include_content=True)
    system = system_with(Seen().model, {"photo": "image"}, instrument=settings)
    assert system.execute("describe", {"photo": photo}).ok
    spans = exporter.get_finished_spans()
    everything = json.dumps([dict(span.attributes or {}) for span in spans], default=str)
    assert "Describe the image." in everything  # content is on
    assert "image/png" in everything
    assert base64.b64encode(PNG).decode() not in everything
    task = next(span for span in spans if (span.attributes or {}).get("atomtask.template") == "describe")
    sha = hashlib.sha256(PNG).hexdigest()
    assert (f"photo: image/png, {len(PNG)} bytes, sha256 {sha}",) == task.attributes["atomtask.media"]  # type: ignore[index]


def test_the_response_cache_keys_on_the_image(tmp_path: Path) -> None:
    """The same image is a hit; another image (same text, same name) is a miss; the hit keeps the media note."""
    seen = Seen()
    system = system_with(seen.model, {"photo": "image"}, cache=True, cache_path=":memory:")
    first = tmp_path / "a" / "cat.png"
    second = tmp_path / "b" / "cat.png"
    for path, data in ((first, PNG), (second, OTHER_PNG)):
        path.parent.mkdir()
        path.write_bytes(data)
    one = system.execute("describe", {"photo": first})
    again = system.execute("describe", {"photo": first})
    other = system.execute("describe", {"photo": second})
    assert (False, True, False) == (one.notes.cached, again.notes.cached, other.notes.cached)
    assert one.notes.cache_key == again.notes.cache_key != other.notes.cache_key
    assert 2 == len(seen.prompts)
    assert one.notes.media == again.notes.media
    url_one = system.execute("describe", {"photo": "https://example.com/1.png"})
    url_two = system.execute("describe", {"photo": "https://example.com/2.png"})
    assert url_one.notes.cache_key != url_two.notes.cache_key


def test_a_workflow_step_passes_a_path_from_a_text_state_field(photo: Path) -> None:
    """A `str` state field holding a path, bound to an `image` parameter: the step sends the file's bytes."""
    seen = Seen()
    system = system_with(seen.model, {"photo": "image"})
    system.register_workflow(
        Workflow.model_validate(
            {
                "name": "caption",
                "state": [{"name": "photo", "type": "str"}, {"name": "caption", "type": "str"}],
                "steps": [
                    {"id": "describe", "task": "describe", "inputs": {"photo": "{{state.photo}}"}, "output": "caption"}
                ],
            }
        )
    )
    result = system.run_workflow("caption", {"photo": str(photo)})
    assert result.ok, result.error
    assert "A cat on a mat." == result.state.caption
    assert PNG == seen.prompts[0][1].data
    assert "image/png" == result.steps[0].result.notes.media[0].media_type  # type: ignore[union-attr]
