"""`-i photo=@cat.png`: image, PDF and audio files on the command line reach the model as files, not text."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pytest
from atomtask import UsageError
from atomtask.cli._args import parse_inputs
from atomtask.cli._main import main
from atomtask.system._media import TextFile
from atomtask.testing import FakeProviderServer, Reply

PNG = b"\x89PNG\r\n\x1a\n" + b"a tabby cat" + bytes(64)

TEMPLATE = """\
name: describe
params:
  photo: image
  notes: {type: "document?", default: null}
instructions: Describe the photo in one sentence.
"""


def test_an_image_file_is_passed_as_its_path_and_a_text_file_as_its_text(tmp_path: Path) -> None:
    """`@cat.png` is the file's path (read when the task runs); `@notes.md` is its text, which knows its file."""
    (tmp_path / "cat.png").write_bytes(PNG)
    (tmp_path / "notes.md").write_text("# Notes", encoding="utf-8")
    inputs = parse_inputs([f"photo=@{tmp_path / 'cat.png'}", f"notes=@{tmp_path / 'notes.md'}"])
    assert tmp_path / "cat.png" == inputs["photo"]
    assert "# Notes" == inputs["notes"]
    assert isinstance(inputs["notes"], TextFile) and tmp_path / "notes.md" == inputs["notes"].path


def test_a_missing_image_file_is_a_usage_error(tmp_path: Path) -> None:
    """An image that is not there is refused as any `@file` is, before anything runs."""
    with pytest.raises(UsageError, match=r"Input 'photo': cannot read '.*gone\.png' \(No such file or directory\)"):
        parse_inputs([f"photo=@{tmp_path / 'gone.png'}"])


@pytest.mark.usefixtures("allow_model_requests")
def test_run_sends_the_image_file_to_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`atomtask run describe -i photo=@cat.png` sends the PNG's bytes over HTTP; `--result` notes its hash."""
    (tmp_path / "describe.yaml").write_text(TEMPLATE, encoding="utf-8")
    (tmp_path / "cat.png").write_bytes(PNG)
    with FakeProviderServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
        server.script(Reply.text("A tabby cat."))
        out, err = io.StringIO(), io.StringIO()
        argv = ["run", "describe", "-i", f"photo=@{tmp_path / 'cat.png'}", "--templates", str(tmp_path)]
        code = main([*argv, "--model", "openai-chat:gpt-4o-mini", "--result"], stdout=out, stderr=err)
        assert 0 == code, err.getvalue()
        sent = server.requests[0].files
    digest = hashlib.sha256(PNG).hexdigest()
    assert [("image/png", len(PNG), digest)] == [(f.media_type, f.size, f.sha256) for f in sent]
    notes = json.loads(out.getvalue())["notes"]
    assert [{"param": "photo", "kind": "image", "media_type": "image/png", "size": len(PNG), "sha256": digest,
             "source": "cat.png"}] == notes["media"]  # fmt: skip
