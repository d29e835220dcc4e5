"""Architecture rules from DESIGN.md that a refactor must not break silently."""

from __future__ import annotations

import re

from tests.conftest import REPO


def test_only_the_manager_imports_pydantic_ai_agent() -> None:
    """`LLMInteractionManager` (handlers/llm.py) is the only module that builds pydantic-ai Agents."""
    pattern = re.compile(r"^\s*from pydantic_ai(\.agent)? import [^\n]*\bAgent\b", re.MULTILINE)
    users = sorted(
        str(path.relative_to(REPO)) for path in (REPO / "src").rglob("*.py") if pattern.search(path.read_text())
    )
    assert ["src/handlers/llm.py"] == users
