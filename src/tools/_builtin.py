"""`http_get` and `read_text`: tool factories whose tools only reach what their options allow.

`http_get(allow_hosts=[...])` fetches a URL on one of the allowed hosts (`api.example.com`, or
`*.example.com` for its subdomains) with httpx (pydantic-ai's own HTTP client library), follows no
redirect (the model sees the status and the `location`, and may fetch it if that host is allowed),
and returns the status, content type and at most `max_bytes` of the body as text.
`read_text(root=...)` reads a UTF-8 text file under `root` (a path that leaves it, by `..` or a link,
is refused), at most `max_bytes` of it. What they refuse goes back to the model as `ModelRetry`.
"""

from __future__ import annotations

import fnmatch
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from atomtask.loading._tools import TOOL_FACTORY
from pydantic_ai import ModelRetry, Tool

__all__ = ["http_get", "read_text"]

_DEFAULT_MAX_BYTES = 100_000


def _factory(function: Any) -> Any:
    setattr(function, TOOL_FACTORY, True)
    return function


def _hosts(allow_hosts: Sequence[str]) -> tuple[str, ...]:
    if isinstance(allow_hosts, str) or not allow_hosts:
        raise ValueError("`allow_hosts` is a non-empty list of host names, like `[api.example.com, '*.example.org']`")
    hosts = []
    for host in allow_hosts:
        if not isinstance(host, str) or not host or "/" in host or ":" in host.removeprefix("["):
            raise ValueError(f"`allow_hosts` holds host names without scheme, port or path; {host!r} is not one")
        hosts.append(host.lower())
    return tuple(hosts)


def _positive(value: Any, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"`{name}` is a positive number, not {value!r}")


@_factory
def http_get(allow_hosts: Sequence[str], timeout: float = 10.0, max_bytes: int = _DEFAULT_MAX_BYTES) -> Tool[Any]:
    """A tool that fetches a URL with HTTP GET, on the `allow_hosts` only (`*.example.com` allows subdomains)."""
    hosts = _hosts(allow_hosts)
    _positive(timeout, "timeout")
    _positive(max_bytes, "max_bytes")

    async def fetch(url: str) -> dict[str, Any]:
        """Fetch a web page or API response with HTTP GET and return its status, content type and body text.

        Args:
            url: the full http:// or https:// URL to fetch.
        """
        parsed = urllib.parse.urlsplit(url)
        host = (parsed.hostname or "").lower()
        if parsed.scheme not in ("http", "https") or not host:
            raise ModelRetry(f"{url!r} is not an http:// or https:// URL with a host.")
        if not any(fnmatch.fnmatchcase(host, pattern) for pattern in hosts):
            raise ModelRetry(f"Host {host!r} is not allowed; allowed hosts: {', '.join(hosts)}.")
        import httpx2

        try:
            async with httpx2.AsyncClient(timeout=timeout, follow_redirects=False) as client:
                response = await client.get(url)
        except httpx2.HTTPError as exc:
            raise ModelRetry(f"The request to {url!r} failed: {type(exc).__name__}: {exc}.") from None
        body = response.content[:max_bytes].decode(response.encoding or "utf-8", errors="replace")
        answer: dict[str, Any] = {
            "status": response.status_code,
            "content_type": response.headers.get("content-type"),
            "body": body,
        }
        if len(response.content) > max_bytes:
            answer["truncated_at_bytes"] = max_bytes
        if "location" in response.headers:
            answer["location"] = response.headers["location"]
        return answer

    return Tool(fetch, name="http_get")


@_factory
def read_text(root: str, max_bytes: int = _DEFAULT_MAX_BYTES) -> Tool[Any]:
    """A tool that reads a UTF-8 text file under the folder `root` (relative to the working directory)."""
    if not isinstance(root, str | Path) or not str(root):
        raise ValueError("`root` is the folder the tool may read from, like `data/`")
    folder = Path(root).expanduser().resolve()
    if not folder.is_dir():
        raise ValueError(f"`root` {str(root)!r} is not a folder (resolved to {folder})")
    _positive(max_bytes, "max_bytes")

    def read(path: str) -> str:
        """Read a text file and return its contents.

        Args:
            path: the file's path, relative to the folder the tool reads from.
        """
        target = (folder / path).resolve()
        if not target.is_relative_to(folder):
            raise ModelRetry(f"{path!r} is outside the folder this tool reads from; give a path inside it.")
        if not target.is_file():
            names = sorted(p.name for p in folder.iterdir() if p.is_file())[:20]
            raise ModelRetry(f"No file {path!r}; files at the top of the folder: {', '.join(names) or 'none'}.")
        data = target.read_bytes()[:max_bytes]
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ModelRetry(f"{path!r} is not a UTF-8 text file.") from None

    return Tool(read, name="read_text")
