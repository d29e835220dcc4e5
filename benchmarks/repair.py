"""Malformed model output: atomtask's repair modes against bare pydantic-ai, on shared and constructed cases.

For every case of `../shared/corpora/repair/*.jsonl` whose expected value is a JSON object or array,
a schema is derived from the expected value (an array is wrapped in a one-field model `{items: [...]}`),
and a `FunctionModel` answers the case's raw `input` first (prompted mode: as text; tool mode: as the
raw tool-call arguments) and, if re-asked, the expected JSON. The same cases run through atomtask
(`TaskSystem.execute`, with `repair: safe` and with `repair: lenient`) and bare pydantic-ai
(`PromptedOutput` / default tool output), in the same run.

Two more sets are this project's own (`benchmarks/repair_cases.py`), each case with its declared
schema: `quotes` (strings whose quotes have more than one reading, and look-alikes with one) and
`schema_aligned` (for each `repair: lenient` rule, answers it must read and ambiguous ones it must
re-ask). A case marked `must_reask` counts any value accepted from its first answer as wrong.

Per file, mode and class it prints, for each system: the share of cases given the right value on
the first answer, the share of wrong values (accepted but different from `expected`), and the mean
model calls per case.

Classes (the corpora README asks to separate them): a case is *unambiguous* when its input holds
exactly the expected content (the same words and numbers: nothing dropped, nothing invented; comments,
markdown fences and prose around the JSON aside) and is not cut off inside a string, number or
literal (a truncation that only lost closing brackets is unambiguous). Everything else is a
*convention* case: completing a cut-off string, inventing `null` for a missing value, dropping junk,
merging several values, one library's escape rules. Targets: <= 1.05 calls per case and zero wrong
values on unambiguous cases.

    python benchmarks/repair.py [--corpora PATH] [--files json_repair,quotes,schema_aligned] [--show-wrong]
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
from atomtask import OutputFormat, OutputMode, RepairMode, TaskSystem, Template
from atomtask.handlers._json_scan import NUMBER_RE, scan
from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic_ai import Agent, PromptedOutput, ToolOutput
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from repair_cases import QUOTES, SCHEMA_ALIGNED

DEFAULT_CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
MODES = (OutputMode.PROMPTED, OutputMode.TOOL)


@attrs.frozen
class Case:
    file: str
    id: str
    input: str
    expected: Any
    unambiguous: bool
    schema: type[BaseModel] | None = None  # declared (constructed sets); derived from `expected` otherwise
    must_reask: bool = False


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


def constructed_cases(files: set[str] | None) -> Iterator[Case]:
    for name, cases in (("quotes", QUOTES), ("schema_aligned", SCHEMA_ALIGNED)):
        if files and name not in files:
            continue
        for c in cases:
            yield Case(name, c.id, c.input, c.expected, not c.must_reask, c.schema, c.must_reask)


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


def run_atomtask(case: Case, mode: OutputMode, cls: type[BaseModel], again: Any, repair: RepairMode) -> Outcome:
    counter = [0]
    system = TaskSystem(model=scripted(case.input, again, counter))
    output = OutputFormat(type="json", schema=cls, mode=mode)
    system.register(Template(name="case", instructions="Answer.", output_format=output, repair=repair))
    result = system.execute("case")
    return _outcome(case, counter[0], result.parsedContent if result.ok else None)


def run_safe(case: Case, mode: OutputMode, cls: type[BaseModel], again: Any) -> Outcome:
    return run_atomtask(case, mode, cls, again, RepairMode.SAFE)


def run_lenient(case: Case, mode: OutputMode, cls: type[BaseModel], again: Any) -> Outcome:
    return run_atomtask(case, mode, cls, again, RepairMode.LENIENT)


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
    value = dumped(output, isinstance(case.expected, list) and case.schema is None)
    if case.schema is not None:
        value = json.loads(json.dumps(value))
    guessed = case.must_reask and calls == 1  # a first answer with more than one reading: any value is a guess
    return Outcome(calls=calls, accepted=True, wrong=guessed or not same(value, case.expected), value=value)


# --- report -------------------------------------------------------------------------------------------------


@attrs.define
class Tally:
    n: int = 0
    first: int = 0
    wrong: int = 0
    calls: int = 0

    def add(self, outcome: Outcome) -> None:
        self.n += 1
        self.first += outcome.accepted and outcome.calls == 1 and not outcome.wrong
        self.wrong += outcome.wrong
        self.calls += outcome.calls

    def cells(self) -> str:
        if not self.n:
            return f"{'-':>7} {'-':>6} {'-':>5}"
        return f"{self.first / self.n:7.1%} {self.wrong / self.n:6.1%} {self.calls / self.n:5.2f}"


SYSTEMS: dict[str, Callable[[Case, OutputMode, type[BaseModel], Any], Outcome]] = {
    "safe": run_safe,
    "lenient": run_lenient,
    "pydantic-ai": run_bare,
}
CONSTRUCTED = ("quotes", "schema_aligned")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA, help="the shared corpora folder")
    parser.add_argument("--files", help="comma-separated corpus or set names (default: all)")
    parser.add_argument("--show-wrong", action="store_true", help="list the wrong values atomtask accepted")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    files = set(args.files.split(",")) if args.files else None
    cases = [*load_cases(args.corpora, files), *constructed_cases(files)]
    if not cases:
        raise SystemExit(f"No cases found under {args.corpora / 'repair'} or in the constructed sets.")

    tallies: dict[tuple[str, str, str, str], Tally] = defaultdict(Tally)
    wrong: list[tuple[Case, str, str, Any]] = []
    for index, case in enumerate(cases):
        if case.schema is not None:
            cls, again = case.schema, case.expected
        else:
            cls, again = schema_for(case.expected, f"Case{index}")
        kind = "unambiguous" if case.unambiguous else "ambiguous" if case.must_reask else "convention"
        group = case.file if case.file in CONSTRUCTED else "corpora"
        for mode in MODES:
            for system, runner in SYSTEMS.items():
                outcome = runner(case, mode, cls, again)
                for file in {case.file, group}:
                    for k in (kind, "all"):
                        tallies[(file, mode.value, k, system)].add(outcome)
                if system != "pydantic-ai" and outcome.wrong:
                    wrong.append((case, mode.value, system, outcome.value))

    cols = f"{'right1':>7} {'wrong':>6} {'calls':>5}"
    header = f"{'set':<15} {'mode':<8} {'class':<11} {'n':>4} | " + " | ".join(f"{name}: {cols}" for name in SYSTEMS)
    print(header)
    print("-" * len(header))
    corpora = sorted({c.file for c in cases} - set(CONSTRUCTED))
    names = [*corpora, *(["corpora"] if corpora else []), *(n for n in CONSTRUCTED if any(c.file == n for c in cases))]
    for file in names:
        for mode in MODES:
            for kind in ("unambiguous", "convention", "ambiguous", "all"):
                row = [tallies[(file, mode.value, kind, system)] for system in SYSTEMS]
                if not row[0].n:
                    continue
                cells = " | ".join(f"{name}: {t.cells()}" for name, t in zip(SYSTEMS, row, strict=True))
                print(f"{file:<15} {mode.value:<8} {kind:<11} {row[0].n:>4} | {cells}")
    print(
        "\nright1 = the right value accepted on the first answer; wrong = accepted but != expected (or accepted at"
        " once from an\nanswer with more than one reading); calls = mean model calls per case."
    )
    print(
        "Targets: unambiguous corpora cases: calls <= 1.05, wrong = 0. Every set: safe's wrong share <= pydantic-ai's."
        "\nschema_aligned: lenient right1 >= 70%, wrong < 3%."
    )
    if args.show_wrong:
        for case, mode, system, value in wrong:
            print(f"WRONG {case.id} [{mode}, {system}] {'U' if case.unambiguous else 'C'} input={case.input!r}")
            print(f"      expected={json.dumps(case.expected)} got={json.dumps(value)}")


if __name__ == "__main__":
    main()
