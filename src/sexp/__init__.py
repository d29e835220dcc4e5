"""The S-expression front end: `defatom` / `defschema` / `defworkflow` declarations and scripts that call tasks.

`_reader` reads source text into located nodes (by hand: no parser tables to build); `_forms` reads
declaration clauses and turns `defatom`/`defschema` forms into the same `Template` and `SchemaDef` YAML
produces, `_defworkflow` the `defworkflow` form into a `Workflow`; `_builtins` holds the values and
builtin functions scripts compute with, and `_evaluator` runs scripts against a `TaskSystem` (its control
forms, the director loop) and reads `.sexp` files for `TaskSystem.load`. Its errors are in `atomtask.errors`.
"""
