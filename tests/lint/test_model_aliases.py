"""`atomtask check` and model aliases: declared in one file, named in another; every mistake a finding where it is."""

from __future__ import annotations

from pathlib import Path

from atomtask.lint import check
from atomtask.lint._cache import CheckCache

MODELS = 'models:\n  fast: openai-chat:gpt-4o-mini\n  strong: "anthropic:claude-sonnet-4-5"\n'
GREET = 'name: greet\nmodel: {model}\nfallbacks: [strong]\ninstructions: "Say hi."\n'


def _findings(tmp_path: Path, **files: str) -> list[tuple[str, str, int | None, str]]:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    report = check([tmp_path])
    return [(f.code, Path(f.location.file).name, f.location.line, f.message) for f in report.findings if f.location]


def test_aliases_declared_in_one_file_are_known_to_the_templates_of_another(tmp_path: Path) -> None:
    """A template naming `fast` and falling back to `strong`, both from `models:` elsewhere: no finding."""
    assert [] == _findings(tmp_path, **{"a.yaml": MODELS, "b.yaml": GREET.format(model="fast")})


def test_an_unknown_alias_is_e104_at_the_model_key_with_did_you_mean(tmp_path: Path) -> None:
    """`model: fsat` is E104 at its line, naming the near alias."""
    [(code, file, line, message)] = _findings(tmp_path, **{"a.yaml": MODELS, "b.yaml": GREET.format(model="fsat")})
    assert ("E104", "b.yaml", 2) == (code, file, line)
    assert "Did you mean 'fast'?" in message


def test_each_bad_alias_declaration_is_a_finding_at_its_line(tmp_path: Path) -> None:
    """A bad provider and a name no alias has are E104, each at its line; a second, different `fast` is E105."""
    text = "models:\n  fast: opnai-chat:gpt-4o-mini\n  best: strnog\n  cheap: fast\n"
    found = _findings(tmp_path, **{"a.yaml": MODELS, "b.yaml": text})
    assert [("E104", "b.yaml", 2), ("E104", "b.yaml", 3)] == [(c, f, line) for c, f, line, _ in found]
    assert "Did you mean 'strong'?" in found[1][3]
    (tmp_path / "b.yaml").write_text("models:\n  fast: openai-chat:gpt-4o\n", encoding="utf-8")
    [(code, file, line, message)] = _findings(tmp_path)
    assert ("E105", "b.yaml", 2) == (code, file, line)
    assert "Model alias 'fast' is already declared at" in message


def test_a_change_to_the_aliases_file_rechecks_the_templates_that_name_them(tmp_path: Path) -> None:
    """With the cache, removing an alias another file uses brings that file's finding back."""
    (tmp_path / "a.yaml").write_text(MODELS, encoding="utf-8")
    (tmp_path / "b.yaml").write_text(GREET.format(model="fast"), encoding="utf-8")
    cache_dir = tmp_path / "cache"
    assert [] == list(check([tmp_path / "a.yaml", tmp_path / "b.yaml"], cache=CheckCache(cache_dir)).findings)
    (tmp_path / "a.yaml").write_text('models:\n  strong: "anthropic:claude-sonnet-4-5"\n', encoding="utf-8")
    report = check([tmp_path / "a.yaml", tmp_path / "b.yaml"], cache=CheckCache(cache_dir))
    assert [("E104", "b.yaml")] == [(f.code, Path(f.location.file).name) for f in report.findings if f.location]
