"""Finding `.sexp` files among the paths given to `TaskSystem.load`."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

__all__ = ["SEXP_SUFFIX", "split_sources"]

SEXP_SUFFIX = ".sexp"


def split_sources(paths: Iterable[str | Path]) -> tuple[list[str | Path], list[Path]]:
    """Split load paths into what the YAML loader reads and the `.sexp` files to evaluate after it.

    Folders go to the YAML loader (which reads their YAML files) and also contribute their `.sexp`
    files, sorted by name; a `.sexp` file given by name is taken out of the YAML list. Anything else
    (including a missing path, which the YAML loader reports) is left to the YAML loader.
    """
    yaml_paths: list[str | Path] = []
    sexp_files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            yaml_paths.append(raw)
            sexp_files.extend(sorted(p for p in path.iterdir() if p.suffix == SEXP_SUFFIX and p.is_file()))
        elif path.suffix == SEXP_SUFFIX and path.is_file():
            sexp_files.append(path)
        else:
            yaml_paths.append(raw)
    return yaml_paths, sexp_files
