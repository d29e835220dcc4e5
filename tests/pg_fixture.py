"""A throwaway PostgreSQL server for tests marked `postgres`: `initdb` and `pg_ctl start` in a temporary folder.

The server listens on a free port of 127.0.0.1 and is stopped and removed at the end of the session.
`initdb` refuses to run as root: as root, the server runs as the user `nobody`, which owns its folder.
The binaries are looked up on PATH, then under Debian's `/usr/lib/postgresql/*/bin`.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator

import pytest

__all__ = ["postgres_url"]


def _binary(name: str) -> str:
    found = shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None)
    if found is None:
        pytest.fail(f"`{name}` is missing: install PostgreSQL (Debian: `apt-get install -y postgresql`).")
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_server_user(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    return ["runuser", "-u", "nobody", "--", *argv]


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """`postgresql://postgres@127.0.0.1:PORT/postgres` of a server started for this session."""
    folder = tempfile.mkdtemp(prefix="atomtask-pg-")
    data = os.path.join(folder, "data")
    if os.geteuid() == 0:
        shutil.chown(folder, "nobody")
    port = _free_port()
    subprocess.run(
        _as_server_user([_binary("initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8"]),
        check=True,
        capture_output=True,
    )
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
    log = os.path.join(folder, "server.log")
    pg_ctl = _binary("pg_ctl")
    subprocess.run(_as_server_user([pg_ctl, "-D", data, "-o", options, "-l", log, "-w", "start"]), check=True)
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(_as_server_user([pg_ctl, "-D", data, "-m", "immediate", "-w", "stop"]), check=False)
        shutil.rmtree(folder, ignore_errors=True)
