"""A task with a tool: what atomtask adds over bare pydantic-ai for the same round trip, in the same process.

The model (a FunctionModel) calls a typed Python function, receives its result and gives the final
answer: two requests. atomtask runs it as a template with `tools: [module:function]` (the ledger records
the call, its arguments, result and duration); bare pydantic-ai runs an `Agent` with the same function
as a tool. Runs are interleaved so both see the same machine noise; prints the median ratio by wall
clock and CPU time over the repetitions, and peak memory.

With `--mcp`, the tool is the MCP server of examples/shop (`python -m shop.fx_server`, over stdio)
instead: atomtask starts it for each task, as a bare `Agent.run` does for each run, so the ratio shows
what atomtask adds to a server's start and handshake (fewer runs: each starts a process).

    python benchmarks/tools.py [--runs 500] [--repeat 5] [--mcp]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import structlog
from atomtask import TaskSystem, Template
from pydantic import BaseModel
from pydantic_ai import Agent, ToolOutput
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

SHOP = Path(__file__).resolve().parent.parent / "examples" / "shop"


class Quote(BaseModel):
    product: str
    price_eur: float


def lookup_price(product: str) -> float:
    """Look up a product's list price in USD."""
    return {"grinder": 89.5}.get(product, 1.0)


def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Call the function tool first, then answer the output tool."""
    if len(messages) == 1:
        tool = info.function_tools[0].name
        args: dict[str, Any] = (
            {"product": "grinder"}
            if tool == "lookup_price"
            else {"amount": 89.5, "from_currency": "USD", "to_currency": "EUR"}
        )
        return ModelResponse(parts=[ToolCallPart(tool, args)])
    return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"product": "grinder", "price_eur": 82.34})])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=None, help="runs of each per repetition (500; 20 with --mcp)")
    parser.add_argument("--repeat", type=int, default=5, help="repetitions (each its own pair of medians)")
    parser.add_argument("--mcp", action="store_true", help="an MCP server over stdio instead of a function")
    args = parser.parse_args()
    runs = args.runs or (20 if args.mcp else 500)
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING), cache_logger_on_first_use=True
    )
    model = FunctionModel(reply)
    if args.mcp:
        os.chdir(SHOP)
        sys.path.insert(0, str(SHOP))
        spec: Any = {"mcp": {"command": sys.executable, "args": ["-m", "shop.fx_server"]}, "prefix": "fx"}
        from fastmcp.client.transports import StdioTransport
        from pydantic_ai.mcp import MCPToolset

        def toolsets() -> list[Any]:
            server = StdioTransport(command=sys.executable, args=["-m", "shop.fx_server"])
            return [MCPToolset(server).prefixed("fx")]

        agent = Agent(model, output_type=ToolOutput(Quote))
    else:
        spec = f"{__name__}:lookup_price" if __name__ != "__main__" else lookup_price
        agent = Agent(model, output_type=ToolOutput(Quote), tools=[lookup_price])

        def toolsets() -> list[Any]:
            return []

    system = TaskSystem(model=model)
    system.models.register(Quote)
    system.register(
        Template(
            name="quote",
            params={"product": "str"},
            instructions="Quote {{product}} in EUR.",
            tools=[spec],
            output_format={"type": "json", "schema": "Quote"},
        )
    )
    prompt = "Quote grinder in EUR."

    def ours() -> None:
        result = system.execute("quote", {"product": "grinder"})
        assert result.ok and result.notes.attempts[0].tool_calls, result.error

    def bare() -> None:
        assert agent.run_sync(prompt, toolsets=toolsets()).output is not None

    for _ in range(3 if args.mcp else 50):  # warm caches, agents, imports
        ours()
        bare()
    wall_ratios: list[float] = []
    cpu_ratios: list[float] = []
    medians: list[tuple[float, float]] = []
    for _ in range(args.repeat):
        times: dict[str, dict[object, list[float]]] = {"wall": {ours: [], bare: []}, "cpu": {ours: [], bare: []}}
        for i in range(runs):
            for fn in (ours, bare) if i % 2 == 0 else (bare, ours):
                wall, cpu = time.perf_counter(), time.process_time()
                fn()
                times["cpu"][fn].append(time.process_time() - cpu)
                times["wall"][fn].append(time.perf_counter() - wall)
        m_ours, m_bare = statistics.median(times["wall"][ours]), statistics.median(times["wall"][bare])
        medians.append((m_ours, m_bare))
        wall_ratios.append(m_ours / m_bare)
        cpu_ratios.append(statistics.median(times["cpu"][ours]) / statistics.median(times["cpu"][bare]))

    peaks = []
    for fn in (ours, bare):
        tracemalloc.start()
        for _ in range(5 if args.mcp else 100):
            fn()
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()

    kind = "MCP server over stdio" if args.mcp else "Python function"
    print(f"tool: {kind}; runs each: {runs} x {args.repeat} repetitions (2 model requests and 1 tool call a run)")
    print(f"bare pydantic-ai:     median {statistics.median(b for _, b in medians) * 1e6:10.1f} us")
    print(f"atomtask execute:     median {statistics.median(m for m, _ in medians) * 1e6:10.1f} us")
    for label, ratios in (("wall", wall_ratios), ("CPU", cpu_ratios)):
        spread = ", ".join(f"{r:.3f}" for r in sorted(ratios))
        print(f"ratio by {label:4s} (atomtask/bare): median {statistics.median(ratios):.3f}x  [{spread}]")
    print(
        f"peak traced memory: atomtask {peaks[0] / 1024:.0f} KiB, bare {peaks[1] / 1024:.0f} KiB, "
        f"ratio {peaks[0] / max(peaks[1], 1):.2f}x"
    )


if __name__ == "__main__":
    main()
