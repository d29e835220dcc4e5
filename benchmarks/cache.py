"""What a response-cache hit costs, against a (free, instant) FunctionModel call and bare pydantic-ai.

Four ways to get a validated Contact, interleaved so all see the same machine noise:

- `hit`: `TaskSystem.execute` with the cache on, answered from a SQLite file (WAL) after the first run;
- `miss`: `TaskSystem.execute` with the cache off, through pydantic-ai to a FunctionModel;
- `miss_cache_on`: the same with the cache on and nothing stored (key, lookup, model call, store);
- `bare`: a bare `Agent.run_sync` to the same FunctionModel.

A FunctionModel answers in microseconds, so this is the floor of what a hit saves: against a real
provider (hundreds of milliseconds, and money) the ratio is far larger. Both misses send a new prompt
each call, so they differ only by what turning the cache on costs when nothing is stored yet.

    python benchmarks/cache.py [--runs 2000]
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import structlog
from atomtask import OutputFormat, ParamSpec, ResponseCache, TaskSystem, Template
from pydantic import BaseModel
from pydantic_ai import Agent, ToolOutput
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

SYSTEM = "You are a careful data-entry clerk."
TEXT = "Ada Lovelace, ada@example.com, Analytical Engines Ltd"
REPLY = json.dumps({"name": "Ada Lovelace", "email": "ada@example.com", "company": "Analytical Engines Ltd"})


class Contact(BaseModel):
    name: str
    email: str | None = None
    company: str | None = None


def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, REPLY)])


def make_system(model: FunctionModel, store: ResponseCache) -> TaskSystem:
    system = TaskSystem(model=model, cache_path=store)
    system.models.register(Contact)
    system.register(
        Template(
            name="extract",
            params={"text": ParamSpec(type="str")},
            system=SYSTEM,
            instructions="Extract the contact details from: {{text}}",
            output_format=OutputFormat(type="json", schema="Contact"),
        )
    )
    return system


def measure(fns: dict[str, Callable[[], None]], runs: int) -> dict[str, float]:
    """Median microseconds per call of each function, run in rotating order."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    gc.collect()
    for i in range(runs):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            start = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) * 1e6 for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))

    model = FunctionModel(reply)
    with tempfile.TemporaryDirectory() as folder:
        store = ResponseCache(Path(folder) / "cache.sqlite3")
        system = make_system(model, store)
        agent = Agent(model, output_type=ToolOutput(Contact), instructions=SYSTEM)
        prompt = f"Extract the contact details from: {TEXT}"
        counter = iter(range(10**9))

        def hit() -> None:
            result = system.execute("extract", {"text": TEXT}, cache=True)
            assert result.notes.cached

        def miss() -> None:  # a new prompt each time too, so the two misses differ only by the cache
            assert system.execute("extract", {"text": f"{TEXT} #{next(counter)}"}).parsedContent is not None

        def miss_cache_on() -> None:  # a new prompt each time: key, lookup, model call, store
            result = system.execute("extract", {"text": f"{TEXT} #{next(counter)}"}, cache=True)
            assert not result.notes.cached

        def bare() -> None:
            assert agent.run_sync(prompt).output is not None

        system.execute("extract", {"text": TEXT}, cache=True)  # the answer `hit` is served
        fns = {"hit": hit, "miss": miss, "miss_cache_on": miss_cache_on, "bare": bare}
        for _ in range(100):  # warm agents, imports, the stored answer
            for fn in fns.values():
                fn()
        medians = measure(fns, args.runs)
        print(f"runs: {args.runs} each, median per call (SQLite file in WAL mode)")
        for name, value in medians.items():
            print(f"  {name:<14} {value:9.1f} us")
        print(f"hit / FunctionModel call through atomtask: {medians['hit'] / medians['miss']:.3f}x")
        print(f"hit / bare pydantic-ai call:              {medians['hit'] / medians['bare']:.3f}x")
        print(f"cache-on miss / cache-off call:           {medians['miss_cache_on'] / medians['miss']:.3f}x")
        print(f"cache entries: {store.stats().entries}")


if __name__ == "__main__":
    main()
