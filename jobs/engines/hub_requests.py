"""Requests to the Hugging Face Hub, bounded: each gives up after HF_HUB_ETAG_TIMEOUT seconds without an
answer (huggingface_hub sends some with no timeout at all), and a wait for the Hub's answer says so while it lasts."""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from jobs.console.step_progress import elapsed_lines

if TYPE_CHECKING:
    from httpx2 import Request

WAITING_S = 5.0  # a question to the Hub not answered yet says so this often, within its bound


def hub_timeout_s() -> float:
    """How long a request to the Hub waits to connect, and then for each part of its answer, before it gives up:
    huggingface_hub's HF_HUB_ETAG_TIMEOUT, which its own metadata requests (HEAD) use."""
    from huggingface_hub import constants

    return float(constants.HF_HUB_ETAG_TIMEOUT)


@contextlib.contextmanager
def waiting_for_the_hub(what: str, log: Callable[[str], None]) -> Iterator[None]:
    """Every request the block sends to the Hub bounded (bound_requests), and a line every WAITING_S seconds
    while the block waits: 'waiting for the Hub (URL) about org/rm, each request up to 10 s ...: 5 s'."""
    from huggingface_hub import constants

    bound_requests()
    with elapsed_lines(f"waiting for the Hub ({constants.ENDPOINT}) {what}, each request up to "
                       f"{hub_timeout_s():g} s (HF_HUB_ETAG_TIMEOUT)", log, WAITING_S):
        yield


def bound_requests() -> None:
    """Make each request huggingface_hub sends with no timeout of its own (a repository's info and its file
    listing, auth-check: timeout=None, so an endpoint that accepts a connection and never answers held `ragjudge
    fetch` until it was killed) give up after hub_timeout_s: a request hook on huggingface_hub's own HTTP session
    (get_session), added again to a session it makes anew (after a fork)."""
    from huggingface_hub import get_session

    session = get_session()
    hooks = session.event_hooks
    if _bounded not in hooks["request"]:
        session.event_hooks = {**hooks, "request": [*hooks["request"], _bounded]}


def _bounded(request: Request) -> None:
    """The request's unset timeouts (connect, read, write, pool) set to hub_timeout_s; those it sets are kept."""
    limit = hub_timeout_s()
    request.extensions["timeout"] = {kind: limit if value is None else value
                                     for kind, value in request.extensions.get("timeout", {}).items()}
