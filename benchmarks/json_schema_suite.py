"""Agreement of atomtask's JSON Schema path with the JSON-Schema-Test-Suite (draft 2020-12).

Every schema of the suite goes through the path a template's schema takes — a template with
`output_format: {type: json, schema: {json_schema: ...}}` registered in a `TaskSystem` whose
`$ref` documents are the suite's `remotes/` (loaded, not served) — and every test instance is
validated from JSON by the class the model's answer is validated with. A schema refused at load
counts as refused: none of its instances count as agreement.

    python benchmarks/json_schema_suite.py [--optional] [--verbose]

prints, per file, the instances that agree, the total, and the schemas refused at load.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
from pydantic import BaseModel, ValidationError

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpora" / "json-schema-test-suite"
REMOTES_BASE = "http://localhost:1234/"

# Format assertion is on by design for every format with a checker (issue 7: "users who declare a
# format mean it"), so the tests of the default *annotation* behaviour in `format.json` are expected
# to disagree: they are reported apart and the same strings are judged by `optional/format/*.json`,
# which assume assertion. A format nothing checks is an annotation, as JSON Schema says (issue 12):
# `optional/format/unknown.json` agrees.
ANNOTATION_ONLY = "only an annotation by default"


@attrs.frozen(kw_only=True)
class Outcome:
    """One test instance: the suite's verdict and ours (None when the schema was refused)."""

    file: str
    group: str
    test: str
    expected: bool
    actual: bool | None
    refusal: str | None = None

    @property
    def agrees(self) -> bool:
        return self.actual is not None and self.actual == self.expected

    @property
    def by_design(self) -> bool:
        return ANNOTATION_ONLY in self.test


@attrs.frozen(kw_only=True)
class FileResult:
    file: str
    outcomes: tuple[Outcome, ...]
    refused_schemas: int
    #: For comparison: bare `jsonschema` (its defaults: formats as annotations) on the same instances.
    bare_agree: int = 0

    @property
    def agree(self) -> int:
        return sum(o.agrees for o in self.outcomes)

    @property
    def by_design(self) -> int:
        return sum(o.by_design and not o.agrees for o in self.outcomes)


def corpus_path() -> Path:
    """The suite beside the repository (`../shared/corpora/json-schema-test-suite`); fail clearly if absent."""
    if not (CORPUS / "tests").is_dir():
        raise FileNotFoundError(
            f"The JSON-Schema-Test-Suite corpus is missing at {CORPUS}; clone the shared corpora beside the "
            "repository (`shared/corpora/json-schema-test-suite`)."
        )
    return CORPUS


def suite_system(root: Path) -> Any:
    """A `TaskSystem` whose JSON Schema `$ref`s can reach the suite's remotes."""
    from atomtask import TaskSystem

    system = TaskSystem()
    for path in sorted((root / "remotes").rglob("*.json")):
        uri = REMOTES_BASE + path.relative_to(root / "remotes").as_posix()
        system.models.add_json_document(uri, json.loads(path.read_text(encoding="utf-8")))
    return system


def output_class(system: Any, name: str, schema: Any) -> type[BaseModel]:
    """Register a template whose output is `schema`, as a YAML template would declare it; its output class."""
    from atomtask import OutputFormat, Template

    template = Template(
        name=name,
        instructions="Answer.",
        output_format=OutputFormat(type="json", schema={"json_schema": schema}),
    )
    system.register(template)
    cls: type[BaseModel] = system.templates.compiled(name).output_cls
    return cls


def answer_json(cls: type[BaseModel], data: Any) -> str:
    """The tool arguments a model sends for `data` (non-object schemas travel as `{"response": ...}`)."""
    envelope = bool(getattr(cls, "json_schema_envelope", False))
    return json.dumps({"response": data} if envelope else data)


def run_file(system: Any, path: Path, label: str) -> FileResult:
    from atomtask import UsageError

    outcomes: list[Outcome] = []
    refused = 0
    bare = 0
    for index, group in enumerate(json.loads(path.read_text(encoding="utf-8"))):
        bare += _bare_agreement(system, group)
        name = "suite_" + "".join(c if c.isalnum() else "_" for c in label.removesuffix(".json")) + f"_{index}"
        try:
            cls = output_class(system, name, group["schema"])
        except UsageError as exc:
            refused += 1
            for test in group["tests"]:
                outcomes.append(
                    Outcome(
                        file=label,
                        group=group["description"],
                        test=test["description"],
                        expected=test["valid"],
                        actual=None,
                        refusal=str(exc),
                    )
                )
            continue
        for test in group["tests"]:
            try:
                cls.model_validate_json(answer_json(cls, test["data"]))
                actual = True
            except ValidationError:
                actual = False
            outcomes.append(
                Outcome(
                    file=label,
                    group=group["description"],
                    test=test["description"],
                    expected=test["valid"],
                    actual=actual,
                )
            )
    return FileResult(file=label, outcomes=tuple(outcomes), refused_schemas=refused, bare_agree=bare)


def _bare_agreement(system: Any, group: dict[str, Any]) -> int:
    """How many of the group's verdicts bare `jsonschema` gets right (an exception counts as wrong)."""
    import jsonschema

    registry = system.models.json_resources.registry
    agree = 0
    try:
        cls = jsonschema.validators.validator_for(group["schema"], default=jsonschema.Draft202012Validator)
        validator = cls(group["schema"], registry=registry)
        for test in group["tests"]:
            try:
                agree += validator.is_valid(test["data"]) == test["valid"]
            except Exception:  # e.g. `re.error` on a `\p{...}` pattern
                continue
    except Exception:
        return 0
    return agree


def test_files(root: Path, *, optional: bool = False) -> Iterator[tuple[Path, str]]:
    tests = root / "tests"
    folder = tests / "optional" if optional else tests
    pattern = "**/*.json" if optional else "*.json"
    for path in sorted(folder.glob(pattern)):
        yield path, path.relative_to(tests).as_posix()


def run(root: Path, *, optional: bool = False) -> list[FileResult]:
    system = suite_system(root)
    return [run_file(system, path, label) for path, label in test_files(root, optional=optional)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--optional", action="store_true", help="run tests/optional instead of the required files")
    parser.add_argument("--verbose", action="store_true", help="list every disagreement and refusal")
    args = parser.parse_args(argv)
    results = run(corpus_path(), optional=args.optional)
    width = max(len(r.file) for r in results)
    print(f"{'file':<{width}}  agree/total      %  refused  by-design  bare-jsonschema")
    agree = total = refused = by_design = bare = 0
    for result in results:
        n = len(result.outcomes)
        pct = 100.0 * result.agree / n if n else 100.0
        print(
            f"{result.file:<{width}}  {result.agree:>5}/{n:<5} {pct:6.1f}  "
            f"{result.refused_schemas:>7}  {result.by_design:>9}  {result.bare_agree:>15}"
        )
        agree, total = agree + result.agree, total + n
        refused, by_design = refused + result.refused_schemas, by_design + result.by_design
        bare += result.bare_agree
        if args.verbose:
            for outcome in result.outcomes:
                if not outcome.agrees:
                    why = f"refused: {outcome.refusal}" if outcome.refusal else f"got {outcome.actual}"
                    print(f"    {outcome.group} | {outcome.test}: expected {outcome.expected}, {why}")
    pct = 100.0 * agree / total if total else 100.0
    print(f"{'total':<{width}}  {agree:>5}/{total:<5} {pct:6.1f}  {refused:>7}  {by_design:>9}  {bare:>15}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
