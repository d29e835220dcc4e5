"""A code step's function (`call: package.module:function`): imported, its signature read, and run.

`read_call` imports the function under the rule migrations' `call` follows (only from the
`importable` packages) and reads its annotations: each parameter's type plays the part of a task's
parameter, the return annotation that of its output schema, so the workflow checks treat a code step
like a task step. A function the checks cannot read is refused with its code: the module (E122), the
name (E123), a parameter or return without a type, or a parameter that cannot be bound by name (E124).

`run_call` runs it once: an `async def` on the run's event loop, any other function in a worker thread
(`asyncio.to_thread`) so it does not hold up the loop, each bounded by the step's `timeout`. A sync
function that times out is left to finish in its thread (a thread cannot be stopped); its answer is
dropped. The arguments are validated into the parameter types before the call, and the value it
returns into the return type after it, as a task's inputs and answer are.
"""

from __future__ import annotations

import contextvars
import inspect
import sys
import time
import traceback
import typing
from collections.abc import Callable, Mapping
from typing import Any

import attrs
from atomtask.errors import (
    UsageError,
    WorkflowCallDeclarationError,
    WorkflowCallFunctionError,
    WorkflowCallModuleError,
    WorkflowCallSignatureError,
)
from atomtask.schemas._sources import import_callable
from pydantic import TypeAdapter
from pydantic.errors import PydanticSchemaGenerationError, PydanticUserError

__all__ = ["STAND_IN", "CallOutcome", "CompiledCall", "read_call", "run_call"]

STAND_IN: contextvars.ContextVar[Callable[[CompiledCall], Any] | None] = contextvars.ContextVar(
    "atomtask_code_step_stand_in", default=None
)
"""Set (by a dry run, `estimate`), no code step's function runs: the stand-in gives a value of its return type."""

_BY_NAME = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


@attrs.frozen(kw_only=True)
class CompiledCall:
    """A code step's function, checked: its parameters (`name -> (annotation, required)`) and return type."""

    reference: str
    function: Callable[..., Any]
    is_async: bool
    params: Mapping[str, tuple[Any, bool]]
    returns: Any
    _param_adapters: Mapping[str, TypeAdapter[Any]]
    _return_adapter: TypeAdapter[Any]

    def argument(self, name: str, value: Any) -> Any:
        """`value` validated into parameter `name`'s type; raises pydantic's `ValidationError`."""
        return self._param_adapters[name].validate_python(value)

    def answer(self, returned: Any) -> Any:
        """The value the function returned, validated into its return type; raises pydantic's `ValidationError`."""
        return self._return_adapter.validate_python(returned)


def read_call(reference: str, *, importable: tuple[str, ...], step: str) -> CompiledCall:
    """Import the function `reference` names and read its signature; raises the `WorkflowError` of its problem."""
    where = f"step {step!r}"
    module_name, _, attribute = reference.partition(":")
    try:
        function = import_callable(reference, importable=importable, where=where)
    except UsageError as exc:
        if not attribute.isidentifier() or not all(part.isidentifier() for part in module_name.split(".")):
            raise WorkflowCallDeclarationError(
                f"Step {step!r} calls {reference!r}; write the function as `package.module:function`."
            ) from None
        # The name is looked up only once its module imported: a module in `sys.modules` imported.
        imported = module_name in sys.modules and _inside(module_name, importable)
        kind = WorkflowCallFunctionError if imported else WorkflowCallModuleError
        raise kind(exc.message, suggestions=exc.suggestions) from None
    return _signature(reference, function, step)


def _inside(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == package or module.startswith(package + ".") for package in packages)


def _signature(reference: str, function: Callable[..., Any], step: str) -> CompiledCall:
    """The checked form of `function`: every parameter and the return typed, every parameter bound by name."""
    try:
        signature = inspect.signature(function)
        hints = typing.get_type_hints(function, include_extras=True)
    except (TypeError, ValueError, NameError) as exc:
        raise WorkflowCallSignatureError(
            f"Step {step!r} calls {reference!r}, whose annotations cannot be read ({type(exc).__name__}: {exc}). "
            "Import every name its annotations use in its module."
        ) from None
    unbound = [p.name for p in signature.parameters.values() if p.kind not in _BY_NAME]
    if unbound:
        raise WorkflowCallSignatureError(
            f"Step {step!r} calls {reference!r}, whose parameter(s) {', '.join(map(repr, unbound))} cannot be "
            "bound by name (`*args`, `**kwargs` or positional-only). A code step passes its `inputs` by name: "
            "give the function named parameters."
        )
    untyped = [name for name in signature.parameters if name not in hints]
    if untyped or "return" not in hints:
        missing = [f"parameter {name!r}" for name in untyped]
        if "return" not in hints:
            missing.append("the return value (`-> ...`; `-> None` when it returns nothing)")
        raise WorkflowCallSignatureError(
            f"Step {step!r} calls {reference!r}, which has no type annotation on {', '.join(missing)}. The checks "
            "read a code step's types from its annotations, as they read a task's parameters and output schema: "
            "annotate them."
        )
    params = {p.name: (hints[p.name], p.default is inspect.Parameter.empty) for p in signature.parameters.values()}
    adapters = {name: _adapter(reference, step, f"parameter {name!r}", hints[name]) for name in params}
    return CompiledCall(
        reference=reference,
        function=function,
        is_async=inspect.iscoroutinefunction(function),
        params=params,
        returns=hints["return"],
        param_adapters=adapters,
        return_adapter=_adapter(reference, step, "the return value", hints["return"]),
    )


def _adapter(reference: str, step: str, what: str, annotation: Any) -> TypeAdapter[Any]:
    try:
        return TypeAdapter(annotation)
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError) as exc:
        first = str(exc).splitlines()[0]
        raise WorkflowCallSignatureError(
            f"Step {step!r} calls {reference!r}: the type of {what} cannot be validated ({first}). Use a type "
            "Pydantic validates: a Pydantic class, a dataclass, a TypedDict, or builtin types."
        ) from None


@attrs.frozen(kw_only=True)
class CallOutcome:
    """One run of a code step's function: what it returned, or what it raised (a timeout is a `TimeoutError`)."""

    value: Any = None
    error: Exception | None = None
    timed_out: bool = False
    duration_ms: float = 0.0

    def details(self) -> dict[str, Any]:
        """What a failure record keeps of the exception: its type, message and where it was raised."""
        error = self.error
        if error is None:
            return {}
        kind = type(error)
        name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
        found: dict[str, Any] = {"exception": name, "error": str(error)}
        frames = traceback.extract_tb(error.__traceback__)
        if frames:
            last = frames[-1]
            found["raised_at"] = f"{last.filename}:{last.lineno} in {last.name}"
        return found


async def run_call(call: CompiledCall, arguments: Mapping[str, Any], timeout: float | None) -> CallOutcome:
    """Run the function once on validated `arguments`, for at most `timeout` seconds; never raises for its failure."""
    import asyncio  # here, not with the module: reading and checking workflows (`atomtask list`) never needs it

    stand_in = STAND_IN.get()
    if stand_in is not None:  # a dry run: user code has effects, so it is not run
        return CallOutcome(value=stand_in(call), duration_ms=0.0)
    started = time.perf_counter()
    scope = asyncio.timeout(timeout)
    try:
        async with scope:
            if call.is_async:
                value = await call.function(**arguments)
            else:
                value = await asyncio.to_thread(call.function, **arguments)
                if inspect.isawaitable(value):  # a sync wrapper around a coroutine function
                    value = await value
    except TimeoutError as exc:
        spent = (time.perf_counter() - started) * 1000
        if not scope.expired():  # the function's own TimeoutError
            return CallOutcome(error=exc, duration_ms=spent)
        stopped = TimeoutError(f"{call.reference} did not return within {timeout:g}s (`timeout`)")
        return CallOutcome(error=stopped, timed_out=True, duration_ms=spent)
    except Exception as exc:  # the function's failure, reported in the step's record
        return CallOutcome(error=exc, duration_ms=(time.perf_counter() - started) * 1000)
    return CallOutcome(value=value, duration_ms=(time.perf_counter() - started) * 1000)
