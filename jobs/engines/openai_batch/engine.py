"""openai_batch: an API judge asked through OpenAI's Batch API (kind api), at the batch price.

The requests become a JSONL file of {custom_id (the request_id), method, url, body (the chat body the http
engine sends)}, uploaded through the Files API (purpose batch) and submitted to /v1/batches with the 24 h
window. The batch goes validating -> in_progress -> finalizing -> completed, or ends failed (its file did not
validate: `errors`), expired (the window ran out: finished requests are in the output file, the others in the
error file as batch_expired) or cancelled (through cancelling). Answers come from the output file, per-request
failures from the error file. The openai client does the HTTP work, its retries and backoff included.
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager

from actors.worker_model import WorkerModel
from benchmarks.boundary_types import JsonObject
from benchmarks.protocol import Request
from benchmarks.row_types import PromptAnswer
from jobs.engines.base import register
from jobs.engines.batch import BatchApi, BatchGone, Result, as_object, json_lines
from jobs.engines.http.client import Failure, chat_request, completion_text, refused_key
from jobs.store.manifest import BatchEntry

ENDPOINT = "/v1/chat/completions"


class OpenAIBatches:
    """OpenAI's Batch API for one model: its files and batches through the openai client."""

    final = frozenset({"completed", "failed", "expired", "cancelled"})

    def __init__(self, model: WorkerModel, base_url: str, api_key: str):
        from openai import OpenAI

        self.model = model
        self.client = OpenAI(base_url=base_url, api_key=str(api_key), max_retries=int(model.max_retries),
                             timeout=float(model.timeout_s))

    def custom_id(self, request_id: str) -> str:
        return request_id

    def submit(self, requests: list[Request]) -> BatchEntry:
        lines = []
        for request in requests:
            messages, sampling = chat_request(request, self.model)
            lines.append(json.dumps({"custom_id": str(request["request_id"]), "method": "POST", "url": ENDPOINT,
                                     "body": {"model": self.model.path, "messages": messages, **sampling}}))
        with self._key_checked():
            upload = self.client.files.create(file=("requests.jsonl", "\n".join(lines).encode()), purpose="batch")
            batch = self.client.batches.create(input_file_id=upload.id, endpoint=ENDPOINT, completion_window="24h")
        return {"provider": "openai", "id": batch.id, "state": batch.status, "input_file_id": upload.id,
                "requests": len(lines), "submitted_at": round(time.time(), 3)}

    def poll(self, entry: BatchEntry) -> BatchEntry:
        import openai

        with self._key_checked():
            try:
                batch = self.client.batches.retrieve(entry["id"])
            except openai.NotFoundError:
                raise BatchGone(entry["id"]) from None
        errors = [e.message or e.code or "" for e in (batch.errors.data or [])] if batch.errors else []
        return {**entry, "state": batch.status, "output_file_id": batch.output_file_id,
                "error_file_id": batch.error_file_id, **({"errors": errors} if errors else {})}

    def results(self, entry: BatchEntry) -> Iterator[Result | None]:
        for file_id in (entry.get("output_file_id"), entry.get("error_file_id")):
            if file_id:
                with self._key_checked():
                    text = self.client.files.content(file_id).text
                for record in json_lines(text):
                    yield None if record is None else (record["custom_id"], _answer(record, self.model.name))

    def unanswered(self, entry: BatchEntry) -> Failure:
        if entry["state"] == "failed":
            return Failure("batch failed", "; ".join(entry.get("errors", []))[:300])
        if entry["state"] in ("expired", "cancelled"):
            return Failure(f"batch {entry['state']}")
        return Failure("the batch has no result for this request")

    @contextmanager
    def _key_checked(self) -> Iterator[None]:
        import openai

        try:
            yield
        except openai.AuthenticationError as exc:
            raise refused_key(self.model, exc.status_code) from None


def _answer(record: JsonObject, model: str) -> PromptAnswer:
    """One line of the output or error file as an answer: the chat completion's text, or the row's error."""
    response, error = record.get("response") or {}, record.get("error") or {}
    status, body = response.get("status_code"), response.get("body")
    if status == 200:
        text, failure = completion_text(as_object(body))
        usage = body.get("usage") if isinstance(body, dict) else None
        n_tokens = (usage.get("prompt_tokens") if isinstance(usage, dict) else None) or 0
    elif status is not None:
        detail = body.get("error") if isinstance(body, dict) else body
        text, n_tokens = None, 0
        failure = Failure(f"HTTP {status}", str(detail.get("message") if isinstance(detail, dict) else detail)[:300])
    elif str(error.get("code")).startswith("batch_"):  # batch_expired, batch_cancelled: the batch's end, not the item's
        text, n_tokens, failure = None, 0, Failure(str(error["code"]).replace("_", " "))
    else:
        text, n_tokens = None, 0
        failure = Failure(f"batch error {error.get('code')}", str(error.get("message") or "")[:300])
    return {"text": text, "n_tokens": n_tokens, "error": failure and failure.row_error(model)}


class OpenAIBatch(BatchApi):
    name = "openai_batch"
    packages = ("openai",)
    provider = OpenAIBatches


register(OpenAIBatch())
