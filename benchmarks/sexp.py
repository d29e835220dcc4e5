"""What the S-expression front end adds over `TaskSystem.execute` and bare pydantic-ai, in one process.

The same schema, prompt and FunctionModel reply, run three ways, interleaved so all see the same
machine noise: a one-call script through `TaskSystem.defatom` (read + evaluate + execute),
`TaskSystem.execute`, and a bare `Agent.run_sync`. Also times reading the shipped
`templates/pipeline.sexp`. Prints medians, minimums and ratios.

    python benchmarks/sexp.py [--runs 1000]
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import statistics
import time
from pathlib import Path

import structlog
from atomtask import TaskSystem
from atomtask.sexp._reader import read
from pydantic_ai import Agent, ToolOutput
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

SYSTEM = "You are a careful data-entry clerk."
TEXT = "Ada Lovelace, ada@example.com, Analytical Engines Ltd"
REPLY = json.dumps({"name": "Ada Lovelace", "email": "ada@example.com", "company": "Analytical Engines Ltd"})
DECLARE = f"""
(defschema Contact (name str) (email str?) (company str?))
(defatom extract
  (params (text str))
  (system "{SYSTEM}")
  (instructions "Extract the contact details from: {{{{text}}}}")
  (output_format (schema Contact)))
"""
SCRIPT = "(unwrap (extract (text text)))"
PIPELINE = Path(__file__).resolve().parent.parent / "templates" / "pipeline.sexp"


def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, REPLY)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()
    # Log events would be printed on every run (structlog's default); they are not what is measured.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))

    model = FunctionModel(reply)
    system = TaskSystem(model=model)
    system.defatom(DECLARE)
    agent = Agent(model, output_type=ToolOutput(system.models.get("Contact")), instructions=SYSTEM)
    prompt = f"Extract the contact details from: {TEXT}"

    def script() -> None:
        assert system.defatom(SCRIPT, variables={"text": TEXT}) is not None

    def python() -> None:
        assert system.execute("extract", {"text": TEXT}).parsedContent is not None

    def bare() -> None:
        assert agent.run_sync(prompt).output is not None

    fns = (script, python, bare)
    for _ in range(100):  # warm caches, agents, imports
        for fn in fns:
            fn()
    times: dict[str, list[float]] = {fn.__name__: [] for fn in fns}
    gc.collect()
    for i in range(args.runs):
        # Rotate which goes first so none always follows another's garbage.
        for fn in fns[i % 3 :] + fns[: i % 3]:
            start = time.perf_counter()
            fn()
            times[fn.__name__].append(time.perf_counter() - start)

    source = PIPELINE.read_text(encoding="utf-8")
    read_times: list[float] = []
    for _ in range(args.runs):
        start = time.perf_counter()
        read(source)
        read_times.append(time.perf_counter() - start)

    med = {name: statistics.median(values) * 1e6 for name, values in times.items()}
    low = {name: min(values) * 1e6 for name, values in times.items()}
    print(f"runs each: {args.runs}   (median and min; the min is the least disturbed by other load)")
    for label, name in (("bare pydantic-ai", "bare"), ("atomtask execute", "python"), ("atomtask script", "script")):
        print(f"{label + ':':22}median {med[name]:8.1f} us   min {low[name]:8.1f} us")
    for label, name in (("ratio script/execute", "python"), ("ratio script/bare", "bare")):
        print(f"{label + ':':22}median {med['script'] / med[name]:8.3f}x    min {low['script'] / low[name]:8.3f}x")
    read_med = statistics.median(read_times) * 1e6
    read_min = min(read_times) * 1e6
    print(f"read templates/pipeline.sexp ({len(source)} chars): median {read_med:.1f} us   min {read_min:.1f} us")


if __name__ == "__main__":
    main()
