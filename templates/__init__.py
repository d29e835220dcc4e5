"""The shipped templates, installed as `atomtask.bundled_templates` (this file makes the folder a package)."""
