"""JSON Schema as a schema language: dialects and formats (`_dialects`), the classes that validate
exactly (`_models`), and walking schemas and the views a model is sent (`_views`).
"""
