"""`atomtask check`'s cache holds what the declaration files declare and its findings' messages: owner-only."""

from __future__ import annotations

import stat
from pathlib import Path

from atomtask.lint import check
from atomtask.lint._cache import CheckCache

TEMPLATE = """\
templates:
  - name: secret_task
    instructions: "Use the key sk-live-do-not-share to {{text}}"
    params:
      text: {type: str}
"""


def test_check_cache_files_and_new_folders_are_owner_only(tmp_path: Path) -> None:
    """Every file the check cache writes is 0600 and every folder it creates 0700 (what templates declare is in it)."""
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "t.yaml").write_text(TEMPLATE, encoding="utf-8")
    root = tmp_path / "cache"
    check([tmp_path / "project"], cache=CheckCache(root))
    written = [p for p in root.rglob("*") if p.is_file()]
    assert written and all(b"secret_task" in p.read_bytes() for p in written)  # what the files declare
    assert {0o600} == {stat.S_IMODE(p.stat().st_mode) for p in written}
    assert {0o700} == {stat.S_IMODE(p.stat().st_mode) for p in [root, *root.rglob("*")] if p.is_dir()}
