"""Running a coroutine to completion from synchronous code, whether or not an event loop is running.

`execute` (sync) is a thin wrapper over `execute_async`. Outside an event loop, the coroutine runs
on this thread's current loop, found or created as pydantic-ai's `run_sync` does (so HTTP clients
cached by the providers stay bound to a live loop). Inside a running loop (Jupyter, a FastAPI
handler, an `async def` test), that loop cannot be re-entered, so the coroutine runs on a worker
thread with its own loop while the caller's thread waits; the caller's context variables (bound
log fields) go with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import warnings
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["run_blocking"]

T = TypeVar("T")

_workers: ThreadPoolExecutor | None = None
# Per thread: whether a current event loop has been set on it (see `_thread_loop`).
_this_thread = threading.local()
_workers_lock = threading.Lock()


def run_blocking(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to completion and return its value; never "This event loop is already running"."""
    # `asyncio._get_running_loop` (in asyncio's `__all__`, for code that must not fail without a loop)
    # answers None where `get_running_loop` would raise: an exception per call costs ~3 us with cold caches.
    if asyncio._get_running_loop() is None:
        return _run_here(coro)
    context = contextvars.copy_context()
    return _worker_pool().submit(context.run, _run_here, coro).result()


def _run_here(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` on this thread's loop (created once per thread, reused by every later call)."""
    loop = _thread_loop()
    task = loop.create_task(coro)
    try:
        return loop.run_until_complete(task)
    except BaseException:
        # Interrupted (Ctrl-C) while the task was suspended: cancel it and let its cleanup run,
        # so no connection or `finally` block is left behind on the loop.
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):  # the interruption is what the caller needs to see
                loop.run_until_complete(task)
        raise


def _thread_loop() -> asyncio.AbstractEventLoop:
    """This thread's event loop, as pydantic-ai's `run_sync` finds it: the current one, else a new one set current."""
    try:
        if getattr(_this_thread, "loop_set", False):
            # A loop has been set current on this thread (by the first call here, or by the application
            # before it): `get_event_loop` no longer warns, so the warning filters are left alone.
            loop: asyncio.AbstractEventLoop | None = asyncio.get_event_loop()
        else:
            with warnings.catch_warnings():
                # With no current loop, some Python versions warn here; the handling below is the same.
                warnings.simplefilter("ignore", DeprecationWarning)
                loop = asyncio.get_event_loop()
    except RuntimeError:  # a thread other than the main one with no loop set, or the application set None
        loop = None
    if loop is None or loop.is_closed():
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
    _this_thread.loop_set = True
    return loop


def _worker_pool() -> ThreadPoolExecutor:
    global _workers
    if _workers is None:
        with _workers_lock:
            if _workers is None:
                _workers = ThreadPoolExecutor(thread_name_prefix="atomtask-sync")
    return _workers
