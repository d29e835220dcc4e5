"""Streaming one task: `TaskStream[T]`, the partial outputs of the answer as it arrives, then the `TaskResult[T]`.

```python
async with system.execute_stream("extract_contact", {"text": "..."}, expect=Contact) as stream:
    async for partial in stream:          # PartialOutput[Contact]: .output, .attempt, .model
        show(partial.output)
    result = await stream.get_result()    # TaskResult[Contact], the same ledger as `execute`
```

The task runs exactly as `execute_async` (inputs, rendering, cache, tracing, repair, retries,
fallbacks, limits); only its model call streams (`handlers._streaming`). Each `PartialOutput` holds
an instance of the output class validated with pydantic-ai's partial validation (a required field
appears once it has begun; fields with defaults hold them until they arrive; an unfinished trailing
string or list is cut where it stands), the ledger index of its `attempt` (the same as in
`result.notes.attempts`) and the model. A re-asked or resumed answer starts over under a new
`attempt`: drop what was shown of the previous one. Partials are never repaired; the validated
(and possibly repaired) answer is `result.parsedContent`, which may differ from the last partial. A
cache hit yields no partials: the result is ready at once.

The run happens in its own asyncio task, which reads the provider's stream at the provider's pace
and queues the partials, so a slow consumer never holds the connection open. Nothing runs until
the stream is iterated, entered, or awaited with `get_result()`; leaving an `async with` block
early (or `aclose()`) cancels the run.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import attrs
from atomtask.errors import UsageError
from atomtask.executors._atomic import AtomicTaskExecutor
from atomtask.handlers._streaming import PartialSink, StreamingManager
from atomtask.system._options import NO_OPTIONS, CallOptions, SubtaskRequest
from atomtask.system._results import TaskResult

if TYPE_CHECKING:
    pass

__all__ = ["PartialOutput", "TaskStream", "stream_task"]

T = TypeVar("T")
_END = object()


@attrs.frozen(kw_only=True)
class PartialOutput(Generic[T]):
    """The answer so far: `output` an instance of the output class (partially validated; `str` for text).

    `attempt` is the ledger index (`result.notes.attempts[attempt - 1]`) of the answer being streamed;
    when it changes, a new answer (re-asked, resumed after a fault, or from a fallback model) has begun.
    """

    output: T
    attempt: int
    model: str


class TaskStream(Generic[T]):
    """The partial outputs of one task as an async iterator, then its `TaskResult` (`get_result()`, `result`)."""

    def __init__(self, run: Callable[[PartialSink], Coroutine[Any, Any, TaskResult[Any]]]) -> None:
        self._run = run
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._task: asyncio.Task[TaskResult[Any]] | None = None
        self._ended = False
        self._result: TaskResult[T] | None = None

    @property
    def result(self) -> TaskResult[T] | None:
        """The task's result once the stream has ended (iterated to the end or `get_result()`), else None."""
        return self._result

    async def get_result(self) -> TaskResult[T]:
        """Run to the end (partials not yet read are dropped) and return the result; never raises for a failed task.

        Raises `UsageError` for a stream closed (`aclose()`, or its `async with` block left) before the end.
        """
        async for _ in self:
            pass
        if self._result is None:
            raise UsageError(
                "This task stream was closed before its task finished, so it has no result; read it to the "
                "end (or call `get_result()`) before leaving its `async with` block."
            )
        return self._result

    def __aiter__(self) -> AsyncIterator[PartialOutput[T]]:
        return self._partials()

    async def _partials(self) -> AsyncIterator[PartialOutput[T]]:
        task = self._start()
        while not self._ended:
            item = await self._queue.get()
            if item is _END:
                self._ended = True
                break
            yield item
        if not task.cancelled():  # the run's own exception (a bug: failed tasks are results) is raised here
            self._result = cast("TaskResult[T]", task.result())

    def _start(self) -> asyncio.Task[TaskResult[Any]]:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._produce())
        return self._task

    async def _produce(self) -> TaskResult[Any]:
        try:
            return await self._run(self._put)
        finally:
            self._queue.put_nowait(_END)

    def _put(self, output: Any, attempt: int, model: str) -> None:
        self._queue.put_nowait(PartialOutput(output=output, attempt=attempt, model=model))

    async def aclose(self) -> None:
        """Cancel the run if it has not finished (what was paid for so far is lost with it)."""
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait({task})  # unlike `await task`, never swallows the caller's own cancellation

    async def __aenter__(self) -> TaskStream[T]:
        self._start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def stream_task(
    executor: AtomicTaskExecutor,
    name_or_request: str | SubtaskRequest,
    inputs: Mapping[str, Any] | None = None,
    options: CallOptions = NO_OPTIONS,
    *,
    debounce_by: float | None = 0.1,
    expect: type[Any] | None = None,
) -> TaskStream[Any]:
    """`executor.execute_async(...)` as a `TaskStream`: its model call streamed, partials `debounce_by` s apart."""

    async def run(sink: PartialSink) -> TaskResult[Any]:
        # An executor over the same templates and cache whose manager streams through the base one's Agents.
        manager = StreamingManager(executor.manager, sink, debounce_by=debounce_by)
        streaming = AtomicTaskExecutor(executor.templates, manager, cache=executor.cache)
        return await streaming.execute_async(name_or_request, inputs, options, expect=expect)

    return TaskStream(run)
