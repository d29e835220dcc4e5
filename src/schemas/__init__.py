"""The schema layer: type strings, YAML field schemas, JSON Schema and Python classes, turned into
Pydantic classes and validators, and the `ModelRegistry` that names them. Builds on `system` only."""
