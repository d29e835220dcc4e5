"""`atomtask workflow run|show|graph|list`: workflows from the shell, a front end over the `TaskSystem` facade.

The arguments are parsed by the main CLI (`atomtask.cli_args`), which also applies the exit-status
rule; `atomtask.workflow_cli.cli` runs the workflow and prints its status lines, state, steps and graph.
"""
