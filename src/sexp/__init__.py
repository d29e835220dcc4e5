"""The S-expression front end: `defatom` / `defschema` / `defworkflow` declarations and scripts that call tasks.

`reader` reads source text into located nodes (lark); `forms` reads declaration clauses; `defatom`
and `defworkflow` turn declaration forms into the same `Template` / `SchemaDef` / `Workflow` the YAML
loader produces; `evaluator` runs scripts against a `TaskSystem` (with the values of `values`, the
builtins of `functions` and `operators`, the control forms of `control` and the loop of
`director`); and `loading` reads `.sexp` files for `TaskSystem.load`.
"""

from atomtask.sexp.errors import SexpEvalError, SexpSyntaxError, SexpTaskFailedError, SexpWorkflowFailedError

__all__ = ["SexpEvalError", "SexpSyntaxError", "SexpTaskFailedError", "SexpWorkflowFailedError"]
