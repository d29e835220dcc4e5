"""How long `atomtask list` takes, against a bare `import pydantic_ai` measured in the same run.

Listing template names needs no model: reading the templates, building their schemas and checking
them is all it does, so it should not pay for importing pydantic-ai (about a second of wall time,
more with a provider SDK). Each command runs in a fresh subprocess, several times; the median wall
time of each is printed, with the ratio `list / import pydantic_ai` (below 1: `list` no longer pays
for pydantic-ai) and which heavy modules `atomtask list`'s process imported. The library's share
(`TaskSystem(templates=...)` and `.templates.names()`, no CLI) is timed the same way.

Target: `atomtask list` under 0.5 s of wall time on a quiet machine.

    python benchmarks/cli_list.py [--runs 7] [--templates DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

# Imported inside the child after running the command, to say which heavy modules `list` loaded.
_REPORT_HEAVY = (
    "import sys; from atomtask.cli import main; status = main({argv!r}, stdout=open(__import__('os').devnull, 'w')); "
    "print(','.join(m for m in ('pydantic_ai', 'openai', 'anthropic', 'jsonschema', 'lark') if m in sys.modules))"
)


def _median_wall(command: list[str], runs: int, env: dict[str, str]) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    """Time both commands and print the medians, their ratio and the heavy modules `list` imported."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=7, help="runs of each command (median reported)")
    parser.add_argument("--templates", help="template folder to list (default: the shipped templates)")
    args = parser.parse_args()
    env = {**os.environ, "PYDANTIC_AI_NO_BANNER": "1"}
    argv = ["list", *(["--templates", args.templates] if args.templates else [])]
    python = sys.executable
    atomtask_list = [python, "-c", f"import sys; from atomtask.cli import main; sys.exit(main({argv!r}))"]
    library = [
        python,
        "-c",
        "from atomtask import TaskSystem, bundled_templates_path\n"
        f"TaskSystem(templates=[{args.templates!r} or bundled_templates_path()]).templates.names()",
    ]
    bare_python = [python, "-c", "pass"]
    bare_import = [python, "-c", "import pydantic_ai"]
    # One warm-up run of each, so the first measured run does not pay for a cold file cache.
    for command in (atomtask_list, library, bare_python, bare_import):
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
    list_s = _median_wall(atomtask_list, args.runs, env)
    library_s = _median_wall(library, args.runs, env)
    python_s = _median_wall(bare_python, args.runs, env)
    import_s = _median_wall(bare_import, args.runs, env)
    heavy = subprocess.run(
        [python, "-c", _REPORT_HEAVY.format(argv=argv)], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()
    print(f"median wall time over {args.runs} runs (fresh interpreter each)")
    print(f"  python -c pass                       {python_s:6.3f} s")
    print(f"  python -c 'import pydantic_ai'       {import_s:6.3f} s")
    print(f"  TaskSystem(templates=...).names()    {library_s:6.3f} s")
    print(f"  atomtask list                        {list_s:6.3f} s")
    print(f"  ratio list / import pydantic_ai: {list_s / import_s:.2f}")
    print(f"  heavy modules imported by list: {heavy or 'none'}")
    print(f"  target (< 0.5 s): {'met' if list_s < 0.5 else 'not met'}")


if __name__ == "__main__":
    main()
