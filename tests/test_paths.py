"""`atomtask_home()`: where atomtask keeps its state."""

from __future__ import annotations

from pathlib import Path

import pytest
from atomtask._paths import atomtask_home


def test_atomtask_home_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`$ATOMTASK_HOME` is used as given (with `~` expanded)."""
    monkeypatch.setenv("ATOMTASK_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert tmp_path / "state" == atomtask_home()


def test_xdg_data_home_then_the_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without it: `$XDG_DATA_HOME/atomtask`, else `~/.local/share/atomtask`; nothing is created."""
    monkeypatch.delenv("ATOMTASK_HOME", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert tmp_path / "xdg" / "atomtask" == atomtask_home()
    assert not (tmp_path / "xdg").exists()
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert tmp_path / ".local" / "share" / "atomtask" == atomtask_home()
