"""A small, fixed slice of `scripts/fuzz_files.py`: damaged caches, memory stores, cases and YAML files end typed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "fuzz_files.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fuzz_files", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("fuzz_files", module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("kind", ["cache", "memory", "cases", "yaml"])
def test_no_damaged_file_escapes_as_an_untyped_exception(kind: str) -> None:
    """40 damaged copies of each kind of file (seed 29): every use ends well or in an atomtask error."""
    tally, examples = _script().fuzz(kind, 40, 29)
    escaped = {said: n for said, n in tally.items() if said.startswith("escaped")}
    assert {} == escaped, "\n".join(examples.values())
    assert sum(tally.values()) >= 40
    assert any(said.startswith("typed") for said in tally)  # the damage was seen, not skipped
