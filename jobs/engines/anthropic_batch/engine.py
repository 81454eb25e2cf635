"""anthropic_batch: an API judge asked through Anthropic's Message Batches API (kind api), at the batch price.

POST /v1/messages/batches takes requests [{custom_id, params}] (params: a Messages API body: the chat's system
messages as `system`, the rest as `messages`, and the sampling, less `seed`, which the Messages API has not);
GET /v1/messages/batches/{id} says processing_status in_progress -> (canceling ->) ended, and then results_url,
a JSONL file with one line per request whose result.type is succeeded, errored, canceled or expired.

The HTTP is spoken over httpx: the `anthropic` package is on this machine only as vLLM's dependency (neither
ours to pin nor a stable interface here), and this is three calls. So the retries are ours, as the openai client
does them: 408/409/429/5xx and 529 (overloaded), timeouts and broken connections, with exponential backoff that
honours Retry-After, up to max_retries. `api.base_env` names the API's root (https://api.anthropic.com); a
trailing /v1, the OpenAI-compatible endpoint's form that the http engine's Claude files set, is dropped.
"""
from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Iterator
from typing import Any

import httpx

from actors.worker_model import WorkerModel
from benchmarks.boundary_types import JsonObject
from benchmarks.protocol import Request
from benchmarks.row_types import PromptAnswer
from jobs.engines.base import register
from jobs.engines.batch import BatchApi, BatchGone, Result, json_lines
from jobs.engines.http.client import Failure, chat_request, refused_key
from jobs.store.manifest import BatchEntry

VERSION = "2023-06-01"  # the anthropic-version header the Message Batches API is documented with
RETRIED = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
CUSTOM_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")  # what Anthropic takes as a custom_id
# An errored result's error type -> the HTTP status the Messages API answers it with (its errors page)
STATUS = {"invalid_request_error": 400, "authentication_error": 401, "permission_error": 403,
          "not_found_error": 404, "request_too_large": 413, "rate_limit_error": 429, "api_error": 500,
          "overloaded_error": 529}


class AnthropicBatches:
    """Anthropic's Message Batches API for one model, over httpx with the openai client's retry rules."""

    final = frozenset({"ended"})

    def __init__(self, model: WorkerModel, base_url: str, api_key: str):
        self.model = model
        self.client = httpx.Client(base_url=base_url.rstrip("/").removesuffix("/v1"),
                                   headers={"x-api-key": str(api_key), "anthropic-version": VERSION},
                                   timeout=float(model.timeout_s))

    def custom_id(self, request_id: str) -> str:
        """The request_id where Anthropic takes it, else a digest of it (ids with '#' or ':', longer than 64)."""
        if CUSTOM_ID.fullmatch(request_id):
            return request_id
        return "r-" + hashlib.sha256(request_id.encode()).hexdigest()[:40]

    def submit(self, requests: list[Request]) -> BatchEntry:
        batch = self._call("POST", "/v1/messages/batches", json={"requests": [
            {"custom_id": self.custom_id(str(r["request_id"])), "params": self._params(r)} for r in requests]})
        return {"provider": "anthropic", "id": batch["id"], "state": batch["processing_status"],
                "requests": len(requests), "submitted_at": round(time.time(), 3)}

    def poll(self, entry: BatchEntry) -> BatchEntry:
        try:
            batch = self._call("GET", f"/v1/messages/batches/{entry['id']}")
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code == 404:
                raise BatchGone(entry["id"]) from None
            raise
        return {**entry, "state": batch["processing_status"], "results_url": batch.get("results_url")}

    def results(self, entry: BatchEntry) -> Iterator[Result | None]:
        if not entry.get("results_url"):
            return
        for record in json_lines(self._call("GET", entry["results_url"], parse=False).text):
            yield None if record is None else (record["custom_id"], _answer(record, self.model.name))

    def unanswered(self, entry: BatchEntry) -> Failure:
        return Failure("the batch has no result for this request")  # every request of an ended batch has a line

    def _params(self, request: Request) -> JsonObject:
        messages, sampling = chat_request(request, self.model)
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        return {"model": self.model.path, "messages": [m for m in messages if m["role"] != "system"],
                **({"system": system} if system else {}), **{k: v for k, v in sampling.items() if k != "seed"}}

    def _call(self, method: str, url: str, parse: bool = True, **kwargs: Any) -> Any:
        """The reply (its JSON, or the response when not `parse`), after retries; 401 stops the cell."""
        retries, attempt = int(self.model.max_retries), 0
        while True:
            wait_s = min(0.5 * 2 ** attempt, 8.0)
            try:
                response = self.client.request(method, url, **kwargs)
            except httpx.TransportError:
                if attempt == retries:
                    raise
            else:
                if response.status_code == 401:
                    raise refused_key(self.model, 401)
                if response.status_code not in RETRIED or attempt == retries:
                    response.raise_for_status()
                    return response.json() if parse else response
                retry_after = response.headers.get("retry-after", "")
                wait_s = min(float(retry_after), 60.0) if retry_after.isdigit() else wait_s
            time.sleep(wait_s)
            attempt += 1


def _answer(record: JsonObject, model: str) -> PromptAnswer:
    """One results line as an answer: the message's text, or the row's error."""
    result = record.get("result") or {}
    kind = result.get("type")
    text, n_tokens, failure = None, 0, None
    if kind == "succeeded":
        message = result.get("message") or {}
        blocks = message.get("content")
        if isinstance(blocks, list):
            text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
            n_tokens = (message.get("usage") or {}).get("input_tokens") or 0
        else:
            failure = Failure("the reply has no content")
    elif kind == "errored":
        error = result.get("error") or {}
        error = error.get("error", error)  # an ErrorResponse {type: error, error: {type, message}}
        status = STATUS.get(error.get("type"))
        what = f"HTTP {status}" if status else f"batch error {error.get('type')}"
        failure = Failure(what, f"{error.get('type')}: {error.get('message', '')}"[:300])
    elif kind in ("expired", "canceled"):
        failure = Failure(f"batch {kind}")
    else:
        failure = Failure(f"batch result type {kind}")
    return {"text": text, "n_tokens": n_tokens, "error": failure and failure.row_error(model)}


class AnthropicBatch(BatchApi):
    name = "anthropic_batch"
    packages = ("httpx",)
    provider = AnthropicBatches


register(AnthropicBatch())
