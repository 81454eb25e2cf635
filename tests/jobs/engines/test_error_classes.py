"""jobs.engines.errors on the error texts each engine writes, hand-written as they appear in stored rows."""
from __future__ import annotations

import pytest

from jobs.engines.errors import headline, retryable

# jobs.engines.http.client (Failure.row_error), the provider batch engines, Ray (an engine that died).
RETRYABLE = [
    "api: HTTP 503 (model 'api_judge', 6 tries): Error code: 503 - {'error': {'message': 'scripted 503'}}",
    "api: HTTP 500 (model 'x', 3 tries): Error code: 500 - boom",
    "api: HTTP 502 (model 'x', 3 tries): Error code: 502 - Bad Gateway",
    "api: HTTP 429 (model 'api_judge', 3 tries): Error code: 429 - slow down",
    "api: HTTP 429 (model 'api_judge', 1 try): Error code: 429 - quota",  # Retry-After an hour: not retried by the client
    "api: HTTP 408 (model 'x', 3 tries): Error code: 408 - Request Timeout",
    "api: timeout after 120 s (model 'x', 3 tries)",
    "api: connection failed (model 'api_judge', 3 tries): ConnectionResetError: [Errno 104] Connection reset by peer",
    "api: connection failed (model 'x', 3 tries): ConnectionRefusedError: [Errno 111] Connection refused",
    "api: connection failed (model 'x', 3 tries): RemoteProtocolError: Server disconnected without sending a response.",
    "api: HTTP 500 (model 'x'): the batch item failed",  # a provider batch's failed item (no tries)
    "api: batch expired (model 'x'): not completed within 24h",
    # a 200 that is no chat completion: the provider's fault, as a 5xx is
    "api: the reply is not JSON (model 'api_judge', 3 tries): '<html><body><h1>502 Bad Gateway</h1></body></html>'",
    "api: the reply is not JSON (model 'api_judge'): '<html>'",  # a provider batch's item (no tries)
    "api: the reply has no choices[0].message (model 'api_judge', 2 tries)",
    "api: choices[0].message.content is list, not text (model 'api_judge', 1 try)",
    "api: the reply has no content (model 'claude')",  # an Anthropic batch's item
    "ActorDiedError: The actor died unexpectedly before finishing this task.",
    "ActorUnavailableError: The actor is temporarily unavailable: restarting",
    # an item row joining its answers' errors, all retryable
    "cr: api: HTTP 503 (model 'x', 3 tries): busy; rc: api: timeout after 2 s (model 'x', 3 tries)",
]
FINAL = [
    "api: HTTP 400 (model 'x', 1 try): Error code: 400 - {'error': {'code': 'context_length_exceeded'}}",
    "api: HTTP 400 (model 'x', 1 try): Error code: 400 - {'error': {'code': 'content_filter'}}",  # refused
    "api: HTTP 404 (model 'x', 1 try): Error code: 404 - model not found",
    "api: HTTP 422 (model 'x', 1 try): Error code: 422 - unprocessable",
    "api: HTTP 400 (model 'x'): invalid_request_error",  # a provider batch's item
    "context overflow: 5012 tokens > max_model_len 4096",  # actors.templating.overflow (vLLM, transformers)
    "context overflow: 4096 tokens leave no room for a generated token (max_model_len 4096)",
    "reference: context overflow: 4097 tokens > max_model_len 4096",  # an implicit RM's reference model
    "template: last message must be the assistant's, not 'user'",
    # a retryable and a final failure in one row: asking again cannot score it
    "cr: api: HTTP 503 (model 'x', 3 tries): busy; rc: context overflow: 5012 tokens > max_model_len 4096",
    "cr: api: the reply is not JSON (model 'x', 3 tries): ''; rc: api: HTTP 400 (model 'x', 1 try): bad",
    "no answer for request run1",  # unknown: final
    "something new went wrong",
]


@pytest.mark.parametrize("error", RETRYABLE)
def test_transient_failures_are_retryable(error):
    assert retryable(error)


@pytest.mark.parametrize("error", FINAL)
def test_wrong_requests_and_unknown_errors_are_final(error):
    assert not retryable(error)


@pytest.mark.parametrize("error", [None, ""])
def test_no_error_is_not_retryable(error):
    assert not retryable(error)


def test_headline_drops_the_details():
    assert headline(RETRYABLE[0]) == "api: HTTP 503 (model 'api_judge', 6 tries)"
    assert headline("api: timeout after 120 s (model 'x', 3 tries)") == "api: timeout after 120 s (model 'x', 3 tries)"
    assert headline(FINAL[5]) == "context overflow"
    assert headline("template: last message must be the assistant's") == "template"
