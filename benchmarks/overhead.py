"""What atomtask adds over bare pydantic-ai for one task, measured in the same process.

The same schema, the same system text and prompt, the same FunctionModel reply, run through
`TaskSystem.execute` and through a bare `Agent.run_sync`, interleaved so both see the same
machine noise. Prints both medians and their ratio (target: atomtask <= 1.05x).

    python benchmarks/overhead.py [--runs 2000]
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import statistics
import time
import tracemalloc

import structlog
from atomtask import OutputFormat, ParamSpec, TaskSystem, Template
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    # As an application in production would: keep warnings and errors, drop per-task info/debug events.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))

    model = FunctionModel(reply)
    system = TaskSystem(model=model)
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
    agent = Agent(model, output_type=ToolOutput(Contact), instructions=SYSTEM)
    prompt = f"Extract the contact details from: {TEXT}"

    def ours() -> None:
        assert system.execute("extract", {"text": TEXT}).parsedContent is not None

    def bare() -> None:
        assert agent.run_sync(prompt).output is not None

    for _ in range(100):  # warm caches, agents, imports
        ours()
        bare()

    ours_t: list[float] = []
    bare_t: list[float] = []
    gc.collect()
    for i in range(args.runs):
        # Alternate which goes first so neither always follows the other's garbage.
        order = (ours, bare) if i % 2 == 0 else (bare, ours)
        for fn in order:
            start = time.perf_counter()
            fn()
            (ours_t if fn is ours else bare_t).append(time.perf_counter() - start)

    tracemalloc.start()
    for _ in range(200):
        ours()
    ours_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    tracemalloc.start()
    for _ in range(200):
        bare()
    bare_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()

    m_ours = statistics.median(ours_t) * 1e6
    m_bare = statistics.median(bare_t) * 1e6
    print(f"runs each:            {args.runs}")
    print(f"bare pydantic-ai:     median {m_bare:8.1f} us")
    print(f"atomtask execute:     median {m_ours:8.1f} us")
    print(f"ratio (atomtask/bare): {m_ours / m_bare:.3f}x  (target <= 1.05x)")
    print(
        f"peak traced memory over 200 runs: atomtask {ours_peak / 1024:.0f} KiB, bare {bare_peak / 1024:.0f} KiB, "
        f"ratio {ours_peak / max(bare_peak, 1):.2f}x"
    )


if __name__ == "__main__":
    main()
