"""The local batch engine against a bare `asyncio.gather` of pydantic-ai `Agent.run` calls, same run, same server.

A fake provider (in its own process, so its threads do not share the client's GIL) answers every
request after 50 ms. Both sides send the same prompt through the same OpenAI chat model with the
same concurrency limit; the engine also records every finished item in its SQLite record. Prints
items/s of each (best round), the ratio (target >= 0.9; the median of `--rounds` interleaved rounds'
own ratios) and the per-item cost of the durable record.

    python benchmarks/batch.py [--items 5000] [--concurrency 100] [--delay 0.05] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import structlog
from atomtask import OutputFormat, ParamSpec, ProviderRetries, TaskSystem, Template
from pydantic import BaseModel
from pydantic_ai import Agent, ToolOutput
from pydantic_ai.models import override_allow_model_requests

SERVER = """
import sys, time
from atomtask.testing import FakeProviderServer, Reply
delay = float(sys.argv[1])
server = FakeProviderServer(keep_alive=True).start()
server.respond_with(lambda request: Reply.delay(delay, Reply.tool_call(args={"label": "x", "item": "y"})))
print(server.openai_base_url, flush=True)
sys.stdin.read()
server.close()
"""


class Tag(BaseModel):
    label: str
    item: str


def start_server(delay: float) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(delay)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def openai_model(base_url: str) -> object:
    from atomtask.testing._server import _http_client
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.settings import ModelSettings

    provider = OpenAIProvider(base_url=base_url, api_key="test-key", http_client=_http_client())
    return OpenAIChatModel("gpt-4o-mini", provider=provider, settings=ModelSettings(max_retries=0))


async def bare(base_url: str, texts: list[str], concurrency: int) -> float:
    agent = Agent(openai_model(base_url), output_type=ToolOutput(Tag))  # type: ignore[arg-type]
    slots = asyncio.Semaphore(concurrency)

    async def one(text: str) -> Tag:
        async with slots:
            return (await agent.run(f"Tag this: {text}")).output

    start = time.perf_counter()
    results = await asyncio.gather(*(one(t) for t in texts))
    assert len(results) == len(texts)
    return time.perf_counter() - start


async def engine(base_url: str, texts: list[str], concurrency: int, db: Path | None) -> float:
    system = TaskSystem(model=openai_model(base_url), provider_retries=ProviderRetries(attempts=0))  # type: ignore[arg-type]
    system.models.register(Tag)
    system.register(
        Template(
            name="tag",
            params={"text": ParamSpec(type="str")},
            instructions="Tag this: {{text}}",
            output_format=OutputFormat(type="json", schema="Tag"),
        )
    )
    items = [{"id": str(i), "text": t} for i, t in enumerate(texts)]
    options = {"concurrency": concurrency, "batch_id": f"bench-{time.time_ns()}" if db else None, "db": db}
    start = time.perf_counter()
    run = system.batch("tag", items, **options)
    done = [r async for r in run]
    elapsed = time.perf_counter() - start
    assert len(done) == len(texts) and all(r.ok for r in done), run.failed_by
    return elapsed


def record_cost(items: int, folder: Path) -> float:
    """Microseconds to save one item's row (its own committed transaction), averaged over `items`."""
    from atomtask import BatchItemResult, TaskStatus
    from atomtask.batch._record import BatchRecord

    record = BatchRecord(folder / "cost.sqlite3")
    results = [BatchItemResult(id=str(i), status=TaskStatus.COMPLETE, output={"label": "x"}) for i in range(items)]
    start = time.perf_counter()
    for result in results:
        record.save("cost", "fingerprint", "model", result)
    elapsed = time.perf_counter() - start
    record.close()
    return elapsed / items * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (the median ratio is reported)")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    texts = [f"item-{i}" for i in range(args.items)]
    process, base_url = start_server(args.delay)
    try:
        with override_allow_model_requests(True), tempfile.TemporaryDirectory() as folder:
            db = Path(folder) / "batches.sqlite3"
            asyncio.run(bare(base_url, texts[:200], args.concurrency))  # warm-up: imports, first connections
            timings: dict[str, list[float]] = {"bare": [], "engine": [], "engine_no_record": []}
            for _ in range(args.rounds):  # interleaved, so both see the same machine noise
                timings["bare"].append(asyncio.run(bare(base_url, texts, args.concurrency)))
                timings["engine"].append(asyncio.run(engine(base_url, texts, args.concurrency, db)))
                timings["engine_no_record"].append(asyncio.run(engine(base_url, texts, args.concurrency, None)))
            per_item = record_cost(5000, Path(folder))
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=10)
    rate = {name: args.items / min(values) for name, values in timings.items()}
    per_round = [bare_s / engine_s for bare_s, engine_s in zip(timings["bare"], timings["engine"], strict=True)]
    report = {
        "items": args.items,
        "concurrency": args.concurrency,
        "server_delay_s": args.delay,
        "bare_items_per_s": round(rate["bare"], 1),
        "engine_items_per_s": round(rate["engine"], 1),
        "engine_without_record_items_per_s": round(rate["engine_no_record"], 1),
        # Each round's own ratio (both sides one after the other), then their median: a shared machine's
        # noise moves a whole round, so a ratio across rounds would compare different machines.
        "ratio_engine_to_bare": round(statistics.median(per_round), 3),
        "ratio_per_round": [round(ratio, 3) for ratio in per_round],
        "target_ratio": 0.9,
        "record_us_per_item": round(per_item, 1),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
