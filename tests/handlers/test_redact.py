"""Secrets never reach messages."""

from __future__ import annotations

from atomtask.handlers._ledger import redact


def test_environment_secrets_are_replaced() -> None:
    """The value of any *_API_KEY variable is masked wherever it appears."""
    env = {"OPENAI_API_KEY": "abcdef123456", "HOME": "/root"}
    assert "key *** rejected in /root" == redact("key abcdef123456 rejected in /root", env)


def test_key_shaped_tokens_are_replaced() -> None:
    """Provider-key-shaped tokens are masked even when not in the environment."""
    assert "Incorrect API key provided: ***." == redact("Incorrect API key provided: sk-proj-abc123XYZ.", {})
