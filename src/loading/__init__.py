"""The loading layer: declaration files read into `Declarations` (one reader registry that front ends
plug into), registration checks, and the `TemplateRegistry`. Builds on `schemas` and `system`."""
