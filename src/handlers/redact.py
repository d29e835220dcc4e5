"""Keep secrets out of messages: provider errors sometimes echo part of the key they rejected."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

__all__ = ["redact"]

_SECRET_ENV = re.compile(r"(API_KEY|_TOKEN|_SECRET|_PASSWORD)$")
# Shapes of provider keys that may appear even when the environment does not hold them.
_KEY_SHAPES = re.compile(r"\b(sk-[A-Za-z0-9_\-*]{6,}|sk-ant-[A-Za-z0-9_\-*]{6,}|AIza[0-9A-Za-z_\-]{20,})")


def redact(text: str, environ: Mapping[str, str] | None = None) -> str:
    """`text` with every secret-looking environment value and key-shaped token replaced by `***`."""
    env = os.environ if environ is None else environ
    for name, value in env.items():
        if len(value) >= 8 and _SECRET_ENV.search(name) and value in text:
            text = text.replace(value, "***")
    return _KEY_SHAPES.sub("***", text)
