"""Real-world-like JSON Schemas through atomtask's load path: refused at load, false accepts, agreement.

Every schema of `benchmarks/real_world_schemas.py` (OpenAPI components, vendor keywords, code-generator
keywords, capitalised and unknown formats, a regex in `format`, real typos, every draft) is
registered as a template's `output_format: {schema: {json_schema: ...}}`, the path a template's
schema takes, and each labelled instance is validated from JSON by the resulting output class.

Reported per cause:
- refused at load (target: at most 1% of the sample);
- warnings `atomtask check` would show (W102 a keyword ignored, W103 a format not checked);
- false accepts (an instance labelled invalid that atomtask accepts; target 0) and false rejects;
- agreement with the reference validator, `jsonschema` with the draft the author meant and format
  assertion: the 2020-12 formats plus OpenAPI's `int32`, `int64`, `float`, `double`, `byte` (checked
  here by an implementation of this script's own) — target 100% on the schemas that load;
- for comparison, bare `jsonschema` as most callers use it (`validator_for(schema)`, formats as
  annotations): its agreement with the labels.

    python benchmarks/json_schema_real_world.py [--verbose]
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import attrs
import jsonschema
from pydantic import BaseModel, ValidationError

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.json_schema_suite import answer_json, output_class
from benchmarks.real_world_schemas import CASES, Case

_VALIDATORS = {
    "draft-04": jsonschema.Draft4Validator,
    "draft-07": jsonschema.Draft7Validator,
    "2019-09": jsonschema.Draft201909Validator,
    "2020-12": jsonschema.Draft202012Validator,
}


def _reference_formats() -> jsonschema.FormatChecker:
    checker = jsonschema.FormatChecker(formats=())
    checker.checkers = dict(jsonschema.Draft202012Validator.FORMAT_CHECKER.checkers)

    def integer(bits: int) -> Any:
        def check(value: object) -> bool:
            if type(value) is int:
                return -(2 ** (bits - 1)) <= value <= 2 ** (bits - 1) - 1
            if type(value) is float:
                return value.is_integer() and -(2 ** (bits - 1)) <= int(value) <= 2 ** (bits - 1) - 1
            return True

        return check

    def real(largest: float) -> Any:
        def check(value: object) -> bool:
            if isinstance(value, bool) or not isinstance(value, int | float):
                return True
            return -largest <= value <= largest

        return check

    def byte(value: object) -> bool:
        if not isinstance(value, str):
            return True
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return False
        return len(value) % 4 == 0

    for name, check in (
        ("int32", integer(32)),
        ("int64", integer(64)),
        ("float", real(3.4028234663852886e38)),
        ("double", real(1.7976931348623157e308)),
        ("byte", byte),
    ):
        checker.checks(name)(check)
    return checker


REFERENCE_FORMATS = _reference_formats()


@attrs.define
class Tally:
    schemas: int = 0
    refused: int = 0
    warned: int = 0
    warnings: dict[str, int] = attrs.field(factory=lambda: defaultdict(int))
    instances: int = 0
    false_accepts: int = 0
    false_rejects: int = 0
    agree_reference: int = 0
    judged: int = 0  # instances of loaded schemas
    bare_agree: int = 0
    notes: list[str] = attrs.field(factory=list)


def reference(case: Case) -> Any:
    """The reference validator: `jsonschema` with the draft the author meant, formats asserted."""
    return _VALIDATORS[case.draft](case.schema, format_checker=REFERENCE_FORMATS)


def bare(case: Case) -> Any | None:
    """`jsonschema` as most callers use it (`$schema`'s draft, else 2020-12); None if it refuses the schema."""
    cls = jsonschema.validators.validator_for(case.schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(case.schema)
    except jsonschema.SchemaError:
        return None
    return cls(case.schema)


def atomtask_valid(cls: type[BaseModel], instance: Any) -> bool:
    try:
        cls.model_validate_json(answer_json(cls, instance))
    except ValidationError:
        return False
    return True


def run(cases: tuple[Case, ...] = CASES) -> dict[str, Tally]:
    from atomtask import TaskSystem, UsageError

    system = TaskSystem()
    tallies: dict[str, Tally] = defaultdict(Tally)
    for case in cases:
        tally = tallies[case.cause]
        tally.schemas += 1
        labelled = [(i, True) for i in case.valid] + [(i, False) for i in case.invalid]
        tally.instances += len(labelled)
        ref, plain = reference(case), bare(case)
        for instance, label in labelled:  # the labels themselves are checked against the reference
            if ref.is_valid(instance) != label:
                tally.notes.append(f"{case.name}: label {label} disagrees with the reference for {instance!r}")
            tally.bare_agree += plain is not None and plain.is_valid(instance) == label
        try:
            cls = output_class(system, f"rw_{case.name}", case.schema)
        except UsageError as exc:
            tally.refused += 1
            tally.notes.append(f"{case.name}: refused: {exc}")
            continue
        warnings = getattr(cls, "json_schema_warnings", ())
        tally.warned += bool(warnings)
        for warning in warnings:
            tally.warnings[warning.code] += 1
        for instance, label in labelled:
            ours = atomtask_valid(cls, instance)
            tally.judged += 1
            tally.agree_reference += ours == ref.is_valid(instance)
            if ours and not label:
                tally.false_accepts += 1
                tally.notes.append(f"{case.name}: FALSE ACCEPT {instance!r}")
            elif label and not ours:
                tally.false_rejects += 1
                tally.notes.append(f"{case.name}: false reject {instance!r}")
    return dict(tallies)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="list refusals, wrong verdicts and label problems")
    args = parser.parse_args(argv)
    tallies = run()
    total = Tally()
    print(
        f"{'cause':<18} {'schemas':>7} {'refused':>8} {'warned':>7} {'W102':>5} {'W103':>5} {'instances':>9} "
        f"{'false acc':>9} {'false rej':>9} {'agree ref':>10} {'bare jsonschema':>15}"
    )
    for cause, t in sorted(tallies.items()):
        _row(cause, t)
        total.schemas += t.schemas
        total.refused += t.refused
        total.warned += t.warned
        for code, n in t.warnings.items():
            total.warnings[code] += n
        total.instances += t.instances
        total.false_accepts += t.false_accepts
        total.false_rejects += t.false_rejects
        total.agree_reference += t.agree_reference
        total.judged += t.judged
        total.bare_agree += t.bare_agree
        total.notes.extend(t.notes)
    _row("total", total)
    share = 100.0 * total.refused / total.schemas if total.schemas else 0.0
    print(
        f"\nrefused at load: {total.refused}/{total.schemas} ({share:.1f}%, target <= 1%); false accepts: "
        f"{total.false_accepts} (target 0); agreement with the reference: {total.agree_reference}/{total.judged} "
        f"(target 100%); bare jsonschema right on {total.bare_agree}/{total.instances} of the labels."
    )
    if args.verbose:
        for note in total.notes:
            print("  " + note)
    return 0


def _row(cause: str, t: Tally) -> None:
    agree = f"{100.0 * t.agree_reference / t.judged:.1f}%" if t.judged else "-"
    bare = f"{100.0 * t.bare_agree / t.instances:.1f}%" if t.instances else "-"
    print(
        f"{cause:<18} {t.schemas:>7} {t.refused:>8} {t.warned:>7} {t.warnings.get('W102', 0):>5} "
        f"{t.warnings.get('W103', 0):>5} {t.instances:>9} {t.false_accepts:>9} {t.false_rejects:>9} "
        f"{agree:>10} {bare:>15}"
    )


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["REFERENCE_FORMATS", "Tally", "json", "main", "run"]
