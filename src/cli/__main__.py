"""`python -m atomtask.cli`: the `atomtask` command."""

from atomtask.cli import main

raise SystemExit(main())
