"""Workflows: typed state flowing through steps, checked before a token is spent.

The declaration (`Workflow`, `Step`) is vocabulary in `atomtask.system.workflows`; here are the checks
(`checks.check_workflow`, `registry.WorkflowRegistry`), the run (`runner.WorkflowRunner`), the
expression language (`expressions`) and the pictures (`graph`). This layer sits above `executors/`
(each step runs through `AtomicTaskExecutor`) and below the facade. Importing a module here does not
import the runner: `checks`, `registry` and `graph` stay usable where pydantic-ai is not wanted yet.
"""
