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
    from atomtask.lint._engine import check
    from atomtask.lint._findings import RULES, CheckReport, Finding, Rule, Severity

__all__ = [
    "RULES",
    "CheckReport",
    "Finding",
    "Rule",
    "Severity",
    "check",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__, __all__)
