"""Secrets kept out of everything a run stores or prints, in every form they can take there.

What is secret: the values of environment variables that hold credentials by their name (AWS keys, `*_API_KEY`,
tokens, passwords) or because a model names them (`api: {key_env: JUDGE_KEY}`, `api.base_env`: a sweep declares
those when it loads, `declare_secret_variables`), and the `user:password` of any URL in the environment.
Each is removed as written, URL-encoded (a query string, a form body), and base64-encoded (an HTTP Basic
`Authorization` header an endpoint echoes back, at any offset inside a longer base64 text). Texts also lose
the password of any URL written in them and the value of an echoed credential header, known or not.
`redact` cleans a text (errors, logs, JSON documents), `scrub` a row's strings (Parquet parts).
"""
from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, quote_plus, unquote, urlsplit

_SECRET_NAMES = {"AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
                 "OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"}
# *_API_KEY, *_TOKEN, *_SECRET*, *_PASSWORD, *_ACCESS_KEY*; anchored: TOKENIZERS_PARALLELISM is no secret.
_SECRET_PATTERN = re.compile(r"(^|_)(API_KEY|TOKEN|PASSWORD|ACCESS_KEY(_ID)?)$|SECRET")
# The variables a sweep's models name for credentials, kept in the environment so that the processes this one
# starts (Ray's workers, a vLLM engine) redact them too.
DECLARED = "RAGJUDGE_SECRET_VARIABLES"
_MIN_SECRET_LEN = 4  # shorter values ("1", "on") would shred every message and protect nothing
_MIN_ENCODED_LEN = 8  # a base64 fragment shorter than this matches ordinary text by chance
_REDACTED = "[redacted]"
# scheme://user:password@host: the credentials go, the scheme and host stay readable.
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^\s/@:]+:[^\s/@]*@")
# A credential header an endpoint echoes back (`Authorization: Basic ...`, `"x-api-key": "..."`): its value.
_CREDENTIAL_HEADER = re.compile(
    r"(?i)\b((?:proxy-)?authorization|x-api-key|api-key)([\"']?\s*[:=]\s*[\"']?)((?:basic|bearer)\s+)?[^\s\"',;}]+")
# What every such header holds: a search for it is much cheaper than the substitution on text without one,
# and every prompt and response of a cell passes through here (docs/measurements.md, "Figures moved from the
# code's comments").
_HEADER_HINT = re.compile(r"(?i)authorization|api-key")


def declare_secret_variables(names: Iterable[str]) -> None:
    """Treat the values of these environment variables as secrets from now on, in this process and in the
    processes it starts (a model's `api_key_env` may be any name, such as JUDGE_KEY)."""
    known = declared_variables() | {name for name in names if name}
    os.environ[DECLARED] = ",".join(sorted(known))


def declared_variables() -> set[str]:
    """The variable names declared secret so far (declare_secret_variables)."""
    return set(filter(None, os.environ.get(DECLARED, "").split(",")))


def _is_secret_name(name: str, declared: set[str]) -> bool:
    upper = name.upper()
    return name in declared or upper in _SECRET_NAMES or bool(_SECRET_PATTERN.search(upper))


def encoded_forms(value: str) -> set[str]:
    """`value` as a run may store it: as is, URL-encoded (quote, quote_plus) and base64-encoded (standard and
    URL-safe alphabets), the latter as the characters that depend on `value` alone at each of the three byte
    offsets it can start at inside a longer encoded text (so `user:password` is found inside Basic auth's
    base64 of it, and a key inside the base64 of a whole header)."""
    forms = {value, quote(value, safe=""), quote_plus(value, safe="")}
    raw = value.encode("utf-8")
    for offset in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(b"\0" * offset + raw).decode("ascii").rstrip("=")
            start = 4 * ((offset + 2) // 3)  # the characters that also hold the padding bytes
            end = 4 * ((offset + len(raw)) // 3)  # those after are the last group's, mixed with what follows
            if end - start >= _MIN_ENCODED_LEN:
                forms.add(encoded[start:end])
            if offset == 0:
                forms.add(encoded)
    return {form for form in forms if len(form) >= _MIN_SECRET_LEN}


def url_credentials(value: str) -> set[str]:
    """The `user:password` (and the password alone) of each URL in `value`, decoded, or nothing."""
    found = set()
    for word in value.split():
        try:
            parts = urlsplit(word)
        except ValueError:
            continue
        if parts.password:
            password = unquote(parts.password)
            found |= {password, f"{unquote(parts.username or '')}:{password}"}
    return {secret for secret in found if len(secret) >= _MIN_SECRET_LEN}


def secret_values() -> list[str]:
    """Every form of every secret in the environment (encoded_forms), longest first (a longer one goes whole)."""
    declared = declared_variables()
    values: set[str] = set()
    for name, value in os.environ.items():
        secrets = url_credentials(value) if "://" in value else set()
        if _is_secret_name(name, declared) and len(value) >= _MIN_SECRET_LEN:
            secrets.add(value)
        for secret in secrets:
            values |= encoded_forms(secret)
    return sorted(values, key=len, reverse=True)


def _clean(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, _REDACTED)
    if "://" in text and "@" in text:
        text = _URL_CREDENTIALS.sub(rf"\1{_REDACTED}@", text)
    if _HEADER_HINT.search(text):
        text = _CREDENTIAL_HEADER.sub(rf"\1\2\3{_REDACTED}", text)
    return text


def redact(text: str) -> str:
    """`text` without the environment's secrets in any of their forms, URL passwords or echoed credential
    headers, so errors can be logged and stored."""
    return _clean(text, secret_values())


def scrub(value: Any, secrets: list[str]) -> Any:
    """A copy of a (nested) row value whose strings are cleaned as `redact` cleans a text, of `secrets`
    (secret_values, computed once for many rows)."""
    if isinstance(value, str):
        return _clean(value, secrets)
    if isinstance(value, dict):
        return {k: scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub(v, secrets) for v in value]
    return value
