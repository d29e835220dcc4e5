"""Where durable runs are stored and the DBOS engine that stores them: the store's address, one launch per process.

The store is a DBOS system database: a SQLite file by default (`$ATOMTASK_HOME/runs.sqlite`,
`$ATOMTASK_HOME` defaulting to `~/.local/share/atomtask/`), any other file by path, or PostgreSQL by
a `postgresql://` URL (how several machines share runs). DBOS is imported here, inside functions,
so nothing pays for it until a durable run is asked for.

Each process launches DBOS once, under its own executor id: DBOS recovers, at launch, the unfinished
workflows of its own executor id only, so no command resumes another process's run behind the
user's back; a run resumes when `resume` asks for it. Checkpoints are stored as JSON (DBOS's portable
serializer), never pickled: readable, and not tied to the classes of the process that wrote them.

A store that cannot serve at all is a `RunStoreError`: at launch (a file that is not SQLite, a SQLite database
of something else, one that fails `PRAGMA quick_check`, a server that does not answer) and on any later read
(`store_errors`: a file damaged under a running process). A SQLite store file is created owner-only (0600).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import sqlite3
import threading
import uuid
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from atomtask._logs import get_logger
from atomtask._paths import atomtask_home, private_file, store_damage
from atomtask.errors import AtomTaskError, DurableRunsUnavailableError, RunStoreError

__all__ = [
    "APP_NAME",
    "APP_VERSION",
    "database_error",
    "display_url",
    "launch",
    "resume_queue",
    "serializer",
    "shutdown",
    "store_errors",
    "store_url",
    "using_loop",
    "workflow_ids",
]

log = get_logger(__name__)

#: The DBOS application name and version of every run (atomtask keeps workflow versions itself, per checkpoint).
APP_NAME = "atomtask"
APP_VERSION = "atomtask-runs-1"

_lock = threading.Lock()
_launched_url: str | None = None
#: The event loops durable runs were driven from: DBOS makes each one's default executor its own, which
#: dies with DBOS, so each gets a live one back whenever DBOS is destroyed (`_destroy`).
_loops: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
_executor_id = f"atomtask-{uuid.uuid4().hex[:16]}"


def store_url(db: str | os.PathLike[str] | None = None) -> str:
    """The DBOS system database URL for `db`: a `postgresql://` or `sqlite:///` URL as given, a path as a SQLite file.

    Without `db`: `runs.sqlite` in `atomtask_home()` (`$ATOMTASK_HOME`, default `~/.local/share/atomtask`),
    whose folder is created when missing (owner-only, 0700). A SQLite file given by path must be in an existing
    folder (`RunStoreError` otherwise), as the cache's is.
    """
    if db is None:
        home = atomtask_home()
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        return _sqlite(home / "runs.sqlite")
    text = os.fspath(db)
    if text.startswith(("postgresql://", "postgres://", "postgresql+")):
        return "postgresql://" + text.split("://", 1)[1] if text.startswith("postgres://") else text
    if text.startswith("sqlite:///"):
        return _sqlite(Path(text.removeprefix("sqlite:///")))
    return _sqlite(Path(text).expanduser())


def _sqlite(path: Path) -> str:
    path = path.resolve()
    if not path.parent.is_dir():
        raise RunStoreError(
            str(path),
            f"its folder {path.parent} does not exist",
            f"create it (`mkdir -p {path.parent}`) or give `--db` a file in an existing folder",
        )
    return f"sqlite:///{path}"


def display_url(url: str) -> str:
    """The store's address for messages: a SQLite file's path, a PostgreSQL URL without its password."""
    if url.startswith("sqlite:///"):
        return url.removeprefix("sqlite:///")
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def _dbos() -> Any:
    try:
        import dbos
    except ImportError:
        raise DurableRunsUnavailableError() from None
    return dbos


def serializer() -> Any:
    """The serializer of everything atomtask stores through DBOS (JSON, never pickle); a client must use the same."""
    return _dbos().DBOSPortableJSONSerializer()


def launch(
    url: str, *, listen: tuple[str, ...] = (), notification_poll: float = 0.1, flush_commits: bool = True
) -> None:
    """Launch DBOS on the store `url` in this process (once; again, after a shutdown, for another store).

    `listen` names more queues this process takes workflows from (a batch worker's queue), besides its own.
    `notification_poll`: seconds between two reads of DBOS messages on SQLite (an approval's `recv`
    waits at most that long); a batch process, which receives none, reads them less often.
    `flush_commits=False` (batch processes): on a SQLite store, a commit returns before it is flushed to
    disk (`synchronous=NORMAL` in WAL mode, as the local batch engine's record): it survives the process
    being killed, not a power cut, and costs ~20 µs instead of ~300 µs of the write lock. PostgreSQL
    stores are not affected.

    The caller registers its DBOS workflow functions first (`runs.durable` does, at import), as DBOS
    requires. Called from a thread without a running event loop (DBOS's launch is synchronous).
    """
    global _launched_url
    dbos = _dbos()

    with _lock:
        if _launched_url == url:
            return
        if _launched_url is not None:
            _destroy()
            _launched_url = None
        config: Any = {
            "name": APP_NAME,
            "system_database_url": url,
            "application_version": APP_VERSION,
            "executor_id": _executor_id,
            "log_level": os.environ.get("ATOMTASK_DBOS_LOG_LEVEL", "CRITICAL"),
            "serializer": serializer(),
            "notification_listener_polling_interval_sec": notification_poll,
        }
        if url.startswith("sqlite:///") and not flush_commits:
            # DBOS opens its own connections: `sqlite3.connect(factory=...)` sets the pragma on each.
            config["db_engine_kwargs"] = {"connect_args": {"factory": _UnflushedCommits}}
        try:
            if url.startswith("sqlite:///"):
                # Created owner-only (0600) before SQLite or DBOS first opens it: SQLite gives its `-wal` and
                # `-shm` the same mode, and runs hold their inputs and every step's state.
                private_file(url.removeprefix("sqlite:///"))
                _write_ahead(url.removeprefix("sqlite:///"))
            _quiet_dbos()
            dbos.DBOS(config=config)
            _quiet_dbos()  # DBOS adds its console handler while it is built
            # Listen only to this process's own queue: a run resumed here is run here, not by another process.
            dbos.DBOS.listen_queues([resume_queue(), *listen])
            dbos.DBOS.launch()
        except Exception as exc:  # the store cannot be opened: a bad URL, a server down, not a database
            log.debug("run_store_failed", store=display_url(url), error=f"{type(exc).__name__}: {exc}")
            try:
                _destroy()
            except Exception as cleanup:  # DBOS half-built: nothing more to undo
                log.debug("run_store_cleanup_failed", error=f"{type(cleanup).__name__}: {cleanup}")
            raise _store_error(url, exc) from None
        _launched_url = url
        log.info("run_store_opened", store=display_url(url), executor=_executor_id)


class _ToDebug(logging.Handler):
    """Sends DBOS's own log records to atomtask's log at debug level: DBOS prints nothing itself."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not format
            message = str(record.msg)
        log.debug("dbos", level=record.levelname, message=message.splitlines()[0] if message else "")


def _quiet_dbos() -> None:
    """Silence DBOS's logger (its console handler, tracebacks and warnings): its records go to our log at debug.

    `ATOMTASK_DBOS_LOG_LEVEL` (e.g. `INFO`) keeps DBOS's own console output, for debugging DBOS itself.
    """
    if os.environ.get("ATOMTASK_DBOS_LOG_LEVEL"):
        return
    logger = logging.getLogger("dbos")
    for handler in list(logger.handlers):
        if not isinstance(handler, _ToDebug):
            logger.removeHandler(handler)
    if not logger.handlers:
        logger.addHandler(_ToDebug())
    logger.propagate = False
    logger.setLevel(logging.WARNING)


class _NotARunStore(Exception):
    """A SQLite file that is damaged (`PRAGMA quick_check`) or the database of something else."""

    def __init__(self, problem: str, *, damaged: bool) -> None:
        self.damaged = damaged
        super().__init__(problem)


def _damaged_fix(path: str) -> str:
    return (
        f"restore {path} from a backup, or copy out what SQLite can still read (`sqlite3 {path} .recover | sqlite3 "
        "recovered.sqlite`) and give `--db recovered.sqlite`"
    )


def _store_error(url: str, exc: Exception) -> RunStoreError:
    """The typed error for a store that cannot be opened: where it is, what went wrong (one line), the fix."""
    shown = display_url(url)
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if isinstance(exc, _NotARunStore):
        fix = _damaged_fix(shown) if exc.damaged else "give `--db` a run store (or a new file), not another database"
        return RunStoreError(shown, first, fix)
    if url.startswith("sqlite:///") and "malformed" in first:
        fix = _damaged_fix(shown)
    elif url.startswith("sqlite:///"):
        fix = "give `--db` a SQLite run store (or a new file), or a `postgresql://` URL"
    else:
        fix = "check the URL, that the server is running and reachable, and the credentials"
    password = urlsplit(url).password if not url.startswith("sqlite:///") else None
    if password:
        first = first.replace(password, "***")
    return RunStoreError(shown, f"{type(exc).__name__}: {first}", fix)


def _write_ahead(path: str) -> None:
    """Check a SQLite store and put it in WAL mode (kept in the file): a commit is one append, and `runs` reads while a
    run writes.

    Checked first, so a damaged file is one `RunStoreError` at open rather than a driver error at whichever read
    meets the damage: `_paths.store_damage` (6 ms for 1,000 runs, 4 MB; 0.1 s for 10,000; 0.16 s for 50,000, 190 MB),
    and tables that are DBOS's (DBOS would add its own to any other SQLite database it is given). Commits stay
    synchronous (SQLite's default `synchronous=FULL`): a checkpoint is on disk before the next step (a batch
    process launches with `flush_commits=False`).
    """
    connection = sqlite3.connect(path)
    try:
        damage = store_damage(connection, path)
        if damage:
            raise _NotARunStore(f"it is damaged (`PRAGMA quick_check`: {'; '.join(damage)})", damaged=True)
        tables = {str(row[0]) for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables and "workflow_status" not in tables:
            shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
            raise _NotARunStore(f"it is a SQLite database of something else (tables {shown})", damaged=False)
        connection.execute("PRAGMA journal_mode=WAL")
    finally:
        connection.close()


def database_error(exc: BaseException) -> bool:
    """Whether `exc` is the database's own (SQLAlchemy's or SQLite's): the store fails, not one run's record.

    Text that is not UTF-8 in one row is that row's damage (SQLite reports it as an `OperationalError`).
    """
    import sqlalchemy.exc

    if not isinstance(exc, (sqlalchemy.exc.DBAPIError, sqlite3.DatabaseError)):
        return False
    return "Could not decode to UTF-8" not in str(getattr(exc, "orig", None) or exc)


@contextlib.contextmanager
def store_errors(*, any_error: bool = False) -> Iterator[None]:
    """Around calls on the launched store: a database error (a file damaged under a running process, a server gone)
    is a `RunStoreError` naming the store and the fix, never the driver's exception; with `any_error`, so is any
    other exception but atomtask's (a read the store must answer, whatever its rows hold)."""
    try:
        yield
    except Exception as exc:
        url = _launched_url
        if url is None or isinstance(exc, AtomTaskError) or not (any_error or database_error(exc)):
            raise
        log.debug("run_store_call_failed", store=display_url(url), error=f"{type(exc).__name__}: {exc}")
        raise _store_error(url, exc) from None


def workflow_ids(name: str | None, *, prefix: str | None = None, limit: int | None = None) -> list[str]:
    """The ids of the launched store's DBOS workflows of function `name` (any, None) whose id starts with `prefix`, the
    latest first, read without decoding any other column.

    What a listing falls back to when DBOS cannot decode one of its rows: DBOS decodes a whole listing at once, so
    one bad row would hide every run. The one place atomtask reads DBOS's tables itself (through DBOS's own engine
    and table, so PostgreSQL's schema is DBOS's).
    """
    import sqlalchemy as sa
    from dbos._dbos import _get_dbos_instance

    system = _get_dbos_instance()._sys_db
    table = system.tables.workflow_status
    query = sa.select(table.c.workflow_uuid).order_by(table.c.created_at.desc())
    if name is not None:
        query = query.where(table.c.name == name)
    if prefix:
        query = query.where(table.c.workflow_uuid.startswith(prefix, autoescape=True))
    if limit:
        query = query.limit(limit)
    with system.engine.connect() as connection:
        return [str(row[0]) for row in connection.execute(query)]


class _UnflushedCommits(sqlite3.Connection):
    """A SQLite connection whose commits are not flushed to disk one by one (WAL with `synchronous=NORMAL`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.execute("PRAGMA synchronous=NORMAL")


def resume_queue() -> str:
    """The name of this process's own DBOS queue, on which it resumes runs."""
    return f"atomtask-resume-{_executor_id}"


def shutdown() -> None:
    """Stop DBOS in this process (tests, and a program that is done with durable runs)."""
    global _launched_url
    with _lock:
        if _launched_url is None:
            return
        _destroy()
        _launched_url = None


def using_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Note that durable runs are driven from `loop` (so it gets a live default executor when DBOS goes)."""
    _loops.add(loop)


def _destroy() -> None:
    """Destroy DBOS, and give every loop it ran in a live default executor in place of DBOS's, now shut down."""
    try:
        _dbos().DBOS.destroy(workflow_completion_timeout_sec=0)
    finally:
        for loop in list(_loops):
            if not loop.is_closed():
                loop.set_default_executor(concurrent.futures.ThreadPoolExecutor())
