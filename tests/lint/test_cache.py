"""`atomtask.lint._cache`: `atomtask check` reuses the findings of unchanged files, and only those."""

from __future__ import annotations

from pathlib import Path

import pytest
from atomtask.cli._main import main
from atomtask.lint import check
from atomtask.lint._cache import CACHE_ENV, cache_dir
from atomtask.lint._engine import check_cache

SCHEMA = """\
schemas:
  - name: Verdict{i}
    description: A verdict.
    fields:
      - {{name: label, type: str, description: The label.}}
      - {{name: score, type: float}}
"""

TEMPLATE = """\
templates:
  - name: task_{i}
    description: Classify.
    params:
      text: {{type: str, description: The text}}
    instructions: Classify {{{{text}}}}
    output_format: {{type: json, schema: Verdict{s}}}
"""


def project(folder: Path, count: int = 4) -> list[Path]:
    """`count` template files, each with a schema file of its own (template i uses schema i)."""
    files = []
    for i in range(count):
        (folder / f"schema_{i}.yaml").write_text(SCHEMA.format(i=i), encoding="utf-8")
        path = folder / f"task_{i}.yaml"
        path.write_text(TEMPLATE.format(i=i, s=i), encoding="utf-8")
        files.append(path)
    return files


MIXED = {
    "shared.yaml": """\
schemas:
  - name: Shared
    description: Used by two templates in other files.
    fields:
      - {name: answer, type: 'literal["yes", "no"]', description: The answer.}
      - {name: reasoning, type: str}
      - {name: extra, type: 'dict[str, int]', description: Counts.}
""",
    "uses_shared.yaml": """\
templates:
  - name: first
    params:
      text: {type: str}
      unused: {type: int, default: 1}
    instructions: Answer {{text}}
    output_format: {type: json, schema: Shared, mode: native}
    model: google:gemini-2.5-flash
  - name: second
    params:
      text: {type: str}
    instructions: Answer {{text}}
    output_format: {type: json, schema: Shared}
    repair: lenient
""",
    "Invoice.json": """\
{"type": "object", "title": "Invoice", "description": "An invoice.",
 "properties": {"total": {"type": "number", "minimum": 0, "descripton": "typo"},
                "lines": {"type": "array", "items": {"type": "string"}, "maxItems": 3}},
 "required": ["total"]}
""",
    "invoice.yaml": """\
templates:
  - name: read_invoice
    params:
      text: {type: str}
    instructions: Read {{text}}
    output_format: {type: json, schema: Invoice}
    model: openai-chat:gpt-4o-mini
""",
    "broken.yaml": """\
templates:
  - name: broken
    params:
      text: {type: str}
    instructions: Do {{txt}}
    output_format: {type: json, schema: Shraed}
""",
}


def mixed_project(folder: Path) -> None:
    """A folder of every kind: a schema shared across files, a JSON Schema file, lenient repair, warnings, errors."""
    for name, text in MIXED.items():
        (folder / name).write_text(text, encoding="utf-8")
    project(folder, 2)


def test_a_cold_check_of_a_mixed_folder_reports_what_a_check_without_cache_does(tmp_path: Path) -> None:
    """Every finding, count and lenient name of a cold check (which fills the cache) equals the uncached check's."""
    src = tmp_path / "src"
    src.mkdir()
    mixed_project(src)
    models = ["openai-chat:gpt-4o-mini", "anthropic:claude-sonnet-4-5"]
    expected = check([src], models=models)
    cold_cache = check_cache(tmp_path / "cache", models=models)
    assert expected == check([src], models=models, cache=cold_cache)
    assert len(cold_cache.stats.checked) == expected.files
    assert {"E", "W", "P"} == {f.code[0] for f in expected.findings}
    assert ("second",) == expected.lenient


def test_a_warm_check_reports_what_a_cold_one_does(tmp_path: Path) -> None:
    """Findings and counts from the cache are those of a check without it."""
    src = tmp_path / "src"
    src.mkdir()
    project(src)
    (src / "bad.yaml").write_text(TEMPLATE.format(i=9, s="Missing"), encoding="utf-8")
    expected = check([src])
    cold = check([src], cache=check_cache(tmp_path / "cache"))
    warm_cache = check_cache(tmp_path / "cache")
    warm = check([src], cache=warm_cache)
    assert expected == cold
    assert expected == warm
    assert 9 == len(warm_cache.stats.reused)
    assert [] == warm_cache.stats.checked


def test_editing_a_template_file_checks_that_file_only(tmp_path: Path) -> None:
    """A changed template file is checked again; every other file comes from the cache."""
    src = tmp_path / "src"
    src.mkdir()
    files = project(src)
    check([src], cache=check_cache(tmp_path / "cache"))
    files[2].write_text(TEMPLATE.format(i=2, s=2).replace("Classify.", "Classify it."), encoding="utf-8")
    cache = check_cache(tmp_path / "cache")
    report = check([src], cache=cache)
    assert [str(files[2]), str(src / "schema_2.yaml")] == sorted(cache.stats.checked, reverse=True)
    assert check([src]) == report


def test_editing_a_schema_checks_the_templates_that_use_it(tmp_path: Path) -> None:
    """A template is checked again when the schema it answers with changes, and reports the new finding."""
    src = tmp_path / "src"
    src.mkdir()
    files = project(src)
    check([src], cache=check_cache(tmp_path / "cache"))
    (src / "schema_1.yaml").write_text(SCHEMA.format(i=1).replace("description: The label.", ""), encoding="utf-8")
    cache = check_cache(tmp_path / "cache")
    report = check([src], cache=cache)
    assert {str(files[1]), str(src / "schema_1.yaml")} == set(cache.stats.checked)
    assert check([src]) == report


def test_a_name_declared_again_elsewhere_is_a_duplicate_with_the_cache_too(tmp_path: Path) -> None:
    """A new file declaring a cached file's template name gets the duplicate error a cold check gives."""
    src = tmp_path / "src"
    src.mkdir()
    project(src)
    check([src], cache=check_cache(tmp_path / "cache"))
    (src / "task_9.yaml").write_text(TEMPLATE.format(i=0, s=1), encoding="utf-8")
    report = check([src], cache=check_cache(tmp_path / "cache"))
    assert check([src]) == report
    assert ["E105"] == [f.code for f in report.findings if f.code.startswith("E")]


def test_a_corrupted_entry_is_ignored(tmp_path: Path) -> None:
    """An entry that is not valid JSON is a miss: the file is checked again, nothing crashes."""
    src = tmp_path / "src"
    src.mkdir()
    files = project(src, 2)
    cache = check_cache(tmp_path / "cache")
    expected = check([src], cache=cache)
    for entry in cache.directory.glob("*.json"):
        entry.write_text("{not json", encoding="utf-8")
    again = check_cache(tmp_path / "cache")
    assert expected == check([src], cache=again)
    assert sorted(str(f) for f in [*files, *src.glob("schema_*.yaml")]) == sorted(again.stats.ignored)


def test_the_cache_lives_where_the_environment_variable_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`$ATOMTASK_CACHE_DIR` relocates the cache; `atomtask check` writes its entries there."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "elsewhere"))
    src = tmp_path / "src"
    src.mkdir()
    project(src, 1)
    assert tmp_path / "elsewhere" == cache_dir()
    assert 0 == main(["check", str(src)])
    assert 1 == len(list((tmp_path / "elsewhere" / "check").glob("*/*.json")))  # one file for the folder's two


def test_the_default_cache_is_under_xdg_cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without `$ATOMTASK_CACHE_DIR`, the cache is `$XDG_CACHE_HOME/atomtask`."""
    monkeypatch.delenv(CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert tmp_path / "atomtask" == cache_dir()


def test_no_cache_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`atomtask check --no-cache` checks every file and leaves no entry behind."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    src = tmp_path / "src"
    src.mkdir()
    project(src, 1)
    assert 0 == main(["check", str(src), "--no-cache"])
    assert not (tmp_path / "cache").exists()


def test_options_that_change_findings_use_another_cache(tmp_path: Path) -> None:
    """The models checked against and the selected codes are part of the cache's key."""
    assert check_cache(tmp_path).directory != check_cache(tmp_path, models=["openai:gpt-4o"]).directory
    assert check_cache(tmp_path).directory != check_cache(tmp_path, select=["E"]).directory


def test_checks_writing_one_cache_at_once_leave_it_whole(tmp_path: Path) -> None:
    """Entries are renamed into place: concurrent checks of one folder leave only readable entries."""
    from concurrent.futures import ThreadPoolExecutor

    src = tmp_path / "src"
    src.mkdir()
    project(src, 3)
    with ThreadPoolExecutor(4) as pool:
        reports = list(pool.map(lambda _: check([src], cache=check_cache(tmp_path / "cache")), range(4)))
    warm = check_cache(tmp_path / "cache")
    assert [check([src])] * 4 == reports
    assert check([src]) == check([src], cache=warm)
    assert ([], 6) == (warm.stats.ignored, len(warm.stats.reused))
    assert [] == list(warm.directory.glob(".*.tmp"))


def test_a_check_finding_every_file_unchanged_imports_no_registration_code(tmp_path: Path) -> None:
    """A fully warm check answers from the cache alone: the checking session and the YAML reader are not imported."""
    import subprocess
    import sys

    src = tmp_path / "src"
    src.mkdir()
    project(src, 2)
    script = (
        "import sys\nfrom pathlib import Path\n"
        "from atomtask.lint._engine import check, check_cache\n"
        f"report = check([{str(src)!r}], cache=check_cache(Path({str(tmp_path / 'cache')!r})))\n"
        "modules = ('atomtask.lint._session', 'atomtask.loading._yaml')\n"
        "print(report.templates, *(name in sys.modules for name in modules))\n"
    )
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True) for _ in "ab"]
    assert ["2 True True", "2 False False"] == [run.stdout.strip() for run in runs]


def test_a_cache_that_cannot_be_written_is_not_an_error(tmp_path: Path) -> None:
    """When the cache's folder cannot be made (a file is in the way), the check reports as without a cache."""
    src = tmp_path / "src"
    src.mkdir()
    project(src, 2)
    (tmp_path / "cache").write_text("not a folder", encoding="utf-8")
    cache = check_cache(tmp_path / "cache")
    assert check([src]) == check([src], cache=cache)
    assert 4 == len(cache.stats.checked)


def test_checking_one_file_keeps_the_entries_of_its_folders_other_files(tmp_path: Path) -> None:
    """A folder's entries share one file: a check of one of its files (edited) leaves the others' entries reusable."""
    src = tmp_path / "src"
    src.mkdir()
    files = project(src, 2)
    check([src], cache=check_cache(tmp_path / "cache"))
    files[0].write_text(files[0].read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    check([src / "schema_0.yaml", files[0]], cache=check_cache(tmp_path / "cache"))
    again = check_cache(tmp_path / "cache")
    assert check([src]) == check([src], cache=again)
    assert ([], 4) == (again.stats.checked, len(again.stats.reused))
    assert 1 == len(list(again.directory.glob("*.json")))


def test_a_deleted_files_entry_goes_when_its_folder_is_written_again(tmp_path: Path) -> None:
    """The folder's file keeps only entries of files that exist."""
    import json

    src = tmp_path / "src"
    src.mkdir()
    files = project(src, 2)
    check([src], cache=check_cache(tmp_path / "cache"))
    files[1].unlink()
    files[0].write_text(files[0].read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    cache = check_cache(tmp_path / "cache")
    check([src], cache=cache)
    (pack,) = cache.directory.glob("*.json")
    kept = json.loads(pack.read_text(encoding="utf-8"))["entries"]
    assert sorted(str(f) for f in src.iterdir()) == sorted(kept)
