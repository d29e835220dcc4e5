"""The response cache from the shell: `--cache/--no-cache` on `run`/`eval`, `atomtask cache stats|clear`."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from atomtask.cli._main import main


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test keeps its cache in its own `$ATOMTASK_HOME`."""
    monkeypatch.setenv("ATOMTASK_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def cached_templates(tmp_path: Path) -> Path:
    """A folder with one template that asks for the cache and one that says nothing."""
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "t.yaml").write_text(
        "templates:\n"
        "  - name: greet\n    params: {who: str}\n    instructions: Greet {{who}}.\n    cache: {ttl: 1h}\n"
        "  - name: shout\n    params: {who: str}\n    instructions: Shout at {{who}}.\n"
    )
    return folder


def test_run_with_cache_serves_the_second_run_from_the_cache(templates_dir: Path) -> None:
    """`run --cache` twice: the second status line says it came from the cache, with the same output."""
    argv = ["run", "extract_contact", "-i", "text=Ada <ada@x.org>", "--cache", "--templates", str(templates_dir)]
    code1, out1, err1 = run(argv)
    code2, out2, err2 = run(argv)
    assert (0, 0, out1) == (code1, code2, out2)
    assert "from the cache" not in err1
    assert "atomtask: extract_contact COMPLETE from the cache (atomtask:synthetic, 0 tokens)" in err2


def test_the_templates_cache_key_is_obeyed_and_no_cache_bypasses_it(cached_templates: Path) -> None:
    """`cache:` in YAML turns the cache on without a flag; `--no-cache` asks the model anyway."""
    argv = ["run", "greet", "-i", "who=Ada", "--result", "--templates", str(cached_templates)]
    run(argv)
    assert json.loads(run(argv)[1])["notes"]["cached"]
    assert not json.loads(run([*argv, "--no-cache"])[1])["notes"]["cached"]
    silent = ["run", "shout", "-i", "who=Ada", "--result", "--templates", str(cached_templates)]
    run(silent)
    assert not json.loads(run(silent)[1])["notes"]["cached"]


def test_eval_with_cache_applies_to_every_task_call(tmp_path: Path, cached_templates: Path) -> None:
    """`eval --cache` caches the script's task calls, a template that says nothing included."""
    script = tmp_path / "s.sexp"
    script.write_text('(shout (who "Bo"))')
    argv = ["eval", str(script), "--cache", "--templates", str(cached_templates)]
    first, second = run(argv), run(argv)
    assert (0, 0) == (first[0], second[0])
    assert (False, True) == (json.loads(first[1])["notes"]["cached"], json.loads(second[1])["notes"]["cached"])


def test_cache_stats_and_clear_by_template(cached_templates: Path, home: Path) -> None:
    """`cache stats` counts entries and hits per template; `clear --template` removes only that one's."""
    base = ["--templates", str(cached_templates), "--cache"]
    for who in ("Ada", "Bo"):
        run(["run", "greet", "-i", f"who={who}", *base])
    run(["run", "shout", "-i", "who=Ada", *base])
    run(["run", "shout", "-i", "who=Ada", *base])
    code, out, _ = run(["cache", "stats", "--json"])
    stats = json.loads(out)
    assert (0, str(home / "cache.sqlite3"), 3, 1) == (code, stats["path"], stats["entries"], stats["hits"])
    assert [("greet", 2, 0), ("shout", 1, 1)] == [(t["template"], t["entries"], t["hits"]) for t in stats["templates"]]
    code, out, _ = run(["cache", "stats", "--template", "shout"])
    assert (0, "1 entry, 1 hit, ") == (code, out.splitlines()[1][: len("1 entry, 1 hit, ")])
    assert out.splitlines()[2].startswith("  shout\t1 entry, 1 hit, ")
    assert (0, "atomtask: removed 2 cached answers of template 'greet'\n") == run(
        ["cache", "clear", "--template", "greet"]
    )[:2]
    assert ["shout"] == [t["template"] for t in json.loads(run(["cache", "stats", "--json"])[1])["templates"]]
    assert "atomtask: removed 1 cached answer\n" == run(["cache", "clear"])[1]


def test_cache_commands_without_a_cache_file_create_nothing(home: Path, tmp_path: Path) -> None:
    """`cache stats` before any cached run says there is none, and leaves no file behind; `--db` picks another."""
    code, out, _ = run(["cache", "stats"])
    assert (0, f"atomtask: no response cache at {str(home / 'cache.sqlite3')!r}\n") == (code, out)
    assert not home.exists()
    code, out, _ = run(["cache", "clear", "--db", str(tmp_path / "other.sqlite3")])
    assert (0, False) == (code, (tmp_path / "other.sqlite3").exists())
