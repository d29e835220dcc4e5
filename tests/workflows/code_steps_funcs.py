"""The functions the code-step tests call (`call: "tests.workflows.code_steps_funcs:NAME"`)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from pydantic import BaseModel

REF = "tests.workflows.code_steps_funcs"


class TextStats(BaseModel):
    words: int
    longest: str


class OrderNotFoundError(LookupError):
    """What `lookup` raises for an order it does not know."""


def measure(text: str) -> TextStats:
    """The number of words of `text` and its longest word."""
    words = text.split()
    return TextStats(words=len(words), longest=max(words, key=len, default=""))


async def measure_async(text: str) -> TextStats:
    """`measure`, as a coroutine function."""
    await asyncio.sleep(0)
    return measure(text)


def measure_as_dict(text: str) -> TextStats:
    """Returns a dict, which its return type validates into a `TextStats`."""
    return {"words": len(text.split()), "longest": "?"}  # type: ignore[return-value]


def measure_wrongly(text: str) -> TextStats:
    """Returns a value its return type refuses."""
    return {"words": "many"}  # type: ignore[return-value]


def shout(word: str) -> str:
    """`word` in capitals."""
    return word.upper()


def double(n: int) -> int:
    return 2 * n


def lookup(order_id: str) -> TextStats:
    """Fails for every order."""
    raise OrderNotFoundError(f"no order {order_id!r}")


def flaky(log: str, failures: int) -> int:
    """Appends a line to `log` per run; raises `ConnectionError` for the first `failures` runs, then counts the runs."""
    path = Path(log)
    with path.open("a", encoding="utf-8") as file:
        file.write("run\n")
    runs = len(path.read_text(encoding="utf-8").splitlines())
    if runs <= failures:
        raise ConnectionError(f"run {runs} failed")
    return runs


def mark(path: str, text: str, failures: int = 0) -> str:
    """Appends `text` to the file `path` (one line per run) and returns it in capitals.

    Raises `OSError` for the first `failures` runs (counted by the lines of the file).
    """
    with Path(path).open("a", encoding="utf-8") as file:
        file.write(text + "\n")
    if len(Path(path).read_text(encoding="utf-8").splitlines()) <= failures:
        raise OSError(f"disk full writing {text!r}")
    return text.upper()


async def sleep_async(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "woke"


def sleep_sync(seconds: float) -> str:
    time.sleep(seconds)
    return "woke"


def untyped(text, count: int):  # type: ignore[no-untyped-def]
    return text


def no_return(text: str):  # type: ignore[no-untyped-def]
    return text


def star_args(*texts: str) -> str:
    return " ".join(texts)


NOT_A_FUNCTION = 3


def note_down(text: str) -> None:
    """A function called for its effect: it returns nothing."""
    del text
