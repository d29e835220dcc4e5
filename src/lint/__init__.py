"""`atomtask check`: every template mistake caught before a token is spent.

Example:
    ```python
    from atomtask.lint import check

    report = check(["templates/"], models=["openai-chat:gpt-4o-mini"])
    for finding in report.findings:
        print(finding)  # file:line:col: CODE message
    ```
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from atomtask._lazy import lazy_exports

if TYPE_CHECKING:
    from atomtask.lint.engine import CheckReport, check
    from atomtask.lint.findings import RULES, Finding, Rule, Severity

__all__ = ["RULES", "CheckReport", "Finding", "Rule", "Severity", "check"]

# Loaded on first use: the CLI imports `atomtask.lint.cli` to build its parser, which must stay light.
_EXPORTS = {
    "CheckReport": "atomtask.lint.engine",
    "check": "atomtask.lint.engine",
    "RULES": "atomtask.lint.findings",
    "Finding": "atomtask.lint.findings",
    "Rule": "atomtask.lint.findings",
    "Severity": "atomtask.lint.findings",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
