"""Recorded template tests (`atomtask test`): golden cases that replay recorded model answers offline.

A cases file (`templates/tests/NAME.cases.yaml`) lists cases: inputs, the raw answers a model gave, and
what the run must come to (the exact output, a predicate, a partial match, or a failure reason).
`_cases` reads them and checks their expectations against the output class, `_replay` runs them
through `TaskSystem.execute` with a scripted model and reports them (text and JUnit XML), `_recording`
writes a real model's answers in. The command is `atomtask.cli._test`.
"""
