"""Recorded template tests (`atomtask test`): golden cases that replay recorded model answers offline.

A cases file (`templates/tests/NAME.cases.yaml`) lists cases: inputs, the raw answers a model gave, and
what the run must come to (the exact output, a predicate, a partial match, or a failure reason).
`cases` reads them, `replay` runs them through `TaskSystem.execute` with a scripted model, `diffs`
compares outputs, `report` prints them (and JUnit XML), `record` writes a real model's answers in,
`cli` is the command.
"""
