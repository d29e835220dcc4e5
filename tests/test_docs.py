"""Every code block in README.md and docs/ runs, so the docs cannot rot.

The fence's language says how a block is run; a block in any other language (or none) fails:

- ```python: executed as a user runs it (a fresh namespace, compiled without this module's
  `from __future__` imports), in an empty working folder, on the embedded model.
- ```yaml: a declaration file, written alone into an empty folder: `atomtask.lint.check` must find no
  error in it (warnings are the reader's to see). A block whose top level has `cases:` is a recorded
  test file for a shipped template instead: it is run with `atomtask test` beside a copy of the shipped
  templates and every case must pass. Two first-line comments change that:
    `# excerpt of PATH`: each line of the block (comments and blank lines left out, spaces trimmed)
    appears, in the same order, in the repository file PATH (whose own tests run it);
    `# fragment` (optionally `# fragment: what it is`): a piece of a declaration (a step, a `set:`),
    only parsed as YAML.
- ```lisp: S-expression source; only `;; excerpt of PATH`, checked as for YAML.
- ```sh, ```bash, ```console: commands, one a line (`\\` continues a line, `#` starts a comment,
  `$ ` before a command is dropped). Each is one of:
    `atomtask ...`, optionally after `NAME=value` assignments: run in-process (`cli.main`) in a
    temporary folder holding a copy of the shipped `templates/` and the files the docs name
    (`notes.txt`, `cat.png`, `contacts.jsonl`, `notes/`), with a state folder of its own; it must exit 0.
    The commands of one block run in order, in the same folder. One substitution: a command that names
    a provider's model (`openai-chat:`, `anthropic:`, `ollama:`, by `--model` or `ATOMTASK_MODEL`) is
    sent to atomtask's fake provider server, which answers schema-valid data: its `--base-url` and
    `*_BASE_URL` point there, and the API keys are fake. Nothing leaves the machine.
    a line that `.ci/run` runs verbatim (the README's two commands): checked to be there, not run here.
- ```text: printed output, or a command's synopsis; not run.
"""

from __future__ import annotations

import io
import json
import re
import shlex
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from atomtask.testing import FakeProviderServer
from atomtask.testing._served import ServedAnswers
from pydantic_ai import models

from tests.conftest import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELL = {"sh", "bash", "console"}
KNOWN = {"python", "yaml", "lisp", "text", *SHELL}
PROVIDERS = ("openai-chat:", "anthropic:", "ollama:")
EXCERPT = re.compile(r"^(?:#|;;) excerpt of (\S+)\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its language and its text."""

    path: Path
    line: int
    language: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def blocks(path: Path) -> Iterator[Block]:
    """The fenced blocks of a Markdown file; a fence that is indented or never closed is a block of language '?'."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start: int | None = None
    language = ""
    for number, line in enumerate(lines, 1):
        fence = re.match(r"^(\s*)```(.*)$", line)
        if fence is None:
            continue
        if start is None:
            start, language = number, fence[2].strip() if not fence[1] else "?"
        else:
            yield Block(path, start, language, "\n".join(lines[start : number - 1]) + "\n")
            start = None
    if start is not None:
        yield Block(path, start, "?", "")


ALL = [block for path in DOCS for block in blocks(path)]


def of(*languages: str) -> list[Block]:
    return [block for block in ALL if block.language in languages]


def ids(found: list[Block]) -> list[str]:
    return [block.where for block in found]


def test_the_docs_have_blocks_of_every_kind() -> None:
    """README.md and docs/ exist and show Python, YAML and shell examples."""
    assert (REPO / "docs" / "index.md").is_file()
    assert {"python", "yaml", "sh", "text"} <= {block.language for block in ALL}


def test_every_block_has_a_language_this_module_runs() -> None:
    """A block in an unknown language (or none) would go untested: name it instead."""
    assert [] == [f"{b.where}: ```{b.language}" for b in ALL if b.language not in KNOWN]


# Python


@pytest.mark.parametrize("block", of("python"), ids=ids(of("python")))
def test_python_block_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ```python block executes without error, as a user would run it."""
    monkeypatch.chdir(tmp_path)
    code = compile(block.text, block.where, "exec", dont_inherit=True)
    exec(code, {"__name__": "docs_example"})


# YAML and S-expressions


def excerpt_lines(text: str, comment: str) -> list[str]:
    """The lines of `text` without comments (after `comment`, outside quotes), blanks and surrounding spaces."""
    kept = []
    for line in text.splitlines():
        cut = re.sub(rf"""\s{comment}.*$|^{comment}.*$""", "", line.strip()) if comment in line else line
        if cut.strip():
            kept.append(cut.strip())
    return kept


def assert_excerpt(block: Block, comment: str) -> None:
    named = EXCERPT.match(block.text.splitlines()[0])
    assert named is not None
    source = REPO / named[1]
    assert source.is_file(), f"{block.where}: the excerpt names {source}, which does not exist"
    wanted = excerpt_lines(block.text, comment)
    have = iter(excerpt_lines(source.read_text(encoding="utf-8"), comment))
    for line in wanted:
        assert any(line == other for other in have), (
            f"{block.where}: {line!r} is not in {source.relative_to(REPO)} (in this order)"
        )


@pytest.mark.parametrize("block", of("yaml"), ids=ids(of("yaml")))
def test_yaml_block_loads_clean(block: Block, tmp_path: Path) -> None:
    """A ```yaml block is a declaration file `check` finds no error in, a test file that passes, or a marked excerpt."""
    first = block.text.splitlines()[0]
    if EXCERPT.match(first):
        assert_excerpt(block, "#")
        return
    documents = list(yaml.safe_load_all(block.text))
    if first.startswith("# fragment"):
        assert [None] != documents
        return
    if isinstance(documents[0], dict) and "cases" in documents[0]:
        folder = shipped_templates(tmp_path)
        (folder / "tests" / "docs.cases.yaml").write_text(block.text, encoding="utf-8")
        code, out, err = atomtask(["test", str(folder / "tests" / "docs.cases.yaml"), "--templates", str(folder)])
        assert 0 == code, f"{block.where}: atomtask test exited {code}\n{out}{err}"
        return

    from atomtask.lint import check

    (tmp_path / "example.yaml").write_text(block.text, encoding="utf-8")
    report = check([tmp_path])
    errors = [str(f) for f in report.findings if f.severity.value == "error"]
    assert [] == errors, f"{block.where}: the block, alone in a folder, does not check clean"


@pytest.mark.parametrize("block", of("lisp"), ids=ids(of("lisp")))
def test_lisp_block_is_an_excerpt_of_a_shipped_file(block: Block) -> None:
    """A ```lisp block shows part of a shipped `.sexp` file, word for word."""
    assert EXCERPT.match(block.text.splitlines()[0]), f"{block.where}: start it with `;; excerpt of PATH`"
    assert_excerpt(block, ";")


# Shell


def atomtask(argv: list[str]) -> tuple[int, str, str]:
    from atomtask import cli

    out, err = io.StringIO(), io.StringIO()
    return cli.main(argv, stdout=out, stderr=err, stdin=io.StringIO("")), out.getvalue(), err.getvalue()


def shipped_templates(folder: Path) -> Path:
    shutil.copytree(REPO / "templates", folder / "templates", ignore=shutil.ignore_patterns("__*"))
    return folder / "templates"


def commands(block: Block) -> list[str]:
    """The block's commands: continuations joined, the console prompt and blank and comment lines dropped."""
    text = block.text.replace("\\\n", " ")
    found = []
    for line in text.splitlines():
        line = line.strip().removeprefix("$ ")
        if line and not line.startswith("#"):
            found.append(line)
    return found


def write_fixtures(folder: Path) -> None:
    """The files the docs' commands name."""
    (folder / "notes.txt").write_text("Tides rise and fall twice a day, pulled by the moon.\n", encoding="utf-8")
    (folder / "cat.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    (folder / "notes").mkdir()
    (folder / "notes" / "refunds.txt").write_text("Refunds are paid within 14 days.\n", encoding="utf-8")
    (folder / "notes" / "office.txt").write_text("Our office is in Paris.\n", encoding="utf-8")
    items = [{"id": "ada", "text": "Ada Lovelace, ada@example.com"}, {"id": "grace", "text": "Grace Hopper"}]
    (folder / "contacts.jsonl").write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")


def expand(word: str, folder: Path) -> list[str]:
    """A shell glob, as the shell expands it in `folder`."""
    if "*" not in word:
        return [word]
    return sorted(str(path.relative_to(folder)) for path in folder.glob(word)) or [word]


@pytest.mark.parametrize("block", of(*SHELL), ids=ids(of(*SHELL)))
def test_shell_block_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every command of a shell block exits 0 (`atomtask ...`) or is one `.ci/run` runs verbatim."""
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    shipped_templates(tmp_path)
    write_fixtures(tmp_path)
    monkeypatch.chdir(tmp_path)
    for name in ("ATOMTASK_HOME", "XDG_DATA_HOME", "ATOMTASK_CACHE_DIR"):
        monkeypatch.setenv(name, str(tmp_path / "state" / name.lower()))
    monkeypatch.setenv("ATOMTASK_MEMORY_DB", str(tmp_path / "state" / "memory.sqlite3"))
    runnable = [line for line in commands(block) if line not in ci]
    assert runnable or commands(block), f"{block.where}: no command"
    with FakeProviderServer() as server, models.override_allow_model_requests(True):
        server.respond_with(ServedAnswers())  # what `python -m atomtask.testing serve` answers
        for line in runnable:
            words = shlex.split(line, comments=True)
            env: dict[str, str] = {}
            while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
                key, _, value = words.pop(0).partition("=")
                env[key] = value
            assert words and "atomtask" == words[0], (
                f"{block.where}: {line!r} is neither an `atomtask` command nor a line of .ci/run"
            )
            argv = [arg for word in words[1:] for arg in expand(word, tmp_path)]
            model = argv[argv.index("--model") + 1] if "--model" in argv else env.get("ATOMTASK_MODEL", "")
            if model.startswith(PROVIDERS):
                env |= {"OPENAI_API_KEY": "sk-fake", "ANTHROPIC_API_KEY": "sk-ant-fake"}
                url = server.anthropic_base_url if model.startswith("anthropic:") else server.openai_base_url
                if "--base-url" in argv:
                    argv[argv.index("--base-url") + 1] = url
                env = {key: url if key.endswith("_BASE_URL") else value for key, value in env.items()}
                env.setdefault("OPENAI_BASE_URL", server.openai_base_url)
                env.setdefault("ANTHROPIC_BASE_URL", server.anthropic_base_url)
            with monkeypatch.context() as command:  # `NAME=value atomtask ...` sets NAME for that command only
                for key, value in env.items():
                    command.setenv(key, value)
                code, out, err = atomtask(argv)
            assert 0 == code, f"{block.where}: `{line}` exited {code}\n{out}{err}"


def test_the_readme_commands_are_the_ones_ci_runs() -> None:
    """The README's two commands are in `.ci/run`, verbatim, so CI runs what a newcomer types."""
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    readme = [block for block in of(*SHELL) if "README.md" == block.path.name]
    assert 2 == sum(line in ci for block in readme for line in commands(block))


# The check command the docs promise


def test_the_documented_check_command_is_clean_on_the_shipped_templates() -> None:
    """`atomtask check templates/ --model openai-chat:gpt-4o-mini`, as the docs show it, finds nothing there."""
    from atomtask.lint import check

    assert any("atomtask check templates/ --model openai-chat:gpt-4o-mini" in b.text for b in of(*SHELL))
    report = check([REPO / "templates"], models=["openai-chat:gpt-4o-mini"])
    assert [] == [str(finding) for finding in report.findings]


def test_every_docs_page_is_in_the_mkdocs_nav() -> None:
    """mkdocs.yml lists every page of docs/, so none is built but unreachable."""
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    listed = {next(iter(entry.values())) if isinstance(entry, dict) else entry for entry in config["nav"]}
    assert {path.name for path in (REPO / "docs").glob("*.md")} == listed
