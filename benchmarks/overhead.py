"""What atomtask adds over bare pydantic-ai for one task, measured in the same process.

The same schema, the same system text and prompt, the same FunctionModel reply, run through
`TaskSystem.execute` and through a bare `Agent.run_sync`, interleaved so both see the same
machine noise. Each repetition gives the ratio of the two medians, measured by the wall clock and
by the process's CPU time (steadier on a shared machine); prints the median ratio over the
repetitions and their spread (target: atomtask <= 1.05x; its records are built through pydantic's public
API, validated, rather than by writing model internals).

    python benchmarks/overhead.py [--runs 1000] [--repeat 5]

Instruction counts (immune to a noisy machine): run one side alone under callgrind, which counts only
the measured runs (collection is switched on around them), and divide the "Collected" by `--runs`:

    valgrind --tool=callgrind --instr-atstart=no python benchmarks/overhead.py --only ours --runs 60
    valgrind --tool=callgrind --instr-atstart=no python benchmarks/overhead.py --only bare --runs 60

Add `--inline` (and `PYTHONHASHSEED=0`) to both for counts that repeat to about 0.05%: the
FunctionModel's reply then runs inline on both sides instead of on a worker thread, whose scheduling
otherwise moves a count by ~0.3% from one process to the next.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import statistics
import subprocess
import time
import tracemalloc
from collections.abc import Callable

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
    parser.add_argument("--runs", type=int, default=1000, help="runs of each per repetition")
    parser.add_argument("--repeat", type=int, default=5, help="repetitions (each its own pair of medians)")
    parser.add_argument("--only", choices=("ours", "bare"), help="run one side `--runs` times (under callgrind)")
    parser.add_argument("--inline", action="store_true", help="with --only: run the model's reply inline, no thread")
    args = parser.parse_args()
    # As an application in production would (structlog's advice): keep warnings and errors, drop
    # per-task info/debug events, and let each logger be built once.
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING), cache_logger_on_first_use=True
    )

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
    if args.only is not None:
        if args.inline:  # the same on both sides: pydantic-ai runs sync functions inline, as on emscripten
            from pydantic_ai._utils import disable_threads

            with disable_threads():
                _count_instructions(ours if args.only == "ours" else bare, args.runs)
            return
        _count_instructions(ours if args.only == "ours" else bare, args.runs)
        return

    wall_ratios: list[float] = []
    cpu_ratios: list[float] = []
    medians: list[tuple[float, float]] = []
    for _ in range(args.repeat):
        gc.collect()
        times: dict[str, dict[object, list[float]]] = {"wall": {ours: [], bare: []}, "cpu": {ours: [], bare: []}}
        for i in range(args.runs):
            # Alternate which goes first so neither always follows the other's garbage.
            for fn in (ours, bare) if i % 2 == 0 else (bare, ours):
                wall, cpu = time.perf_counter(), time.process_time()
                fn()
                times["cpu"][fn].append(time.process_time() - cpu)
                times["wall"][fn].append(time.perf_counter() - wall)
        m_ours, m_bare = statistics.median(times["wall"][ours]), statistics.median(times["wall"][bare])
        medians.append((m_ours, m_bare))
        wall_ratios.append(m_ours / m_bare)
        cpu_ratios.append(statistics.median(times["cpu"][ours]) / statistics.median(times["cpu"][bare]))

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

    m_ours = statistics.median(m for m, _ in medians) * 1e6
    m_bare = statistics.median(b for _, b in medians) * 1e6
    print(f"runs each:            {args.runs} x {args.repeat} repetitions")
    print(f"bare pydantic-ai:     median {m_bare:8.1f} us")
    print(f"atomtask execute:     median {m_ours:8.1f} us")
    for label, ratios in (("wall", wall_ratios), ("CPU", cpu_ratios)):
        spread = ", ".join(f"{r:.3f}" for r in sorted(ratios))
        print(
            f"ratio by {label:4s} (atomtask/bare): median {statistics.median(ratios):.3f}x  [{spread}]",
            "(target <= 1.05x)",
        )
    print(
        f"peak traced memory over 200 runs: atomtask {ours_peak / 1024:.0f} KiB, bare {bare_peak / 1024:.0f} KiB, "
        f"ratio {ours_peak / max(bare_peak, 1):.2f}x"
    )


def _count_instructions(fn: Callable[[], None], runs: int) -> None:
    """Run `fn` `runs` times with callgrind's collection on (a no-op outside valgrind)."""
    pid = str(os.getpid())
    subprocess.run(["callgrind_control", "-i", "on", pid], capture_output=True, check=False)
    for _ in range(runs):
        fn()
    subprocess.run(["callgrind_control", "-i", "off", pid], capture_output=True, check=False)
    print(f"{runs} runs of {fn.__name__}: divide callgrind's 'Collected' by {runs}")


if __name__ == "__main__":
    main()
