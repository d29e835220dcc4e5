"""Importing `--python` modules for check: a module that ends the process on import becomes an error."""

from __future__ import annotations

from pathlib import Path

import pytest
from atomtask.lint._session import import_python, raising_line


def test_sys_exit_on_import_is_a_runtime_error_with_the_code(tmp_path: Path) -> None:
    """`sys.exit(3)` while importing raises RuntimeError naming the exit code, at the module's line."""
    script = tmp_path / "exits.py"
    script.write_text("import sys\n\nsys.exit(3)\n")
    with pytest.raises(RuntimeError, match=r"called `sys.exit\(3\)` while being imported \(exit code 3\)") as raised:
        import_python(str(script))
    location = raising_line(raised.value)
    assert (str(script), 3) == (location.file, location.line) if location else None


def test_another_base_exception_is_a_runtime_error(tmp_path: Path) -> None:
    """A custom BaseException raised on import does not escape as itself."""
    script = tmp_path / "stops.py"
    script.write_text("class Stop(BaseException):\n    pass\n\n\nraise Stop('halt')\n")
    with pytest.raises(RuntimeError, match="raised Stop: halt while being imported"):
        import_python(str(script))


def test_keyboard_interrupt_is_not_swallowed(tmp_path: Path) -> None:
    """Ctrl-C during an import still stops the check."""
    script = tmp_path / "interrupts.py"
    script.write_text("raise KeyboardInterrupt\n")
    with pytest.raises(KeyboardInterrupt):
        import_python(str(script))
