"""`_lazy.lazy_exports`: each public name written once, under `TYPE_CHECKING`, and imported on first use."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
from atomtask._lazy import lazy_exports


def _package(tmp_path: Path, source: str) -> tuple[types.ModuleType, str]:
    path = tmp_path / "pkg_init.py"
    path.write_text(source, encoding="utf-8")
    module = types.ModuleType("lazy_probe")
    sys.modules["lazy_probe"] = module
    return module, str(path)


def test_a_name_is_imported_from_its_type_checking_line_on_first_use(tmp_path: Path) -> None:
    """The name comes from the module its `TYPE_CHECKING` import names (an alias too), then stays set."""
    module, file = _package(tmp_path, "if TYPE_CHECKING:\n    from json import dumps as to_json\n")
    getattr_, dir_ = lazy_exports("lazy_probe", file, ["to_json"])
    import json

    assert json.dumps is getattr_("to_json")
    assert json.dumps is module.to_json
    assert ["to_json"] == dir_()
    with pytest.raises(AttributeError, match="has no attribute 'loads'"):
        getattr_("loads")


def test_a_public_name_missing_from_the_block_fails_at_import_naming_it(tmp_path: Path) -> None:
    """A name in `__all__` that no `TYPE_CHECKING` import brings is an ImportError at once, not at first use."""
    _, file = _package(tmp_path, "if TYPE_CHECKING:\n    from json import dumps\n")
    with pytest.raises(ImportError, match=r"lazy_probe: loads in `__all__` but not imported under `TYPE_CHECKING`"):
        lazy_exports("lazy_probe", file, ["dumps", "loads"])


def test_a_name_imported_twice_is_refused(tmp_path: Path) -> None:
    """Two imports of one name would give it two homes: an ImportError naming it."""
    _, file = _package(tmp_path, "if TYPE_CHECKING:\n    from json import dumps\n    from pickle import dumps\n")
    with pytest.raises(ImportError, match="'dumps' is imported twice"):
        lazy_exports("lazy_probe", file, ["dumps"])
