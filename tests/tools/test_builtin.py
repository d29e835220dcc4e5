"""The built-in tools: `http_get` reaches the allowed hosts only, `read_text` the files under its folder only."""

from __future__ import annotations

import asyncio
import http.server
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from atomtask.tools import http_get, read_text
from pydantic_ai import ModelRetry


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # http.server's name
        if self.path == "/moved":
            self.send_response(302)
            self.send_header("Location", "http://elsewhere.example/x")
            self.end_headers()
            return
        body = b'{"sku": "grinder", "price": 89.5}' if self.path == "/price" else b"x" * 5000
        self.send_response(200 if self.path != "/missing" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _call(tool: Any, **args: Any) -> Any:
    result = tool.function(**args)
    return asyncio.run(result) if asyncio.iscoroutine(result) else result


def test_http_get_fetches_from_an_allowed_host(server: str) -> None:
    tool = http_get(allow_hosts=["127.0.0.1"])
    assert "http_get" == tool.name
    answer = _call(tool, url=f"{server}/price")
    assert {"status": 200, "content_type": "application/json", "body": '{"sku": "grinder", "price": 89.5}'} == answer
    assert 404 == _call(tool, url=f"{server}/missing")["status"]  # the model sees the status, the task goes on


def test_http_get_refuses_other_hosts_and_follows_no_redirect(server: str) -> None:
    tool = http_get(allow_hosts=["api.example.com", "*.shop.test"])
    with pytest.raises(
        ModelRetry, match=re.escape("Host '127.0.0.1' is not allowed; allowed hosts: api.example.com, *.shop.test")
    ):
        _call(tool, url=f"{server}/price")
    with pytest.raises(ModelRetry, match="not an http"):
        _call(tool, url="file:///etc/passwd")
    local = http_get(allow_hosts=["127.0.0.1"])
    moved = _call(local, url=f"{server}/moved")
    assert (302, "http://elsewhere.example/x") == (moved["status"], moved["location"])


def test_http_get_cuts_a_long_body_and_says_so(server: str) -> None:
    answer = _call(http_get(allow_hosts=["127.0.0.1"], max_bytes=100), url=f"{server}/long")
    assert 100 == len(answer["body"]) and 100 == answer["truncated_at_bytes"]


def test_http_get_turns_a_refused_connection_into_a_retry() -> None:
    with pytest.raises(ModelRetry, match="failed"):
        _call(http_get(allow_hosts=["127.0.0.1"], timeout=2), url="http://127.0.0.1:9/")


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"allow_hosts": []}, "non-empty list"),
        ({"allow_hosts": "api.example.com"}, "non-empty list"),
        ({"allow_hosts": ["https://api.example.com"]}, "without scheme"),
        ({"allow_hosts": ["a.example"], "timeout": 0}, "`timeout` is a positive number"),
    ],
)
def test_http_get_refuses_bad_options(options: dict[str, Any], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        http_get(**options)


def test_read_text_reads_under_its_folder_only(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "notes.txt").write_text("Grinder: 89.50 USD\n", encoding="utf-8")
    (tmp_path / "data" / "image.bin").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "secret.txt").write_text("no", encoding="utf-8")
    (tmp_path / "data" / "link.txt").symlink_to(tmp_path / "secret.txt")
    tool = read_text(root=str(tmp_path / "data"))

    assert "Grinder: 89.50 USD\n" == _call(tool, path="notes.txt")
    with pytest.raises(ModelRetry, match="outside the folder"):
        _call(tool, path="../secret.txt")
    with pytest.raises(ModelRetry, match="outside the folder"):
        _call(tool, path="link.txt")  # a link out of the folder is refused too
    with pytest.raises(
        ModelRetry, match=re.escape("No file 'note.txt'; files at the top of the folder: image.bin, link.txt")
    ):
        _call(tool, path="note.txt")
    with pytest.raises(ModelRetry, match="not a UTF-8 text file"):
        _call(tool, path="image.bin")


def test_read_text_needs_an_existing_folder(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="is not a folder"):
        read_text(root=str(tmp_path / "missing"))
