"""`atomtask check` for templates' tools (E130-E132), with user code imported in a helper process only.

A template's function tools are `module:function` references: checking them means importing the
modules, which runs their code. `check` never does that in its own process: it sends every template
with tools (its name, its `tools` entries and its importable packages, as JSON) to one helper process,
`python -m atomtask.lint._tool_checks`, started in the working directory so modules resolve as with
`python -m`. The helper runs the registration's own checks (`loading._tools.tool_problems`: the
import, type hints that make a JSON Schema, unique names) and answers one JSON document: for each
problem, the template's index, the entry's index, the code, the message and near names.

Templates declared in Python (`check --python`) whose tools are function objects, not references, are
checked in this process: their module was imported by `--python` already. A helper that cannot start
or answers nothing is itself a finding (E130 on each template), never a traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from typing import IO, Any

import attrs
from atomtask._paths import IMPORTABLE_ENV
from atomtask.errors import ToolDeclarationError
from atomtask.system._templates import FunctionToolSpec, Template

__all__ = ["ToolProblem", "check_tools", "main"]

_TIMEOUT = 120.0  # seconds for the helper to import every module named and answer


@attrs.frozen(kw_only=True)
class ToolProblem:
    """One problem of one template's tools: which template, which entry (None: across entries), what."""

    template: int
    entry: int | None
    code: str
    message: str
    suggestions: tuple[str, ...] = ()


def check_tools(templates: Sequence[Template], importable: Sequence[str]) -> list[ToolProblem]:
    """Every problem of the tools of `templates` (by their index), references checked in a helper process."""
    from atomtask.loading._tools import tool_problems

    problems: list[ToolProblem] = []
    remote: list[tuple[int, list[Any], int | None, str]] = []
    for index, template in enumerate(templates):
        functions = [e for e in template.tools if isinstance(e, FunctionToolSpec)]
        if not functions:
            continue
        if all(isinstance(e.function, str) for e in functions):
            entries = [e.model_dump(mode="json") for e in template.tools]
            remote.append((index, entries, template.tool_calls, template.name))
        else:  # function objects of a `--python` module, imported already
            for entry, problem in tool_problems(template, importable):
                problems.append(_problem(index, entry, problem))
    if remote:
        problems.extend(_in_helper(remote, importable))
    return problems


def _problem(template: int, entry: int | None, problem: ToolDeclarationError) -> ToolProblem:
    return ToolProblem(
        template=template,
        entry=entry,
        code=problem.code,
        message=problem.message,
        suggestions=tuple(problem.suggestions),
    )


def _in_helper(remote: list[tuple[int, list[Any], int | None, str]], importable: Sequence[str]) -> list[ToolProblem]:
    request = json.dumps({"importable": list(importable), "templates": [[e, calls, n] for _, e, calls, n in remote]})
    env = {**os.environ, "PYDANTIC_AI_NO_BANNER": "1"}
    env.pop(IMPORTABLE_ENV, None)  # the packages travel in the request, as this process reads them
    try:
        done = subprocess.run(
            [sys.executable, "-m", "atomtask.lint._tool_checks"],
            input=request.encode(),
            capture_output=True,
            timeout=_TIMEOUT,
            env=env,
            check=False,
        )
        answer = json.loads(done.stdout or b"null")
        if not isinstance(answer, list):
            raise ValueError(done.stderr.decode(errors="replace").strip().splitlines()[-1:] or "no answer")
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        why = f"{type(exc).__name__}: {exc}"
        return [
            ToolProblem(
                template=index,
                entry=None,
                code="E130",
                message=f"The tools of template {name!r} could not be checked: the helper process that imports "
                f"them failed ({why}). Run `python -c 'import <module>'` for each tool's module to see why.",
            )
            for index, _, _, name in remote
        ]
    return [
        ToolProblem(
            template=remote[position][0],
            entry=entry,
            code=code,
            message=message,
            suggestions=tuple(suggestions),
        )
        for position, entry, code, message, suggestions in answer
    ]


# -- the helper's side ----------------------------------------------------------------------------------


def main(stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None) -> int:
    """Read the request, check each template's tools, write every problem as one JSON list."""
    from atomtask.loading._tools import tool_problems

    request = json.loads((stdin or sys.stdin.buffer).read())
    importable = [str(p) for p in request["importable"]]
    found: list[list[Any]] = []
    for position, (entries, calls, name) in enumerate(request["templates"]):
        template = Template(name=name, instructions="-", tools=entries, tool_calls=calls)
        for entry, problem in tool_problems(template, importable):
            found.append([position, entry, problem.code, problem.message, list(problem.suggestions)])
    out = stdout or sys.stdout.buffer
    out.write(json.dumps(found).encode())
    out.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
