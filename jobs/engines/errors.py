"""Whether a failed request may succeed if asked again, read from the error text the engines write.

Retryable: the endpoint or the engine was unavailable or broken, not wrong about the request: a timeout, HTTP
5xx, 429 (throttled, a spent quota) or 408 after the client's own retries, a broken connection, a 200 that is no
chat completion (the provider's fault, as a 5xx is: not JSON, no choices, content that is not text; a batch
item's reply with no content) (jobs.engines.http.client's `api: timeout after ...`, `api: HTTP 503 (...)`, `api:
connection failed (...)`, `api: the reply is not JSON (...)`), a provider batch that expired (`api: batch expired
(...)`), an engine actor that died or could not be reached (Ray's ActorDiedError, ActorUnavailableError). Final:
everything else, known or not: HTTP 400 and other 4xx (a content-policy refusal is a 400), a prompt over the
context limit (actors.templating.overflow), a template that does not apply. An unknown error is final, so a new
failure mode is never re-asked until it is named here.

The text may be one answer's error or an item row's, which joins its answers' errors ("cr: api: HTTP 503 ...;
rc: context overflow: ..."): it is retryable when it names a retryable failure and no final one, i.e. when asking
again could score the row. Unparseable output is no error at all: it is a counted outcome of the benchmark.
"""
from __future__ import annotations

import re

_CODES = r"(?:5\d\d|429|408)\b"  # retryable HTTP status codes
_RETRYABLE = re.compile(rf"api: (?:HTTP {_CODES}|timeout after |connection failed\b|batch expired\b|the reply "
                        r"|choices\[0\]\.message)|\bActor(?:Died|Unavailable)Error\b")
_FINAL = re.compile(rf"api: HTTP (?!{_CODES})\d{{3}}\b|context overflow\b|\btemplate: ")


def retryable(error: str | None) -> bool:
    """True when the error names a failure that asking again may not repeat (see the module); False for no
    error, a final one or one this function does not know."""
    return bool(error) and bool(_RETRYABLE.search(error)) and not _FINAL.search(error)


def headline(error: str) -> str:
    """The error without its details, to count errors of one kind together: 'api: HTTP 503 (model 'x', 3
    tries)' for 'api: HTTP 503 (model 'x', 3 tries): Error code: 503 - ...', 'context overflow' for 'context
    overflow: 5012 tokens > max_model_len 4096'."""
    prefix = "api: " if error.startswith("api: ") else ""
    return prefix + error[len(prefix):].split(": ", 1)[0]
