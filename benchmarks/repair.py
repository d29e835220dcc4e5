"""Malformed model output: atomtask's repair-before-retry against bare pydantic-ai, on shared corpora.

For every case of `../shared/corpora/repair/*.jsonl` whose expected value is a JSON object or array,
a schema is derived from the expected value (an array is wrapped in a one-field model `{items: [...]}`),
and a `FunctionModel` answers the case's raw `input` first (prompted mode: as text; tool mode: as the
raw tool-call arguments) and, if re-asked, the expected JSON. The same cases run through atomtask
(`TaskSystem.execute`) and bare pydantic-ai (`PromptedOutput` / default tool output), in the same run.

Per file, mode and class it prints, for both: the share of cases valid without a retry, the share of
wrong values (accepted but different from `expected`), and the mean model calls per case.

Classes (the corpora README asks to separate them): a case is *unambiguous* when its input holds
exactly the expected content (the same words and numbers: nothing dropped, nothing invented; comments,
markdown fences and prose around the JSON aside) and is not cut off inside a string, number or
literal (a truncation that only lost closing brackets is unambiguous). Everything else is a
*convention* case: completing a cut-off string, inventing `null` for a missing value, dropping junk,
merging several values, one library's escape rules. Targets: <= 1.05 calls per case and zero wrong
values on unambiguous cases.

    python benchmarks/repair.py [--corpora PATH] [--files json_repair,vercel_fixjson] [--show-wrong]
"""

from __future__ import annotations

import argparse
import json
import logging
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import structlog
from atomtask import OutputFormat, OutputMode, TaskSystem, Template
from atomtask.handlers.json_scan import NUMBER_RE, scan
from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic_ai import Agent, PromptedOutput, ToolOutput
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

DEFAULT_CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
MODES = (OutputMode.PROMPTED, OutputMode.TOOL)


@attrs.frozen
class Case:
    file: str
    id: str
    input: str
    expected: Any
    unambiguous: bool


@attrs.frozen
class Outcome:
    calls: int
    accepted: bool
    wrong: bool
    value: Any = None


# --- schema from an expected value ----------------------------------------------------------------


def annotation_for(value: Any, name: str) -> Any:
    if value is None:
        return None
    if isinstance(value, bool):
        return bool
    if isinstance(value, int):
        return int
    if isinstance(value, float):
        return float
    if isinstance(value, str):
        return str
    if isinstance(value, list):
        items: list[Any] = []
        for i, item in enumerate(value):
            ann = annotation_for(item, f"{name}Item{i}")
            if not any(_same_annotation(ann, seen) for seen in items):
                items.append(ann)
        if not items:
            return list[Any]
        union = items[0]
        for ann in items[1:]:
            union = union | ann
        return list[union]  # type: ignore[valid-type]  # built at run time from the data
    return model_for(value, name)


def _same_annotation(a: Any, b: Any) -> bool:
    if isinstance(a, type) and issubclass(a, BaseModel) and isinstance(b, type) and issubclass(b, BaseModel):
        return a.model_json_schema() == b.model_json_schema()
    return bool(a == b)


def model_for(value: dict[str, Any], name: str) -> type[BaseModel]:
    fields: dict[str, Any] = {
        f"f{i}": (annotation_for(v, f"{name}F{i}"), Field(alias=key)) for i, (key, v) in enumerate(value.items())
    }
    model: type[BaseModel] = create_model(name, __config__=ConfigDict(extra="forbid"), **fields)
    return model


def schema_for(expected: Any, name: str) -> tuple[type[BaseModel], Any]:
    """The output class for a case and the JSON the model gives when re-asked."""
    if isinstance(expected, list):
        wrapper: type[BaseModel] = create_model(name, items=(annotation_for(expected, name), ...))
        return wrapper, {"items": expected}
    return model_for(expected, name), expected


def same(a: Any, b: Any) -> bool:
    """JSON equality that does not let True equal 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


def dumped(value: BaseModel, wrapped: bool) -> Any:
    data = value.model_dump(mode="json", by_alias=True)
    return data["items"] if wrapped else data


# --- classification ---------------------------------------------------------------------------------


def unambiguous(raw: str, expected: Any) -> bool:
    """True when `raw` holds exactly the content of `expected` and only its syntax is broken.

    Strict JSON is unambiguous only when it already is `expected`. Otherwise the input must hold one
    JSON value, not be cut off inside a string, number or literal, open as many objects and arrays as
    `expected` has, write every key and string of `expected` verbatim (quoted, or bare unless it looks
    like a malformed number such as `05` or `1/3`), and hold no
    word, number or other text (`...`, `+`) that `expected` lacks, nor lack one it has. The scanner
    is atomtask's (`json_scan.scan`), which only tokenizes; the rules here are the benchmark's own.
    """
    try:
        return same(json.loads(raw), expected)
    except ValueError:
        pass
    starts = [p for p in (raw.find("{"), raw.find("[")) if p >= 0]
    if not starts:
        return False
    start = min(starts)
    first = scan(raw, start, stop_at_end=True)
    rest = raw[first.end :]
    if "{" in rest or "[" in rest:
        return False  # several values: merging them is a convention
    scanned = scan(raw[start : first.end])
    if scanned.in_string or (scanned.open_stack and _cut_in_value(scanned.without_comments)):
        return False
    if scanned.containers != _containers(expected):
        return False
    for word, is_key in scanned.bare:
        if not is_key and word[:1] in "0123456789-+./" and not NUMBER_RE.match(word):
            return False  # `05`, `1/3`, `1.1.1`: a number or a string? Either reading is a convention.
    written = set(scanned.strings) | {word for word, _ in scanned.bare}
    if any(text not in written for text in _strings_of(expected)):
        return False
    found = _content(scanned.without_comments)
    plain = _content(json.dumps(expected, ensure_ascii=False))
    ascii_ = _content(json.dumps(expected))
    return not (found - (plain | ascii_)) and not min(len(plain - found), len(ascii_ - found))


_CONTENT_RE = re.compile(r"\w+|[^\w\s{}\[\]:,\"'\u201c\u201d]+")


def _content(text: str) -> Counter[str]:
    words = (w.lower() for w in _CONTENT_RE.findall(text) if w != "\\")
    return Counter({"none": "null"}.get(w, w) for w in words)


def _cut_in_value(text: str) -> bool:
    tail = text.rstrip()
    if not tail or tail[-1] in "{[,}]\"'\u201d":
        return False
    word = re.search(r"[\w.+\-]*$", tail)
    literal = word is not None and word.group(0).lower() in ("true", "false", "null", "none")
    return not literal and len(text) == len(tail)


def _containers(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + sum(_containers(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(_containers(v) for v in value)
    return 0


def _strings_of(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings_of(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings_of(item)
    elif isinstance(value, str):
        yield value


def load_cases(corpora: Path, files: set[str] | None) -> Iterator[Case]:
    for path in sorted((corpora / "repair").glob("*.jsonl")):
        if files and path.stem not in files:
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            raw, expected = row.get("input"), row.get("expected")
            if not isinstance(raw, str) or not isinstance(expected, dict | list):
                continue
            yield Case(path.stem, row["id"], raw, expected, unambiguous(raw, expected))


# --- the two systems ----------------------------------------------------------------------------------


def scripted(raw: str, again: Any, counter: list[int]) -> FunctionModel:
    again_text = json.dumps(again)

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        counter[0] += 1
        text = raw if counter[0] == 1 else again_text
        if info.output_tools:
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, text)])
        return ModelResponse(parts=[TextPart(text)])

    return FunctionModel(reply, model_name="scripted")


def run_atomtask(case: Case, mode: OutputMode, cls: type[BaseModel], again: Any) -> Outcome:
    counter = [0]
    system = TaskSystem(model=scripted(case.input, again, counter))
    system.register(
        Template(name="case", instructions="Answer.", output_format=OutputFormat(type="json", schema=cls, mode=mode))
    )
    result = system.execute("case")
    return _outcome(case, counter[0], result.parsedContent if result.ok else None)


def run_bare(case: Case, mode: OutputMode, cls: type[BaseModel], again: Any) -> Outcome:
    counter = [0]
    spec: Any = PromptedOutput(cls) if mode is OutputMode.PROMPTED else ToolOutput(cls)
    agent = Agent(scripted(case.input, again, counter), output_type=spec)
    try:
        output = agent.run_sync("Answer.").output
    except Exception:  # exhausted retries or any other failure: not accepted
        output = None
    return _outcome(case, counter[0], output)


def _outcome(case: Case, calls: int, output: BaseModel | None) -> Outcome:
    if output is None:
        return Outcome(calls=calls, accepted=False, wrong=False)
    value = dumped(output, isinstance(case.expected, list))
    return Outcome(calls=calls, accepted=True, wrong=not same(value, case.expected), value=value)


# --- report -------------------------------------------------------------------------------------------------


@attrs.define
class Tally:
    n: int = 0
    first: int = 0
    wrong: int = 0
    calls: int = 0

    def add(self, outcome: Outcome) -> None:
        self.n += 1
        self.first += outcome.accepted and outcome.calls == 1
        self.wrong += outcome.wrong
        self.calls += outcome.calls

    def cells(self) -> str:
        if not self.n:
            return f"{'-':>7} {'-':>7} {'-':>6}"
        return f"{self.first / self.n:7.1%} {self.wrong / self.n:7.1%} {self.calls / self.n:6.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA, help="the shared corpora folder")
    parser.add_argument("--files", help="comma-separated corpus names (default: all)")
    parser.add_argument("--show-wrong", action="store_true", help="list the wrong values atomtask accepted")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    files = set(args.files.split(",")) if args.files else None
    cases = list(load_cases(args.corpora, files))
    if not cases:
        raise SystemExit(f"No cases found under {args.corpora / 'repair'}; pass --corpora.")

    tallies: dict[tuple[str, str, str, str], Tally] = defaultdict(Tally)
    wrong: list[tuple[Case, str, Any]] = []
    runners: dict[str, Callable[[Case, OutputMode, type[BaseModel], Any], Outcome]] = {
        "atomtask": run_atomtask,
        "pydantic-ai": run_bare,
    }
    for index, case in enumerate(cases):
        cls, again = schema_for(case.expected, f"Case{index}")
        kind = "unambiguous" if case.unambiguous else "convention"
        for mode in MODES:
            for system, runner in runners.items():
                outcome = runner(case, mode, cls, again)
                for file in (case.file, "ALL"):
                    tallies[(file, mode.value, kind, system)].add(outcome)
                if system == "atomtask" and outcome.wrong:
                    wrong.append((case, mode.value, outcome.value))

    header = f"{'file':<16} {'mode':<9} {'class':<12} {'n':>4} | atomtask: {'valid1':>7} {'wrong':>7} {'calls':>6} |"
    print(header + f" pydantic-ai: {'valid1':>7} {'wrong':>7} {'calls':>6}")
    print("-" * (len(header) + 36))
    names = [*sorted({c.file for c in cases}), "ALL"]
    for file in names:
        for mode in MODES:
            for kind in ("unambiguous", "convention"):
                ours = tallies[(file, mode.value, kind, "atomtask")]
                bare = tallies[(file, mode.value, kind, "pydantic-ai")]
                if not ours.n:
                    continue
                print(
                    f"{file:<16} {mode.value:<9} {kind:<12} {ours.n:>4} | atomtask: {ours.cells()} |"
                    f" pydantic-ai: {bare.cells()}"
                )
    print("\nvalid1 = accepted on the first call; wrong = accepted but != expected; calls = mean model calls per case.")
    print("Targets on unambiguous cases: calls <= 1.05, wrong = 0.")
    if args.show_wrong:
        for case, mode, value in wrong:
            print(f"WRONG {case.id} [{mode}] {'U' if case.unambiguous else 'C'} input={case.input!r}")
            print(f"      expected={json.dumps(case.expected)} got={json.dumps(value)}")


if __name__ == "__main__":
    main()
