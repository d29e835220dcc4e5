"""The README's Python examples run, so they cannot rot."""

from __future__ import annotations

import re

from tests.conftest import REPO


def python_blocks() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, re.DOTALL)


def test_readme_has_python_examples() -> None:
    """The README shows at least one Python example."""
    assert python_blocks()


def test_readme_python_examples_run() -> None:
    """Every ```python block in the README executes without error (on the embedded test model)."""
    for block in python_blocks():
        # As a user runs it: without the `from __future__ import annotations` of this test module.
        exec(compile(block, "README.md", "exec", dont_inherit=True), {"__name__": "readme_example"})


def test_the_readme_check_command_is_clean_on_the_shipped_templates() -> None:
    """`atomtask check --model openai-chat:gpt-4o-mini`, as the README shows it, finds nothing in `templates/`."""
    from atomtask.lint import check

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "atomtask check templates/ --model openai-chat:gpt-4o-mini" in readme

    report = check([REPO / "templates"], models=["openai-chat:gpt-4o-mini"])
    assert [] == [str(finding) for finding in report.findings]
