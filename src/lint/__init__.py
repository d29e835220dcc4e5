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

from atomtask.lint.engine import CheckReport, check
from atomtask.lint.findings import RULES, Finding, Rule, Severity

__all__ = ["RULES", "CheckReport", "Finding", "Rule", "Severity", "check"]
