"""Workers started together on a new PostgreSQL store all run: the heartbeat table is created once, under a lock.

PostgreSQL's `CREATE TABLE IF NOT EXISTS` fails in the second of two sessions that create the same
table at once (`DuplicateObject`, or `UniqueViolation` on the catalog's `pg_type` index), and the
worker that met it exited. Each trial here uses a database of its own, so the table is new in each.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.batch_helpers import write_templates
from tests.pg_fixture import postgres_url

__all__ = ["postgres_url"]  # the session fixture, for pytest

pytestmark = pytest.mark.postgres

_databases = itertools.count()


def _fresh_database(server_url: str) -> str:
    """The URL of a new, empty database on the test server."""
    import psycopg

    name = f"fresh_{os.getpid()}_{next(_databases)}"
    with psycopg.connect(server_url, autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    return f"{server_url.rsplit('/', 1)[0]}/{name}"


def test_watches_created_at_once_all_find_the_heartbeat_table(postgres_url: str) -> None:
    """Eight workers' watches made at the same instant on a new database, ten times: none fails, one table."""
    import sqlalchemy as sa
    from atomtask.batch._worker import Watch

    failures: list[str] = []
    for _ in range(10):
        url = _fresh_database(postgres_url)
        together = threading.Barrier(8)

        def start(name: str, url: str = url, together: threading.Barrier = together) -> None:
            together.wait()
            try:
                Watch(url, name, "q").close()
            except Exception as exc:  # the defect: the second creator of the table fails
                failures.append(f"{type(exc).__name__}: {str(exc).splitlines()[0]}")

        threads = [threading.Thread(target=start, args=(f"w{n}",)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://"))
        try:
            assert sa.inspect(engine).has_table("atomtask_batch_workers")
        finally:
            engine.dispose()
    assert [] == failures


def _worker(db: str, templates: Path, env: dict[str, str], log: Path) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "atomtask.cli", "worker", "--db", db, "--templates", str(templates)]
    with log.open("w") as sink:
        return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=sink, text=True)


_OPEN_STORE = "import sys; from atomtask.runs import _store; _store.launch(sys.argv[1]); _store.shutdown()"


@pytest.mark.slow
@pytest.mark.parametrize(("store", "trials"), [("new", 1), ("opened", 5)])
def test_two_workers_started_together_on_a_new_store_both_run(
    postgres_url: str, tmp_path: Path, store: str, trials: int
) -> None:
    """Two `atomtask worker`s started at once on a new database (or one DBOS opened before), a few times: both run.

    `opened`: DBOS's own tables exist (a submitter or `atomtask run --db` came first), so both workers
    reach the heartbeat table at the same moment, as DBOS's migration lock no longer spaces them. Before
    the fix a worker exited on `DuplicateObject` or `UniqueViolation` in some trials only (4 of 20 in
    one loop, none in others: it is a matter of milliseconds); the watches test above shows it every time.
    """
    templates = write_templates(tmp_path / "templates")
    env = dict(os.environ, ATOMTASK_HOME=str(tmp_path / "home"), OPENAI_API_KEY="sk-test-not-a-real-key")
    exits: list[str] = []
    for trial in range(trials):
        url = _fresh_database(postgres_url)
        if store == "opened":
            subprocess.run([sys.executable, "-c", _OPEN_STORE, url], env=env, check=True, timeout=120)
        logs = [tmp_path / f"worker-{trial}-{n}.log" for n in range(2)]
        workers = [_worker(url, templates, env, log) for log in logs]
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not all(
                "atomtask: worker" in log.read_text() or process.poll() is not None
                for process, log in zip(workers, logs, strict=True)
            ):
                time.sleep(0.05)
            time.sleep(1.5)  # a beat or more: a worker that failed after its first line would have exited
            exits += [log.read_text() for process, log in zip(workers, logs, strict=True) if process.poll() is not None]
        finally:
            for process in workers:
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
            codes = [process.wait(timeout=60) for process in workers]
        assert [0, 0] == codes, [log.read_text() for log in logs]
    assert [] == exits
