"""Secrets kept out of everything a run stores or prints: the values of secret-bearing environment variables
(AWS keys, API keys, tokens) are replaced by `[redacted]` in texts (`redact`) and in rows (`scrub`), so an
error message that echoes a credential back is stored and logged without it."""
from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import quote

_SECRET_NAMES = {"AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
                 "OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"}
# *_API_KEY, *_TOKEN, *_SECRET*, *_PASSWORD, *_ACCESS_KEY*; anchored: TOKENIZERS_PARALLELISM is no secret.
_SECRET_PATTERN = re.compile(r"(^|_)(API_KEY|TOKEN|PASSWORD|ACCESS_KEY(_ID)?)$|SECRET")
_MIN_SECRET_LEN = 4  # shorter values ("1", "on") would shred every message and protect nothing
_REDACTED = "[redacted]"


def secret_values() -> list[str]:
    """Values of secret-bearing environment variables, longest first (a longer one goes whole)."""
    values: set[str] = set()
    for name, value in os.environ.items():
        upper = name.upper()
        if (upper in _SECRET_NAMES or _SECRET_PATTERN.search(upper)) and len(value) >= _MIN_SECRET_LEN:
            values.add(value)
            values.add(quote(value, safe=""))  # as it appears inside a URL or form body
    return sorted(values, key=len, reverse=True)


def redact(text: str) -> str:
    """`text` without the values of secret-bearing environment variables, so errors can be logged."""
    for secret in secret_values():
        text = text.replace(secret, _REDACTED)
    return text


def scrub(value: Any, secrets: list[str]) -> Any:
    """A copy of a (nested) row value with every secret in `secrets` removed from its strings."""
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, _REDACTED)
        return value
    if isinstance(value, dict):
        return {k: scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub(v, secrets) for v in value]
    return value
