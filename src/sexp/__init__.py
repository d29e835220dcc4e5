"""The S-expression front end: `defatom` / `defschema` declarations and small scripts that call tasks.

`reader` reads source text into located nodes (lark), `defatom` turns declaration forms into the
same `Template` / `SchemaDef` the YAML loader produces, `evaluator` runs scripts against a
`TaskSystem` (with the values of `values` and the builtins of `functions`), and `loading` finds
`.sexp` files for `TaskSystem.load`.
"""

from atomtask.sexp.errors import SexpEvalError, SexpSyntaxError, SexpTaskFailedError

__all__ = ["SexpEvalError", "SexpSyntaxError", "SexpTaskFailedError"]
